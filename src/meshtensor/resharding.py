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
                           target it does not hold, from a replica holding them (the
                           nearest, or replicas in turn when that lowers the busiest
                           link under XY routing)

Planning works on structure, not on pairs of devices: costs are closed-form (per-device
boxes, and collectives as :class:`~meshtensor.cost.GroupFlows`), and the transfers,
which always move exactly the lower bound, are built only when no collective sequence
(MLIR's patterns, applied greedily with slicing first) reaches that bound. So without
partial sources ``bytes_moved == lower_bound_bytes`` for every pair, halos included.
Plans are immutable values, cached on ``(src, tgt, global_shape, itemsize)``.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Callable, NamedTuple, Sequence, Union

import numpy as np

from . import collectives as C
from .boxes import box_slices, clip_boxes, missing_boxes, volume
from .cost import Flows, GroupFlows
from .mesh import Mesh, _is_int
from .mesh_array import MeshArray, _frozen
from .sharding import Sharding
from .text import DEFAULT_WIDTH, MIN_WIDTH, pack, wrap


# -- plan data ---------------------------------------------------------------------------
class Transfer(NamedTuple):
    """One point-to-point copy: ``src`` sends the global ``region`` to ``dst``."""

    src: int
    dst: int
    region: tuple[slice, ...]


StepFlows = Union[Flows, GroupFlows]


def _same_arrays(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return all((x is None and y is None) or (x is not None and y is not None
                                             and np.array_equal(x, y)) for x, y in zip(a, b))


def _flows_key(f: StepFlows) -> tuple:
    if isinstance(f, GroupFlows):
        return ("group", f.axes), (f.groups, f.send, f.recv, f.u, f.w)
    return ("pairs",), (f.src, f.dst, f.nbytes)


@dataclass(frozen=True, eq=False)
class CollectiveStep:
    """One collective of :mod:`meshtensor.collectives` taking ``before`` to ``after``.

    A value: steps with the same op, axes, parameters, layouts and flows are equal and
    hash equal.
    """

    op: str
    mesh_axes: tuple[int, ...]
    params: tuple[tuple[str, Any], ...]
    before: Sharding
    after: Sharding
    flows: StepFlows

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.params)

    @cached_property
    def bytes(self) -> int:
        return self.flows.total()

    def describe(self) -> str:
        names = [self.before.mesh.axis_names[a] for a in self.mesh_axes]
        args = "".join(f", {k}={v!r}" for k, v in self.params)
        return f"{self.op}(mesh_axes={names}{args})"

    def _scalars(self) -> tuple:
        return (self.op, self.mesh_axes, self.params, self.before, self.after)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CollectiveStep):
            return NotImplemented
        if self is other:
            return True
        (k1, a1), (k2, a2) = _flows_key(self.flows), _flows_key(other.flows)
        return self._scalars() == other._scalars() and k1 == k2 and _same_arrays(a1, a2)

    def __hash__(self) -> int:
        return hash(self._scalars() + (self.bytes,))


@dataclass(frozen=True, eq=False)
class TransferStep:
    """Point-to-point transfers: row ``i`` sends global box ``[lo[i], hi[i])`` from device
    ``src[i]`` to ``dst[i]``. Cells a device already holds are kept locally.

    A value: equal layouts and equal transfer rows give equal steps (arrays are
    read-only)."""

    before: Sharding
    after: Sharding
    src: np.ndarray
    dst: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    itemsize: int
    op: str = "transfers"

    def __post_init__(self) -> None:
        for a in (self.src, self.dst, self.lo, self.hi):
            a.flags.writeable = False

    @classmethod
    def local_only(cls, before: Sharding, after: Sharding, rank: int) -> "TransferStep":
        """No transfers: each device re-lays its own cells into its ``after`` array
        (the first half of ``update_halo`` when halo sizes change)."""
        z = np.zeros(0, dtype=np.int64)
        zr = np.zeros((0, rank), dtype=np.int64)
        return cls(before, after, z, z.copy(), zr, zr.copy(), 1)

    @cached_property
    def flows(self) -> Flows:
        vol = np.prod(self.hi - self.lo, axis=1, dtype=np.int64) * self.itemsize
        return Flows(self.src, self.dst, vol)

    @cached_property
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

    def _scalars(self) -> tuple:
        return (self.op, self.before, self.after, self.itemsize, len(self.src))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TransferStep):
            return NotImplemented
        if self is other:
            return True
        return self._scalars() == other._scalars() and _same_arrays(
            (self.src, self.dst, self.lo, self.hi), (other.src, other.dst, other.lo, other.hi))

    def __hash__(self) -> int:
        return hash(self._scalars())


Step = Union[CollectiveStep, TransferStep]


class Move(NamedTuple):
    """A plan step as the planner decides it, before its flows are built: the op (a
    collective of :mod:`meshtensor.collectives`, ``"update_halo"`` or ``"transfers"``),
    its mesh axes and parameters, the layouts before and after, and the bytes it moves.
    :attr:`ReshardPlan.steps` builds the steps (flows, transfer rows) from the moves.

    >>> from meshtensor import Mesh, Sharding
    >>> m = Mesh([2])
    >>> plan_reshard(Sharding(m, [[0]]), Sharding(m, []), (4,)).moves[0][:3]
    ('all_gather', (0,), (('gather_axis', 0),))
    """

    op: str
    mesh_axes: tuple[int, ...]
    params: tuple[tuple[str, Any], ...]
    before: Sharding
    after: Sharding
    bytes: int


#: Meshes up to this many devices list device pairs in ``explain()``; larger ones get
#: per-step summaries (groups, busiest device, busiest link) and the top pairs.
EXPLAIN_ALL_PAIRS_UP_TO = 64


