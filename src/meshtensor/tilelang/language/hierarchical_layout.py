"""SUNMMIO's hierarchical layout: where each element of a tensor lies in memory.

A layout is ``hdims`` (a mixed radix per logical dim: logical dim ``d`` is the
``hdims[groups[d][0]:groups[d][1]]`` digits, most significant first), ``hstrides`` (one
stride per digit) and ``groups``. Element ``(i0, i1, ...)`` lies at ``sum(h_k *
hstrides[k])`` over its digits ``h_k``. ``T.MeshTensor(..., hierarchical_dims=,
hierarchical_strides=, hierarchical_groups=)`` names the global tensor's layout; each
core's DRAM keeps its shard in the layout :meth:`HierarchicalLayout.shard` derives (the
most significant digit of a split dim divided by its shard count, the strides made
compact in the global strides' order), as SUNMMIO's TileLang derives it. A layout moves
elements, never changes a value: kernels index the logical tensor, so the emulator
records it and runs the kernel on logical values.

>>> lay = HierarchicalLayout((2, 2, 2, 2), (8, 2, 4, 1), ((0, 2), (2, 4)))
>>> lay.logical_shape
(4, 4)
>>> lay.offsets().tolist()
[[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...mesh import _is_int

__all__ = ["HierarchicalLayout", "make_hierarchical_layout", "make_blockwise_zz_layout"]

#: the most elements whose offsets are compared one by one to prove a layout has no
#: two elements in one place (larger layouts must pass the stride-order test)
_EXACT_CHECK_LIMIT = 1 << 22


def _ints(value: Any, what: str, low: int) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)):
        raise ValueError(f"hierarchical layout: {what} must be a tuple of ints, got "
                         f"{value!r}")
    out = []
    for k, v in enumerate(value):
        if not _is_int(v) or isinstance(v, bool) or int(v) < low:
            raise ValueError(f"hierarchical layout: {what}[{k}] must be an int >= {low}, "
                             f"got {v!r}")
        out.append(int(v))
    return tuple(out)


@dataclass(frozen=True)
class HierarchicalLayout:
    """A hierarchical layout (module docstring), validated: ``hdims`` and ``hstrides``
    of one length, ``groups`` contiguous ``(start, end)`` ranges covering the digits in
    order, and no two elements at one offset (a ``ValueError`` names what is wrong).

    >>> str(HierarchicalLayout((4, 32, 128), (32, 1, 4096), ((0, 2), (2, 3))))
    'hierarchical(hdims=((4, 32), (128,)), hstrides=((32, 1), (4096,)))'
    """

    hdims: tuple[int, ...]
    hstrides: tuple[int, ...]
    groups: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        hdims = _ints(self.hdims, "hierarchical_dims", 1)
        hstrides = _ints(self.hstrides, "hierarchical_strides", 0)
        if len(hdims) != len(hstrides):
            raise ValueError(f"hierarchical layout: hierarchical_dims {hdims} and "
                             f"hierarchical_strides {hstrides} differ in length "
                             f"({len(hdims)} != {len(hstrides)})")
        if not isinstance(self.groups, (tuple, list)) or not self.groups:
            raise ValueError(f"hierarchical layout: hierarchical_groups must be a non-empty "
                             f"tuple of (start, end) pairs, got {self.groups!r}")
        groups, at = [], 0
        for d, g in enumerate(self.groups):
            if not isinstance(g, (tuple, list)) or len(g) != 2:
                raise ValueError(f"hierarchical layout: hierarchical_groups[{d}] must be a "
                                 f"(start, end) pair, got {g!r}")
            start, end = _ints(g, f"hierarchical_groups[{d}]", 0)
            if start != at or end <= start:
                raise ValueError(f"hierarchical layout: hierarchical_groups[{d}] = {g!r}: "
                                 f"groups must cover hierarchical_dims in order, each at "
                                 f"least one digit; this one must start at {at}")
            groups.append((start, end))
            at = end
        if at != len(hdims):
            raise ValueError(f"hierarchical layout: hierarchical_groups {tuple(groups)} cover "
                             f"{at} of the {len(hdims)} hierarchical_dims")
        object.__setattr__(self, "hdims", hdims)
        object.__setattr__(self, "hstrides", hstrides)
        object.__setattr__(self, "groups", tuple(groups))
        self._check_no_overlap()

    @property
    def logical_shape(self) -> tuple[int, ...]:
        """Each logical dim's size: the product of its digits."""
        return tuple(math.prod(self.hdims[s:e]) for s, e in self.groups)

    def offsets(self) -> np.ndarray:
        """Every element's offset, an int64 array of :attr:`logical_shape`."""
        grids = np.ix_(*(np.arange(n) for n in self.logical_shape))
        total = np.zeros(self.logical_shape, np.int64)
        for (s, e), idx in zip(self.groups, grids):
            rem = idx
            for k in range(e - 1, s - 1, -1):  # least significant digit first
                total = total + (rem % self.hdims[k]) * self.hstrides[k]
                rem = rem // self.hdims[k]
        return total

    def _check_no_overlap(self) -> None:
        digits = sorted((s, n) for n, s in zip(self.hdims, self.hstrides) if n > 1)
        span = 1
        for stride, n in digits:  # each digit steps past everything below it
            if stride < span:
                break
            span = stride * n
        else:
            return
        size = math.prod(self.hdims)
        if size > _EXACT_CHECK_LIMIT:
            raise ValueError(f"hierarchical layout: {self}: a digit's stride is smaller than "
                             f"the span of the digits below it, and the layout has too many "
                             f"elements ({size}) to show that no two share an offset; give "
                             f"each digit a stride at least the span below it")
        flat = self.offsets().ravel()
        if np.unique(flat).size != flat.size:
            raise ValueError(f"hierarchical layout: {self} puts two elements at one offset "
                             f"(hierarchical_strides {self.hstrides}); a layout needs one "
                             f"place per element")

    def shard(self, counts: Sequence[int]) -> "HierarchicalLayout":
        """Each core's layout when logical dim ``d`` is split into ``counts[d]`` parts:
        the dim's most significant digit divided by its count, then compact strides in
        the order of the global ones (ties by position), as SUNMMIO's TileLang derives
        them.

        >>> lay = HierarchicalLayout((4, 32, 128), (32, 1, 4096), ((0, 2), (2, 3)))
        >>> str(lay.shard((4, 1)))
        'hierarchical(hdims=((1, 32), (128,)), hstrides=((32, 1), (32,)))'
        """
        if len(counts) != len(self.groups):
            raise ValueError(f"hierarchical layout: {len(counts)} shard counts for "
                             f"{len(self.groups)} logical dims")
        hdims = list(self.hdims)
        for d, ((s, _), k) in enumerate(zip(self.groups, counts)):
            if k > 1 and hdims[s] % k:
                raise ValueError(f"hierarchical layout: the most significant hierarchical "
                                 f"dim ({hdims[s]}) of logical dim {d} is not divisible by "
                                 f"its shard count ({k}): each core's part must be whole "
                                 f"digits")
            hdims[s] //= max(k, 1)
        strides = [0] * len(hdims)
        step = 1
        for k in sorted(range(len(hdims)), key=lambda i: self.hstrides[i]):
            strides[k] = step
            step *= hdims[k]
        return HierarchicalLayout(tuple(hdims), tuple(strides), self.groups)

    def __str__(self) -> str:
        def grouped(xs: Sequence[int]) -> str:
            return "(" + ", ".join(str(tuple(xs[s:e])) for s, e in self.groups) + ")"
        return f"hierarchical(hdims={grouped(self.hdims)}, hstrides={grouped(self.hstrides)})"


