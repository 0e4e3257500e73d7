"""Resharding: turn any sharding into any other at the minimum data movement.

``plan_reshard`` is pure: it returns a :class:`ReshardPlan` whose ``steps`` are data
(collective steps and point-to-point transfer sets). ``reshard`` executes a plan on the
NumPy simulator; ``meshtensor.dist`` executes the same steps with torch.distributed.

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
                           target it does not hold, each from the nearest holder

The collective sequence (MLIR's patterns, applied greedily with slicing first) is
kept only if it moves no more than the transfers, which always move exactly the lower
bound; so without partial sources ``bytes_moved == lower_bound_bytes`` for every pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence, Union

import numpy as np

from . import collectives as C
from .boxes import box_difference, box_slices, clip_boxes, split_by_owner, volume
from .cost import Flows, group_exchange
from .mesh import Mesh, _is_int
from .mesh_array import MeshArray, _frozen
from .sharding import Sharding


# -- plan data ---------------------------------------------------------------------------
class Transfer(NamedTuple):
    """One point-to-point copy: ``src`` sends the global ``region`` to ``dst``."""

    src: int
    dst: int
    region: tuple[slice, ...]


@dataclass(frozen=True, eq=False)
class CollectiveStep:
    """One collective of :mod:`meshtensor.collectives` taking ``before`` to ``after``."""

    op: str
    mesh_axes: tuple[int, ...]
    params: tuple[tuple[str, Any], ...]
    before: Sharding
    after: Sharding
    flows: Flows

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def bytes(self) -> int:
        return self.flows.total()

    def describe(self) -> str:
        names = [self.before.mesh.axis_names[a] for a in self.mesh_axes]
        args = "".join(f", {k}={v!r}" for k, v in self.params)
        return f"{self.op}(mesh_axes={names}{args})"


@dataclass(frozen=True, eq=False)
class TransferStep:
    """Point-to-point transfers: row ``i`` sends global box ``[lo[i], hi[i])`` from device
    ``src[i]`` to ``dst[i]``. Cells a device already holds are kept locally."""

    before: Sharding
    after: Sharding
    src: np.ndarray
    dst: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    itemsize: int
    op: str = "transfers"

    @classmethod
    def local_only(cls, before: Sharding, after: Sharding, rank: int) -> "TransferStep":
        """No transfers: each device re-lays its own cells into its ``after`` array
        (the first half of ``update_halo`` when halo sizes change)."""
        z = np.zeros(0, dtype=np.int64)
        zr = np.zeros((0, rank), dtype=np.int64)
        return cls(before, after, z, z, zr, zr, 1)

    @property
    def flows(self) -> Flows:
        vol = np.prod(self.hi - self.lo, axis=1, dtype=np.int64) * self.itemsize
        return Flows(self.src, self.dst, vol)

    @property
    def bytes(self) -> int:
        return self.flows.total()

    @property
    def transfers(self) -> list[Transfer]:
        return [Transfer(int(s), int(d), box_slices(l, h))
                for s, d, l, h in zip(self.src, self.dst, self.lo, self.hi)]

    def describe(self) -> str:
        if not len(self.src):
            return "local re-layout (no communication)"
        return f"transfers({len(self.src)} point-to-point copies)"


Step = Union[CollectiveStep, TransferStep]


@dataclass(frozen=True, eq=False)
class ReshardPlan:
    """A plan from ``src`` to ``tgt`` for a tensor of ``global_shape``.

    ``bytes_moved`` counts bytes received by devices from other devices;
    ``lower_bound_bytes`` the in-tensor cells of each target local array that its source
    local array did not hold; ``link_bytes`` bytes times links crossed (XY routing);
    ``max_device_bytes`` the bytes received by the busiest device.
    """

    src: Sharding
    tgt: Sharding
    global_shape: tuple[int, ...]
    itemsize: int
    steps: tuple[Step, ...]
    lower_bound_bytes: int

    @property
    def mesh(self) -> Mesh:
        return self.src.mesh

    @property
    def bytes_moved(self) -> int:
        return int(sum(s.bytes for s in self.steps))

    @property
    def link_bytes(self) -> int:
        return int(sum(s.flows.link_bytes(self.mesh) for s in self.steps))

    @property
    def max_device_bytes(self) -> int:
        if not self.steps:
            return 0
        return int(sum(s.flows.received(self.mesh) for s in self.steps).max())

    def explain(self, max_pairs: int = 12) -> str:
        """A readable state chain: each step, which devices talk and how many bytes.

        >>> from meshtensor import Mesh, Sharding
        >>> m = Mesh([2])
        >>> print(plan_reshard(Sharding(m, [[0]]), Sharding(m, []), (4,)).explain())
        reshard S(x) -> R on mesh 2 ('x',), shape (4,), 4 B/element
          step 1  all_gather(mesh_axes=['x'], gather_axis=0)
                  S(x) -> R   bytes 16   link bytes 16
                  (0,) -> (1,)   8 B
                  (1,) -> (0,)   8 B
          total: bytes_moved 16, lower bound 16 (ratio 1.00), link bytes 16, busiest device receives 8
        """
        m = self.mesh
        lines = [f"reshard {self.src} -> {self.tgt} on mesh {m} {m.axis_names}, shape "
                 f"{self.global_shape}, {self.itemsize} B/element"]
        if not self.steps:
            lines.append("  nothing to do: source and target are the same")
        for i, s in enumerate(self.steps, 1):
            lines.append(f"  step {i}  {s.describe()}")
            lines.append(f"          {s.before} -> {s.after}   bytes {s.bytes}   link bytes "
                         f"{s.flows.link_bytes(m)}")
            pairs = s.flows.pairs()
            for src, dst, nb in pairs[:max_pairs]:
                lines.append(f"          {m.multi_index(src)} -> {m.multi_index(dst)}   {nb} B")
            if len(pairs) > max_pairs:
                lines.append(f"          ... {len(pairs) - max_pairs} more device pairs")
        ratio = (self.bytes_moved / self.lower_bound_bytes) if self.lower_bound_bytes else 1.0
        lines.append(f"  total: bytes_moved {self.bytes_moved}, lower bound "
                     f"{self.lower_bound_bytes} (ratio {ratio:.2f}), link bytes "
                     f"{self.link_bytes}, busiest device receives {self.max_device_bytes}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


# -- layouts as boxes -------------------------------------------------------------------------
def _held(s: Sharding, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """In-tensor cells each device's local array holds (core and halos)."""
    return clip_boxes(*s.windows(shape), shape)


