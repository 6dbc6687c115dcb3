"""The DialToM authors' files, read into plain contexts and items (no database).

What the authors publish (see docs/data.md, "The DialToM authors' files"):

- the verified release, `{MI,ESC,PFG}_{retrospective,prospective,prospective-easy}_verified.json`:
  a JSON list of records, each identified by (`id`, `state`);
- the counterfactuals, `{MI,ESC,PFG}_counterfact.json`: one object keyed `"session, window_State"`,
  each value the six contradicting profile statements (Belief … Trust);
- the unverified pool, `{MI,ESC,PFG}_data_{start}_{count}.json`: one object keyed
  `"session, window"`, values with `ctx`, `options`, `correct_option` and `actions`
  (`null` for a session's last window).

Each reader yields `Parsed` records: the context, the items that can be made, and the
`Problem`s of the parts that cannot (skipped and reported) plus warnings (NUL characters
removed). Nothing here decides what is written: `authors.dialtom_import` does.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .models import NOTA, OPTION_LETTERS, Speaker, Task, Variant
from .parsers import InputError, iter_json_list, iter_json_object, lone_surrogate_field, read_text, remove_nul

DOMAINS = {"MI": "mi", "ESC": "esc", "PFG": "pfg"}
_SUFFIX = r"(?:\.sample)?\.json$"
RELEASE_FILE = re.compile(r"^(MI|ESC|PFG)_(retrospective|prospective|prospective-easy)_verified" + _SUFFIX)
COUNTERFACT_FILE = re.compile(r"^(MI|ESC|PFG)_counterfact" + _SUFFIX)
POOL_FILE = re.compile(r"^(MI|ESC|PFG)_data_(\d+)_(\d+)" + _SUFFIX)
STATES = ("Belief", "Desires", "Intentions", "Emotions", "Knowledge", "Trust")  # the authors' order
STATE_ATTRIBUTES = {
    "belief": "belief", "beliefs": "belief", "desire": "desire", "desires": "desire",
    "intention": "intention", "intentions": "intention", "emotion": "emotion", "emotions": "emotion",
    "knowledge": "knowledge", "trust": "trust",
}
# Other names the authors' files give a role. combined_written_data.json writes the PFG
# speakers as "agent 1" / "agent 2": agent 1 opens and asks for the donation (the persuader).
ROLE_ALIASES = {"mi": {"therapist": Speaker.INITIATOR},
                "pfg": {"agent 1": Speaker.INITIATOR, "agent 2": Speaker.RECIPIENT}}
RECORD_ID = re.compile(r"^\s*(\d+)\s*,\s*(\d+)\s*$")
MAX_INT = 2**31 - 1  # PostgreSQL integer
PROSPECTIVE_QUESTION = "Which continuation is most consistent with this mental-state profile?"
KIND_ORDER = ("pool", "retrospective", "prospective", "prospective-easy", "counterfact")


@dataclass(frozen=True)
class SourceFile:
    path: Path
    domain: str  # mi | esc | pfg
    kind: str  # pool | retrospective | prospective | prospective-easy | counterfact
    start: int = 0

    @property
    def batch(self) -> str:
        """The default batch of its items: one per file (`dialtom-mi-data-0-50`, `dialtom-mi-retrospective`)."""
        stem = self.path.name.removesuffix(".json").removesuffix(".sample")
        if self.kind == "pool":
            return "dialtom-" + stem.lower().replace("_", "-")
        return f"dialtom-{self.domain}-{self.kind}"


def source_files(directory: Path) -> list[SourceFile]:
    """The authors' files of a directory, pool first, then release, then counterfactuals."""
    found = []
    for path in sorted(Path(directory).iterdir()):
        if match := POOL_FILE.match(path.name):
            found.append(SourceFile(path, DOMAINS[match.group(1)], "pool", int(match.group(2))))
        elif match := RELEASE_FILE.match(path.name):
            found.append(SourceFile(path, DOMAINS[match.group(1)], match.group(2)))
        elif match := COUNTERFACT_FILE.match(path.name):
            found.append(SourceFile(path, DOMAINS[match.group(1)], "counterfact"))
    return sorted(found, key=lambda f: (KIND_ORDER.index(f.kind), f.domain, f.start, f.path.name))


