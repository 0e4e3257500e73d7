"""Races on global memory: two cores that touch one element of a kernel parameter, at
least one of them writing (atomics aside), without a comm op that orders them. On the
chip such a kernel's result depends on timing; here it is refused.

The order between cores comes from the comm ops: each execution of one is an event that
every core reaches (the collective rule), in program order. A receiver of an exchange
knows that each core it receives from finished everything before the exchange (a
barrier's group, and every member of an all-gather, all-reduce, reduce-scatter or
all-to-all, receives from every other member); knowledge passes on (vector clocks).
An access of core A before event ``e`` is ordered before an access of core B after it
exactly when B knows, by then, that A passed ``e``. Two accesses in the same superstep
(between the same two events) are never ordered.

:func:`find_races` evaluates every access of every parameter buffer (stores, loads,
tile-op regions such as ``T.copy``'s, clipped to the buffer as TileLang's guarded copies
are) over the points at which it executes (:mod:`..ir.evaluate`), and returns the first
race in program order, with the buffer, an element, both cores and both statements.
Accesses it cannot evaluate (under ``while``, a condition or index read from memory)
are listed as ``unchecked`` (so are a buffer's when it has more than
``MeshPassConfig.max_race_elements`` accessed elements): ``compile_mesh_kernel(..., check_races=True)`` checks those
as the kernel runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from tvm import tirx

from ...boxes import clip_boxes
from ...mesh import Mesh
from ..ir.expr import static_int
from ..ir.evaluate import region_box
from ..ir.kernel import KernelView, execution_keys
from ..ir.launch import launch_grid
from ..ir.memory import Memory
from ..ir.scope import Access, find_accesses
from ..pass_config import DEFAULT, MeshPassConfig

__all__ = ["Race", "RaceCheck", "find_races", "grid_mesh", "statement_text"]


def statement_text(stmt: Any, width: int = 60) -> str:
    """A short one-line text of a statement, for messages.

    >>> import tilelang
    >>> from tvm import tirx
    >>> Y = tirx.decl_buffer((4,), "int32", "Y")
    >>> statement_text(tirx.BufferStore(Y, tirx.IntImm("int32", 1), [tirx.IntImm("int32", 0)]))
    'Y[0] = 1'
    """
    if isinstance(stmt, tirx.BufferStore):
        text = f"{stmt.buffer.name}[{', '.join(str(i) for i in stmt.indices)}] = {stmt.value}"
    elif isinstance(stmt, tirx.Evaluate) and isinstance(stmt.value, tirx.Call):
        call = stmt.value
        name = getattr(call.op, "name", "call")
        name = "T." + name.split(".")[-1] if name.startswith("tl.tileop.") else name
        args = []
        for a in call.args:
            if isinstance(a, tirx.Call) and getattr(a.op, "name", "") == "tl.region":
                load = a.args[0]
                args.append(f"{load.buffer.name}[{', '.join(str(i) for i in load.indices)}]")
            else:
                args.append(str(a))
        text = f"{name}({', '.join(args)})"
    elif isinstance(stmt, tirx.Bind):
        text = f"{stmt.var.name} = {stmt.value}"
    elif isinstance(stmt, tirx.IfThenElse):
        text = f"if {stmt.condition}"
    else:
        text = type(stmt).__name__
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


@dataclass(frozen=True)
class Race:
    """Two accesses of different cores to one element, at least one a write, that no
    comm op orders: ``buffer`` and ``element`` (its indices), ``cores`` (mesh
    coordinates), ``writes`` (whether each access writes), ``statements`` (their
    texts)."""

    buffer: str
    element: tuple[int, ...]
    cores: tuple[tuple[int, ...], tuple[int, ...]]
    writes: tuple[bool, bool]
    statements: tuple[str, str]

    def message(self, where: str) -> str:
        """The refusal's text, naming ``where`` first."""
        how = ["writes" if w else "reads" for w in self.writes]
        return (f"{where}: a race on {self.buffer!r} element {list(self.element)}: core "
                f"{self.cores[0]} {how[0]} it in `{self.statements[0]}` and core "
                f"{self.cores[1]} {how[1]} it in `{self.statements[1]}`, with no comm op "
                f"between them that orders the two cores; on the chip the result depends "
                f"on timing. Give each core its own elements, or order them with a comm "
                f"op (e.g. a barrier) between the accesses")


@dataclass(frozen=True)
class RaceCheck:
    """What :func:`find_races` found: the first ``race`` (or ``None``) and the
    statements whose accesses it could not evaluate (``unchecked``)."""

    race: Race | None
    unchecked: tuple[str, ...] = ()


def grid_mesh(func: tirx.PrimFunc) -> Mesh | None:
    """The launch grid of a kernel without mesh facts, as a mesh (each block a core;
    ``None`` for a symbolic grid).

    >>> import tilelang
    >>> import tilelang.language as T
    >>> @T.prim_func
    ... def k():
    ...     with T.Kernel(2, 3, threads=1) as (bx, by):
    ...         T.evaluate(0)
    >>> grid_mesh(k)
    Mesh({'x': 2, 'y': 3})
    """
    sizes = launch_grid(func)
    if not sizes or None in sizes:
        return None
    return Mesh(dict(zip(["x", "y", "z"], sizes)))


