"""The simulator's data path (issue 30 item 15): pieces assembled into a new array in
bands, and pieces that continue each other in memory merged into one copy, give
exactly what piece-by-piece assignment gives, for any cut, order, dtype and source."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from meshtensor import boxes
from meshtensor.boxes import _coalesce, copy_pieces


def _cuts(draw, n):
    k = draw(st.integers(1, min(n, 4)))
    inner = sorted(draw(st.sets(st.integers(1, n - 1), max_size=k - 1))) if n > 1 else []
    return [0] + inner + [n]


@st.composite
def grids(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 9)) for _ in range(rank))
    cuts = [_cuts(draw, n) for n in shape]
    source = draw(st.sampled_from(["views", "copies", "mixed", "reversed"]))
    order = draw(st.sampled_from(["row-major", "shuffled"]))
    dtype = draw(st.sampled_from([np.float32, np.int64, np.uint8]))
    band = draw(st.sampled_from([1, 7, 64, 1 << 22]))
    return shape, cuts, source, order, dtype, band, draw(st.randoms(use_true_random=False))


@settings(max_examples=300, deadline=None)
@given(grids())
def test_copy_pieces_equals_assignment(case):
    shape, cuts, source, order, dtype, band, rnd = case
    x = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape).astype(dtype)
    if source == "reversed":  # views with negative strides: never merged wrongly
        x = x[tuple(slice(None, None, -1) for _ in shape)]
    import itertools
    pieces = []
    for idx in itertools.product(*[range(len(c) - 1) for c in cuts]):
        dst = tuple(slice(c[i], c[i + 1]) for c, i in zip(cuts, idx))
        src = x[dst]
        if source == "copies" or (source == "mixed" and rnd.random() < 0.5):
            src = src.copy()
        pieces.append((dst, src))
    if order == "shuffled":
        rnd.shuffle(pieces)
    want = np.zeros(shape, dtype)
    for dst, src in pieces:
        want[dst] = src
    old = boxes.BAND_BYTES
    boxes.BAND_BYTES = band
    try:
        got = np.zeros(shape, dtype)
        copy_pieces(got, pieces)
    finally:
        boxes.BAND_BYTES = old
    np.testing.assert_array_equal(got, want)


def test_only_continuing_views_merge():
    x = np.arange(48).reshape(6, 8)
    rows = [((slice(0, 3), slice(0, 8)), x[0:3]), ((slice(3, 6), slice(0, 8)), x[3:6])]
    (merged,) = _coalesce(rows, 0)  # one buffer, the second starts where the first ends
    assert merged[0] == (slice(0, 6), slice(0, 8)) and np.array_equal(merged[1], x)
    gap = [((slice(0, 3), slice(0, 8)), x[0:3]), ((slice(3, 6), slice(0, 8)), x[2:5])]
    assert len(_coalesce(gap, 0)) == 2  # adjacent destinations, not adjacent sources
    other = [((slice(0, 3), slice(0, 8)), x[0:3]), ((slice(3, 6), slice(0, 8)), x[3:6].copy())]
    assert len(_coalesce(other, 0)) == 2  # another buffer
    cols = [((slice(0, 6), slice(0, 4)), x[:, 0:4]), ((slice(0, 6), slice(4, 8)), x[:, 4:8])]
    assert len(_coalesce(cols, 1)) == 1 and len(_coalesce(cols, 0)) == 2
    merged = _coalesce(cols, 1)[0][1]
    with pytest.raises(ValueError):
        merged[0, 0] = 1  # a read-only view of the source