@dataclass
class Problem:
    """A part of a file that is not imported (or a warning): where and why."""

    file: str
    line: int
    key: str
    field: str
    reason: str

    def as_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "key": self.key, "field": self.field, "reason": self.reason}

    def error(self) -> InputError:
        return InputError(self.file, self.line, self.field, self.reason)


class Skip(Exception):
    def __init__(self, field: str, reason: str):
        self.field, self.reason = field, reason
        super().__init__(f"{field}: {reason}")


@dataclass
class Parsed:
    """One record of a file: its context (None if it cannot be one) and items."""

    file: SourceFile
    line: int
    key: str
    context: dict | None = None
    items: list[dict] = field(default_factory=list)
    counterfactual: dict | None = None  # {context_id, attribute, profile}
    skipped: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    def problem(self, field_name: str, reason: str) -> Problem:
        return Problem(self.file.path.name, self.line, self.key, field_name, reason)


def digest(value) -> bytes:
    """A short fingerprint of a JSON value: how two versions of a context or item are compared."""
    return hashlib.blake2b(json.dumps(value, sort_keys=True, ensure_ascii=False).encode(), digest_size=16).digest()


ITEM_COMPARED = ("task", "attribute", "variant", "options", "answer", "profile")


def item_digest(item) -> bytes:
    get = item.get if isinstance(item, dict) else (lambda k: getattr(item, k))
    return digest([get(k) for k in ITEM_COMPARED])


def context_digest(turns: list[dict]) -> bytes:
    return digest([(t.get("speaker"), t.get("text")) for t in turns])


# --- the pieces of a record ------------------------------------------------------------

def _context_id(domain: str, key: str) -> tuple[str, str, int]:
    match = RECORD_ID.match(key) if isinstance(key, str) else None
    if not match:
        raise Skip("id", f"expected \"session, window\" like \"5, 2\" (got {str(key)[:60]!r})")
    session, window = int(match.group(1)), int(match.group(2))
    if session > MAX_INT or window > MAX_INT:
        raise Skip("id", f"session or window number out of range (at most {MAX_INT})")
    session_key = f"{domain}-s{session:04d}"
    return f"{session_key}-w{window:02d}", session_key, window


def roles_for(code: str, *, initiator: str, recipient: str) -> dict[str, str]:
    """Role name as the authors write it (lower case) -> speaker, for one domain."""
    return {initiator.lower(): Speaker.INITIATOR, recipient.lower(): Speaker.RECIPIENT, **ROLE_ALIASES.get(code, {})}


def _roles(domain) -> dict[str, str]:
    return roles_for(domain.code, initiator=domain.initiator_role, recipient=domain.recipient_role)


def _turns(ctx, domain) -> list[dict]:
    roles = _roles(domain)
    if not isinstance(ctx, list) or not ctx:
        raise Skip("ctx", "missing or not a non-empty list")
    turns = []
    for n, entry in enumerate(ctx):
        role, sep, text = entry.partition(":") if isinstance(entry, str) else ("", "", "")
        if not sep or role.strip().lower() not in roles or not text.strip():
            raise Skip(f"ctx[{n}]", f"expected \"role: text\" with role {domain.initiator_role} or "
                                    f"{domain.recipient_role} (got {str(entry)[:60]!r})")
        turns.append({"speaker": roles[role.strip().lower()], "text": text.strip(), "source_role": role.strip()})
    return turns


def continuation_turns(text: str, roles) -> list[dict]:
    """A continuation ("role: text\\nrole: text") as turns `{speaker, role, text}`; `roles`
    is a Domain or a `roles_for` mapping.

    A line without a known role (the generator sometimes starts mid-turn) continues the
    turn before it, or stands alone with speaker "" when it is the first."""
    roles = roles if isinstance(roles, dict) else _roles(roles)
    turns: list[dict] = []
    for line in str(text).splitlines():
        line = line.strip()
        if not line:
            continue
        role, sep, rest = line.partition(":")
        speaker = roles.get(role.strip().lower()) if sep else None
        if speaker and rest.strip():
            turns.append({"speaker": speaker, "role": role.strip(), "text": rest.strip()})
        elif turns:
            turns[-1]["text"] = f"{turns[-1]['text']} {line}"
        else:
            turns.append({"speaker": "", "role": "", "text": line})
    return turns