def _events(view: KernelView, mesh: Mesh) -> tuple[np.ndarray, list] | None:
    """The comm ops' executions in program order: their keys (one row each) and who
    learns from whom at each (``(sender, receiver)`` arrays); ``None`` when they cannot
    be evaluated."""
    from .traffic import analyze_mesh_communication
    if not view.ops:
        return np.zeros((0, 0), dtype=np.int64), []
    try:
        report = analyze_mesh_communication(view.func)
        keys, learn = [], []
        for o in view.ops:
            space = view.space(o)
            rows = execution_keys(space, o.order, mesh.size)
            mine = report.op == o.index
            for e in range(len(rows)):
                m = mine & (report.step == e)
                snd, rcv = report.peer[m], report.core[m]
                if o.op == "barrier" or not o.group_size:  # a barrier's group waits for all
                    g = mesh.group_array(tuple(o.mesh_axes))
                    snd = np.repeat(g, g.shape[1], axis=1).ravel()
                    rcv = np.tile(g, (1, g.shape[1])).ravel()
                keys.append(rows[e])
                learn.append((snd, rcv))
    except ValueError:
        return None
    width = max(len(k) for k in keys)
    pad = np.full((len(keys), width), -(1 << 62), dtype=np.int64)
    for i, k in enumerate(keys):
        pad[i, :len(k)] = k
    order = np.lexsort(pad.T[::-1]) if width else np.arange(len(keys))
    return pad[order], [learn[i] for i in order]


def _clocks(learn: list, n: int) -> np.ndarray:
    """``vc[e][b][a]``: how many supersteps of core ``a`` core ``b`` knows finished once
    ``e`` events have passed (``vc[0]`` before the first)."""
    vc = np.zeros((len(learn) + 1, n, n), dtype=np.int64)
    cur = np.zeros((n, n), dtype=np.int64)
    for e, (snd, rcv) in enumerate(learn):
        new = cur.copy()
        if len(snd):
            np.maximum.at(new, rcv, cur[snd])
            np.maximum.at(new, (rcv, snd), e + 1)
        new[np.arange(n), np.arange(n)] = e + 1
        cur = new
        vc[e + 1] = cur
    return vc


def _epochs(points: np.ndarray, events: np.ndarray) -> np.ndarray:
    """Per point key (rows of ``points``), how many event keys come before it."""
    if not len(events):
        return np.zeros(len(points), dtype=np.int64)
    width = max(points.shape[1], events.shape[1])

    def padded(a: np.ndarray) -> np.ndarray:
        out = np.full((len(a), width), -(1 << 62), dtype=np.int64)
        out[:, :a.shape[1]] = a
        return out

    allk = np.concatenate([padded(events), padded(points)])
    is_event = np.concatenate([np.ones(len(events), bool), np.zeros(len(points), bool)])
    order = np.lexsort(tuple(allk.T[::-1])) if width else np.arange(len(allk))
    seen = np.cumsum(is_event[order])
    out = np.empty(len(allk), dtype=np.int64)
    out[order] = seen
    return out[len(events):]


def find_races(func: Any, where: str = "compile_mesh_kernel",
               config: MeshPassConfig = DEFAULT) -> RaceCheck:
    """The first race on a kernel's global memory (module docstring), in program order;
    ``config`` bounds the work (``max_race_elements``, ``max_race_clocks``).

    >>> import tilelang
    >>> import tilelang.language as T
    >>> @T.prim_func
    ... def k():
    ...     with T.Kernel(4, threads=1) as bx:
    ...         T.evaluate(0)
    >>> find_races(k).race is None
    True
    """
    view = KernelView.of(func, where)
    mem = Memory.of(view.func)
    if not mem.params:
        return RaceCheck(None)
    mesh = view.mesh or grid_mesh(view.func)
    if mesh is None:
        return RaceCheck(None, ("the kernel's launch (symbolic grid)",))
    if view.mesh is None:
        view = KernelView(view.func, view.info, view.ops, mesh, where)
    ev = _events(view, mesh)
    accesses = [a for a in find_accesses(view.func, {p.data for p in mem.params})
                if not a.atomic]
    if ev is None:
        return RaceCheck(None, tuple(statement_text(a.stmt) for a in accesses))
    events, learn = ev
    n = mesh.size
    if len(learn) * n * n > config.max_race_clocks:  # too many to hold: every event syncs all cores
        learn = [(np.repeat(np.arange(n), n), np.tile(np.arange(n), n))] * len(learn)
    vc = _clocks(learn, n)
    by_buf: dict = {}
    unchecked: list[str] = []
    for ai, a in enumerate(accesses):
        try:
            space = view.space(a)
            lo, hi = region_box(a.region, space, where)
        except ValueError:
            unchecked.append(statement_text(a.stmt))
            continue
        if not space.size:
            continue
        alloc = next(p for p in mem.params if p.data.same_as(a.region.buffer.data))
        shape = [static_int(d) for d in a.region.buffer.shape]
        if None in shape or not a.region.buffer.same_as(alloc) and \
                list(a.region.buffer.shape) != list(alloc.shape):
            unchecked.append(statement_text(a.stmt))  # a symbolic shape or a reshaped view
            continue
        lo, hi = clip_boxes(lo, hi, shape)
        ts = space.timestamps(a.order)
        by_buf.setdefault(alloc.name, (alloc, shape, []))[2].append(
            (ai, a, space.core, _epochs(ts, events), lo, hi))
    first: tuple | None = None
    for name, (alloc, shape, items) in by_buf.items():
        race = _buffer_race(name, shape, items, vc, config.max_race_elements)
        if race is not None and (first is None or race[0] < first[0]):
            first = race
    if first is None:
        return RaceCheck(None, tuple(unchecked))
    _, name, elem, (ia, ca, wa), (ib, cb, wb) = first
    return RaceCheck(Race(name, elem, (mesh.multi_index(ca), mesh.multi_index(cb)), (wa, wb),
                          (statement_text(accesses[ia].stmt), statement_text(accesses[ib].stmt))),
                     tuple(unchecked))


