"""The general planner: any pair of shardings on one mesh.

How a plan is chosen (costs from :mod:`meshtensor.cost`)::

    partial source   -> all_reduce over the partial axes, or reduce_scatter onto a
                        tensor dim (the partial axes become its innermost splits),
                        whichever makes the whole plan cheaper
    split / replicate
      split an axis        S(a) -> S(a,b)      all_slice   (no communication)
      unsplit an axis      S(a,b) -> S(a)      all_gather
      move an axis         S(a,b)R -> S(a)S(b) all_to_all
      halos only differ    (source has none)   update_halo
      anything else        transfers: every device receives exactly the cells of its
                           target it does not hold, from a replica holding them (the
                           nearest, or replicas in turn when that lowers the busiest
                           link under XY routing)

Planning works on structure, not on pairs of devices: costs are closed-form (per-device
boxes, and collectives as :class:`~meshtensor.cost.GroupFlows`), and the transfers,
which always move exactly the lower bound, are built only when no collective sequence
(MLIR's patterns, applied greedily with slicing first) reaches that bound. So without
partial sources ``bytes_moved == lower_bound_bytes`` for every pair, halos included.
The closed-form fast path for even layouts on small meshes is :mod:`.even`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..boxes import held_boxes, volume
from ..cost import Flows
from ..mesh import Mesh
from ..sharding import Sharding
from .flows import (all_reduce_flows, best_transfer_rows, collective_flows, piece,
                    reduce_scatter_flows, rows_flows, update_halo_flows)
from .plan import ReshardPlan, new_plan
from .steps import Step, TransferStep, make_step


def same_layout(lo, hi, s: Sharding, shape) -> bool:
    """Boxes ``[lo, hi)`` equal ``s``'s core regions: same extents everywhere, same
    starts wherever the box is not empty."""
    slo, shi = s.regions(shape)
    if not ((hi - lo) == (shi - slo)).all():
        return False
    full = volume(lo, hi) > 0
    return bool((lo[full] == slo[full]).all())


def simulate(op: str, mesh: Mesh, lo, hi, axes, itemsize, **kw):
    """Apply a collective to a layout of boxes: the new boxes and the flows, or None
    when the result is not a box per device."""
    groups = mesh.group_array(axes)
    k = groups.shape[1]
    if op == "all_slice":
        d = kw["slice_axis"]
        a, b = piece(hi[:, d] - lo[:, d], k, mesh.in_group_index(axes))
        lo2, hi2 = lo.copy(), hi.copy()
        lo2[:, d], hi2[:, d] = lo[:, d] + a, lo[:, d] + b
        return lo2, hi2, Flows.empty()
    rank = lo.shape[1]
    glo, ghi = lo[groups], hi[groups]  # (G, k, rank)
    cat = kw["gather_axis"] if op == "all_gather" else kw["concat_axis"]
    other = [i for i in range(rank) if i != cat]
    if not ((glo[:, :, other] == glo[:, :1, other]).all()
            and (ghi[:, :, other] == ghi[:, :1, other]).all()
            and (ghi[:, :-1, cat] == glo[:, 1:, cat]).all()):
        return None  # the group's pieces do not tile one box
    lo2, hi2 = lo.copy(), hi.copy()
    lo2[groups, cat] = glo[:, :1, cat]
    hi2[groups, cat] = ghi[:, -1:, cat]
    if op == "all_to_all":
        d = kw["split_axis"]
        a, b = piece(hi[groups, d] - lo[groups, d], k, np.arange(k)[None, :])
        lo2[groups, d] = lo[groups, d] + a
        hi2[groups, d] = lo[groups, d] + b
    return lo2, hi2, collective_flows(op, mesh, lo, hi, axes, itemsize, **kw)


def next_move(c: list[tuple[int, ...]], t: list[tuple[int, ...]]
              ) -> tuple[str, tuple[int, ...], tuple[tuple[str, int], ...]] | None:
    """MLIR's patterns, in order: the next collective ``(op, mesh_axes, params)`` taking
    split axes ``c`` towards ``t`` (``c`` is updated), or None when none applies.

    >>> c = [(0,), ()]
    >>> next_move(c, [(), (0,)]), c
    (('all_to_all', (0,), (('split_axis', 1), ('concat_axis', 0))), [(), (0,)])
    """
    # per dim, the length of the common prefix of c[d] and t[d]; c[d] is a prefix of
    # t[d] exactly when pre[d] == len(c[d]), and "open" dims are those where t[d] goes
    # on past it (they can take more axes)
    pre, open_ = [], []
    for a, b in zip(c, t):
        if a == b:
            p = len(a)
        else:
            p = 0
            for x, y in zip(a, b):
                if x != y:
                    break
                p += 1
        pre.append(p)
        open_.append(p == len(a) < len(b))
    for d, ok in enumerate(open_):  # 1. split further: free
        if ok:
            used = {a for axes in c for a in axes}
            run: tuple[int, ...] = ()
            for a in t[d][len(c[d]):]:
                if a in used:
                    break
                run += (a,)
            if run:
                c[d] = c[d] + run
                return "all_slice", run, (("slice_axis", d),)
    if any(open_):
        for d1, (a, p) in enumerate(zip(c, pre)):  # 2. move the innermost axis of a dim
            if not a or p == len(a):
                continue
            b = a[-1]
            for d2, ok in enumerate(open_):
                if ok and d2 != d1 and t[d2][len(c[d2])] == b:
                    c[d1], c[d2] = a[:-1], c[d2] + (b,)
                    return "all_to_all", (b,), (("split_axis", d2), ("concat_axis", d1))
    # 3. unsplit the axes past the common prefix; highest dim first, so the gathers
    # along dim 0 (contiguous, no re-layout copy) come last
    for d in reversed(range(len(c))):
        if pre[d] < len(c[d]):
            axes = c[d][pre[d]:]
            c[d] = c[d][:pre[d]]
            return "all_gather", axes, (("gather_axis", d),)
    return None


def collective_sequence(cur: Sharding, tgt: Sharding, shape, itemsize,
                        budget: int | None = None) -> tuple[Step, ...] | None:
    """MLIR's patterns applied greedily (:func:`next_move`), each step checked on boxes;
    None if they do not reach ``tgt`` exactly, or (given a ``budget``) as soon as their
    bytes exceed it."""
    mesh, rank = cur.mesh, len(shape)
    c = [cur.axes_of(d) for d in range(rank)]
    t = [tgt.axes_of(d) for d in range(rank)]
    lo, hi = (a.copy() for a in cur.regions(shape))
    steps: list[Step] = []
    before = cur
    spent = 0
    for _ in range(4 * mesh.ndim + 4):
        if c == t:  # same split axes; offsets must agree too
            return tuple(steps) if before == tgt else None
        move = next_move(c, t)
        if move is None:
            return None
        op, axes, params = move
        res = simulate(op, mesh, lo, hi, axes, itemsize, **dict(params))
        if res is None:
            return None
        lo, hi, flows = res
        after = tgt if c == t else Sharding(mesh, c)
        if not same_layout(lo, hi, after, shape):
            return None  # nested cuts differ from the flat ceil-div rule (uneven sizes)
        nbytes = flows.total()
        steps.append(make_step(op, axes, params, before, after, nbytes, shape, itemsize, flows))
        spent += nbytes
        if budget is not None and spent > budget:
            return None  # bytes only add up: this route cannot win any more
        before = after
    return None


def best_transfer_step(before: Sharding, after: Sharding, shape, itemsize) -> TransferStep:
    """The planner's transfer step, rows built (see
    :func:`~.flows.best_transfer_rows`)."""
    rows = best_transfer_rows(before, after, shape, itemsize)
    return TransferStep(before, after, int(rows_flows(rows, itemsize).total()), shape,
                        itemsize, rows)


#: A candidate plan: (bytes, number of steps, a function that builds its steps). Costs
#: are closed-form; only the chosen candidate's point-to-point transfers get built.
Candidate = tuple[int, int, Callable[[], tuple[Step, ...]]]


def plain(cur: Sharding, tgt: Sharding, shape, itemsize, lb: int | None = None) -> Candidate:
    """Best plan between two shardings without partial axes.

    The point-to-point transfers always move exactly the lower bound, so any collective
    route that reaches it wins (ties go to collectives: fewer, regular messages) and the
    transfers are built only when none does.
    """
    if cur == tgt:
        return 0, 0, lambda: ()
    if lb is None:
        lb = lower_bound(cur, tgt, shape, itemsize)
    if not cur.halo_sizes and not tgt.halo_sizes:
        seq = collective_sequence(cur, tgt, shape, itemsize, budget=lb)
        if seq is not None and sum(s.bytes for s in seq) <= lb:
            return lb, len(seq), lambda: seq
    if tgt.halo_sizes and not cur.halo_sizes and cur == tgt.replace(halo_sizes=None):
        # update_halo refills every in-tensor halo cell from its owner's core.
        flows = update_halo_flows(cur, tgt, shape, itemsize)
        if flows.total() <= lb:
            step = make_step("update_halo", (), (), cur, tgt, flows.total(), shape, itemsize,
                             flows)
            return lb, 1, lambda: (step,)
    return lb, 1, lambda: (best_transfer_step(cur, tgt, shape, itemsize),)


def plan_partial(src: Sharding, tgt: Sharding, shape, itemsize) -> tuple[Step, ...]:
    """A partial source: reduce first (all_reduce, or reduce_scatter onto a dim), then
    the cheapest plain plan; the whole route's bytes decide."""
    mesh = src.mesh
    P = src.partial_axes
    kind = src.partial_kind
    base = src.replace(partial=None)
    flows = all_reduce_flows(src, shape, itemsize)
    ar = make_step("all_reduce", P, (("reduction", kind),), src, base, flows.total(), shape,
                   itemsize, flows)
    cands: list[Candidate] = []

    def then(first: Step, rest: Candidate) -> Candidate:
        return first.bytes + rest[0], 1 + rest[1], lambda: (first,) + rest[2]()

    cands.append(then(ar, plain(base, tgt, shape, itemsize)))
    if not src.halo_sizes and not src.sharded_dims_offsets:
        # (reduce_scatter cuts ceil-div; explicit offsets never match)
        lo, hi = src.regions(shape)
        for d in range(len(shape)):
            split = [list(src.axes_of(i)) for i in range(len(shape))]
            split[d] = split[d] + list(P)
            new = Sharding(mesh, split)
            lo2, hi2, _ = simulate("all_slice", mesh, lo, hi, P, itemsize, slice_axis=d)
            if not same_layout(lo2, hi2, new, shape):
                continue
            flows = reduce_scatter_flows(src, d, shape, itemsize)
            rs = make_step("reduce_scatter", P, (("scatter_axis", d), ("reduction", kind)),
                           src, new, flows.total(), shape, itemsize, flows)
            cands.append(then(rs, plain(new, tgt, shape, itemsize)))
    return min(cands, key=lambda x: x[:2])[2]()