@dataclass(frozen=True, eq=False)
class ReshardPlan:
    """A plan from ``src`` to ``tgt`` for a tensor of ``global_shape``.

    ``moves`` are the planner's decisions (op, axes, layouts, bytes); ``steps`` the same
    steps with their flows and transfer rows, built from the moves when first read (the
    planner decides in closed form and builds only what a caller uses).
    ``bytes_moved`` counts bytes received by devices from other devices;
    ``lower_bound_bytes`` the in-tensor cells of each target local array that its source
    local array did not hold; ``link_bytes`` bytes times links crossed (XY routing);
    ``max_link_bytes`` the busiest link's load, summed over steps (steps run one after
    another); ``max_device_bytes`` the bytes received by the busiest device.

    A plan is an immutable value: equal content compares and hashes equal, so plans can
    be cached, compared and used as dict keys (the steps follow from the moves).
    """

    src: Sharding
    tgt: Sharding
    global_shape: tuple[int, ...]
    itemsize: int
    moves: tuple[Move, ...]
    lower_bound_bytes: int

    @cached_property
    def steps(self) -> tuple[Step, ...]:
        """The steps, with flows and transfer rows (built once, on first use)."""
        steps = tuple(_step_of(m, self.global_shape, self.itemsize) for m in self.moves)
        _cached_plan.built(self, steps)
        return steps

    def _with_steps(self, steps: tuple[Step, ...]) -> "ReshardPlan":
        """Attach steps the planner built anyway (they equal what ``steps`` builds)."""
        self.__dict__["steps"] = steps  # the cached_property's slot; frozen fields untouched
        return self

    def _key(self) -> tuple:
        return (self.src, self.tgt, self.global_shape, self.itemsize, self.moves,
                self.lower_bound_bytes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReshardPlan):
            return NotImplemented
        return self is other or self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    @property
    def mesh(self) -> Mesh:
        return self.src.mesh

    @property
    def bytes_moved(self) -> int:
        return sum(m.bytes for m in self.moves)

    @property
    def link_bytes(self) -> int:
        return int(sum(s.flows.link_bytes(self.mesh) for s in self.steps))

    @property
    def max_link_bytes(self) -> int:
        return int(sum(s.flows.max_link_bytes(self.mesh) for s in self.steps))

    @property
    def max_device_bytes(self) -> int:
        if not self.steps:
            return 0
        return int(sum(s.flows.received(self.mesh) for s in self.steps).max())

    def explain(self, max_pairs: int = 12, *, width: int = DEFAULT_WIDTH) -> str:
        """A readable state chain: each step, which devices talk and how many bytes.

        Meshes of more than ``EXPLAIN_ALL_PAIRS_UP_TO`` devices get a summary per step
        (groups, pairs, busiest device and link) and at most ``max_pairs`` of the
        largest transfers, so the text stays short on thousands of devices. Lines fit
        ``width`` columns (default 80): long ones continue on an indented line.

        >>> from meshtensor import Mesh, Sharding
        >>> m = Mesh([2])
        >>> print(plan_reshard(Sharding(m, [[0]]), Sharding(m, []), (4,)).explain())
        reshard S(x) -> R on mesh 2 ('x',), shape (4,), 4 B/element
          step 1  all_gather(mesh_axes=['x'], gather_axis=0)
                  S(x) -> R   bytes 16   link bytes 16   busiest link 8
                  (0,) -> (1,)   8 B
                  (1,) -> (0,)   8 B
          total: bytes_moved 16, lower bound 16 (ratio 1.00), max_link_bytes 8
                 link bytes 16, busiest device receives 8
        """
        if not _is_int(max_pairs) or max_pairs < 0:
            raise ValueError(f"ReshardPlan.explain: max_pairs must be an int >= 0, got "
                             f"{max_pairs!r}")
        if not _is_int(width) or width < MIN_WIDTH:
            raise ValueError(f"ReshardPlan.explain: width must be an int >= "
                             f"{MIN_WIDTH}, got {width!r}")
        m = self.mesh
        step_in, more_in = " " * 10, " " * 12
        lines = pack([f"reshard {self.src} -> {self.tgt}", f"on mesh {m} {m.axis_names},",
                      f"shape {self.global_shape},", f"{self.itemsize} B/element"],
                     width, first="", indent="  ")
        if not self.steps:
            lines += wrap("  nothing to do: source and target are the same", width,
                          indent="  ")
        big = m.size > EXPLAIN_ALL_PAIRS_UP_TO
        for i, s in enumerate(self.steps, 1):
            f = s.flows
            lines += wrap(f"  step {i}  {s.describe()}", width, indent=step_in)
            lines += pack([f"{s.before} -> {s.after}", f"bytes {s.bytes}",
                           f"link bytes {f.link_bytes(m)}",
                           f"busiest link {f.max_link_bytes(m)}"], width, indent=step_in,
                          sep="   ")
            if big:
                lines += [w for x in _step_summary(s, m)
                          for w in wrap(step_in + x, width, indent=more_in)]
            if s.bytes == 0:
                continue
            if big and isinstance(f, GroupFlows):
                continue  # the summary says who talks; listing k*(k-1) pairs would not
            pairs = f.pairs(max_pairs + 1)
            for src, dst, nb in pairs[:max_pairs]:
                lines += wrap(f"{step_in}{m.multi_index(src)} -> {m.multi_index(dst)}   {nb} B",
                              width, indent=more_in)
            if len(pairs) > max_pairs:
                lines += wrap(f"{step_in}... {f.num_pairs() - max_pairs} more device pairs",
                              width, indent=more_in)
        ratio = (self.bytes_moved / self.lower_bound_bytes) if self.lower_bound_bytes else 1.0
        total_in = " " * 9
        lines += pack([f"total: bytes_moved {self.bytes_moved},",
                       f"lower bound {self.lower_bound_bytes} (ratio {ratio:.2f}),",
                       f"max_link_bytes {self.max_link_bytes}"], width, first="  ",
                      indent=total_in)
        lines += pack([f"link bytes {self.link_bytes},",
                       f"busiest device receives {self.max_device_bytes}"], width,
                      indent=total_in)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()

    def to_mlir(self, mesh_name: str = "mesh", element_type: str | None = None) -> str:
        """The plan's collectives as MLIR ``shard`` dialect ops (point-to-point transfer
        steps as a comment); see :func:`meshtensor.interop.plan_to_mlir`.

        >>> from meshtensor import Mesh, Sharding
        >>> m = Mesh([2])
        >>> p = plan_reshard(Sharding(m, [[0]]), Sharding(m, []), (4,))
        >>> print(p.to_mlir().splitlines()[-1])
        %1 = shard.all_gather %0 on @mesh grid_axes = [0] gather_axis = 0 : tensor<2xf32> -> tensor<4xf32>
        """
        from .interop import plan_to_mlir
        return plan_to_mlir(self, mesh_name, element_type)

    def __repr__(self) -> str:
        ops = [m.op for m in self.moves]
        return (f"ReshardPlan({self.src} -> {self.tgt}, shape={self.global_shape}, "
                f"itemsize={self.itemsize}, steps={ops}, bytes_moved={self.bytes_moved}, "
                f"lower_bound_bytes={self.lower_bound_bytes})")