def _buffer_race(name: str, shape: list, items: list, vc: np.ndarray, max_elements: int
                 ) -> tuple | None:
    """The first race among one buffer's evaluated accesses, as ``(order, name, element,
    (access, core, write), (access, core, write))``, or ``None``."""
    if not any(a.write for _, a, *_ in items):
        return None
    cols: dict[str, list] = {k: [] for k in ("elem", "core", "epoch", "write", "acc")}
    total = 0
    for ai, a, core, epoch, lo, hi in items:
        ext = np.maximum(hi - lo, 0)
        count = np.prod(ext, axis=1) if ext.shape[1] else np.ones(len(lo), dtype=np.int64)
        total += int(count.sum())
        if total > max_elements:
            return None
        keep = count > 0
        lo, ext, core, epoch, count = lo[keep], ext[keep], core[keep], epoch[keep], count[keep]
        if not len(lo):
            continue
        # every element of every box: its row-major offset within the box, then indices
        pt = np.repeat(np.arange(len(lo)), count)
        off = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        sub = np.zeros((len(off), len(shape)), dtype=np.int64)
        rest = off.copy()
        for d in range(len(shape) - 1, -1, -1):
            e = ext[pt, d]
            sub[:, d] = lo[pt, d] + rest % np.maximum(e, 1)
            rest //= np.maximum(e, 1)
        cols["elem"].append(np.ravel_multi_index(tuple(sub.T), shape) if shape else
                            np.zeros(len(off), np.int64))
        cols["core"].append(core[pt])
        cols["epoch"].append(epoch[pt])
        cols["write"].append(np.full(len(off), a.write))
        cols["acc"].append(np.full(len(off), ai))
    if not cols["elem"]:
        return None
    elem, core, epoch, write, acc = (np.concatenate(cols[k]) for k in
                                     ("elem", "core", "epoch", "write", "acc"))
    # elements some core writes and another core touches
    order = np.lexsort((core, elem))
    elem, core, epoch, write, acc = elem[order], core[order], epoch[order], write[order], acc[order]
    starts = np.flatnonzero(np.r_[True, elem[1:] != elem[:-1]])
    ends = np.r_[starts[1:], len(elem)]
    gid = np.repeat(np.arange(len(starts)), ends - starts)
    cmin = np.minimum.reduceat(core, starts)
    cmax = np.maximum.reduceat(core, starts)
    anyw = np.maximum.reduceat(write.astype(np.int64), starts) > 0
    cand = anyw & (cmin != cmax)
    if not cand.any():
        return None
    sel = cand[gid]
    # pairs (a write, another core's access) within each candidate element
    w_idx = np.flatnonzero(sel & write)
    g = gid[w_idx]
    size = ends[g] - starts[g]
    i = np.repeat(w_idx, size)
    j = np.repeat(starts[g], size) + (np.arange(int(size.sum())) -
                                      np.repeat(np.cumsum(size) - size, size))
    other = core[i] != core[j]
    i, j = i[other], j[other]
    if not len(i):
        return None
    ea, eb, ca, cb = epoch[i], epoch[j], core[i], core[j]
    # ordered i -> j: ea < eb and core cb knows at epoch eb that ca finished epoch ea
    a_first = (ea < eb) & (vc[np.maximum(eb, 0), cb, ca] >= ea + 1)
    b_first = (eb < ea) & (vc[np.maximum(ea, 0), ca, cb] >= eb + 1)
    racy = ~(a_first | b_first)
    if not racy.any():
        return None
    x, y = int(i[racy][0]), int(j[racy][0])
    x, y = sorted((x, y), key=lambda t: (acc[t], t))
    element = tuple(int(v) for v in np.unravel_index(int(elem[x]), shape))
    return ((int(min(acc[x], acc[y])),), name, element,
            (int(acc[x]), int(core[x]), bool(write[x])), (int(acc[y]), int(core[y]), bool(write[y])))
