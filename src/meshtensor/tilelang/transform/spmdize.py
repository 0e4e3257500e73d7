"""``SpmdizeMeshCopies``: from a global-view mesh kernel to explicit communication.

In a global-view kernel every core reads the tiles it needs with ``mesh_tensor_copy``,
wherever they live. This pass evaluates every copy from an annotated global tensor over
the launch grid and its enclosing loops (:mod:`.evaluate`, no compilation), finds the
core that owns the tile each core reads at each step, and rewrites the copy so that
every core touches only its own shard and remote tiles arrive through the comm ops of
:mod:`.comm` from their owner. Classes, tried in this order:

- ``local``: every core reads its own tile: the copy is kept.
- ``broadcast``: along some mesh axes every core of a group reads the same tile, owned
  by one core of the group: the owner loads it into a staging buffer and broadcasts it
  (the root may depend on loop variables: SUMMA's ``root=[k]``).
- ``shift``: every core reads the tile of the core at a fixed offset along one axis.
- ``permute``: any other pattern that is the same at every step (several rounds when a
  core serves different tiles to different readers; a core reading its own tile is a
  self pair).
- ``carried``: at every iteration but the first of the innermost loop, each core reads
  the tile that the core at a fixed offset along one axis read in the previous
  iteration (Cannon's skewed loop): the first iteration is one of the classes above
  into a held buffer, later ones ``shift`` the held tile (with ``rotate``).

Anything else is refused with a ``ValueError`` naming the copy and the cores involved:
a region that depends on data, a tile that spans several cores' shards, a remote read
that not every core executes at the same steps (core-dependent conditions or loop
bounds), an owner pattern that changes across steps in a way no op expresses, and
writes to another core's tile. See ``docs/spmdize.md``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from tvm import arith, ir, tirx

from ...boxes import clip_boxes, split_by_owner
from ...mesh import Mesh
from ..ir.evaluate import (IterSpace, Overflow, eval_np, is_if_then_else, iteration_space,
                            region_box)
from ..ir.kernel import KernelView
from ..ir.launch import Launch, row_major
from ..ir.memory import Memory
from ..ir.metadata import MeshTensorEntry
from ..ir.scope import COPY_OP, CopyCall, CopyRegion, direct_accesses
from ..language.comm import mesh_comm
from .lower_comm import check_collective_rule

#: a function attribute on spmdize's output: a refusal downstream is spmdize's fault
SPMDIZED_ATTR = "meshtensor.spmdized"

__all__ = ["SPMDIZED_ATTR", "CopyPlan", "plan_mesh_copies", "spmdize", "SpmdizeMeshCopies"]

WHERE = "SpmdizeMeshCopies"
Kind = Literal["local", "broadcast", "shift", "permute", "carried"]


@dataclass(frozen=True, eq=False)
class CopyPlan:
    """The communication chosen for one ``mesh_tensor_copy`` (see the module docstring).

    ``index`` is the copy's position in :func:`~..ir.scope.find_copies` order; ``mesh_axes``
    are the broadcast group's axes; ``root`` its in-group root coordinates (TIR
    expressions); ``shift_axis``/``offset`` the shift (``carried``: of the held tile);
    ``rounds`` the permute pair lists (linear ``(source, destination)``); ``first`` the
    plan of the first iteration of ``loop`` for ``carried``.
    """

    index: int
    copy: CopyCall
    buffer: str
    kind: Kind
    text: str
    mesh_axes: tuple[int, ...] = ()
    root: tuple[tirx.PrimExpr, ...] = ()
    shift_axis: int | None = None
    offset: int = 0
    rotate: bool = False
    rounds: tuple[tuple[tuple[int, int], ...], ...] = ()
    senders: tuple[dict[int, int], ...] = ()  # per round: sender -> a destination it serves
    first: "CopyPlan | None" = None
    loop: tirx.For | None = None
    extra: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return self.text


def _step_loops(c: CopyCall) -> list[tirx.For]:
    return [l for l in c.loops if l.thread_binding is None]


def _inline_lets(expr: tirx.PrimExpr, c: CopyCall) -> tirx.PrimExpr:
    """``expr`` with the copy's let-bound variables replaced by their values."""
    for let in reversed(c.lets):
        expr = tirx.stmt_functor.substitute(expr, {let.var: let.value})
    return expr


def _analyzer(c: CopyCall) -> arith.Analyzer:
    ana = arith.Analyzer()
    for l in c.loops:
        if isinstance(l.min, tirx.IntImm) and isinstance(l.extent, tirx.IntImm):
            ana.bind(l.loop_var, ir.Range.from_min_extent(l.min, l.extent))
    return ana


# -- facts per copy ------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _Table:
    """A copy's reads as ``[step, core]`` tables: owner (linear id), box ``[lo, hi)``."""

    owner: np.ndarray  # (T, C)
    lo: np.ndarray     # (T, C, rank)
    hi: np.ndarray
    steps: np.ndarray  # (T, nloops): step-loop values per step


def _name(c: CopyCall, i: int) -> str:
    return f"copy {i} ({c.src.buffer.name} -> {c.dst.buffer.name})"


def _block_text(region: CopyRegion, e: MeshTensorEntry, c: CopyCall) -> str:
    ana = _analyzer(c)
    return f"{e.name}[" + ", ".join(str(ana.simplify(tirx.floordiv(_inline_lets(s, c), b)))
                                    for s, b in zip(region.starts, e.block_shape)) + "]"