def _states(options, correct) -> None:
    if not isinstance(options, dict) or not options:
        raise Skip("options", "missing or not an object of state -> {A..D: text}")
    if not isinstance(correct, dict) or not correct:
        raise Skip("correct_option", "missing or not an object of state -> letter")


def _profile(options: dict, correct: dict) -> dict:
    profile = {}
    for state_name, letter in correct.items():
        attribute = STATE_ATTRIBUTES.get(str(state_name).lower())
        texts = options.get(state_name)
        text = texts.get(letter) if isinstance(texts, dict) and isinstance(letter, str) else None
        if attribute and isinstance(text, str) and text.strip():
            profile[attribute] = text
    if not profile:
        raise Skip("correct_option", "no state has a correct option to build the profile from")
    return profile


def _equal_pair(texts: list[str], names) -> str | None:
    seen: dict[str, str] = {}
    for name, text in zip(names, texts, strict=True):
        norm = text.strip()
        if norm in seen:
            return f"{seen[norm]} and {name}"
        seen[norm] = name
    return None


def retrospective_item(*, context_id: str, domain, state: str, options: dict, correct: dict) -> dict:
    attribute = STATE_ATTRIBUTES.get(str(state).lower())
    if attribute is None:
        raise Skip("state", f"unknown state {state!r} (expected {', '.join(STATES)})")
    texts = options.get(state)
    if not isinstance(texts, dict) or any(not isinstance(texts.get(x), str) or not texts[x].strip()
                                          for x in OPTION_LETTERS):
        raise Skip(f"options.{state}", "needs four non-empty options A, B, C, D")
    texts = [texts[x] for x in OPTION_LETTERS]
    if pair := _equal_pair(texts, OPTION_LETTERS):
        raise Skip(f"options.{state}", f"two equal options ({pair})")
    answer = correct.get(state)
    if answer not in OPTION_LETTERS:
        raise Skip(f"correct_option.{state}", f"unknown letter {answer!r} (expected A, B, C or D)")
    return {"item_id": f"{context_id}-{attribute}", "task": Task.RETROSPECTIVE, "attribute": attribute,
            "variant": Variant.HARD, "target_speaker": Speaker.RECIPIENT,
            "question": f"Which statement best describes the {domain.recipient_role}'s {attribute} "
                        "at this point of the conversation?",
            "options": texts, "answer": answer, "profile": {}, "field": f"options.{state}"}


def prospective_item(*, context_id: str, state: str, action, distractors, profile: dict, variant: str,
                     seed: int, field_name: str) -> dict:
    """The item of (context, state): options = the true continuation and the three
    distractors made for `state`, in an order seeded by the item id (not by file order)."""
    attribute = STATE_ATTRIBUTES.get(str(state).lower())
    if attribute is None:
        raise Skip("state", f"unknown state {state!r} (expected {', '.join(STATES)})")
    if not isinstance(action, str) or not action.strip():
        raise Skip("correct_action", "missing or empty")
    if not isinstance(distractors, list) or len(distractors) != 3:
        got = len(distractors) if isinstance(distractors, list) else distractors
        raise Skip(field_name, f"expected exactly 3 distractors, got {got!r}")
    if any(not isinstance(d, str) or not d.strip() for d in distractors):
        raise Skip(field_name, "distractors must be non-empty strings")
    candidates = [action, *distractors]
    if pair := _equal_pair(candidates, ("correct_action", "distractor 1", "distractor 2", "distractor 3")):
        raise Skip(field_name, f"two equal continuations ({pair})")
    item_id = f"{context_id}-prospective-{attribute}" + ("-easy" if variant == Variant.EASY else "")
    order = list(range(4))
    random.Random(f"{seed}:{item_id}").shuffle(order)
    return {"item_id": item_id, "task": Task.PROSPECTIVE, "attribute": attribute, "variant": variant,
            "target_speaker": Speaker.RECIPIENT, "question": PROSPECTIVE_QUESTION,
            "options": [candidates[i] for i in order], "answer": OPTION_LETTERS[order.index(0)],
            "profile": profile, "field": field_name}


