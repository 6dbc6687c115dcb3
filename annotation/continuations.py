"""Which dialogue windows show another window's true continuation (no database).

A prospective item's intended answer is its context's true continuation: what was said
next. In the authors' pool that text is, word for word, the opening of the next window's
dialogue (179 of 179 records checked), and windows of one session may overlap further.
"Contains" here is exact containment after normalising both texts the same way
(`normalized`): Unicode NFKC, case folded, the role labels of a continuation's lines
("client: …") dropped, every run of whitespace one space. So it does not matter how the
turns are split or which names the roles go by; it does matter that the words are the
same. A continuation a generator paraphrased, or cut and re-joined, is not found: that is
the limit of the guard (README, "Blindness: the context rule").
"""
from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Mapping

_ROLE_LABEL = re.compile(r"^\s*[^\W\d_][\w ]{0,30}:\s*")
_SPACES = re.compile(r"\s+")


def normalized(text: str) -> str:
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", str(text)).casefold()).strip()


def continuation_text(option: str) -> str:
    """A continuation ("role: text\\nrole: text") as the words a dialogue would show."""
    return normalized(" ".join(_ROLE_LABEL.sub("", line, count=1) for line in str(option).splitlines()))


def dialogue_text(turns: Iterable) -> str:
    """A context's turns (`[{"speaker", "text"}]`) as one normalised text, role names left out."""
    return normalized(" ".join(str(t.get("text", "")) if isinstance(t, dict) else str(t) for t in turns or ()))


def reveals_among(*, dialogues: Mapping[int, tuple[str, list]], continuations: Mapping[int, Iterable[str]]) -> set[tuple[int, int]]:
    """(dialogue context, context whose continuation it shows) for windows of the same session.

    `dialogues`: context pk -> (session key, turns); `continuations`: context pk -> its true
    continuations (the option texts its profile-bearing items hold as the answer). Only
    windows of one session are compared (the source conversation: that is where a window's
    continuation is said); a context never reveals itself.
    """
    by_session: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for pk, (session_key, turns) in dialogues.items():
        by_session[session_key].append((pk, dialogue_text(turns)))
    found = set()
    for target, texts in continuations.items():
        if target not in dialogues:
            continue
        wanted = {t for t in (continuation_text(x) for x in texts) if t}
        for pk, text in by_session[dialogues[target][0]]:
            if pk != target and any(w in text for w in wanted):
                found.add((pk, target))
    return found