def _owners(e: MeshTensorEntry, shape: tuple[int, ...], core: np.ndarray, lo: np.ndarray,
            hi: np.ndarray, what: str, verb: str = "reads") -> np.ndarray:
    """The core owning each box (linear ids). A box that lies wholly outside the tensor
    (an edge block: TileLang's guard fills zeros) belongs to the shard its block index
    names. A box spanning several shards is refused."""
    s, mesh = e.sharding, e.mesh
    clo, chi = clip_boxes(lo, hi, shape)
    owner, _, _, _, rows = split_by_owner(s, shape, core, clo, chi)
    pieces = np.bincount(rows, minlength=len(core))
    if np.any(pieces > 1):
        i = int(np.flatnonzero(pieces > 1)[0])
        cores = sorted({mesh.multi_index(int(o)) for o in owner[rows == i]})
        raise ValueError(f"{WHERE}: {what} {verb} {e.name}"
                         f"[{', '.join(f'{a}:{b}' for a, b in zip(lo[i], hi[i]))}] on core "
                         f"{mesh.multi_index(int(core[i]))}, which spans the shards of cores "
                         f"{cores}: read whole blocks of one core")
    coords = mesh.coords[core].copy()
    tile = s.tile_shape(shape)
    for d in s.split_dims:
        axes = s.axes_of(d)
        j = np.minimum(lo[:, d] // max(tile[d], 1), s.shard_count(d) - 1)
        for a, v in zip(axes, np.unravel_index(np.maximum(j, 0), [mesh.shape[a] for a in axes])):
            coords[:, a] = v
    out = np.ravel_multi_index(coords.T, mesh.shape) if mesh.ndim else np.zeros_like(core)
    out[rows] = owner
    return np.asarray(out, dtype=np.int64)


def _table(c: CopyCall, space: IterSpace, owner: np.ndarray, lo: np.ndarray, hi: np.ndarray,
           mesh: Mesh) -> _Table | None:
    """Group the points by core; ``None`` when the cores do not all run the copy at the
    same steps."""
    loops = _step_loops(c)
    steps = np.stack([space.env[l.loop_var] for l in loops], axis=1) if loops else \
        np.zeros((space.size, 0), dtype=np.int64)
    order = np.argsort(space.core, kind="stable")
    counts = np.bincount(space.core, minlength=mesh.size)
    if np.any(counts != counts[0]):
        return None
    T, C = int(counts[0]), mesh.size
    st = steps[order].reshape(C, T, -1)
    if np.any(st != st[:1]):
        return None
    r = lo.shape[1]
    return _Table(owner[order].reshape(C, T).T, lo[order].reshape(C, T, r).transpose(1, 0, 2),
                  hi[order].reshape(C, T, r).transpose(1, 0, 2), st[0])


def _uneven_message(space: IterSpace, owner: np.ndarray, mesh: Mesh, what: str) -> str:
    counts = np.bincount(space.core, minlength=mesh.size)
    remote = np.unique(space.core[owner != space.core])
    cores = [mesh.multi_index(int(x)) for x in remote[:4]]
    return (f"{WHERE}: {what} reads remote tiles on cores {cores}"
            f"{' ...' if len(remote) > 4 else ''}, but the cores do not all run it at the "
            f"same steps (runs per core: {counts.tolist()}); comm ops need every core at "
            f"every step: move the copy out of core-dependent conditions and loop bounds")


# -- classification --------------------------------------------------------------------------
def _along(x: np.ndarray, mesh: Mesh) -> np.ndarray:
    """A ``(T, C, ...)`` table viewed as ``(T, *mesh.shape, ...)``."""
    return x.reshape(x.shape[:1] + mesh.shape + x.shape[2:])


def _broadcast_axes(t: _Table, mesh: Mesh) -> tuple[int, ...] | None:
    reader = mesh.coords[None, :, :]
    oc = mesh.coords[t.owner]  # (T, C, ndim)
    L, H = _along(t.lo, mesh), _along(t.hi, mesh)
    invariant = [a for a in range(mesh.ndim)
                 if np.array_equal(L, np.broadcast_to(L.take([0], axis=1 + a), L.shape))
                 and np.array_equal(H, np.broadcast_to(H.take([0], axis=1 + a), H.shape))]
    group = tuple(a for a in invariant if np.any(oc[..., a] != reader[..., a]))
    rest = [a for a in range(mesh.ndim) if a not in group]
    if not group or np.any(oc[..., rest] != np.broadcast_to(reader, oc.shape)[..., rest]):
        return None
    # one root for all groups at each step (mesh_comm.broadcast's root is not per group)
    if np.any(oc[..., list(group)] != oc[:, :1, list(group)]):
        return None
    return group


def _fixed_offset(t: _Table, mesh: Mesh) -> tuple[int, int, bool] | None:
    """``(axis, k, wraps)`` when every core reads the tile of the core ``k`` further
    along ``axis``."""
    diff = mesh.coords[t.owner] - mesh.coords[None, :, :]
    moving = [a for a in range(mesh.ndim) if np.any(diff[..., a] != 0)]
    if len(moving) != 1:
        return None
    a = moving[0]
    k = np.unique(diff[..., a] % mesh.shape[a])
    if len(k) != 1:
        return None
    return a, int(k[0]), bool(len(np.unique(diff[..., a])) > 1)


def _offset(k: int, size: int, wraps: bool) -> int:
    """``mesh_comm.shift``'s offset (receiver ``c`` gets from ``c - offset``) for readers
    of ``c + k``: the shortest way round when the shift wraps."""
    off = (-k) % size
    if wraps and off > size // 2:
        off -= size
    return off if wraps else -k


def _classify_static(t: _Table, mesh: Mesh) -> dict[str, Any] | None:
    """The static class of a table (not ``carried``), or ``None``."""
    C = mesh.size
    if np.all(t.owner == np.arange(C)):
        return {"kind": "local"}
    group = _broadcast_axes(t, mesh)
    if group is not None:
        return {"kind": "broadcast", "mesh_axes": group}
    fixed = _fixed_offset(t, mesh)
    if fixed is not None:
        a, k, wraps = fixed
        return {"kind": "shift", "shift_axis": a, "offset": _offset(k, mesh.shape[a], wraps),
                "rotate": wraps}
    if np.all(t.owner == t.owner[:1]):
        # one send serves every reader of the same tiles (a core reading its own tile
        # is a self pair: no traffic, and no separate copy to guard)
        owner = t.owner[0]
        rounds: list[dict[int, list[int]]] = []
        for src in np.unique(owner).tolist():
            classes: list[list[int]] = []
            for d in np.flatnonzero(owner == src).tolist():
                for cl in classes:
                    if np.array_equal(t.lo[:, cl[0]], t.lo[:, d]) and \
                            np.array_equal(t.hi[:, cl[0]], t.hi[:, d]):
                        cl.append(d)
                        break
                else:
                    classes.append([d])
            for r, cl in enumerate(classes):
                if r == len(rounds):
                    rounds.append({})
                rounds[r][src] = cl
        return {"kind": "permute",
                "rounds": tuple(tuple(sorted((s, d) for s, ds in rd.items() for d in ds))
                                for rd in rounds),
                "senders": tuple({s: ds[0] for s, ds in rd.items()} for rd in rounds)}
    return None


def _carried(t: _Table, c: CopyCall, mesh: Mesh) -> tuple[tirx.For, int, int, np.ndarray] | None:
    """``(loop, axis, k, first_rows)`` when, after the first iteration of the innermost
    step loop, core ``c`` reads what core ``c + k`` along ``axis`` read one iteration
    before."""
    loops = _step_loops(c)
    if not loops or len(t.steps) < 2:
        return None
    u = loops[-1]
    if not isinstance(u.min, tirx.IntImm):
        return None
    col = t.steps[:, -1]
    later = np.flatnonzero(np.r_[False, col[1:] == col[:-1] + 1])
    first = np.setdiff1d(np.arange(len(col)), later)
    # the rewrite tells the first iteration by `u == u.min`: it must be exactly those
    if not len(later) or np.any(col[first] != int(u.min.value)) or \
            np.any(col[later] == int(u.min.value)):
        return None
    L, H = _along(t.lo, mesh), _along(t.hi, mesh)
    for a in range(mesh.ndim):
        for k in range(1, mesh.shape[a]):
            # rolled[c] = previous[c + k along a]
            if np.array_equal(np.roll(L[later - 1], -k, axis=1 + a), L[later]) and \
                    np.array_equal(np.roll(H[later - 1], -k, axis=1 + a), H[later]):
                return u, a, k, first
    return None


def _describe(kind: str, p: dict[str, Any], mesh: Mesh) -> str:
    names = mesh.axis_names
    if kind == "local":
        return "local (own shard)"
    if kind == "broadcast":
        coords = [str(p["root_text"][p["mesh_axes"].index(a)]) if a in p["mesh_axes"]
                  else names[a] for a in range(mesh.ndim)]
        return (f"broadcast over {', '.join(names[a] for a in p['mesh_axes'])} from core "
                f"({', '.join(coords)})")
    if kind == "shift":
        a, off = p["shift_axis"], p["offset"]
        src = [f"{n}{-off:+d}" if i == a else n for i, n in enumerate(names)]
        return (f"shift along {names[a]} by {off}{' (rotate)' if p['rotate'] else ''}: core "
                f"({', '.join(names)}) receives from ({', '.join(src)})")
    if kind == "permute":
        moves = [(s, d) for r in p["rounds"] for s, d in r if s != d]
        shown = [f"{mesh.multi_index(s)}->{mesh.multi_index(d)}" for s, d in moves[:3]]
        rounds = len(p["rounds"])
        return (f"permute of {len(moves)} tiles{f' in {rounds} rounds' if rounds > 1 else ''} "
                f"({', '.join(shown)}{', ...' if len(moves) > 3 else ''})")
    raise ValueError(kind)


# -- the analysis ---------------------------------------------------------------------------
def _space_and_boxes(c: CopyCall, i: int, region: CopyRegion, e: MeshTensorEntry,
                     launch: Launch):
    what = _name(c, i)
    shape = e.static_shape()
    if shape is None:
        raise ValueError(f"{WHERE}: {what}: {e.name!r} has a symbolic shape {e.global_shape}; "
                         f"specialise the kernel first")
    try:
        space = iteration_space(c, launch, f"{WHERE}: {what}")
        lo, hi = region_box(region, space, f"{WHERE}: {what}")
    except Overflow:
        raise
    except ValueError as err:
        raise ValueError(f"{WHERE}: {what} cannot be classified: its region of {e.name!r} "
                         f"is not a function of the launch grid and loops (data-dependent "
                         f"index?): {err}") from None
    return shape, space, lo, hi


def plan_mesh_copies(func: Any) -> list[CopyPlan]:
    """The :class:`CopyPlan` of every copy that reads or writes an annotated global
    tensor, in program order (``[]`` for a kernel without annotations). Raises
    ``ValueError`` for a copy the pass must refuse (see the module docstring).

    >>> from meshtensor.tilelang.kernels.gemm import build_gemm
    >>> [str(p) for p in plan_mesh_copies(build_gemm("summa", 64, 64, 64))][:1]
    ['A[bx, s] -> broadcast over y from core (x, s)']
    """
    view = KernelView.of(func, WHERE)
    if not view.info:
        return []
    _refuse_direct_access(view.func, view.info)
    launch = view.launch
    written = {c.dst.buffer.name for c in view.copies}
    memory = Memory.of(view.func)
    plans = []
    for i, c in enumerate(view.copies):
        src_e, dst_e = view.entry_of(c.src), view.entry_of(c.dst)
        what = _name(c, i)
        if src_e is not None and dst_e is not None:
            raise ValueError(f"{WHERE}: {what} copies between two annotated global tensors; "
                             f"stage it through a per-core buffer")
        if dst_e is not None:
            _check_write(c, i, dst_e, launch)
            plans.append(CopyPlan(i, c, dst_e.name, "local",
                                  f"{_block_text(c.dst, dst_e, c)} <- local write (own shard)"))
        elif src_e is not None:
            plan = _plan_read(c, i, src_e, launch, written)
            if plan.kind != "local" and not memory.is_per_core(c.dst.buffer):
                raise ValueError(f"{WHERE}: {what} reads remote tiles of {src_e.name} straight "
                                 f"into the global tensor {c.dst.buffer.name!r}; comm ops "
                                 f"deliver into per-core buffers: copy into a T.alloc_local / "
                                 f"T.alloc_shared buffer first")
            plans.append(plan)
    return plans


def _refuse_direct_access(pf: tirx.PrimFunc, info: dict[str, MeshTensorEntry]) -> None:
    """Refuse an annotated tensor read or written outside ``T.copy`` (``A[i, j]`` in an
    expression, or a tile op such as ``T.gemm`` on it): the pass only rewrites copies,
    so such an access would stay, remote or not, in the output."""
    seen = direct_accesses(pf, set(info))
    if seen:
        n = seen[0]
        verb = "reads" if isinstance(n, tirx.BufferLoad) else "writes"
        raise ValueError(f"{WHERE}: the kernel {verb} the annotated tensor {n.buffer.name!r} "
                         f"outside T.copy ({n.buffer.name}[{', '.join(map(str, n.indices))}], "
                         f"{len(seen)} such accesses); the pass rewrites only copies, so it "
                         f"cannot tell whether that tile is remote: copy the tile into a "
                         f"per-core buffer with mesh_tensor_copy first")


def _check_write(c: CopyCall, i: int, e: MeshTensorEntry, launch: Launch) -> None:
    mesh = launch.mesh
    shape, space, lo, hi = _space_and_boxes(c, i, c.dst, e, launch)
    owner = _owners(e, shape, space.core, lo, hi, _name(c, i), "writes")
    bad = np.flatnonzero(owner != space.core)
    if len(bad):
        j = bad[0]
        raise ValueError(f"{WHERE}: {_name(c, i)} writes {e.name}'s tile owned by core "
                         f"{mesh.multi_index(int(owner[j]))} from core "
                         f"{mesh.multi_index(int(space.core[j]))} ({len(bad)} remote writes): "
                         f"writes to other cores' tiles are not rewritten; let each owner "
                         f"write its own tile")


def _plan_read(c: CopyCall, i: int, e: MeshTensorEntry, launch: Launch, written: set
               ) -> CopyPlan:
    what, mesh = _name(c, i), launch.mesh
    shape, space, lo, hi = _space_and_boxes(c, i, c.src, e, launch)
    owner = _owners(e, shape, space.core, lo, hi, what)
    block = _block_text(c.src, e, c)
    if np.all(owner == space.core):
        return CopyPlan(i, c, e.name, "local", f"{block} -> local (own shard)")
    t = _table(c, space, owner, lo, hi, mesh)
    if t is None:
        raise ValueError(_uneven_message(space, owner, mesh, what))
    p = _classify_static(t, mesh)
    if p is not None:
        p = _finish(p, c, e, launch, t, what)
        return CopyPlan(i, c, e.name, p.pop("kind"), f"{block} -> {p.pop('text')}", **p)
    carried = _carried(t, c, mesh)
    if carried is not None and e.name in written:
        raise ValueError(f"{WHERE}: {what} reads {e.name} as a rotation of the tiles read one "
                         f"iteration before, but the kernel also writes {e.name}: a held tile "
                         f"could be stale; refusing")
    if carried is not None:
        u, a, k, first = carried
        sub = _Table(t.owner[first], t.lo[first], t.hi[first], t.steps[first])
        fp = _classify_static(sub, mesh)
        if fp is not None:
            fp = _finish(fp, c, e, launch, sub, what, rows=first)
            fkind, ftext = fp.pop("kind"), fp.pop("text")
            first_plan = CopyPlan(i, c, e.name, fkind, ftext, **fp)
            off = _offset(k, mesh.shape[a], True)
            shift = _describe("shift", {"shift_axis": a, "offset": off, "rotate": True}, mesh)
            text = (f"{block} -> at {u.loop_var.name} = {u.min}: {ftext}; then {shift} "
                    f"what it held")
            return CopyPlan(i, c, e.name, "carried", text, shift_axis=a, offset=off,
                            rotate=True, first=first_plan, loop=u)
    raise ValueError(_refusal(t, mesh, what, e))


def _refusal(t: _Table, mesh: Mesh, what: str, e: MeshTensorEntry) -> str:
    """Name the first core whose owner changes between two steps (a table that reaches
    here is not static, so there is one)."""
    s = next(s for s in range(1, len(t.owner)) if np.any(t.owner[s] != t.owner[s - 1]))
    c = int(np.flatnonzero(t.owner[s] != t.owner[s - 1])[0])
    owners = [mesh.multi_index(int(t.owner[x, c])) for x in (s - 1, s)]
    return (f"{WHERE}: {what} cannot be expressed with broadcast, shift or permute: core "
            f"{mesh.multi_index(c)} reads {e.name} from cores {owners} at step {s - 1}, step "
            f"{s}, an owner pattern that changes across steps in a way no comm op expresses")


def _finish(p: dict[str, Any], c: CopyCall, e: MeshTensorEntry, launch: Launch, t: _Table,
            what: str, rows: np.ndarray | None = None) -> dict[str, Any]:
    """Add the TIR facts (broadcast root expressions) and the one-line description;
    ``rows``: the steps ``t`` holds when it is part of the copy's table."""
    if p["kind"] == "broadcast":
        p["root"] = _root_exprs(p["mesh_axes"], c, e, launch, t, what, rows)
        ana = _analyzer(c)
        p["root_text"] = [ana.simplify(r) for r in p["root"]]
    p["text"] = _describe(p["kind"], p, launch.mesh)
    p.pop("root_text", None)
    p["extra"] = {"table": t}
    return p


def _root_exprs(group: tuple[int, ...], c: CopyCall, e: MeshTensorEntry, launch: Launch,
                t: _Table, what: str, rows: np.ndarray | None) -> tuple[tirx.PrimExpr, ...]:
    """The owner's coordinate on each group axis, from the region's start expressions
    (shard index ``start // tile``), checked against the evaluated owners."""
    s, mesh = e.sharding, launch.mesh
    shape = e.static_shape()
    tile = s.tile_shape(shape)
    ana = _analyzer(c)
    out = []
    for a in group:
        d = s.dim_of(a)
        axes = s.axes_of(d)
        inner = int(np.prod([mesh.shape[b] for b in axes[axes.index(a) + 1:]], dtype=np.int64))
        start = _inline_lets(c.src.starts[d], c)
        shard = tirx.floordiv(start, max(tile[d], 1))
        out.append(ana.simplify(tirx.floormod(tirx.floordiv(shard, inner), mesh.shape[a])))
    # the expressions must give the evaluated owners at every step
    space = iteration_space(c, launch, WHERE)
    order = np.argsort(space.core, kind="stable")
    for a, r in zip(group, out):
        got = space.value(r)[order].reshape(mesh.size, -1).T
        got = got if rows is None else got[rows]
        if not np.array_equal(got, mesh.coords[t.owner][..., a]):
            raise ValueError(f"{WHERE}: {what}: the broadcast root on mesh axis "
                             f"{mesh.axis_names[a]!r} is not the expression {r} of the loop "
                             f"variables (shard offsets?)")
    return tuple(out)


# -- the rewrite -----------------------------------------------------------------------------
def _region_call(region: CopyRegion, access: str) -> tirx.Call:
    from tilelang.language.utils import region as tl_region
    return tl_region(tirx.BufferLoad(region.buffer, list(region.starts)), access,
                     *region.extents)


def _buffer_region(region: CopyRegion) -> tirx.BufferRegion:
    return tirx.BufferRegion(region.buffer, [ir.Range.from_min_extent(s, x)
                                             for s, x in zip(region.starts, region.extents)])


def _copy(src: tirx.Call, dst: tirx.Call) -> tirx.Stmt:
    return tirx.Evaluate(tirx.Call("handle", ir.Op.get(COPY_OP), [src, dst]))


def _whole(buf: tirx.Buffer) -> CopyRegion:
    zero = tirx.IntImm("int32", 0)
    return CopyRegion(buf, (zero,) * len(buf.shape), tuple(buf.shape))


def _one_of(core: tirx.PrimExpr, ids) -> tirx.PrimExpr:
    ids = sorted(ids)
    e: tirx.PrimExpr | None = None
    for i in ids:
        term = core == i
        e = term if e is None else tirx.Or(e, term)
    return e if e is not None else tirx.IntImm("bool", 0)


def _coord_expr(values: dict[int, int], coords: list[tirx.PrimExpr], mesh: Mesh, a: int
                ) -> tirx.PrimExpr:
    """An expression of the core's coordinates giving ``values[core]`` on mesh axis ``a``
    for every core listed: ``(sum_b alpha_b * coord_b + beta) mod size`` with ``alpha_b``
    in {-1, 0, 1} when one fits (Cannon's skew: ``(y - x) mod n``), else a table."""
    ids = np.array(sorted(values), dtype=np.int64)
    want = np.array([values[i] for i in ids.tolist()], dtype=np.int64)
    xs = mesh.coords[ids]
    size = mesh.shape[a]
    for alpha in itertools.product((0, 1, -1), repeat=mesh.ndim):
        base = xs @ np.array(alpha, dtype=np.int64)
        beta = np.unique((want - base) % size)
        if len(beta) == 1:
            e: tirx.PrimExpr = tirx.IntImm("int32", int(beta[0]))
            for al, c in zip(alpha, coords):
                if al:
                    e = e + c if al > 0 else e - c
            e = arith.Analyzer().simplify(e)
            if alpha == tuple(int(b == a) for b in range(mesh.ndim)) and beta[0] == 0:
                return coords[a]
            return tirx.floormod(e, size)
    core = row_major(coords, mesh.shape)
    return _table_expr(core, values)


def _per_core(region: tirx.Call, launch: Launch) -> tirx.Call:
    """``region`` with each start that depends on the core only (no loop variable, no
    data) replaced by its values as an affine expression of the core's coordinates, or
    a table of them. A permute's sender reads the tile its reader read: the reader's
    coordinates are a table of the sender's, and substituted into a start that branches
    on them they nest one table per branch, on which TileLang's copy lowering and TVM's
    simplifier took 33 s instead of 1 s (a 4x3 mesh; found timing the fuzzer)."""
    load = region.args[0]
    mesh = launch.mesh
    env = launch.env_of(np.arange(mesh.size))
    starts = []
    for e in load.indices:
        if isinstance(e, (tirx.IntImm, tirx.Var)):
            starts.append(e)
            continue
        try:
            got = np.broadcast_to(np.asarray(eval_np(e, env), dtype=np.int64), (mesh.size,))
        except Overflow:
            raise
        except ValueError:  # a loop variable or data: keep the expression
            starts.append(e)
            continue
        starts.append(_core_values(got, launch, e.dtype, e))
    return tirx.Call(region.dtype, region.op,
                     [tirx.BufferLoad(load.buffer, starts), *region.args[1:]])


def _core_values(values: np.ndarray, launch: Launch, dtype: str, like: tirx.PrimExpr
                 ) -> tirx.PrimExpr:
    """``values[core]`` (one per linear core id) as ``c + sum_a k_a * coord_a`` when
    that fits every core, else as a ``Select`` table of the core id if ``like`` (the
    expression with these values) holds a table or branch itself, else ``like``."""
    mesh = launch.mesh
    base = int(values[0])  # core 0 sits at the origin
    unit = [int(values[mesh.linear_index(tuple(int(b == a) for b in range(mesh.ndim)))]) - base
            if mesh.shape[a] > 1 else 0 for a in range(mesh.ndim)]
    if np.array_equal(values, base + mesh.coords.astype(np.int64) @ np.array(unit)):
        e: tirx.PrimExpr = tirx.IntImm(dtype, base)
        for k, c in zip(unit, launch.coords()):
            if k:
                e = e + (c if c.dtype == dtype else tirx.Cast(dtype, c)) * k
        return launch.bound(arith.Analyzer()).simplify(e)
    if not _branches(like):
        return like
    # a table of multiples of g is written as a table times g, so that TileLang can prove
    # a copy from it aligned: a bare table of tile starts became a vector gather that
    # its C back end cannot build (the clamped stencil of issue 26)
    g = int(np.gcd.reduce(np.abs(values))) or 1
    table = _table_expr(launch.core_id(), {i: int(v) // g for i, v in enumerate(values)})
    table = table if g == 1 else table * g
    return table if table.dtype == dtype else tirx.Cast(dtype, table)


def _branches(e: tirx.PrimExpr) -> bool:
    """Whether ``e`` holds a ``Select`` or an ``if_then_else``."""
    found = []

    def visit(node):
        if isinstance(node, tirx.Select) or is_if_then_else(node):
            found.append(node)
    tirx.stmt_functor.post_order_visit(tirx.Evaluate(e), visit)
    return bool(found)


def _table_expr(core: tirx.PrimExpr, values: dict[int, int]) -> tirx.PrimExpr:
    """``values[core]`` as a ``Select`` chain (a static per-core table)."""
    items = sorted(values.items())
    e: tirx.PrimExpr = tirx.IntImm("int32", items[-1][1])
    for k, v in reversed(items[:-1]):
        e = tirx.Select(core == k, tirx.IntImm("int32", v), e)
    return e


class _Rewriter:
    def __init__(self, launch: Launch):
        self.launch = launch
        self.mesh = mesh = launch.mesh
        self.mc = mesh_comm(mesh)
        self.buffers: list[tirx.Buffer] = []
        self.fixed: dict = {}  # loop variables with a known value (a loop's first iteration)

    def stage(self, like: CopyRegion, name: str) -> tirx.Buffer:
        shape = [int(x) for x in (like.extents)]
        buf = tirx.decl_buffer(shape, like.buffer.dtype, name, scope="local")
        self.buffers.append(buf)
        return buf

    def load(self, plan: CopyPlan, vmap: dict, stage: tirx.Buffer,
             tabulate: bool = False) -> tirx.Stmt:
        """The owner's copy of the tile from its own shard into ``stage``; ``vmap`` makes
        the reader's region the sender's (launch variables -> the reader's coordinates);
        ``tabulate``: a start that depends on the core only becomes a per-core table
        (:func:`_per_core`)."""
        vmap = {**self.fixed, **vmap}
        src = plan.copy.call.args[0]
        if vmap:
            src = tirx.stmt_functor.substitute(_inline_lets(src, plan.copy), vmap)
            if tabulate:  # exact values, before TVM's simplifier sees the nest
                src = _per_core(src, self.launch)
            src = self.folded(plan, src)
        return _copy(src, _region_call(_whole(stage), "w"))

    def folded(self, plan: CopyPlan, src: tirx.Call) -> tirx.Call:
        """``_fold_mods(src)``, checked: the TVM simplifier it runs has changed values
        (``(x // 2) % 3`` of a nest holding ``bx % -6`` became ``bx % -6 % -6 // 2 *
        -1``, 3 instead of 0 on a core of a 1-D launch; found by the spmdize fuzzer,
        seed 78). At every point of the copy's iteration space the folded starts must
        equal the substituted ones, else the copy is refused."""
        out = _fold_mods(src, _analyzer(plan.copy))
        try:
            space = iteration_space(plan.copy, self.launch, WHERE)
            same = all(np.array_equal(space.value(a), space.value(b))
                       for a, b in zip(src.args[0].indices, out.args[0].indices))
        except Overflow:
            raise
        except ValueError:  # a start that reads data was refused by the planner already
            return out
        if not same:
            raise ValueError(f"{WHERE}: {plan.text}: simplifying the sender's region start "
                             f"{src.args[0]} changes its value on some core (a TVM "
                             f"simplifier error); write the read's coordinates without "
                             f"nested mods of the block index")
        return out

    def harmless(self, plan: CopyPlan, to: list[tirx.PrimExpr], senders: dict[int, int]) -> bool:
        """Whether every core that sends nothing still loads only its own shard with the
        senders' load (then the load needs no guard)."""
        t = plan.extra["table"]
        mesh = self.mesh
        others = np.setdiff1d(np.arange(mesh.size), list(senders))
        if not len(others):
            return True
        env = self.launch.env_of(others)
        try:
            target = [np.broadcast_to(np.asarray(eval_np(e, env)), others.shape) for e in to]
        except Overflow:
            raise
        except ValueError:
            return False
        tgt = np.ravel_multi_index(target, mesh.shape)
        return bool(np.all(t.owner[:, tgt] == others[None, :]))

    def emit(self, plan: CopyPlan, dst: CopyRegion, name: str) -> list[tirx.Stmt]:
        """Statements that leave in ``dst`` on every core what the copy read."""
        c, mesh, launch = plan.copy, self.mesh, self.launch
        coords = launch.coords()
        core = launch.core_id()
        out: list[tirx.Stmt] = []
        if plan.kind == "local":
            return [_copy(c.call.args[0], _region_call(dst, "w"))]
        if plan.kind == "broadcast":
            st = self.stage(dst, f"{name}_bcast")
            mine = None
            for a, r in zip(plan.mesh_axes, plan.root):
                term = coords[a] == r
                mine = term if mine is None else tirx.And(mine, term)
            out.append(tirx.IfThenElse(mine, self.load(plan, {}, st), None))
            out.append(tirx.Evaluate(self.mc.broadcast(
                _buffer_region(_whole(st)), _buffer_region(dst),
                [mesh.axis_names[a] for a in plan.mesh_axes],
                [int(r.value) if isinstance(r, tirx.IntImm) else r for r in plan.root])))
            return out
        if plan.kind == "shift":
            st = self.stage(dst, f"{name}_send")
            a = plan.shift_axis
            to = list(coords)
            to[a] = tirx.floormod(coords[a] + plan.offset, mesh.shape[a]) if plan.rotate \
                else coords[a] + plan.offset
            load = self.load(plan, launch.at(to), st)
            if not plan.rotate:
                ok = tirx.And(coords[a] + plan.offset >= 0,
                              coords[a] + plan.offset < mesh.shape[a])
                load = tirx.IfThenElse(ok, load, None)
            out.append(load)
            axis = mesh.axis_names[a]
            out.append(tirx.Evaluate(self.mc.shift(
                _buffer_region(_whole(st)), _buffer_region(dst), [axis], axis, plan.offset,
                rotate=plan.rotate)))
            return out
        if plan.kind == "permute":
            st = self.stage(dst, f"{name}_send")
            for pairs, senders in zip(plan.rounds, plan.senders):
                to = [_coord_expr({s: int(mesh.coords[d][a]) for s, d in senders.items()},
                                  coords, mesh, a) for a in range(mesh.ndim)]
                load = self.load(plan, launch.at(to), st, tabulate=True)
                if not self.harmless(plan, to, senders):
                    load = tirx.IfThenElse(_one_of(core, senders), load, None)
                out.append(load)
                out.append(tirx.Evaluate(self.mc.permute(
                    _buffer_region(_whole(st)), _buffer_region(dst),
                    [(mesh.multi_index(s), mesh.multi_index(d)) for s, d in pairs])))
            return out
        if plan.kind == "carried":
            held = self.stage(dst, f"{name}_held")
            recv = self.stage(dst, f"{name}_recv")
            u = plan.loop
            self.fixed = {u.loop_var: u.min}
            first = self.emit(plan.first, _whole(held), name)
            self.fixed = {}
            axis = mesh.axis_names[plan.shift_axis]
            later = [tirx.Evaluate(self.mc.shift(
                _buffer_region(_whole(held)), _buffer_region(_whole(recv)), [axis], axis,
                plan.offset, rotate=True)),
                _copy(_region_call(_whole(recv), "r"), _region_call(_whole(held), "w"))]
            out.append(tirx.IfThenElse(u.loop_var == u.min, _seq(first), _seq(later)))
            out.append(_copy(_region_call(_whole(held), "r"), _region_call(dst, "w")))
            return out
        raise ValueError(plan.kind)


def _terms(e: tirx.PrimExpr, sign: int = 1):
    """The additive terms of ``e`` with their signs."""
    if isinstance(e, tirx.Add):
        return _terms(e.a, sign) + _terms(e.b, sign)
    if isinstance(e, tirx.Sub):
        return _terms(e.a, sign) + _terms(e.b, -sign)
    return [(sign, e)]


def _fold_mods(call: tirx.Call, ana: arith.Analyzer) -> tirx.Call:
    """Rewrite ``(a + (b mod m)) mod n`` to ``(a + b) mod n`` where ``n`` divides ``m``,
    then simplify: the core substitution composes modular coordinates, and TileLang
    0.1.15's copy lowering mis-simplifies such nests (measured: ``((y + 3) % 4 + 1) % 4``
    became ``(y + 3) & 3``). Each mod is simplified before it is folded, since a 1-D
    launch hides the nest under the linear id until then: ``(((c + 1) % 4 * 2 + y) // 2
    + 3) % 4`` is ``((c + 1) % 4 + 3) % 4`` only once simplified."""
    def post(node):
        if not isinstance(node, tirx.FloorMod) or not isinstance(node.b, tirx.IntImm):
            return None
        node = ana.simplify(node)
        if not isinstance(node, tirx.FloorMod) or not isinstance(node.b, tirx.IntImm):
            return node
        n = int(node.b.value)
        terms = _terms(node.a)
        flat = [(sg, t.a if isinstance(t, tirx.FloorMod) and isinstance(t.b, tirx.IntImm)
                 and int(t.b.value) % n == 0 else t) for sg, t in terms]
        if all(a is b for (_, a), (_, b) in zip(flat, terms)):
            return node
        e: tirx.PrimExpr = tirx.IntImm(node.a.dtype, 0)
        for sg, t in flat:
            e = e + t if sg > 0 else e - t
        return ana.simplify(tirx.floormod(e, node.b))

    return tirx.stmt_functor.ir_transform(tirx.Evaluate(call), None, post).value


def _seq(stmts: list[tirx.Stmt]) -> tirx.Stmt:
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def spmdize(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """The explicit-communication version of a global-view mesh kernel (see the module
    docstring); a kernel without annotations or with only local copies is returned
    unchanged. Raises ``ValueError`` for a copy it must refuse.

    >>> from meshtensor.tilelang.kernels.gemm import build_gemm
    >>> from meshtensor.tilelang import find_comm_ops
    >>> out = spmdize(build_gemm("summa", 64, 64, 64))
    >>> [op.op for op in find_comm_ops(out)]
    ['broadcast', 'broadcast']
    """
    if not isinstance(func, tirx.PrimFunc):
        raise TypeError(f"spmdize: expected a PrimFunc, got {type(func).__name__}")
    plans = [p for p in plan_mesh_copies(func) if p.kind != "local"]
    if not plans:
        return func
    rw = _Rewriter(KernelView.of(func, WHERE).launch)
    by_call = {}
    for p in plans:
        name = f"{p.buffer}_c{p.index}"
        by_call[p.copy.call] = _seq(rw.emit(p, p.copy.dst, name))

    def post(node):
        if isinstance(node, tirx.Evaluate) and isinstance(node.value, tirx.Call):
            for call, new in by_call.items():
                if node.value.same_as(call):
                    return new
        if isinstance(node, tirx.SBlock) and node.name_hint == "tilelang_root":
            return tirx.SBlock(node.iter_vars, node.reads, node.writes, node.name_hint,
                               node.body, node.init, list(node.alloc_buffers) + rw.buffers,
                               node.match_buffers, node.annotations)
        return None

    body = tirx.stmt_functor.ir_transform(func.body, None, post)
    if not any(b.same_as(rw.buffers[0]) for b in _allocated(body)):
        raise ValueError(f"{WHERE}: the kernel has no 'tilelang_root' block to hold the "
                         f"staging buffers (was it written with T.Kernel?)")
    out = func.with_body(body).with_attr(SPMDIZED_ATTR, True)
    try:
        # a read that every core runs equally often may still sit in a loop or under an
        # `if` that depends on the core: its comm op would break the collective rule
        check_collective_rule(out)
    except Overflow:
        raise
    except ValueError as e:
        raise ValueError(f"{WHERE}: a remote read sits where its comm op cannot go: {e} "
                         f"(move the copy out of core-dependent conditions and loop "
                         f"bounds)") from None
    return out


def _allocated(body: tirx.Stmt) -> list[tirx.Buffer]:
    out: list[tirx.Buffer] = []

    def visit(node):
        if isinstance(node, tirx.SBlock):
            out.extend(node.alloc_buffers)
    tirx.stmt_functor.post_order_visit(body, visit)
    return out


def SpmdizeMeshCopies():
    """A ``prim_func_pass`` running :func:`spmdize` on every function of a module.

    Reads ``mesh_tensor_info`` (buffer shardings and block shapes). Preconditions: one
    program per core (``T.Kernel`` grid = mesh shape, or a 1-D launch of ``mesh.size``
    blocks), static tensor shapes. Output: a kernel with comm ops of :mod:`.comm` for
    :func:`~.lower.compile_mesh_kernel`; see ``docs/spmdize.md``.

    >>> import tvm
    >>> from meshtensor.tilelang.kernels.gemm import build_gemm
    >>> mod = SpmdizeMeshCopies()(tvm.IRModule({"gemm": build_gemm("cannon", 64, 64, 64)}))
    """
    def transform(func, mod, ctx):
        return spmdize(func)

    return tirx.transform.prim_func_pass(transform, opt_level=0,
                                         name="meshtensor.SpmdizeMeshCopies")
