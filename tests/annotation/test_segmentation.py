"""The segmentation rule as a pure function: examples and properties (hypothesis)."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.segmentation import segment_windows

MIN, MAX = 150, 200


def words(counts, windows):
    return [sum(counts[a:b]) for a, b in windows]


@pytest.mark.parametrize(("counts", "expected"), [
    ([], []),
    ([10, 20], [(0, 2)]),                           # a session under 150 words is one window
    ([100, 60, 100, 60], [(0, 2), (2, 4)]),         # close as soon as >= 150
    ([100, 60, 100, 60, 40], [(0, 2), (2, 5)]),     # a short tail joins the window before
    ([300, 10, 150], [(0, 1), (1, 3)]),             # a long turn is never split
    ([149, 1, 149], [(0, 3)]),                      # the tail of 149 joins
])
def test_examples(counts, expected):
    assert segment_windows(counts, min_words=MIN, max_words=MAX) == expected


def test_bounds_are_checked():
    with pytest.raises(ValueError):
        segment_windows([1], min_words=200, max_words=150)


@settings(max_examples=300, deadline=None)
@given(counts=st.lists(st.integers(min_value=0, max_value=400), max_size=80),
       min_words=st.integers(min_value=1, max_value=300), extra=st.integers(min_value=0, max_value=200))
def test_properties(counts, min_words, extra):
    max_words = min_words + extra
    windows = segment_windows(counts, min_words=min_words, max_words=max_words)
    # Every turn lands in exactly one window, in order, windows contiguous and non-empty.
    assert [i for a, b in windows for i in range(a, b)] == list(range(len(counts)))
    assert all(a < b for a, b in windows)
    sizes = words(counts, windows)
    if sum(counts) < min_words:
        assert len(windows) == (1 if counts else 0)
        return
    # Every window holds at least min_words; every window but the last closed as soon as it could:
    # its words before its last turn are under min_words (so it passes max only when that turn is long).
    assert all(size >= min_words for size in sizes)
    for (a, b), size in zip(windows[:-1], sizes[:-1]):
        assert sum(counts[a:b - 1]) < min_words
        if size > max_words:
            assert counts[b - 1] > max_words - min_words
    # The last window is a window closed by the rule plus, maybe, a tail under min_words.
    a, b = windows[-1]
    closing = next(i for i in range(a, b) if sum(counts[a:i + 1]) >= min_words)
    assert sum(counts[closing + 1:b]) < min_words
