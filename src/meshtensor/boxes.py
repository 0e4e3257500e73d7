"""Box arithmetic on device regions: each device's part of a tensor as integer
intervals per dim, vectorised over devices. Shared by the planner (which device needs
what from whom) and the TIR passes (which core a copy reads from)."""

from __future__ import annotations

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


def clip_boxes(lo: np.ndarray, hi: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Boxes cut to the tensor ``[0, shape)``."""
    n = np.asarray(shape, dtype=np.int64)
    lo2 = np.clip(lo, 0, n)
    return lo2, np.maximum(np.clip(hi, 0, n), lo2)


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
    return (np.concatenate(rows).astype(np.int64),
            np.concatenate(los).reshape(-1, rank), np.concatenate(his).reshape(-1, rank))


def split_by_owner(src: Sharding, shape, recv, lo, hi):
    """Cut boxes wanted by devices ``recv`` along ``src``'s shard boundaries (interval
    arithmetic per dim) and name each piece's owner: the holder of that shard that
    agrees with the receiver on every other mesh axis, the nearest one on the mesh.

    Returns ``(owner, recv, lo, hi, rows)`` with one entry per non-empty piece;
    ``rows`` says which input box each piece was cut from.
    """
    mesh = src.mesh
    sender_coords = mesh.coords[recv].copy()
    rows = np.arange(len(recv))
    for d in src.split_dims:
        b = src.dim_bounds(shape, d)
        j0 = np.searchsorted(b, lo[:, d], side="right") - 1
        j1 = np.searchsorted(b, hi[:, d] - 1, side="right") - 1
        counts = np.maximum(j1 - j0 + 1, 0)
        idx = np.repeat(np.arange(len(recv)), counts)
        starts = np.cumsum(counts) - counts
        j = j0[idx] + (np.arange(len(idx)) - starts[idx])
        recv, lo, hi, sender_coords, rows = (recv[idx], lo[idx].copy(), hi[idx].copy(),
                                             sender_coords[idx], rows[idx])
        lo[:, d] = np.maximum(lo[:, d], b[j])
        hi[:, d] = np.minimum(hi[:, d], b[j + 1])
        keep = lo[:, d] < hi[:, d]  # drops empty shards
        recv, lo, hi, sender_coords, j, rows = (recv[keep], lo[keep], hi[keep],
                                                sender_coords[keep], j[keep], rows[keep])
        axes = src.axes_of(d)
        parts = np.unravel_index(j, [mesh.shape[a] for a in axes])
        for a, c in zip(axes, parts):
            sender_coords[:, a] = c
    send = np.ravel_multi_index(sender_coords.T, mesh.shape) if mesh.ndim else \
        np.zeros(len(recv), dtype=np.int64)
    return np.asarray(send, dtype=np.int64), recv, lo, hi, rows
