"""Box arithmetic on device regions: each device's part of a tensor as integer
intervals per dim, vectorised over devices. Shared by the planner (which device needs
what from whom) and the TIR passes (which core a copy reads from)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .sharding import Sharding


def volume(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Cells of each box ``[lo, hi)`` (rows of ``(n, rank)`` arrays); empty boxes give 0.

    >>> volume(np.array([[0, 0]]), np.array([[2, 3]])).tolist()
    [6]
    """
    return np.prod(np.maximum(hi - lo, 0), axis=-1, dtype=np.int64)


def box_slices(lo, hi, origin=None) -> tuple[slice, ...]:
    """A box ``[lo, hi)`` as slices of an array whose cell 0 sits at ``origin``
    (default: the global origin).

    >>> box_slices([2, 0], [4, 3], origin=[1, 0])
    (slice(1, 3, None), slice(0, 3, None))
    """
    if origin is None:
        origin = [0] * len(lo)
    return tuple(slice(int(a - w), int(b - w)) for a, b, w in zip(lo, hi, origin))


#: Pieces are written into a new array in bands of about this many bytes along its
#: first axis: a fresh array filled band by band is touched (and page-faulted) nearly in
#: address order, while filling it piece by piece strides over all of it once per piece
#: (measured in benchmarks/bench_core.py: 1.3x-1.5x a numpy.copy of the same bytes,
#: against 1.0x-1.1x banded).
BAND_BYTES = 4 << 20
#: Above this many pieces the bands are not worth their bookkeeping (each piece is a
#: Python-level copy either way).
BAND_MAX_PIECES = 256


