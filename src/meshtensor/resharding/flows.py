"""Who sends how many bytes to whom in each kind of step, from per-device boxes: the
closed-form flows of the collectives (no ``k x k`` arrays) and the rows of
point-to-point transfers (every device receives exactly the cells it lacks).

A step's flows are a function of its op, mesh axes, parameters, layouts, global shape
and itemsize: :mod:`.steps` builds them from here when first read, and the planners
build them here while they compare candidates.
"""

from __future__ import annotations

from typing import Any, Union

import numpy as np

from ..boxes import held_boxes, missing_boxes, volume
from ..cost import Flows, GroupFlows
from ..mesh import Mesh
from ..sharding import Sharding

StepFlows = Union[Flows, GroupFlows]
#: Point-to-point rows: device ``send[i]`` sends the global box ``[lo[i], hi[i])`` to
#: device ``recv[i]``.
Rows = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def piece(n: np.ndarray, k: int, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Piece ``p`` of ``n`` cut ``k`` ways by the ceil-div rule, as ``(start, stop)``.

    >>> [a.tolist() for a in piece(np.array([10]), 4, np.arange(4))]
    [[0, 3, 6, 9], [3, 6, 9, 10]]
    """
    c = -(-n // k)
    return np.minimum(p * c, n), np.minimum((p + 1) * c, n)


def collective_flows(op: str, mesh: Mesh, lo, hi, axes, itemsize, **kw) -> StepFlows:
    """Closed-form flows of ``all_slice``, ``all_gather`` or ``all_to_all`` on the boxes
    ``[lo, hi)`` (they depend on the boxes' extents only; no k x k arrays)."""
    if op == "all_slice":
        return Flows.empty()
    groups = mesh.group_array(axes)
    glo, ghi = lo[groups], hi[groups]  # (G, k, rank)
    if op == "all_gather":  # member i sends its whole box to every other member
        return GroupFlows(axes, groups, send=volume(glo, ghi) * itemsize)
    d = kw["split_axis"]  # all_to_all: member j gets piece j (along d) of every member
    k = groups.shape[1]
    a, b = piece(ghi[:, :, d] - glo[:, :, d], k, np.arange(k)[None, :])
    ext = np.maximum(ghi - glo, 0)
    rest = np.prod(np.delete(ext, d, axis=2), axis=2, dtype=np.int64)  # (G, k) per sender i
    # bytes[g, i, j] = rest[g, i] * len(piece j); pieces are cut alike on every member
    return GroupFlows(axes, groups, u=rest * itemsize, w=(b - a))


def all_reduce_flows(src: Sharding, shape, itemsize) -> GroupFlows:
    """``all_reduce`` over ``src``'s partial axes = reduce_scatter + all_gather of the
    flattened local array (partial terms cover whole local arrays, halos too)."""
    P = src.partial_axes
    groups = src.mesh.group_array(P)
    k = groups.shape[1]
    local = volume(*src.windows(shape))
    a, b = piece(local[groups], k, np.arange(k)[None, :])
    p = (b - a) * itemsize  # (G, k): piece j's bytes
    return GroupFlows(P, groups, send=p, recv=p)


def reduce_scatter_flows(src: Sharding, d: int, shape, itemsize) -> GroupFlows:
    """``reduce_scatter`` of ``src``'s partial axes onto tensor dim ``d``: member ``j``
    receives piece ``j`` (along ``d``) from every other member."""
    P = src.partial_axes
    groups = src.mesh.group_array(P)
    k = groups.shape[1]
    lo, hi = src.regions(shape)
    ext = hi[groups[:, 0]] - lo[groups[:, 0]]  # (G, rank), equal inside a group
    pa, pb = piece(ext[:, d:d + 1], k, np.arange(k)[None, :])
    rest_vol = np.prod(np.delete(ext, d, axis=1), axis=1, dtype=np.int64)[:, None]
    return GroupFlows(P, groups, recv=(pb - pa) * rest_vol * itemsize)


def transfer_rows(before: Sharding, after: Sharding, shape, held=None,
                  spread: bool = False) -> Rows:
    """Every device receives the in-tensor cells of its ``after`` array that ``held``
    (default: what its ``before`` array holds) does not cover, each from a device whose
    core has it: the nearest one, or with ``spread`` replicas taken in turn (see
    :func:`meshtensor.boxes.split_by_owner`). Only pairs that exchange data appear: the
    wanted boxes are cut by the source's shard boundaries per dim (``searchsorted``),
    never by scanning pairs. Rows are read-only."""
    h_lo, h_hi = held if held is not None else held_boxes(before, shape)
    rows = missing_boxes(before, shape, *held_boxes(after, shape), h_lo, h_hi, spread=spread)
    for a in rows:
        a.flags.writeable = False
    return rows


def rows_flows(rows: Rows, itemsize: int) -> Flows:
    send, recv, lo, hi = rows
    return Flows(send, recv, np.prod(hi - lo, axis=1, dtype=np.int64) * itemsize)


def best_transfer_rows(before: Sharding, after: Sharding, shape, itemsize) -> Rows:
    """Link-aware choice among byte-optimal transfers: every replica of a shard holds
    the same cells, so which one sends changes only the links used. The nearest replica
    (fewest link bytes) and replicas taken in turn are both tried; the lower
    busiest-link load under XY routing wins (ties: nearest)."""
    near = transfer_rows(before, after, shape)
    mesh = before.mesh
    if not len(near[0]) or not any(mesh.shape[a] > 1 for a in before.replicated_axes):
        return near
    spread = transfer_rows(before, after, shape, spread=True)
    if rows_flows(spread, itemsize).max_link_bytes(mesh) < \
            rows_flows(near, itemsize).max_link_bytes(mesh):
        return spread
    return near


def update_halo_flows(cur: Sharding, tgt: Sharding, shape, itemsize) -> Flows:
    """``update_halo`` from ``cur`` (no halos) to ``tgt`` (``cur`` plus halos): every
    in-tensor halo cell is refilled from its owner's core."""
    return rows_flows(transfer_rows(cur, tgt, shape, held=cur.regions(shape)), itemsize)


def step_flows(op: str, mesh_axes: tuple[int, ...], params: tuple[tuple[str, Any], ...],
               before: Sharding, after: Sharding, shape, itemsize) -> StepFlows:
    """The flows of a collective step (every op but ``"transfers"``)."""
    kw = dict(params)
    if op == "update_halo":
        return update_halo_flows(before, after, shape, itemsize)
    if op == "all_reduce":
        return all_reduce_flows(before, shape, itemsize)
    if op == "reduce_scatter":
        return reduce_scatter_flows(before, kw["scatter_axis"], shape, itemsize)
    return collective_flows(op, before.mesh, *before.regions(shape), mesh_axes, itemsize, **kw)
