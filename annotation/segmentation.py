"""The segmentation rule of the spec, as a pure function (no database).

Walk a session's turns in order, adding each to the open window, and close the window
as soon as it holds at least `min_words` words. A trailing window under `min_words` is
joined to the window before it; a session under `min_words` in all is one window.
Turns are never split, windows never overlap.

A window passes `max_words` only when its last turn is long (the words before it were
under `min_words`) or when a short tail was joined to it; the report counts those.
"""
from collections.abc import Sequence


def segment_windows(word_counts: Sequence[int], *, min_words: int, max_words: int) -> list[tuple[int, int]]:
    """Windows as half-open turn ranges `(start, stop)` covering every turn once, in order."""
    if min_words < 1 or max_words < min_words:
        raise ValueError(f"bounds must satisfy 1 <= min_words <= max_words (got {min_words}, {max_words})")
    windows: list[tuple[int, int]] = []
    start, words = 0, 0
    for index, count in enumerate(word_counts):
        words += count
        if words >= min_words:
            windows.append((start, index + 1))
            start, words = index + 1, 0
    if start < len(word_counts):  # a tail under min_words
        if windows:
            windows[-1] = (windows[-1][0], len(word_counts))
        else:
            windows.append((start, len(word_counts)))
    return windows