def _step_summary(s: Step, m: Mesh) -> list[str]:
    """One or two lines on who talks in a step, without listing pairs."""
    f = s.flows
    if s.bytes == 0:
        return []
    got = f.received(m)
    busiest = int(np.argmax(got))
    out = []
    if isinstance(f, GroupFlows):
        names = [m.axis_names[a] for a in f.axes]
        out.append(f"{f.groups.shape[0]} groups of {f.k} devices along {names}")
    else:
        out.append(f"{len(f)} copies between {f.num_pairs()} device pairs")
    out.append(f"{int((got > 0).sum())} of {m.size} devices receive; busiest "
               f"{m.multi_index(busiest)} receives {int(got[busiest])} B")
    return out


# -- layouts as boxes -------------------------------------------------------------------------
@lru_cache(maxsize=256)
def _held(s: Sharding, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """In-tensor cells each device's local array holds (core and halos); read-only,
    cached per ``(sharding, shape)`` like ``Sharding.windows``."""
    lo, hi = clip_boxes(*s.windows(shape), shape)
    lo.flags.writeable = hi.flags.writeable = False
    return lo, hi


def _same_layout(lo, hi, s: Sharding, shape) -> bool:
    """Boxes ``[lo, hi)`` equal ``s``'s core regions: same extents everywhere, same
    starts wherever the box is not empty."""
    slo, shi = s.regions(shape)
    if not ((hi - lo) == (shi - slo)).all():
        return False
    full = volume(lo, hi) > 0
    return bool((lo[full] == slo[full]).all())


def transfer_step(before: Sharding, after: Sharding, shape, itemsize, held=None,
                  spread: bool = False) -> TransferStep:
    """The point-to-point step from ``before`` to ``after``: every device receives the
    in-tensor cells of its ``after`` array that ``held`` (default: what its ``before``
    array holds) does not cover, each from a device whose core has it: the nearest one,
    or with ``spread`` replicas taken in turn (see :func:`meshtensor.boxes.split_by_owner`).
    With ``held`` = the core regions and ``before == after`` it is ``update_halo``'s
    traffic. Only pairs that exchange data appear: the wanted boxes are cut by the
    source's shard boundaries per dim (``searchsorted``), never by scanning pairs."""
    h_lo, h_hi = held if held is not None else _held(before, shape)
    send, recv, lo, hi = missing_boxes(before, shape, *_held(after, shape), h_lo, h_hi,
                                       spread=spread)
    return TransferStep(before, after, send, recv, lo, hi, itemsize)


def _best_transfer_step(before: Sharding, after: Sharding, shape, itemsize) -> TransferStep:
    """Link-aware choice among byte-optimal transfer steps: every replica of a shard
    holds the same cells, so which one sends changes only the links used. The nearest
    replica (fewest link bytes) and replicas taken in turn are both tried; the lower
    busiest-link load under XY routing wins (ties: nearest)."""
    near = transfer_step(before, after, shape, itemsize)
    mesh = before.mesh
    if not len(near.src) or not any(mesh.shape[a] > 1 for a in before.replicated_axes):
        return near
    spread = transfer_step(before, after, shape, itemsize, spread=True)
    if spread.flows.max_link_bytes(mesh) < near.flows.max_link_bytes(mesh):
        return spread
    return near


# -- collective steps on boxes ---------------------------------------------------------------------
def _piece(n: np.ndarray, k: int, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = -(-n // k)
    return np.minimum(p * c, n), np.minimum((p + 1) * c, n)


def _collective_flows(op: str, mesh: Mesh, lo, hi, axes, itemsize, **kw) -> StepFlows:
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
    a, b = _piece(ghi[:, :, d] - glo[:, :, d], k, np.arange(k)[None, :])
    ext = np.maximum(ghi - glo, 0)
    rest = np.prod(np.delete(ext, d, axis=2), axis=2, dtype=np.int64)  # (G, k) per sender i
    # bytes[g, i, j] = rest[g, i] * len(piece j); pieces are cut alike on every member
    return GroupFlows(axes, groups, u=rest * itemsize, w=(b - a))


def _all_reduce_flows(src: Sharding, shape, itemsize) -> GroupFlows:
    """``all_reduce`` over ``src``'s partial axes = reduce_scatter + all_gather of the
    flattened local array (partial terms cover whole local arrays, halos too)."""
    P = src.partial_axes
    groups = src.mesh.group_array(P)
    k = groups.shape[1]
    local = volume(*src.windows(shape))
    a, b = _piece(local[groups], k, np.arange(k)[None, :])
    p = (b - a) * itemsize  # (G, k): piece j's bytes
    return GroupFlows(P, groups, send=p, recv=p)


def _reduce_scatter_flows(src: Sharding, d: int, shape, itemsize) -> GroupFlows:
    """``reduce_scatter`` of ``src``'s partial axes onto tensor dim ``d``: member ``j``
    receives piece ``j`` (along ``d``) from every other member."""
    P = src.partial_axes
    groups = src.mesh.group_array(P)
    k = groups.shape[1]
    lo, hi = src.regions(shape)
    ext = hi[groups[:, 0]] - lo[groups[:, 0]]  # (G, rank), equal inside a group
    pa, pb = _piece(ext[:, d:d + 1], k, np.arange(k)[None, :])
    rest_vol = np.prod(np.delete(ext, d, axis=1), axis=1, dtype=np.int64)[:, None]
    return GroupFlows(P, groups, recv=(pb - pa) * rest_vol * itemsize)


def _update_halo_flows(cur: Sharding, tgt: Sharding, shape, itemsize) -> Flows:
    """``update_halo`` from ``cur`` (no halos) to ``tgt`` (``cur`` plus halos): every
    in-tensor halo cell is refilled from its owner's core."""
    return transfer_step(cur, tgt, shape, itemsize, held=cur.regions(shape)).flows


def _sim(op: str, mesh: Mesh, lo, hi, axes, itemsize, **kw):
    """Apply a collective to a layout of boxes: the new boxes and the flows, or None
    when the result is not a box per device."""
    groups = mesh.group_array(axes)
    k = groups.shape[1]
    if op == "all_slice":
        d = kw["slice_axis"]
        a, b = _piece(hi[:, d] - lo[:, d], k, mesh.in_group_index(axes))
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
        a, b = _piece(hi[groups, d] - lo[groups, d], k, np.arange(k)[None, :])
        lo2[groups, d] = lo[groups, d] + a
        hi2[groups, d] = lo[groups, d] + b
    return lo2, hi2, _collective_flows(op, mesh, lo, hi, axes, itemsize, **kw)


def _next_move(c: list[tuple[int, ...]], t: list[tuple[int, ...]]
               ) -> tuple[str, tuple[int, ...], tuple[tuple[str, int], ...]] | None:
    """MLIR's patterns, in order: the next collective ``(op, mesh_axes, params)`` taking
    split axes ``c`` towards ``t`` (``c`` is updated), or None when none applies."""
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


def _collective_sequence(cur: Sharding, tgt: Sharding, shape, itemsize,
                         budget: int | None = None) -> tuple[Step, ...] | None:
    """MLIR's patterns applied greedily (:func:`_next_move`), each step checked on boxes;
    None if they do not reach ``tgt`` exactly, or (given a ``budget``) as soon as their
    bytes exceed it."""
    mesh, rank = cur.mesh, len(shape)
    c = [cur.axes_of(d) for d in range(rank)]
    t = [tgt.axes_of(d) for d in range(rank)]
    lo, hi = (a.copy() for a in cur.regions(shape))
    steps: list[Step] = []
    before = cur
    for _ in range(4 * mesh.ndim + 4):
        if c == t:  # same split axes; offsets must agree too
            return tuple(steps) if before == tgt else None
        move = _next_move(c, t)
        if move is None:
            return None
        op, axes, params = move
        res = _sim(op, mesh, lo, hi, axes, itemsize, **dict(params))
        if res is None:
            return None
        lo, hi, flows = res
        after = tgt if c == t else Sharding(mesh, c)
        if not _same_layout(lo, hi, after, shape):
            return None  # nested cuts differ from the flat ceil-div rule (uneven sizes)
        steps.append(CollectiveStep(op, axes, params, before, after, flows))
        if budget is not None and sum(s.bytes for s in steps) > budget:
            return None  # bytes only add up: this route cannot win any more
        before = after
    return None


#: A candidate plan: (bytes, number of steps, a function that builds its steps). Costs
#: are closed-form; only the chosen candidate's point-to-point transfers get built.
Candidate = tuple[int, int, Callable[[], tuple[Step, ...]]]


def _plain(cur: Sharding, tgt: Sharding, shape, itemsize, lb: int | None = None) -> Candidate:
    """Best plan between two shardings without partial axes.

    The point-to-point transfers always move exactly the lower bound, so any collective
    route that reaches it wins (ties go to collectives: fewer, regular messages) and the
    transfers are built only when none does.
    """
    if cur == tgt:
        return 0, 0, lambda: ()
    if lb is None:
        lb = _lower_bound(cur, tgt, shape, itemsize)
    if not cur.halo_sizes and not tgt.halo_sizes:
        seq = _collective_sequence(cur, tgt, shape, itemsize, budget=lb)
        if seq is not None and sum(s.bytes for s in seq) <= lb:
            return lb, len(seq), lambda: seq
    if tgt.halo_sizes and not cur.halo_sizes and cur == tgt.replace(halo_sizes=None):
        # update_halo refills every in-tensor halo cell from its owner's core.
        step = CollectiveStep("update_halo", (), (), cur, tgt,
                              _update_halo_flows(cur, tgt, shape, itemsize))
        if step.bytes <= lb:
            return lb, 1, lambda: (step,)
    return lb, 1, lambda: (_best_transfer_step(cur, tgt, shape, itemsize),)


def _plan_partial(src: Sharding, tgt: Sharding, shape, itemsize) -> tuple[Step, ...]:
    mesh = src.mesh
    P = src.partial_axes
    kind = src.partial_kind
    base = src.replace(partial=None)
    ar = CollectiveStep("all_reduce", P, (("reduction", kind),), src, base,
                        _all_reduce_flows(src, shape, itemsize))
    cands: list[Candidate] = []

    def then(first: CollectiveStep, rest: Candidate) -> Candidate:
        return first.bytes + rest[0], 1 + rest[1], lambda: (first,) + rest[2]()

    cands.append(then(ar, _plain(base, tgt, shape, itemsize)))
    if not src.halo_sizes and not src.sharded_dims_offsets:
        # (reduce_scatter cuts ceil-div; explicit offsets never match)
        lo, hi = src.regions(shape)
        for d in range(len(shape)):
            split = [list(src.axes_of(i)) for i in range(len(shape))]
            split[d] = split[d] + list(P)
            new = Sharding(mesh, split)
            lo2, hi2, _ = _sim("all_slice", mesh, lo, hi, P, itemsize, slice_axis=d)
            if not _same_layout(lo2, hi2, new, shape):
                continue
            rs = CollectiveStep("reduce_scatter", P, (("scatter_axis", d), ("reduction", kind)),
                                src, new, _reduce_scatter_flows(src, d, shape, itemsize))
            cands.append(then(rs, _plain(new, tgt, shape, itemsize)))
    return min(cands, key=lambda x: x[:2])[2]()


def _lower_bound(src: Sharding, tgt: Sharding, shape, itemsize) -> int:
    t_lo, t_hi = _held(tgt, shape)
    need = volume(t_lo, t_hi)
    if src.partial_axes and any(src.mesh.shape[a] > 1 for a in src.partial_axes):
        return int(need.sum()) * itemsize  # a partial term is not the value
    h_lo, h_hi = _held(src, shape)
    have = volume(np.maximum(t_lo, h_lo), np.minimum(t_hi, h_hi))
    return int((need - have).sum()) * itemsize


# -- moves and steps -------------------------------------------------------------------------------
def _move_of(step: Step) -> Move:
    if isinstance(step, TransferStep):
        return Move("transfers", (), (), step.before, step.after, step.bytes)
    return Move(step.op, step.mesh_axes, step.params, step.before, step.after, step.bytes)


def _step_of(move: Move, shape, itemsize) -> Step:
    """Build a move's step: its flows, or for ``"transfers"`` its rows (the link-aware
    choice of senders happens here)."""
    op, axes, params, before, after, _ = move
    if op == "transfers":
        return _best_transfer_step(before, after, shape, itemsize)
    kw = dict(params)
    if op == "update_halo":
        flows: StepFlows = _update_halo_flows(before, after, shape, itemsize)
    elif op == "all_reduce":
        flows = _all_reduce_flows(before, shape, itemsize)
    elif op == "reduce_scatter":
        flows = _reduce_scatter_flows(before, kw["scatter_axis"], shape, itemsize)
    else:
        flows = _collective_flows(op, before.mesh, *before.regions(shape), axes, itemsize, **kw)
    return CollectiveStep(op, axes, params, before, after, flows)


#: Meshes up to this many devices plan even layouts in closed form (:func:`_even_plan`).
EVEN_PLAN_MAX_DEVICES = 64
# Byte counts the fast path computes in Python ints must fit the general planner's
# int64 boxes, or the two would disagree (a total over all devices stays below this).
_INT64_SAFE = 2 ** 62


def _even_lower_bound(src: Sharding, tgt: Sharding, shape, n: int, vt: int, itemsize: int) -> int:
    """``_lower_bound`` for even layouts: ``n`` devices each need ``vt`` elements and keep
    the overlap of their two boxes. Once the common prefix of split axes is cut off, on
    every dim one block usually lies inside the other (the smaller block's extent is
    kept, a closed form); only on a dim split further on both sides does the overlap
    depend on the device, and there the blocks are intersected device by device (at
    most ``EVEN_PLAN_MAX_DEVICES``, plain ints: cheaper than NumPy's calls here)."""
    cs, ts, sizes = src.split_axes, tgt.split_axes, src.mesh.shape
    kept, hard = 1, []
    for d, m in enumerate(shape):
        a = cs[d] if d < len(cs) else ()
        b = ts[d] if d < len(ts) else ()
        p = 0
        while p < len(a) and p < len(b) and a[p] == b[p]:
            p += 1
        if p < len(a) and p < len(b):
            hard.append(d)
            continue
        for ax in (a if len(a) > len(b) else b):
            m //= sizes[ax]
        kept *= m
    if not hard:
        return n * (vt - kept) * itemsize
    s_at, t_at = _dim_starts(src, shape), _dim_starts(tgt, shape)
    ks, kt = src._counts, tgt._counts  # (a hard dim is split on both sides)
    cols = [(s_at[d], t_at[d], shape[d] // ks[d], shape[d] // kt[d]) for d in hard]
    total = 0
    for i in range(n):
        v = 1
        for s0, t0, es, et in cols:
            x, y = s0[i], t0[i]
            hi = x + es if x + es < y + et else y + et
            v *= hi - (x if x > y else y)
            if v <= 0:
                v = 0
                break
        total += v
    return (n * vt - kept * total) * itemsize


@lru_cache(maxsize=1024)
def _dim_starts(s: Sharding, shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Per dim, every device's block start (plain ints, for the fast path)."""
    return tuple(map(tuple, _held(s, shape)[0].T.tolist()))


def _even_plan(src, tgt, shape, itemsize) -> ReshardPlan | None:
    """The planner's fast path, or None when it does not apply: a mesh of at most
    ``EVEN_PLAN_MAX_DEVICES`` devices, no partial axes, halos or explicit offsets, and
    every dim's size divisible by its shard count in both shardings.

    Then every device's box has the same extents, every layout the patterns of
    :func:`_next_move` pass through is even too (each dim's axes stay a prefix of the
    source's or the target's), and bytes are closed forms over ``n`` devices holding
    ``V`` elements each before the step, group size ``k``: ``all_slice`` 0,
    ``all_gather`` ``n (k-1) V``, ``all_to_all`` ``n (k-1) V / k``. The moves equal what
    the general planner (:func:`_plain`) chooses, decided without per-device arrays;
    their flows and rows are built when ``plan.steps`` is read. Any argument this path
    does not recognise goes to the general planner, which validates it.
    """
    if type(src) is not Sharding or type(tgt) is not Sharding or type(shape) is not tuple \
            or type(itemsize) is not int or itemsize < 1 \
            or not (src._split_only and tgt._split_only):
        return None
    mesh = src.mesh
    n = mesh.size
    if n > EVEN_PLAN_MAX_DEVICES or (tgt.mesh is not mesh and tgt.mesh != mesh):
        return None
    ks, kt = src._counts, tgt._counts
    rank = len(shape)
    if len(ks) > rank or len(kt) > rank:
        return None
    for x in shape:
        if type(x) is not int or x < 0:
            return None
    vs = vt = math.prod(shape)
    if vs * itemsize * n >= _INT64_SAFE:
        return None  # the general planner's int64 arithmetic decides (and refuses) these
    for d, k in enumerate(ks):
        if shape[d] % k:
            return None
        vs //= k
    for d, k in enumerate(kt):
        if shape[d] % k:
            return None
        vt //= k
    cs, ts = src.split_axes, tgt.split_axes
    if cs == ts:  # (same mesh, only split axes: the shardings are equal)
        return _new_plan(src, tgt, shape, itemsize, (), 0)
    sizes = mesh.shape
    # Pure refinements and coarsenings: the moves _next_move would pick, written out
    # (one all_slice per dim in dim order; one all_gather per dim, highest dim first).
    # Moves are made with tuple.__new__: NamedTuple's own __new__ is a Python call.
    finer = _extra_dims(cs, ts)
    if finer is not None:
        moves: list[Move] = []
        before = src
        for d in finer:
            after = tgt if d == finer[-1] else _layout(mesh, ts[:d + 1] + cs[d + 1:])
            moves.append(tuple.__new__(Move, ("all_slice", ts[d][len(cs[d]) if d < len(cs) else 0:],
                                             (("slice_axis", d),), before, after, 0)))
            before = after
        return _new_plan(src, tgt, shape, itemsize, tuple(moves), 0)
    coarser = _extra_dims(ts, cs)
    if coarser is not None:
        moves, before, vol = [], src, vs
        for d in reversed(coarser):
            axes = cs[d][len(ts[d]) if d < len(ts) else 0:]
            k = math.prod([sizes[a] for a in axes])
            after = tgt if d == coarser[0] else _layout(mesh, cs[:d] + ts[d:])
            moves.append(tuple.__new__(Move, ("all_gather", axes, (("gather_axis", d),), before,
                                             after, n * (k - 1) * vol * itemsize)))
            before, vol = after, vol * k
        return _new_plan(src, tgt, shape, itemsize, tuple(moves), n * (vt - vs) * itemsize)
    lb = _even_lower_bound(src, tgt, shape, n, vt, itemsize)
    c = list(cs) + [()] * (rank - len(cs))
    t = list(ts) + [()] * (rank - len(ts))
    moves, before, vol, spent = [], src, vs, 0
    for _ in range(4 * mesh.ndim + 4):
        if c == t:
            return _new_plan(src, tgt, shape, itemsize, tuple(moves), lb)
        move = _next_move(c, t)
        if move is None:
            break
        op, axes, params = move
        k = math.prod([sizes[a] for a in axes])
        if op == "all_gather":
            nbytes = n * (k - 1) * vol * itemsize
            vol *= k
        elif op == "all_to_all":
            nbytes = n * (k - 1) * (vol // k) * itemsize
        else:
            nbytes = 0
            vol //= k
        spent += nbytes
        if spent > lb:
            break  # bytes only add up: the transfers (exactly lb) win
        after = tgt if c == t else _layout(mesh, tuple(c))
        moves.append(tuple.__new__(Move, (op, axes, params, before, after, nbytes)))
        before = after
    return _new_plan(src, tgt, shape, itemsize,
                     (tuple.__new__(Move, ("transfers", (), (), src, tgt, lb)),), lb)


def _extra_dims(coarse: tuple[tuple[int, ...], ...], fine: tuple[tuple[int, ...], ...]
                ) -> list[int] | None:
    """The dims where split axes ``fine`` extend ``coarse``, when on every dim ``coarse``
    is a prefix of ``fine`` (``fine`` refines ``coarse``); else None."""
    if len(coarse) > len(fine):  # (trailing unsplit dims are dropped)
        return None
    out = []
    for d, b in enumerate(fine):
        a = coarse[d] if d < len(coarse) else ()
        if b[:len(a)] != a:
            return None
        if len(b) > len(a):
            out.append(d)
    return out


@lru_cache(maxsize=1024)
def _layout(mesh: Mesh, split: tuple[tuple[int, ...], ...]) -> Sharding:
    """An intermediate layout of the fast path, interned (plans pass through few)."""
    return Sharding._of_split(mesh, split)


def _new_plan(src, tgt, shape, itemsize, moves, lb) -> ReshardPlan:
    """``ReshardPlan(...)`` without the frozen dataclass's six ``object.__setattr__``
    calls (a measurable share of planning a small mesh)."""
    plan = object.__new__(ReshardPlan)
    d = plan.__dict__
    d["src"], d["tgt"], d["global_shape"], d["itemsize"] = src, tgt, shape, itemsize
    d["moves"], d["lower_bound_bytes"] = moves, lb
    return plan


def plan_reshard(src: Sharding, tgt: Sharding, global_shape: Sequence[int],
                 itemsize: int = 4) -> ReshardPlan:
    """Plan the data movement from ``src`` to ``tgt`` for a tensor of ``global_shape``.

    Works for every pair of shardings on one mesh (split, replicated, several axes per
    dim, swaps, uneven and empty shards, halos, explicit offsets, partial sources).
    Resharding into a partial sharding is refused unless ``src == tgt``. Plans are
    immutable values cached on ``(src, tgt, global_shape, itemsize)`` (the last
    ``PLAN_CACHE_SIZE`` pairs, at most ``PLAN_CACHE_BYTES`` of transfer rows): a
    repeated call returns the same plan in microseconds; ``plan_reshard.cache_clear()``
    empties the cache, ``plan_reshard.cache_info()`` reports hits, misses, size, bytes.

    >>> from meshtensor import Mesh, Sharding
    >>> m = Mesh([2, 3])
    >>> p = plan_reshard(Sharding(m, [[0], [1]]), Sharding(m, [[1], [0]]), (6, 6))
    >>> p.bytes_moved == p.lower_bound_bytes, [s.op for s in p.steps]
    (True, ['transfers'])
    >>> plan_reshard(Sharding(m, [[0], [1]]), Sharding(m, [[1], [0]]), (6, 6)) is p
    True
    """
    cache = _cached_plan
    # arguments not in normal form are checked, then looked up as their normal form
    # (4.0 == 4 and (4.0,) == (4,): they would hit the cache unchecked)
    if type(itemsize) is not int or type(global_shape) is not tuple:
        return plan_reshard(src, tgt, *_checked_args(src, tgt, global_shape, itemsize))
    for n in global_shape:
        if type(n) is not int:
            return plan_reshard(src, tgt, *_checked_args(src, tgt, global_shape, itemsize))
    key = (src, tgt, global_shape, itemsize)
    try:
        got = cache._plans.get(key)
    except TypeError:  # an unhashable src or tgt: not a Sharding, say so
        return plan_reshard(src, tgt, *_checked_args(src, tgt, global_shape, itemsize))
    if got is None:
        return cache.miss(key)
    cache.hits += 1
    cache._plans.move_to_end(key)
    return got[0]


#: How many (src, tgt, shape, itemsize) plans :func:`plan_reshard` keeps, and how many
#: bytes of transfer rows they may hold together (a 16384-device halo plan alone has
#: ~190k rows, ~12 MB: a count bound alone could keep GBs).
PLAN_CACHE_SIZE = 256
PLAN_CACHE_BYTES = 256 << 20


def _steps_nbytes(steps: Sequence[Step]) -> int:
    """Bytes of the arrays steps hold (transfer rows; collective flows are closed form)."""
    return sum(a.nbytes for st in steps if isinstance(st, TransferStep)
               for a in (st.src, st.dst, st.lo, st.hi))


class _PlanCache:
    """Least-recently-used plans, bounded by count and by the bytes of their arrays; a
    plan larger than the whole byte budget is returned but not kept. Steps a cached
    plan builds later (``ReshardPlan.steps``) are counted when built (:meth:`built`).
    :func:`plan_reshard` looks plans up itself (one call less on a hit) and calls
    :meth:`miss` for the rest."""

    def __init__(self, maxsize: int, maxbytes: int) -> None:
        self.maxsize, self.maxbytes = maxsize, maxbytes
        self._plans: OrderedDict = OrderedDict()
        self._nbytes = 0
        self.hits = self.misses = 0

    def miss(self, key: tuple) -> ReshardPlan:
        """Plan ``key = (src, tgt, global_shape, itemsize)``, not in the cache, and keep it."""
        plan = _even_plan(*key)
        if plan is None:
            normal = key[:2] + _checked_args(*key)
            if normal != key:  # (a shape like range(4)): one entry per normal form
                return plan_reshard(*normal)
            plan = _general_plan(*normal)
            built = plan.__dict__.get("steps")  # the general planner builds steps as it goes
            size = _steps_nbytes(built) if built else 0
        else:
            size = 0  # the fast path builds no steps
        self.misses += 1
        if size > self.maxbytes:
            return plan
        plans = self._plans
        plans[key] = (plan, size)
        self._nbytes += size
        if len(plans) > self.maxsize or self._nbytes > self.maxbytes:
            self._evict()
        return plan

    def built(self, plan: ReshardPlan, steps: tuple[Step, ...]) -> None:
        """A plan built its steps: count their arrays if the plan is cached."""
        key = (plan.src, plan.tgt, plan.global_shape, plan.itemsize)
        got = self._plans.get(key)
        if got is None or got[0] is not plan:
            return
        size = _steps_nbytes(steps)
        if size > self.maxbytes:
            del self._plans[key]
            self._nbytes -= got[1]
            return
        self._plans[key] = (plan, got[1] + size)
        self._nbytes += size
        self._plans.move_to_end(key)  # just used
        self._evict()

    def _evict(self) -> None:
        while len(self._plans) > self.maxsize or self._nbytes > self.maxbytes:
            _, (_, dropped) = self._plans.popitem(last=False)
            self._nbytes -= dropped

    def cache_clear(self) -> None:
        self._plans.clear()
        self._nbytes = 0
        self.hits = self.misses = 0

    def cache_info(self) -> _CacheInfo:
        return _CacheInfo(self.hits, self.misses, self.maxsize, len(self._plans), self._nbytes)


class _CacheInfo(NamedTuple):
    hits: int
    misses: int
    maxsize: int
    currsize: int
    nbytes: int


_cached_plan = _PlanCache(PLAN_CACHE_SIZE, PLAN_CACHE_BYTES)


def _checked_args(src, tgt, global_shape, itemsize) -> tuple[tuple[int, ...], int]:
    """Validate :func:`plan_reshard`'s arguments (those the fast path took never get
    here); the shape and itemsize in normal form: ``(4, 4)``, ``[4, 4]`` and
    ``np.array([4, 4])`` are one shape."""
    for name, s in (("src", src), ("tgt", tgt)):
        if not isinstance(s, Sharding):
            raise TypeError(f"plan_reshard: {name} must be a Sharding, got {type(s).__name__}")
    if src.mesh != tgt.mesh:
        raise ValueError(f"plan_reshard: src is on mesh {src.mesh!r}, tgt on {tgt.mesh!r}")
    if not _is_int(itemsize) or itemsize < 1:
        raise ValueError(f"plan_reshard: itemsize must be a positive int, got {itemsize!r}")
    shape = src.check_shape(global_shape, "plan_reshard (src)")
    tgt.check_shape(shape, "plan_reshard (tgt)")
    # every byte count of a plan is at most what all devices hold of the tensor, times
    # the longest route for link bytes; the planner counts in int64, so refuse what
    # could wrap instead of printing garbage
    total = math.prod(shape) * int(itemsize) * src.mesh.size
    longest = max(1, sum(n - 1 for n in src.mesh.shape))
    if total * longest >= 2 ** 63:
        raise ValueError(f"plan_reshard: global_shape {shape} x itemsize {itemsize} on "
                         f"{src.mesh.size} devices holds up to {total:.3e} bytes ({longest} "
                         f"hops on the longest route), past the int64 byte counts a plan "
                         f"reports (< 2**63 = 9.223e+18 byte-hops)")
    if tgt.partial_axes and tgt != src:
        raise ValueError(f"plan_reshard: cannot reshard {src} into the partial sharding {tgt}: "
                         f"a partial target is only reachable from itself (reduce first, then "
                         f"split the work that produces partial values)")
    return shape, int(itemsize)


def _general_plan(src: Sharding, tgt: Sharding, shape: tuple[int, ...], itemsize: int) -> ReshardPlan:
    """Every valid pair: candidates costed on per-device boxes, steps built as chosen."""
    lb = _lower_bound(src, tgt, shape, itemsize)
    if src == tgt:
        steps: tuple[Step, ...] = ()
    elif src.partial_axes:
        steps = _plan_partial(src, tgt, shape, itemsize)
    else:
        steps = _plain(src, tgt, shape, itemsize, lb)[2]()
    plan = ReshardPlan(src, tgt, shape, itemsize, tuple(_move_of(s) for s in steps), lb)
    return plan._with_steps(steps)


plan_reshard.cache_clear = _cached_plan.cache_clear  # type: ignore[attr-defined]
plan_reshard.cache_info = _cached_plan.cache_info  # type: ignore[attr-defined]


# -- execution on the simulator -------------------------------------------------------------------
@lru_cache(maxsize=64)
def _own_boxes(before: Sharding, after: Sharding, shape: tuple[int, ...]):
    """For every device at once: the box of its own held cells that its ``after`` array
    keeps, and whether it is non-empty (computed once per step, not once per device)."""
    w0, w1 = after.windows(shape)
    h_lo, h_hi = _held(before, shape)
    lo = np.maximum(h_lo, np.maximum(w0, 0))
    hi = np.minimum(h_hi, np.minimum(w1, np.asarray(shape, dtype=np.int64)))
    keep = np.all(lo < hi, axis=1)
    return lo, hi, keep


def own_cells(step: TransferStep, shape, r: int) -> tuple[tuple[slice, ...], tuple[slice, ...]] | None:
    """Where device ``r``'s own held cells go: ``(slices in its new array, slices in its
    old array)``, or None when it keeps nothing."""
    shape = tuple(shape)
    lo, hi, keep = _own_boxes(step.before, step.after, shape)
    if not keep[r]:
        return None
    w0, _ = step.after.windows(shape)
    s0, _ = step.before.windows(shape)
    return box_slices(lo[r], hi[r], w0[r]), box_slices(lo[r], hi[r], s0[r])


def new_local_shape(step: Step, shape, r: int) -> tuple[int, ...]:
    """Shape of device ``r``'s array after ``step``."""
    w0, w1 = step.after.windows(shape)
    return tuple((w1[r] - w0[r]).tolist())


def _run_transfers(arr: MeshArray, step: TransferStep, shape) -> MeshArray:
    """Build every device's ``after`` array: its own held cells, then what it receives."""
    mesh = arr.mesh
    w0, w1 = step.after.windows(shape)
    s0, _ = step.before.windows(shape)
    own_lo, own_hi, keep = _own_boxes(step.before, step.after, tuple(shape))
    order = np.argsort(step.dst, kind="stable")
    bounds = np.searchsorted(step.dst[order], np.arange(mesh.size + 1))
    ext = (w1 - w0).tolist()
    out = []
    for r in range(mesh.size):
        buf = np.zeros(ext[r], dtype=arr.dtype)
        if keep[r]:
            buf[box_slices(own_lo[r], own_hi[r], w0[r])] = \
                arr.locals[r][box_slices(own_lo[r], own_hi[r], s0[r])]
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