def _same_layout(lo, hi, s: Sharding, shape) -> bool:
    """Boxes ``[lo, hi)`` equal ``s``'s core regions: same extents everywhere, same
    starts wherever the box is not empty."""
    slo, shi = s.regions(shape)
    if not np.array_equal(hi - lo, shi - slo):
        return False
    full = volume(lo, hi) > 0
    return bool(np.array_equal(lo[full], slo[full]))


def transfer_step(before: Sharding, after: Sharding, shape, itemsize, held=None) -> TransferStep:
    """The point-to-point step from ``before`` to ``after``: every device receives the
    in-tensor cells of its ``after`` array that ``held`` (default: what its ``before``
    array holds) does not cover, each from the nearest device whose core has it. With
    ``held`` = the core regions and ``before == after`` it is ``update_halo``'s traffic."""
    t_lo, t_hi = _held(after, shape)
    h_lo, h_hi = held if held is not None else _held(before, shape)
    rows, lo, hi = box_difference(t_lo, t_hi, h_lo, h_hi)
    send, recv, lo, hi, _ = split_by_owner(before, shape, rows, lo, hi)
    for a in (send, recv, lo, hi):
        a.flags.writeable = False
    return TransferStep(before, after, send, recv, lo, hi, itemsize)


# -- collective steps on boxes ---------------------------------------------------------------------
def _piece(n: np.ndarray, k: int, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = -(-n // k)
    return np.minimum(p * c, n), np.minimum((p + 1) * c, n)


def _sim(op: str, mesh: Mesh, lo, hi, axes, itemsize, **kw):
    """Apply a collective to a layout of boxes: the new boxes and the flows, or None when
    the result is not a box per device."""
    groups = mesh.group_array(axes)
    k = groups.shape[1]
    rank = lo.shape[1]
    if op == "all_slice":
        d = kw["slice_axis"]
        a, b = _piece(hi[:, d] - lo[:, d], k, mesh.in_group_index(axes))
        lo2, hi2 = lo.copy(), hi.copy()
        lo2[:, d], hi2[:, d] = lo[:, d] + a, lo[:, d] + b
        return lo2, hi2, Flows.empty()
    glo, ghi = lo[groups], hi[groups]  # (G, k, rank)
    cat = kw["gather_axis"] if op == "all_gather" else kw["concat_axis"]
    other = [i for i in range(rank) if i != cat]
    if not (np.array_equal(glo[:, :, other], np.broadcast_to(glo[:, :1, other], glo[:, :, other].shape))
            and np.array_equal(ghi[:, :, other], np.broadcast_to(ghi[:, :1, other], ghi[:, :, other].shape))
            and np.array_equal(ghi[:, :-1, cat], glo[:, 1:, cat])):
        return None  # the group's pieces do not tile one box
    lo2, hi2 = lo.copy(), hi.copy()
    lo2[groups, cat] = glo[:, :1, cat]
    hi2[groups, cat] = ghi[:, -1:, cat]
    if op == "all_gather":
        vol = volume(glo, ghi) * itemsize  # (G, k): member i sends its whole box to all
        return lo2, hi2, group_exchange(groups, np.repeat(vol[:, :, None], k, axis=2))
    d = kw["split_axis"]  # all_to_all: member j gets piece j (along d) of every member
    n = hi[groups, d] - lo[groups, d]
    pos = np.arange(k)[None, :].repeat(len(groups), 0)
    a, b = _piece(n, k, pos)
    lo2[groups, d] = lo[groups, d] + a
    hi2[groups, d] = lo[groups, d] + b
    ext = np.maximum(ghi - glo, 0)
    rest = np.prod(np.delete(ext, d, axis=2), axis=2, dtype=np.int64)  # (G, k) per sender i
    piece_bytes = rest[:, :, None] * (b - a)[:, None, :] * itemsize  # [g, i, j]
    return lo2, hi2, group_exchange(groups, piece_bytes)


def _collective_sequence(cur: Sharding, tgt: Sharding, shape, itemsize) -> tuple[Step, ...] | None:
    """MLIR's patterns applied greedily (slice first, then all_to_all, then gather), each
    step checked on boxes; None if they do not reach ``tgt`` exactly."""
    mesh, rank = cur.mesh, len(shape)
    c = [list(cur.axes_of(d)) for d in range(rank)]
    t = [list(tgt.axes_of(d)) for d in range(rank)]
    lo, hi = (a.copy() for a in cur.regions(shape))
    steps: list[Step] = []
    before = cur
    for _ in range(4 * mesh.ndim + 4):
        if c == t:  # same split axes; offsets must agree too
            return tuple(steps) if before == tgt else None
        used = {a for axes in c for a in axes}
        move = None
        for d in range(rank):  # 1. split further: free
            if len(t[d]) > len(c[d]) and t[d][:len(c[d])] == c[d]:
                run = []
                for a in t[d][len(c[d]):]:
                    if a in used:
                        break
                    run.append(a)
                if run:
                    move = ("all_slice", run, {"slice_axis": d})
                    c[d] = c[d] + run
                    break
        if move is None:  # 2. move the innermost axis of one dim to another
            for d1 in range(rank):
                if not c[d1] or t[d1][:len(c[d1])] == c[d1]:
                    continue
                b = c[d1][-1]
                for d2 in range(rank):
                    if d2 != d1 and len(t[d2]) > len(c[d2]) and t[d2][:len(c[d2])] == c[d2] \
                            and t[d2][len(c[d2])] == b:
                        move = ("all_to_all", [b], {"split_axis": d2, "concat_axis": d1})
                        c[d1], c[d2] = c[d1][:-1], c[d2] + [b]
                        break
                if move:
                    break
        if move is None:  # 3. unsplit the axes past the common prefix; highest dim
            # first, so the gathers along dim 0 (contiguous, no re-layout copy) come last
            for d in reversed(range(rank)):
                keep = 0
                while keep < min(len(c[d]), len(t[d])) and c[d][keep] == t[d][keep]:
                    keep += 1
                if keep < len(c[d]):
                    move = ("all_gather", c[d][keep:], {"gather_axis": d})
                    c[d] = c[d][:keep]
                    break
        if move is None:
            return None
        op, axes, kw = move
        res = _sim(op, mesh, lo, hi, tuple(axes), itemsize, **kw)
        if res is None:
            return None
        lo, hi, flows = res
        after = tgt if c == t else Sharding(mesh, c)
        if not _same_layout(lo, hi, after, shape):
            return None  # nested cuts differ from the flat ceil-div rule (uneven sizes)
        steps.append(CollectiveStep(op, tuple(axes), tuple(kw.items()), before, after, flows))
        before = after
    return None


def _plan_plain(cur: Sharding, tgt: Sharding, shape, itemsize) -> tuple[Step, ...]:
    """Best plan between two shardings without partial axes."""
    if cur == tgt:
        return ()
    p2p = transfer_step(cur, tgt, shape, itemsize)
    best = (p2p.bytes, 1, (p2p,))
    if not cur.halo_sizes and not tgt.halo_sizes:
        seq = _collective_sequence(cur, tgt, shape, itemsize)
        if seq is not None:
            best = min(best, (sum(s.bytes for s in seq), 0, seq), key=lambda x: x[:2])
    if tgt.halo_sizes and not cur.halo_sizes and cur == tgt.replace(halo_sizes=None):
        # update_halo refills every in-tensor halo cell from its owner's core.
        uh = transfer_step(cur, tgt, shape, itemsize, held=cur.regions(shape))
        step = CollectiveStep("update_halo", (), (), cur, tgt, uh.flows)
        best = min(best, (step.bytes, 0, (step,)), key=lambda x: x[:2])
    return best[2]


def _plan_partial(src: Sharding, tgt: Sharding, shape, itemsize) -> tuple[Step, ...]:
    mesh = src.mesh
    P = src.partial_axes
    kind = src.partial_kind
    base = src.replace(partial=None)
    groups = mesh.group_array(P)
    k = groups.shape[1]
    h_lo, h_hi = src.windows(shape)  # partial terms cover whole local arrays, halos too
    local = volume(h_lo, h_hi)
    # all_reduce = reduce_scatter + all_gather over the flattened local array
    a, b = _piece(local[groups], k, np.arange(k)[None, :])
    p = (b - a) * itemsize  # (G, k): piece j's bytes
    ar = CollectiveStep("all_reduce", P, (("reduction", kind),), src, base,
                        group_exchange(groups, p[:, :, None] + p[:, None, :]))
    rest = _plan_plain(base, tgt, shape, itemsize)
    cands = [(ar.bytes + sum(s.bytes for s in rest), 1 + len(rest), (ar,) + rest)]
    if not src.halo_sizes:
        lo, hi = src.regions(shape)
        for d in range(len(shape)):
            split = [list(src.axes_of(i)) for i in range(len(shape))]
            split[d] = split[d] + list(P)
            if src.sharded_dims_offsets:
                break  # reduce_scatter cuts ceil-div; explicit offsets never match
            new = Sharding(mesh, split)
            lo2, hi2, _ = _sim("all_slice", mesh, lo, hi, P, itemsize, slice_axis=d)
            if not _same_layout(lo2, hi2, new, shape):
                continue
            ext = hi[groups] - lo[groups]  # (G, k, rank), equal inside a group
            n = ext[:, :, d]
            pa, pb = _piece(n[:, :1], k, np.arange(k)[None, :])
            rest_vol = np.prod(np.delete(ext[:, :1, :], d, axis=2), axis=2, dtype=np.int64)
            piece_bytes = np.repeat(((pb - pa) * rest_vol * itemsize)[:, None, :], k, axis=1)
            rs = CollectiveStep("reduce_scatter", P, (("scatter_axis", d), ("reduction", kind)),
                                src, new, group_exchange(groups, piece_bytes))
            rest = _plan_plain(new, tgt, shape, itemsize)
            cands.append((rs.bytes + sum(s.bytes for s in rest), 1 + len(rest), (rs,) + rest))
    return min(cands, key=lambda x: x[:2])[2]


def _lower_bound(src: Sharding, tgt: Sharding, shape, itemsize) -> int:
    t_lo, t_hi = _held(tgt, shape)
    need = volume(t_lo, t_hi)
    if src.partial_axes and any(src.mesh.shape[a] > 1 for a in src.partial_axes):
        return int(need.sum()) * itemsize  # a partial term is not the value
    h_lo, h_hi = _held(src, shape)
    have = volume(np.maximum(t_lo, h_lo), np.minimum(t_hi, h_hi))
    return int((need - have).sum()) * itemsize


def plan_reshard(src: Sharding, tgt: Sharding, global_shape: Sequence[int],
                 itemsize: int = 4) -> ReshardPlan:
    """Plan the data movement from ``src`` to ``tgt`` for a tensor of ``global_shape``.

    Works for every pair of shardings on one mesh (split, replicated, several axes per
    dim, swaps, uneven and empty shards, halos, explicit offsets, partial sources).
    Resharding into a partial sharding is refused unless ``src == tgt``.

    >>> from meshtensor import Mesh, Sharding
    >>> m = Mesh([2, 3])
    >>> p = plan_reshard(Sharding(m, [[0], [1]]), Sharding(m, [[1], [0]]), (6, 6))
    >>> p.bytes_moved == p.lower_bound_bytes, [s.op for s in p.steps]
    (True, ['transfers'])
    """
    for name, s in (("src", src), ("tgt", tgt)):
        if not isinstance(s, Sharding):
            raise TypeError(f"plan_reshard: {name} must be a Sharding, got {type(s).__name__}")
    if src.mesh != tgt.mesh:
        raise ValueError(f"plan_reshard: src is on mesh {src.mesh!r}, tgt on {tgt.mesh!r}")
    if not _is_int(itemsize) or itemsize < 1:
        raise ValueError(f"plan_reshard: itemsize must be a positive int, got {itemsize!r}")
    shape = src.check_shape(global_shape, "plan_reshard (src)")
    tgt.check_shape(shape, "plan_reshard (tgt)")
    if tgt.partial_axes and tgt != src:
        raise ValueError(f"plan_reshard: cannot reshard {src} into the partial sharding {tgt}: "
                         f"a partial target is only reachable from itself (reduce first, then "
                         f"split the work that produces partial values)")
    if src == tgt:
        steps: tuple[Step, ...] = ()
    elif src.partial_axes:
        steps = _plan_partial(src, tgt, shape, itemsize)
    else:
        steps = _plan_plain(src, tgt, shape, itemsize)
    return ReshardPlan(src, tgt, shape, int(itemsize), steps,
                       _lower_bound(src, tgt, shape, itemsize))


# -- execution on the simulator -------------------------------------------------------------------
def own_cells(step: TransferStep, shape, r: int) -> tuple[tuple[slice, ...], tuple[slice, ...]] | None:
    """Where device ``r``'s own held cells go: ``(slices in its new array, slices in its
    old array)``, or None when it keeps nothing."""
    w0, w1 = step.after.windows(shape)
    s0, _ = step.before.windows(shape)
    h_lo, h_hi = _held(step.before, shape)
    lo = np.maximum(h_lo[r], np.maximum(w0[r], 0))
    hi = np.minimum(h_hi[r], np.minimum(w1[r], shape))
    if not np.all(lo < hi):
        return None
    return box_slices(lo, hi, w0[r]), box_slices(lo, hi, s0[r])


def new_local_shape(step: Step, shape, r: int) -> tuple[int, ...]:
    """Shape of device ``r``'s array after ``step``."""
    w0, w1 = step.after.windows(shape)
    return tuple((w1[r] - w0[r]).tolist())


def _run_transfers(arr: MeshArray, step: TransferStep, shape) -> MeshArray:
    """Build every device's ``after`` array: its own held cells, then what it receives."""
    mesh = arr.mesh
    w0, _ = step.after.windows(shape)
    s0, _ = step.before.windows(shape)
    order = np.argsort(step.dst, kind="stable")
    bounds = np.searchsorted(step.dst[order], np.arange(mesh.size + 1))
    out = []
    for r in range(mesh.size):
        buf = np.zeros(new_local_shape(step, shape, r), dtype=arr.dtype)
        own = own_cells(step, shape, r)
        if own is not None:
            buf[own[0]] = arr.locals[r][own[1]]
        for i in order[bounds[r]:bounds[r + 1]].tolist():
            s = int(step.src[i])
            buf[box_slices(step.lo[i], step.hi[i], w0[r])] = \
                arr.locals[s][box_slices(step.lo[i], step.hi[i], s0[s])]
        out.append(_frozen(buf))
    return MeshArray(mesh, out, step.after, shape)


def apply_step(arr: MeshArray, step: Step) -> MeshArray:
    """Execute one plan step on the simulator."""
    shape = arr.global_shape
    if isinstance(step, TransferStep):
        return _run_transfers(arr, step, shape)
    if step.op == "update_halo":
        # Re-lay each device's own cells into the target shape, then refill the halos.
        relaid = _run_transfers(arr, TransferStep.local_only(step.before, step.after, len(shape)),
                                shape)
        return C.update_halo(relaid, step.after).with_sharding(step.after, shape)
    fn = getattr(C, step.op)
    res = fn(arr, list(step.mesh_axes), **step.kwargs)
    return res.with_sharding(step.after, shape)


def reshard(array: MeshArray, tgt: Sharding) -> MeshArray:
    """Move a MeshArray to sharding ``tgt`` along the planned steps (the input is never
    mutated). The result equals ``distribute(array.to_global(), tgt)`` exactly.

    >>> import numpy as np
    >>> from meshtensor import Mesh, Sharding, distribute
    >>> m = Mesh([2, 3]); x = np.arange(36).reshape(6, 6)
    >>> b = reshard(distribute(x, Sharding(m, [[0], [1]])), Sharding(m, [[1], [0]]))
    >>> b.local((0, 1)).tolist()
    [[12, 13, 14], [18, 19, 20]]
    """
    if not isinstance(array, MeshArray):
        raise TypeError(f"reshard: expected a MeshArray, got {type(array).__name__}")
    if array.sharding is None:
        raise ValueError("reshard: the MeshArray has no sharding; attach one with "
                         "with_sharding(...)")
    plan = plan_reshard(array.sharding, tgt, array.global_shape, array.dtype.itemsize)
    out = array
    for step in plan.steps:
        out = apply_step(out, step)
    if not plan.steps:
        return array
    return out