def lower_bound(src: Sharding, tgt: Sharding, shape, itemsize) -> int:
    """Bytes of the in-tensor cells of every target local array that its source local
    array does not hold (with a partial source, every cell: a term is not the value)."""
    t_lo, t_hi = held_boxes(tgt, shape)
    need = volume(t_lo, t_hi)
    if src.partial_axes and any(src.mesh.shape[a] > 1 for a in src.partial_axes):
        return int(need.sum()) * itemsize
    h_lo, h_hi = held_boxes(src, shape)
    have = volume(np.maximum(t_lo, h_lo), np.minimum(t_hi, h_hi))
    return int((need - have).sum()) * itemsize


def general_plan(src: Sharding, tgt: Sharding, shape: tuple[int, ...],
                 itemsize: int) -> ReshardPlan:
    """Every valid pair: candidates costed on per-device boxes, the chosen one's steps
    built with their flows (and rows) as they were costed."""
    lb = lower_bound(src, tgt, shape, itemsize)
    if src == tgt:
        steps: tuple[Step, ...] = ()
    elif src.partial_axes:
        steps = plan_partial(src, tgt, shape, itemsize)
    else:
        steps = plain(src, tgt, shape, itemsize, lb)[2]()
    return new_plan(src, tgt, shape, itemsize, steps, lb)