def counterfactual_item(*, parent: dict, profile: dict) -> dict:
    """The prospective item of (context, state) with a contradicting profile: options
    unchanged, answer NOTA (shown as a fifth choice)."""
    return {**{k: parent[k] for k in ("task", "attribute", "target_speaker", "question", "options")},
            "item_id": f"{parent['item_id']}-counterfactual", "variant": Variant.COUNTERFACTUAL,
            "answer": NOTA, "profile": profile, "field": "profile"}


# --- records ---------------------------------------------------------------------------

def _clean(parsed: Parsed, value):
    """Drop NUL characters (warned, with their field); a lone surrogate skips the record."""
    value, fields = remove_nul(value)
    for name in fields:
        parsed.warnings.append(parsed.problem(name, "NUL character removed (PostgreSQL cannot store it)"))
    if bad := lone_surrogate_field(value):
        raise Skip(bad, "contains a lone surrogate (an invalid \\ud800-\\udfff escape)")
    return value


def context_of(key: str, ctx, domain, *, source: str) -> dict:
    """The context of a record keyed "session, window" ("5, 2" in MI -> `mi-s0005-w02`) with its
    `ctx` ["role: text", ...]; raises Skip(field, reason). Every reader of the authors' files
    (the pool, the release, the written inferences) makes its contexts here."""
    context_id, session_key, window = _context_id(domain.code, key)
    turns = _turns(ctx, domain)
    return {"context_id": context_id, "domain": domain.code, "session_key": session_key, "window_index": window,
            "turns": turns, "metadata": {"source": source, "release_id": key.strip()}}


def _context(parsed: Parsed, key: str, ctx, domain, source: str) -> dict:
    return context_of(key, ctx, domain, source=source)


def _item(parsed: Parsed, make, **kwargs) -> None:
    try:
        item = make(**kwargs)
    except Skip as skip:
        parsed.skipped.append(parsed.problem(skip.field, skip.reason))
        return
    parsed.items.append(item)


def pool_record(file: SourceFile, line: int, key, value, *, domain, seed: int) -> Parsed:
    """A pool entry `"session, window": {ctx, options, correct_option, actions}` -> its context,
    six retrospective items and one prospective item per state that has continuations."""
    parsed = Parsed(file, line, str(key))
    try:
        value = _clean(parsed, value)
        if not isinstance(value, dict):
            raise Skip("record", "must be a JSON object")
        parsed.context = _context(parsed, str(key), value.get("ctx"), domain, "dialtom-pool")
        options, correct = value.get("options"), value.get("correct_option")
        _states(options, correct)
        profile = _profile(options, correct)
    except Skip as skip:
        parsed.context, parsed.items = None, []
        parsed.skipped.append(parsed.problem(skip.field, skip.reason))
        return parsed
    context_id = parsed.context["context_id"]
    for state in options:
        _item(parsed, retrospective_item, context_id=context_id, domain=domain, state=state, options=options,
              correct=correct)
    actions = value.get("actions")
    if actions is None:  # a session's last window: nothing follows it
        return parsed
    if not isinstance(actions, dict):
        parsed.skipped.append(parsed.problem("actions", "must be an object (correct_action and the distractors "
                                                        "per state) or null"))
        return parsed
    given = [s for s in actions if s != "correct_action"]
    for state in options:
        if state not in actions:
            parsed.skipped.append(parsed.problem(
                f"actions.{state}", f"no continuations for {state} (the record has them for {', '.join(given) or 'no state'})"))
            continue
        _item(parsed, prospective_item, context_id=context_id, state=state, action=actions.get("correct_action"),
              distractors=actions[state], profile=profile, variant=Variant.HARD, seed=seed,
              field_name=f"actions.{state}")
    for state in given:
        if state not in options:
            parsed.skipped.append(parsed.problem(f"actions.{state}", f"continuations for {state}, a state the record "
                                                                     "has no options for"))
    return parsed