def copy_pieces(out: np.ndarray, pieces) -> None:
    """``out[dst] = src`` for every ``(dst, src)`` of ``pieces`` (``dst`` a tuple of slices
    with explicit bounds, one per dim of ``out``; pieces do not overlap), written in bands
    of about ``BAND_BYTES`` along ``out``'s first axis where pieces stride across it.

    >>> out = np.zeros((2, 4), dtype=int)
    >>> copy_pieces(out, [((slice(0, 2), slice(0, 2)), np.ones((2, 2), int)),
    ...                   ((slice(0, 2), slice(2, 4)), np.full((2, 2), 2))])
    >>> out.tolist()
    [[1, 1, 2, 2], [1, 1, 2, 2]]
    """
    pieces = list(pieces)
    if 1 < len(pieces) <= BAND_MAX_PIECES:
        for axis in reversed(range(out.ndim)):
            pieces = _coalesce(pieces, axis)
    rows = out.shape[0] if out.ndim > 1 else 0
    row_bytes = out.nbytes // rows if rows else 0
    band = max(BAND_BYTES // row_bytes, 1) if row_bytes else 0
    # one band covers it all, each piece is whole rows (contiguous), or too many pieces
    if not band or band >= rows or len(pieces) > BAND_MAX_PIECES or all(
            all(s.start == 0 and s.stop == n for s, n in zip(dst[1:], out.shape[1:]))
            for dst, _ in pieces):
        for dst, src in pieces:
            out[dst] = src
        return
    for r0 in range(0, rows, band):
        r1 = min(r0 + band, rows)
        for dst, src in pieces:
            a = dst[0].start
            lo, hi = max(a, r0), min(dst[0].stop, r1)
            if lo < hi:
                out[(slice(lo, hi),) + dst[1:]] = src[lo - a:hi - a]


def _coalesce(pieces: list, axis: int) -> list:
    """Merge consecutive pieces that continue each other along ``axis`` both in the
    destination and in memory (views of one buffer, the next starting where the
    previous ends, same strides): one large copy instead of several strided ones. The
    simulator's locals are often such views (``distribute`` and the collectives cut
    one buffer), and a reshard or ``to_global`` that puts them back together then
    copies whole rows."""
    out = [pieces[0]]
    for dst, src in pieces[1:]:
        pdst, psrc = out[-1]
        if (pdst[axis].stop == dst[axis].start
                and all(a == b for i, (a, b) in enumerate(zip(pdst, dst)) if i != axis)
                and _continues(psrc, src, axis)):
            shape = list(psrc.shape)
            shape[axis] += src.shape[axis]
            merged = np.lib.stride_tricks.as_strided(psrc, shape, psrc.strides, writeable=False)
            d = list(pdst)
            d[axis] = slice(pdst[axis].start, dst[axis].stop)
            out[-1] = (tuple(d), merged)
        else:
            out.append((dst, src))
    return out


def _continues(a: np.ndarray, b: np.ndarray, axis: int) -> bool:
    """``b`` is the part of one buffer that follows ``a`` along ``axis`` (same dtype,
    strides and extent on the other axes)."""
    if a.dtype != b.dtype or a.strides != b.strides or a.ndim != b.ndim or a.size == 0:
        return False
    if _owner(a) is not _owner(b):
        return False
    if any(m != n for i, (m, n) in enumerate(zip(a.shape, b.shape)) if i != axis):
        return False
    step = a.shape[axis] * a.strides[axis]
    return b.__array_interface__["data"][0] == a.__array_interface__["data"][0] + step


def _owner(a: np.ndarray):
    """The object that owns ``a``'s memory (through views, and through the wrapper
    ``as_strided`` puts between a view and the array it views)."""
    while True:
        b = a.base
        if b is None:
            return a
        if not isinstance(b, np.ndarray):
            b = getattr(b, "base", None)
            if not isinstance(b, np.ndarray):
                return a.base
        a = b


def clip_boxes(lo: np.ndarray, hi: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Boxes cut to the tensor ``[0, shape)``."""
    n = np.asarray(shape, dtype=np.int64)
    lo2 = np.minimum(np.maximum(lo, 0), n)  # np.clip costs more on small arrays
    return lo2, np.maximum(np.minimum(hi, n), lo2)


@lru_cache(maxsize=256)
def held_boxes(s: Sharding, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The in-tensor cells each device's local array holds (core and halos), as boxes
    ``(lo, hi)``; read-only, cached per ``(sharding, shape)`` like ``Sharding.windows``.

    >>> from meshtensor import Mesh
    >>> [a.tolist() for a in held_boxes(Sharding(Mesh([2]), [[0]], halo_sizes=[1, 1]), (4,))]
    [[[0], [1]], [[3], [4]]]
    """
    lo, hi = clip_boxes(*s.windows(shape), shape)
    lo.flags.writeable = hi.flags.writeable = False
    return lo, hi


def box_difference(t_lo, t_hi, h_lo, h_hi):
    """Per row, ``[t_lo, t_hi) minus [h_lo, h_hi)`` as disjoint boxes: returns
    ``(row, lo, hi)`` arrays (at most ``2 * rank`` boxes per row)."""
    n, rank = t_lo.shape
    i_lo, i_hi = np.maximum(t_lo, h_lo), np.minimum(t_hi, h_hi)
    disjoint = np.any(i_lo >= i_hi, axis=1) if rank else np.zeros(n, dtype=bool)
    nonempty = volume(t_lo, t_hi) > 0
    rows, los, his = [np.flatnonzero(disjoint & nonempty)], [t_lo[disjoint & nonempty]], \
        [t_hi[disjoint & nonempty]]
    ov = np.flatnonzero(~disjoint & nonempty)
    c_lo, c_hi = t_lo[ov].copy(), t_hi[ov].copy()
    for d in range(rank):
        lower = c_lo[:, d] < i_lo[ov, d]
        lo_b, hi_b = c_lo[lower].copy(), c_hi[lower].copy()
        hi_b[:, d] = i_lo[ov[lower], d]
        rows.append(ov[lower]); los.append(lo_b); his.append(hi_b)
        upper = c_hi[:, d] > i_hi[ov, d]
        lo_b, hi_b = c_lo[upper].copy(), c_hi[upper].copy()
        lo_b[:, d] = i_hi[ov[upper], d]
        rows.append(ov[upper]); los.append(lo_b); his.append(hi_b)
        c_lo[:, d], c_hi[:, d] = i_lo[ov, d], i_hi[ov, d]
    out_rows = np.concatenate(rows).astype(np.int64)
    n_out = len(out_rows)
    return (out_rows, np.concatenate(los).reshape(n_out, rank),
            np.concatenate(his).reshape(n_out, rank))


def split_by_owner(src: Sharding, shape, recv, lo, hi, *, spread: bool = False):
    """Cut boxes wanted by devices ``recv`` along ``src``'s shard boundaries (interval
    arithmetic per dim) and name each piece's owner: a device whose core holds it.

    By default the owner is the holder that agrees with the receiver on every mesh axis
    that does not split (the nearest one on the mesh; partial terms stay in their
    class). With ``spread``, along ``src``'s replicated axes a receiver takes its
    ``t``-th piece from the replica shifted by ``t`` plus the sum of its other
    coordinates (a Latin-square assignment): the same bytes, other links.

    Returns ``(owner, recv, lo, hi, rows)`` with one entry per non-empty piece;
    ``rows`` says which input box each piece was cut from.

    >>> from meshtensor import Mesh
    >>> s = Sharding(Mesh([2]), [[0]])
    >>> split_by_owner(s, (4,), np.array([0]), np.array([[1]]), np.array([[4]]))[0].tolist()
    [0, 1]
    """
    mesh = src.mesh
    n_box = len(recv)
    # Per split dim, the run of shards each box overlaps: first index and count. A
    # box's pieces are the product of its runs, expanded once (one gather per array,
    # not one per dim).
    runs = []
    total = np.ones(n_box, dtype=np.int64)
    for d in src.split_dims:
        b = src.dim_bounds(shape, d)
        j0 = np.searchsorted(b, lo[:, d], side="right") - 1
        j1 = np.searchsorted(b, hi[:, d] - 1, side="right") - 1
        counts = np.maximum(j1 - j0 + 1, 0)
        runs.append((d, b, j0, counts))
        total = total * counts
    if np.all(total == 1):
        idx = None
        recv, lo, hi, rows = recv, lo.copy(), hi.copy(), np.arange(n_box)
    else:
        idx = np.repeat(np.arange(n_box), total)
        offset = np.arange(len(idx)) - (np.cumsum(total) - total)[idx]
        recv, lo, hi, rows = recv[idx], lo[idx], hi[idx], idx
    # The owner is the receiver moved to the shard's coordinates on the split axes
    # (and, with ``spread``, to another replica): linear index arithmetic, per axis.
    strides = np.cumprod((1,) + mesh.shape[::-1])[:-1][::-1].astype(np.int64)
    moves: list[tuple[int, np.ndarray]] = []  # (mesh axis, new coordinate)
    for d, b, j0, counts in reversed(runs):  # mixed radix: the last dim varies fastest
        if idx is None:
            j = j0
        else:
            c = counts[idx]
            j = j0[idx] + offset % c
            offset = offset // c
        lo[:, d] = np.maximum(lo[:, d], b[j])
        hi[:, d] = np.minimum(hi[:, d], b[j + 1])
        axes = src.axes_of(d)
        moves += zip(axes, np.unravel_index(j, [mesh.shape[a] for a in axes]))
    if runs:
        keep = np.all(lo < hi, axis=1)
        if not keep.all():  # drops empty shards
            recv, lo, hi, rows = recv[keep], lo[keep], hi[keep], rows[keep]
            moves = [(a, c[keep]) for a, c in moves]
    coords = mesh.coords
    send = np.array(recv, dtype=np.int64, copy=True)
    for a, c in moves:
        send += (c - coords[recv, a]) * strides[a]
    if spread and len(recv):
        order = np.argsort(recv, kind="stable")
        first = np.searchsorted(recv[order], recv[order], side="left")
        turn = np.empty(len(recv), dtype=np.int64)
        turn[order] = np.arange(len(recv)) - first  # the piece's place in its receiver's list
        rc = coords[recv]
        for a in src.replicated_axes:
            others = rc.sum(axis=1) - rc[:, a]
            send += ((rc[:, a] + turn + others) % mesh.shape[a] - rc[:, a]) * strides[a]
    return send, recv, lo, hi, rows


def missing_boxes(src: Sharding, shape, want_lo, want_hi, held_lo, held_hi, spread: bool = False):
    """What every device must receive: the cells of its wanted box ``[want_lo, want_hi)``
    that its held box does not cover, cut by ``src``'s shards, each with the device whose
    core holds it (see :func:`split_by_owner`): ``(owner, recv, lo, hi)``. Boxes are one
    row per device (linear order); only pairs that exchange data appear."""
    rows, lo, hi = box_difference(want_lo, want_hi, held_lo, held_hi)
    owner, recv, lo, hi, _ = split_by_owner(src, shape, rows, lo, hi, spread=spread)
    return owner, recv, lo, hi


@lru_cache(maxsize=64)
def refill_boxes(s: Sharding, shape: tuple[int, ...]):
    """The halo cells of every device that lie inside the tensor, as boxes with the
    device whose core holds them: ``(owner, recv, lo, hi)``. This is ``update_halo``'s
    traffic; owners agree with the receiver on every axis that does not split. Cached
    per ``(sharding, shape)`` (read-only arrays): a stencil refills the same halos every
    step.

    >>> from meshtensor import Mesh
    >>> s = Sharding(Mesh([2]), [[0]], halo_sizes=[1, 1])
    >>> [a.tolist() for a in refill_boxes(s, (4,))]
    [[0, 1], [1, 0], [[1], [2]], [[2], [3]]]
    """
    out = missing_boxes(s, shape, *clip_boxes(*s.windows(shape), shape), *s.regions(shape))
    for a in out:
        a.flags.writeable = False
    return out