def make_hierarchical_layout(hdims: Sequence[int], hstrides: Sequence[int],
                             groups: Sequence[Sequence[int]]) -> HierarchicalLayout:
    """``tilelang.layout.make_hierarchical_layout``: the layout, recorded (what
    ``T.annotate_layout`` keeps for a buffer).

    >>> make_hierarchical_layout([2, 2], [1, 2], [(0, 1), (1, 2)]).offsets().tolist()
    [[0, 2], [1, 3]]
    """
    return HierarchicalLayout(tuple(hdims), tuple(hstrides),
                              tuple(tuple(g) for g in groups))


def make_blockwise_zz_layout(buffer: Any, block_size: Sequence[int] = (32, 32)
                             ) -> HierarchicalLayout:
    """``tilelang.layout.make_blockwise_zz_layout``: a 2-D tensor (``(rows, cols)``, or
    a buffer: its last dim and the product of the others) in blocks of ``block_size``,
    blocks row by row, each block row-major.

    >>> make_blockwise_zz_layout((4, 4), (2, 2)).offsets().tolist()
    [[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]]
    """
    if hasattr(buffer, "region"):  # a BufferRegion: its extents
        shape = [r.extent for r in buffer.region]
    else:  # a Buffer, a BufferLoad (its buffer) or (rows, cols)
        shape = getattr(getattr(buffer, "buffer", buffer), "shape", buffer)
    try:
        dims = [int(n) for n in shape]
    except (TypeError, ValueError):
        raise ValueError(f"make_blockwise_zz_layout: expected a buffer or (rows, cols) of "
                         f"ints, got {buffer!r}") from None
    if len(dims) < 2:
        raise ValueError(f"make_blockwise_zz_layout: needs a 2-D shape, got {tuple(dims)}")
    rows, cols = math.prod(dims[:-1]), dims[-1]
    rb, cb = (int(b) for b in block_size)
    if rb < 1 or cb < 1 or rows % rb or cols % cb:
        raise ValueError(f"make_blockwise_zz_layout: shape ({rows}, {cols}) is not whole "
                         f"blocks of {(rb, cb)}; rows and columns must be multiples of the "
                         f"block size")
    return HierarchicalLayout((rows // rb, rb, cols // cb, cb),
                              (rb * cb * (cols // cb), cb, rb * cb, 1), ((0, 2), (2, 4)))