def release_record(file: SourceFile, line: int, record, *, domain, seed: int) -> Parsed:
    """A release record (`id`, `state`) -> its context and its one item."""
    parsed = Parsed(file, line, str(record.get("id")) if isinstance(record, dict) else "")
    try:
        record = _clean(parsed, record)
        if not isinstance(record, dict):
            raise Skip("record", "must be a JSON object")
        parsed.key = f"{record.get('id')}_{record.get('state')}"
        if not isinstance(record.get("id"), str):
            raise Skip("id", f"expected \"session, window\" like \"5, 2\" (got {record.get('id')!r})")
        parsed.context = _context(parsed, record["id"], record.get("ctx"), domain, "dialtom-release")
        options, correct = record.get("options"), record.get("correct_option")
        _states(options, correct)
        state = record.get("state")
        if STATE_ATTRIBUTES.get(str(state).lower()) is None:
            raise Skip("state", f"unknown state {state!r} (expected {', '.join(STATES)})")
        if file.kind == "retrospective":
            item = retrospective_item(context_id=parsed.context["context_id"], domain=domain, state=state,
                                      options=options, correct=correct)
        else:
            item = prospective_item(context_id=parsed.context["context_id"], state=state,
                                    action=record.get("correct_action"), distractors=record.get("distractors"),
                                    profile=_profile(options, correct), seed=seed, field_name="distractors",
                                    variant=Variant.EASY if file.kind == "prospective-easy" else Variant.HARD)
    except Skip as skip:
        parsed.context = None
        parsed.skipped.append(parsed.problem(skip.field, skip.reason))
        return parsed
    item["release"] = {"file": file.path.name, "state": state,
                       **{k: record[k] for k in ("topic", "task_desc") if k in record}}
    if "topic" in record:
        parsed.context["metadata"]["topic"] = record["topic"]
    parsed.items.append(item)
    return parsed


def counterfact_record(file: SourceFile, line: int, key, value, *, domain) -> Parsed:
    """`"session, window_State": [six statements]` -> the counterfactual profile of the
    prospective item of (context, state)."""
    parsed = Parsed(file, line, str(key))
    try:
        value = _clean(parsed, value)
        id_part, sep, state = str(key).rpartition("_")
        if not sep:
            raise Skip("key", f"expected \"session, window_State\" like \"5, 0_Knowledge\" (got {str(key)[:60]!r})")
        context_id, _, _ = _context_id(domain.code, id_part)
        attribute = STATE_ATTRIBUTES.get(state.strip().lower())
        if attribute is None:
            raise Skip("key", f"unknown state {state!r} (expected {', '.join(STATES)})")
        if not isinstance(value, list) or len(value) != len(STATES):
            raise Skip("profile", f"expected {len(STATES)} statements ({', '.join(STATES)})")
        if any(not isinstance(v, str) or not v.strip() for v in value):
            raise Skip("profile", "every statement must be a non-empty string")
    except Skip as skip:
        parsed.skipped.append(parsed.problem(skip.field, skip.reason))
        return parsed
    profile = {STATE_ATTRIBUTES[s.lower()]: text for s, text in zip(STATES, value, strict=True)}
    parsed.counterfactual = {"context_id": context_id, "attribute": attribute, "profile": profile,
                             "parent_id": f"{context_id}-prospective-{attribute}"}
    return parsed


def read(file: SourceFile, *, domain, seed: int) -> Iterator[Parsed]:
    """Every record of one file, parsed. A file that is not JSON of the expected shape is
    an InputError (the whole file is wrong, not a record)."""
    text = read_text(file.path)
    if file.kind == "pool":
        for line, key, value in iter_json_object(file.path, text=text):
            yield pool_record(file, line, key, value, domain=domain, seed=seed)
    elif file.kind == "counterfact":
        for line, key, value in iter_json_object(file.path, text=text):
            yield counterfact_record(file, line, key, value, domain=domain)
    else:
        for line, record in iter_json_list(file.path, check_storable=False, text=text):
            yield release_record(file, line, record, domain=domain, seed=seed)
