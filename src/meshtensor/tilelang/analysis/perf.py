"""``estimate_mesh_kernel``: how long a mesh kernel takes on a machine, what bounds
each of its supersteps (a core's arithmetic, its memory, a hot link, or latency), how
much of the communication hides behind compute, and whether its buffers fit.

The model reads the kernel's TIR (nothing is compiled) in two steps:

1. :func:`count_mesh_kernel` (machine-independent): the kernel's *exchanges* are the
   executions of its comm ops (supersteps of
   :func:`~.traffic.analyze_mesh_communication`), in the order the kernel runs them.
   Every other statement execution is placed, by its
   program-order key (:func:`~..ir.kernel.execution_keys`), before the first exchange
   that runs after it: superstep ``i`` is the work a core does after exchange ``i - 1``
   and up to exchange ``i``; the last superstep (no exchange) is what follows the last
   one. Per superstep and core it counts operations per element type (``T.gemm``:
   ``2 M N K``; a store or a ``v = e`` binding: the arithmetic of its value, a
   multiply-add being 2, integer arithmetic that reads no memory free) and bytes
   between global memory and the core (``T.copy`` between a global tensor and a
   per-core buffer, clipped to the tensor; element loads and stores of global tensors
   by stores and bindings), and which buffers the superstep's statements and its
   exchange read and write. A global-view kernel (copies of other cores' shards, no
   comm ops) reads everything from global memory: no exchange.
2. :func:`estimate_mesh_kernel` divides by a :class:`~meshtensor.machines.Machine`.
   A superstep's compute phase takes ``max over cores of max(ops / FLOP/s, bytes /
   memory bandwidth)`` (a core's share of the chip's memory bandwidth among the cores
   moving bytes in that phase). Its exchange takes the cheapest algorithm the machine
   can run the comm op with (:mod:`.comm_cost`: direct transfers, multicast, chains,
   trees, rings, recursive halving; on the machine's topology, with torus wraparound
   where the kernel's mesh spans a wrapping axis). *Serially* (bulk-synchronous) the
   kernel takes the sum. *Overlapped*, an exchange starts when the core reaches it and
   runs beside the compute that follows, which waits only for the exchanges whose
   buffers it reads or writes; an exchange waits for the compute and exchanges that
   write its source or use its destination, and for earlier exchanges on the same
   mesh axes (exchanges on different axes run side by side). The estimate is
   ``serial - overlap x (serial - overlapped)``, ``overlap`` being the machine's.
   Each superstep names its bound (the largest of the critical core's arithmetic and
   memory times, the exchange's streaming time and its latency) and critical core.

A loop whose bounds are read from memory, or a ``while`` loop, cannot be counted: one
``ValueError`` names the statement.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
from tvm import tirx

from ...boxes import clip_boxes, volume
from ...cost import hops as route_hops, xy_link_loads
from ...machines import Machine, get_machine
from ...mesh import Mesh
from ...text import plural
from ..ir.comm_op import is_comm_call
from ..ir.expr import static_int
from ..ir.evaluate import IterSpace, region_box
from ..ir.kernel import KernelView, execution_keys
from ..ir.names import DIST_RETURN_MARK, DIST_RT_CALL
from ..ir.scope import (COPY_OP, Cond, CopyRegion, Found, Let, WhileLoop, find_calls,
                        nbytes, region_of)
from .comm_cost import AlgorithmCost, Exchange, exchange_cost
from .traffic import CommReport, analyze_mesh_communication

__all__ = ["BOUNDS", "StepWork", "KernelWork", "StepTime", "PerfReport", "MemoryUse",
           "PlanStep", "count_mesh_kernel", "estimate_mesh_kernel", "flow_stats",
           "time_plan"]

WHERE = "estimate_mesh_kernel"
#: What can bound a superstep, in the order ties are broken.
BOUNDS = ("compute", "memory", "link", "latency")
GEMM_OP = "tl.tileop.gemm"
FILL_OP = "tl.tileop.fill"
_STORE_MARK = "meshtensor_perf_store"  # a store stands in as this call while we walk
# arithmetic nodes of a stored value: one operation each, in the node's dtype
_ARITH = (tirx.Add, tirx.Sub, tirx.Mul, tirx.Div, tirx.Mod, tirx.FloorDiv, tirx.FloorMod,
          tirx.Min, tirx.Max)
_FREE_CALLS = ("if_then_else", "reinterpret", "likely", "ret")
_ADDRESS_CALLS = ("address_of", "tvm_access_ptr")  # an address: nothing loaded
_INT64_MIN = np.iinfo(np.int64).min


# -- counts (no machine) ---------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class StepWork:
    """What one superstep does, machine-independent.

    ``exchange`` names the comm op whose execution ends it (``""`` for the last
    superstep, which ends the kernel), ``comm_op`` its index (``-1``), ``op_kind`` its
    kind (``"broadcast"``...), ``group_axes`` the mesh axes of its groups, ``execution``
    which execution of it, ``when`` its program-order key. Per core (linear order):
    ``ops`` maps element types to operations (FLOPs), ``mem_bytes`` the bytes between
    global memory and the core, ``sends`` the messages the core sends in the exchange,
    ``active`` whether it sends or receives. The exchange: ``exchange_bytes`` over
    ``flows`` point-to-point transfers (``flow_src``, ``flow_dst``, ``flow_bytes``: the
    direct transfers the kernel asked for), ``max_link_bytes`` on ``busiest_link``
    (``"(0, 1)->(0, 2)"``, XY routing without wraparound), ``max_hops`` the longest
    route, ``piece_bytes`` one core's source region. ``reads`` and ``writes`` name the
    per-core buffers (by their data) the compute phase reads and writes,
    ``exchange_reads`` and ``exchange_writes`` those of the exchange (``"*"``: a barrier,
    which orders everything).
    """

    index: int
    exchange: str
    comm_op: int
    execution: int
    when: tuple
    ops: Mapping[str, np.ndarray]
    mem_bytes: np.ndarray
    sends: np.ndarray
    active: np.ndarray
    exchange_bytes: int = 0
    flows: int = 0
    max_link_bytes: int = 0
    busiest_link: str = ""
    max_hops: int = 0
    op_kind: str = ""
    group_axes: tuple[int, ...] = ()
    piece_bytes: int = 0
    flow_src: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    flow_dst: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    flow_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    reads: frozenset = frozenset()
    writes: frozenset = frozenset()
    exchange_reads: frozenset = frozenset()
    exchange_writes: frozenset = frozenset()

    @property
    def messages(self) -> int:
        """The most messages one core sends in the exchange."""
        return int(self.sends.max()) if self.sends.size else 0

    @property
    def has_exchange(self) -> bool:
        return self.comm_op >= 0

    def topology(self, mesh: Mesh, wrap: tuple[bool, ...]) -> dict[str, Any]:
        """:func:`flow_stats` of the direct transfers on a topology (``wrap``: per
        axis, whether routes may use wraparound links), remembered per topology."""
        memo = self.__dict__.setdefault("_topology", {})
        if wrap not in memo:
            memo[wrap] = flow_stats(mesh, self.flow_src, self.flow_dst, self.flow_bytes, wrap)
        return memo[wrap]


def flow_stats(mesh: Mesh, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray,
               wrap: tuple[bool, ...]) -> dict[str, Any]:
    """What the cost of an exchange reads from its direct transfers on a topology:
    ``max_link_bytes`` (XY routing, the shorter way round on a wrapping axis),
    ``max_hops``, ``link_axes`` (the mesh axes whose links carry bytes),
    ``max_sent_bytes`` and ``max_messages`` (the most bytes and distinct receivers of
    one sender) and ``max_piece`` (the largest transfer).

    >>> st = flow_stats(Mesh([4]), np.array([0, 0, 0]), np.array([1, 2, 3]),
    ...                 np.array([8, 8, 8]), (True,))
    >>> st["max_link_bytes"], st["max_hops"], st["max_sent_bytes"], st["max_messages"]
    (16, 2, 24, 3)
    """
    if not len(src):
        return dict(max_link_bytes=0, max_hops=0, link_axes=frozenset(), max_sent_bytes=0,
                    max_messages=0, max_piece=0)
    loads = xy_link_loads(mesh, src, dst, nbytes, wrap=wrap)
    pairs = np.unique(src * mesh.size + dst)
    return dict(max_link_bytes=int(loads.max()),
                max_hops=int(route_hops(mesh, src, dst, wrap).max()),
                link_axes=frozenset(a for a in range(mesh.ndim) if loads[a].any()),
                max_sent_bytes=int(np.bincount(src, weights=nbytes).max()),
                max_messages=int(np.bincount(pairs // mesh.size).max()),
                max_piece=int(np.max(nbytes)))


@dataclass(frozen=True, eq=False)
class KernelWork:
    """The counts of a kernel (:func:`count_mesh_kernel`): its ``steps`` in execution
    order, its per-core ``buffers`` (``(name, scope, bytes)``) and the statements the
    model does not count (``uncounted``: tile ops it has no rule for, as ``"op x
    count"``)."""

    name: str
    mesh: Mesh
    steps: tuple[StepWork, ...]
    buffers: tuple[tuple[str, str, int], ...]
    uncounted: tuple[str, ...] = ()

    @property
    def local_bytes(self) -> int:
        """Bytes of the per-core buffers one core allocates."""
        return sum(b for _, _, b in self.buffers)

    def ops(self) -> dict[str, np.ndarray]:
        """Operations per element type and core over the whole kernel."""
        out: dict[str, np.ndarray] = {}
        for s in self.steps:
            for d, v in s.ops.items():
                out[d] = out.get(d, 0) + v
        return out

    def mem_bytes(self) -> np.ndarray:
        """Bytes between global memory and each core over the whole kernel."""
        return sum((s.mem_bytes for s in self.steps),
                   np.zeros(self.mesh.size, dtype=np.int64))


def _kernel_name(func: tirx.PrimFunc) -> str:
    sym = func.attrs.get("global_symbol") if func.attrs is not None else None
    return str(sym) if sym is not None else "kernel"


def _mark_stores(body: tirx.Stmt) -> tuple[tirx.Stmt, list[tirx.BufferStore | tirx.Bind]]:
    """The body with every store replaced by a marker call (same statement tree, so the
    same scopes and program-order keys), and the stores by marker index. A ``v = e``
    binding (``tirx.Bind``) stays where it is, as it scopes over its later siblings: its
    marker is appended to its statement list (no sibling moves) and carries the
    binding's place there (:func:`_binding_found`)."""
    marked: list[tirx.BufferStore | tirx.Bind] = []

    def mark(node: Any, *place: int) -> tirx.Evaluate:
        marked.append(node)
        args = (len(marked) - 1, *place)
        return tirx.Evaluate(tirx.call_extern("handle", _STORE_MARK,
                                              *(tirx.IntImm("int32", a) for a in args)))

    def post(node: Any) -> Any:
        if isinstance(node, tirx.BufferStore):
            return mark(node)
        lets = [(i, s) for i, s in enumerate(node.seq) if isinstance(s, tirx.Bind)]
        if not lets:
            return node
        tail = [mark(s, i, len(lets), r) for r, (i, s) in enumerate(lets)]
        return tirx.SeqStmt(list(node.seq) + tail)

    return tirx.stmt_functor.ir_transform(body, None, post, ["tirx.BufferStore",
                                                             "tirx.SeqStmt"]), marked


def _binding_found(f: Found) -> Found:
    """A binding's marker, found at the end of its statement list, as found at the
    binding: its position there, and only the earlier bindings of the list in scope."""
    pos, nlets, rank = (int(a.value) for a in f.call.args[2:5])
    return Found(f.call, tuple(f.scope)[:len(f.scope) - nlets + rank], f.order[:-1] + (pos,))


_COMPARE = (tirx.EQ, tirx.NE, tirx.LT, tirx.LE, tirx.GT, tirx.GE, tirx.And, tirx.Or)


def _ops_of(e: Any, tainted: set) -> tuple[dict[str, int], bool, bool]:
    """``(operations by dtype, reads memory, uses a variable)`` of an expression."""
    if isinstance(e, tirx.BufferLoad):
        return {}, True, True  # its indices are address arithmetic
    if isinstance(e, tirx.Var):
        return {}, e in tainted, True
    own, counted, control = 0, (), ()
    if isinstance(e, _ARITH):
        own, counted = 1, (e.a, e.b)
    elif isinstance(e, tirx.Call):
        name = str(getattr(e.op, "name", "")).rsplit(".", 1)[-1]
        if name in _ADDRESS_CALLS or str(e.dtype) == "void":
            return {}, False, True
        if name == "if_then_else":  # its condition is control flow, as an `if`'s
            counted, control = tuple(e.args[1:]), tuple(e.args[:1])
        else:
            own = 0 if name in _FREE_CALLS else 2 if name == "fma" else 1
            counted = tuple(e.args)
    elif isinstance(e, tirx.Cast):
        counted = (e.value,)
    elif isinstance(e, tirx.Select):
        counted, control = (e.true_value, e.false_value), (e.condition,)
    elif isinstance(e, tirx.Let):
        counted = (e.value, e.body)
    elif isinstance(e, _COMPARE):
        counted = (e.a, e.b)
    elif isinstance(e, tirx.Not):
        counted = (e.a,)
    ops: dict[str, int] = {}
    mem = var = False
    for i, x in enumerate(counted + control):
        o, m, v = _ops_of(x, tainted)
        mem, var = mem or m, var or v
        for d, n in (o.items() if i < len(counted) else ()):
            ops[d] = ops.get(d, 0) + n
    if own:
        ops[str(e.dtype)] = ops.get(str(e.dtype), 0) + own
    # a constant, or integer arithmetic that reads no memory (indices, guards, loop
    # counters): the compiler folds or strength-reduces it; pointers are addresses
    if str(e.dtype) == "handle" or \
            not mem and (not var or str(e.dtype).startswith(("int", "uint", "bool"))):
        return {}, mem, var
    return ops, mem, var


def _value_ops(expr: Any, out: dict[str, int], tainted: set | None = None) -> None:
    """Operations of a stored or bound value by dtype: each arithmetic node (add, sub,
    mul, div, mod, min, max) and math call is one, a fused multiply-add two. Free:
    loads (and their indices), casts, constants, the condition of a select, and integer
    arithmetic that reads no memory (``tainted``: let variables bound to values read
    from memory)."""
    for d, n in _ops_of(expr, tainted or set())[0].items():
        out[d] = out.get(d, 0) + n


def _global_accesses(stmt: tirx.BufferStore | tirx.Bind, is_global) -> int:
    """Bytes one execution of a store or binding moves between global memory and the
    core: each element load or store of a global buffer (indices included)."""
    store = isinstance(stmt, tirx.BufferStore)
    total = nbytes(stmt.buffer.dtype, 1) if store and is_global(stmt.buffer) else 0
    hits: list = []

    def visit(n: Any) -> bool:
        if isinstance(n, tirx.Call) and \
                str(getattr(n.op, "name", "")).rsplit(".", 1)[-1] in _ADDRESS_CALLS:
            return False
        if isinstance(n, tirx.BufferLoad) and is_global(n.buffer):
            hits.append(nbytes(n.buffer.dtype, 1))
        return True

    for e in [stmt.value, *(stmt.indices if store else ())]:
        tirx.stmt_functor.pre_order_visit(tirx.Evaluate(e), visit)
    return total + sum(hits)


def _data(b: tirx.Buffer) -> str:
    """A buffer's identity for dependencies: its data's name (views share it)."""
    return str(b.data.name)


def _loaded_buffers(stmt: tirx.BufferStore | tirx.Bind) -> list:
    """The buffers a store's value and indices (or a binding's value) load from."""
    found: list = []

    def visit(n: Any) -> None:
        if isinstance(n, tirx.BufferLoad):
            found.append(n.buffer)

    exprs = [stmt.value, *(stmt.indices if isinstance(stmt, tirx.BufferStore) else ())]
    for e in exprs:
        tirx.stmt_functor.post_order_visit(tirx.Evaluate(e), visit)
    return found


def _reads_memory(expr: Any, tainted: set) -> bool:
    hit: list = []

    def visit(n: Any) -> None:
        if isinstance(n, tirx.BufferLoad) or (isinstance(n, tirx.Var) and n in tainted):
            hit.append(n)

    tirx.stmt_functor.post_order_visit(tirx.Evaluate(expr), visit)
    return bool(hit)


def _check_countable(found: Found, name: str) -> set:
    """``ValueError`` naming the statement when a loop around it runs a number of times
    read from memory (or a ``while`` loop), or a condition around it reads memory;
    else the let variables in its scope bound to values read from memory."""
    tainted: set = set()
    for item in found.scope:
        if isinstance(item, Let):
            if _reads_memory(item.value, tainted):
                tainted.add(item.var)
        elif isinstance(item, WhileLoop):
            raise ValueError(f"{WHERE}: cannot count {name}: it sits in `while "
                             f"{item.expr}`, which runs a data-dependent number of times; "
                             f"the model counts loops with static bounds")
        elif isinstance(item, tirx.For):
            if _reads_memory(item.min, tainted) or _reads_memory(item.extent, tainted):
                raise ValueError(f"{WHERE}: cannot count {name}: loop {item.loop_var.name} "
                                 f"runs over [{item.min}, {item.min} + {item.extent}), "
                                 f"bounds read from memory at run time (data-dependent "
                                 f"loop bounds); the model counts loops with static bounds")
        elif isinstance(item, Cond) and _reads_memory(item.expr, tainted):
            raise ValueError(f"{WHERE}: cannot count {name}: it runs under `if "
                             f"{item.expr}`, a condition read from memory at run time "
                             f"(data-dependent control flow)")
    return tainted


class _Counter:
    """Accumulates one kernel's counts per (superstep, core)."""

    def __init__(self, view: KernelView, report: CommReport | None):
        self.view, self.report = view, report
        self.mesh = view.mesh
        self.ncores = view.mesh.size
        # the comm ops' executions, identified by their program-order keys
        self.ident: dict[tuple, int] = {}
        for o in view.ops:
            for k in execution_keys(view.space(o), o.order, self.ncores).tolist():
                self.ident[tuple(k)] = o.index
        self.exchanges = tuple(s for s in (report.supersteps if report is not None else ())
                               if tuple(s.when) in self.ident)
        self.nsteps = len(self.exchanges) + 1
        self.ops: dict[str, np.ndarray] = {}
        self.mem = np.zeros(self.nsteps * self.ncores, dtype=np.float64)
        # per superstep: the buffers its statements read and write (their data's names)
        self.reads: list[set] = [set() for _ in range(self.nsteps)]
        self.writes: list[set] = [set() for _ in range(self.nsteps)]
        params = list(view.func.buffer_map.values())
        self.is_global = lambda b: any(b.data.same_as(p.data) for p in params)
        # loops around an exchange cannot be summed over: their iterations straddle it
        self.exchange_vars = {v for o in view.ops for v in o.order if isinstance(v, tirx.Var)}
        pad = max([len(s.when) for s in self.exchanges] + [1])
        self.ex_keys = np.full((len(self.exchanges), pad), _INT64_MIN, dtype=np.int64)
        for i, s in enumerate(self.exchanges):
            self.ex_keys[i, :len(s.when)] = s.when

    # -- where executions go -----------------------------------------------------------------
    def space(self, found: Found, name: str, collapse: bool) -> tuple[IterSpace, int, tuple]:
        """The points to enumerate, the executions each stands for (inner loops with
        static bounds around no exchange are summed, not enumerated) and the key order."""
        _check_countable(found, name)
        scope = tuple(found.scope)
        cut = len(scope)
        # a binding among the inner loops changes no trip count: step over it
        while collapse and cut and (isinstance(scope[cut - 1], Let) or (
                isinstance(scope[cut - 1], tirx.For)
                and scope[cut - 1].kind != tirx.ForKind.THREAD_BINDING
                and static_int(scope[cut - 1].min) is not None
                and static_int(scope[cut - 1].extent) is not None
                and scope[cut - 1].loop_var not in self.exchange_vars)):
            cut -= 1
        inner = [f for f in scope[cut:] if isinstance(f, tirx.For)]
        count = int(np.prod([max(static_int(f.extent), 0) for f in inner], dtype=np.int64))
        inner_vars = {f.loop_var for f in inner}
        order = tuple(found.order)
        for i, v in enumerate(order):
            if isinstance(v, tirx.Var) and v in inner_vars:
                order = order[:i]
                break
        try:
            space = self.view.space(Found(found.call, scope[:cut], order), WHERE)
        except ValueError as err:  # the message names WHERE already
            why = str(err).removeprefix(f"{WHERE}: ")
            raise ValueError(f"{WHERE}: cannot count {name}: {why}") from None
        return space, count, order

    def steps_of(self, space: IterSpace, order: tuple) -> np.ndarray:
        """The superstep of each point: how many exchanges run before it (an exchange
        statement's own execution belongs to the superstep it ends)."""
        keys = space.timestamps(order)
        if not len(self.exchanges) or not space.size:
            return np.zeros(space.size, dtype=np.int64)
        width = max(keys.shape[1], self.ex_keys.shape[1])
        pts = np.full((space.size, width), _INT64_MIN, dtype=np.int64)
        pts[:, :keys.shape[1]] = keys
        ex = np.full((len(self.ex_keys), width), _INT64_MIN, dtype=np.int64)
        ex[:, :self.ex_keys.shape[1]] = self.ex_keys
        both = np.concatenate([ex, pts])
        is_ex = np.concatenate([np.ones(len(ex), np.int64), np.zeros(space.size, np.int64)])
        # lexicographic sort, points before an exchange with the same key
        idx = np.lexsort((is_ex,) + tuple(both.T[::-1]))
        before = np.cumsum(is_ex[idx])
        out = np.empty(len(both), dtype=np.int64)
        out[idx] = before
        return out[len(ex):]

    def add(self, step: np.ndarray, core: np.ndarray, ops: Mapping[str, float] | None = None,
            mem: np.ndarray | float = 0.0, weight: np.ndarray | float = 1.0) -> None:
        cell = step * self.ncores + core
        size = self.nsteps * self.ncores
        for d, n in (ops or {}).items():
            w = np.broadcast_to(np.asarray(weight, dtype=np.float64) * n, cell.shape)
            self.ops[d] = self.ops.get(d, np.zeros(size)) + np.bincount(cell, w, size)
        w = np.broadcast_to(np.asarray(weight, dtype=np.float64) * mem, cell.shape)
        if np.any(w):
            self.mem += np.bincount(cell, w, size)

    def touch(self, steps: np.ndarray, reads: Any = (), writes: Any = ()) -> None:
        """Record the per-core buffers a statement reads and writes in the supersteps
        its executions fall in (global tensors are left out: no exchange moves them)."""
        r = {_data(b) for b in reads if not self.is_global(b)}
        w = {_data(b) for b in writes if not self.is_global(b)}
        if not (r or w) or not len(steps):
            return
        for i in np.unique(steps).tolist():
            self.reads[i] |= r
            self.writes[i] |= w

    # -- statements ----------------------------------------------------------------------------
    def store(self, found: Found, st: tirx.BufferStore | tirx.Bind) -> None:
        """A store, or a ``v = e`` binding (found at the binding: :func:`_binding_found`),
        counted per execution: the operations of its value and its global accesses."""
        if isinstance(st, tirx.Bind):
            found, name = _binding_found(found), f"the binding `{st.var.name} = ...`"
        else:
            idx = ", ".join(str(i) for i in st.indices)
            name = f"the store `{st.buffer.name}[{idx}] = ...`"
        ops: dict[str, int] = {}
        _value_ops(st.value, ops, _check_countable(found, name))
        mem = _global_accesses(st, self.is_global)
        reads = _loaded_buffers(st)
        writes = [st.buffer] if isinstance(st, tirx.BufferStore) else []
        if not ops and not mem and not any(not self.is_global(b) for b in reads + writes):
            return  # index arithmetic bound to a name
        space, count, order = self.space(found, name, collapse=True)
        steps = self.steps_of(space, order)
        self.touch(steps, reads, writes)
        if ops or mem:  # else a copy between per-core buffers: no cost
            self.add(steps, space.core, ops, mem, count)

    def gemm(self, found: Found) -> None:
        a, b, c = (region_of(x) for x in found.call.args[:3])
        m, n, k = (static_int(x) for x in found.call.args[5:8])
        name = f"T.gemm({a.buffer.name}, {b.buffer.name}, {c.buffer.name})"
        if None in (m, n, k):
            raise ValueError(f"{WHERE}: cannot count {name}: its M, N, K "
                             f"{[str(x) for x in found.call.args[5:8]]} are not constants")
        space, count, order = self.space(found, name, collapse=True)
        mem = sum(r.nbytes for r in (a, b, c) if self.is_global(r.buffer))
        steps = self.steps_of(space, order)
        self.touch(steps, (a.buffer, b.buffer, c.buffer), (c.buffer,))
        self.add(steps, space.core, {str(a.buffer.dtype): 2 * m * n * k}, mem, count)

    def region_bytes(self, region: CopyRegion, space: IterSpace) -> np.ndarray:
        """Bytes of a global region at each point, clipped to the tensor."""
        shape = tuple(static_int(s) for s in region.buffer.shape)
        if None in shape:
            raise ValueError(f"{WHERE}: global buffer {region.buffer.name!r} has a symbolic "
                             f"shape {list(region.buffer.shape)}; count a specialised kernel")
        lo, hi = clip_boxes(*region_box(region, space, WHERE), shape)
        return nbytes(region.buffer.dtype, volume(lo, hi))

    def fill(self, found: Found) -> None:
        region = region_of(found.call.args[0])
        name = f"T.fill({region.buffer.name})"
        if not self.is_global(region.buffer):
            space, _, order = self.space(found, name, collapse=True)
            self.touch(self.steps_of(space, order), (), (region.buffer,))
            return
        space, count, order = self.space(found, name, False)
        self.add(self.steps_of(space, order), space.core, mem=self.region_bytes(region, space))

    def copy(self, c: Any) -> None:
        sides = [(r, w) for r, w in ((c.src, False), (c.dst, True)) if self.is_global(r.buffer)]
        name = f"T.copy({c.src.buffer.name} -> {c.dst.buffer.name})"
        # each execution is enumerated: clipping makes its bytes vary from point to point
        space, _, order = self.space(c, name, collapse=not sides)
        steps = self.steps_of(space, order)
        self.touch(steps, (c.src.buffer,), (c.dst.buffer,))
        for region, _ in sides:
            self.add(steps, space.core, mem=self.region_bytes(region, space))

    # -- exchanges -----------------------------------------------------------------------------
    def exchange_steps(self) -> list[dict]:
        """Per exchange: its name, messages sent per core, active cores, link facts."""
        r, n = self.report, self.ncores
        out = []
        ops = {o.index: o for o in self.view.ops}
        for s in self.exchanges:
            i = self.ident[tuple(s.when)]
            m = (r.op == i) & (r.step == s.execution) & (r.phase == s.phase)
            snd, rcv = r.peer[m], r.core[m]  # receiver rows, the sender as peer
            pairs = np.unique(snd * n + rcv)
            sends = np.bincount(pairs // n, minlength=n).astype(np.int64)
            active = (sends > 0) | (np.bincount(pairs % n, minlength=n) > 0)
            op = ops[i]
            if op.op == "barrier":
                ex_r = ex_w = frozenset({"*"})
            else:
                ex_r, ex_w = frozenset({_data(op.src.buffer)}), frozenset({_data(op.dst.buffer)})
            out.append(dict(exchange=s.statement, comm_op=i, execution=s.execution,
                            when=tuple(s.when),
                            sends=sends, active=active, exchange_bytes=s.nbytes,
                            flows=s.flows, max_link_bytes=s.max_link_bytes,
                            busiest_link=_busiest_link(self.mesh, s.link_loads)
                            if s.flows else "", max_hops=s.max_hops, op_kind=op.op,
                            group_axes=tuple(op.mesh_axes),
                            piece_bytes=op.nbytes if op.src is not None else 0,
                            flow_src=snd.astype(np.int64), flow_dst=rcv.astype(np.int64),
                            flow_bytes=r.nbytes[m].astype(np.int64),
                            exchange_reads=ex_r, exchange_writes=ex_w))
        return out


def _busiest_link(mesh: Mesh, loads: np.ndarray) -> str:
    """The busiest directed link of ``xy_link_loads`` as ``"(0, 1)->(0, 2)"``."""
    axis, direction, *c = np.unravel_index(int(np.argmax(loads)), loads.shape)
    a = tuple(int(x) for x in c)
    b = tuple(x + (1 if d == axis else 0) for d, x in enumerate(a))
    src, dst = (a, b) if direction == 0 else (b, a)
    return f"{src}->{dst}"


def _per_core_buffers(func: tirx.PrimFunc) -> tuple[tuple[str, str, int], ...]:
    found: list = []

    def visit(n: Any) -> bool:
        if isinstance(n, tirx.SBlock):
            found.extend(n.alloc_buffers)
        elif isinstance(n, tirx.AllocBuffer):
            found.append(n.buffer)
        return True

    tirx.stmt_functor.pre_order_visit(func.body, visit)
    out = []
    for b in found:
        shape = [static_int(s) for s in b.shape]
        if None in shape:
            raise ValueError(f"{WHERE}: per-core buffer {b.name!r} has a symbolic shape "
                             f"{list(b.shape)}; count a specialised kernel")
        out.append((b.name, str(b.scope()),
                    int(nbytes(b.dtype, int(np.prod(shape, dtype=np.int64))))))
    return tuple(out)


def count_mesh_kernel(kernel: Any, mesh: Any = None) -> KernelWork:
    """The machine-independent counts of a mesh kernel (a PrimFunc, ``JITKernel``,
    ``MeshKernel`` or IRModule): per superstep in execution order and per core, its
    operations by element type, bytes between global memory and the core, and its
    exchange. ``mesh`` (a :class:`Mesh` or ``{"x": 4, "y": 4}``) is needed only for a
    kernel without mesh annotations or comm ops.

    >>> from meshtensor.tilelang.kernels.gemm import build_gemm
    >>> w = count_mesh_kernel(build_gemm("summa_comm", 64, 64, 64, mesh=2))
    >>> [s.exchange.split(":")[0] for s in w.steps]
    ['comm 0', 'comm 1', 'comm 0', 'comm 1', '']
    >>> [int(s.ops.get("float32", [0])[0]) for s in w.steps]   # 2 x 36 x 32 x 32 per step
    [0, 0, 73728, 0, 73728]
    """
    view = KernelView.of(kernel, WHERE)
    if mesh is not None:
        want = mesh if isinstance(mesh, Mesh) else Mesh(mesh)
        if view.mesh is not None and view.mesh != want:
            raise ValueError(f"{WHERE}: mesh={want.as_dict} differs from the kernel's mesh "
                             f"{view.mesh.as_dict}")
        view = KernelView(view.func, view.info, view.ops, want, WHERE)
    elif view.mesh is None:
        raise ValueError(f"{WHERE}: the kernel has neither mesh annotations nor comm ops; "
                         f"pass mesh= (e.g. {{'x': 4, 'y': 4}}) to say which cores run it")
    report = analyze_mesh_communication(view.func) if view.ops else None
    counter = _Counter(view, report)
    body, marked = _mark_stores(view.func.body)
    uncounted: dict[str, int] = {}
    for f in find_calls(body, lambda c: True):
        op = str(getattr(f.call.op, "name", ""))
        if op == "tirx.call_extern" and isinstance(f.call.args[0], tirx.StringImm) \
                and f.call.args[0].value == _STORE_MARK:
            counter.store(f, marked[int(f.call.args[1].value)])
        elif op == GEMM_OP:
            counter.gemm(f)
        elif op == FILL_OP:
            counter.fill(f)
        elif op == COPY_OP or is_comm_call(f.call):
            continue  # copies from the view below (indexed as the traffic report has them)
        else:
            label = str(f.call.args[0].value) if op == "tirx.call_extern" else op
            if label in (DIST_RT_CALL, DIST_RETURN_MARK):
                continue  # a T.dist rank's runtime: its traffic is timed apart

            uncounted[label] = uncounted.get(label, 0) + 1
    for c in view.copies:
        counter.copy(c)
    n = counter.ncores

    def per_step(flat: np.ndarray, i: int) -> np.ndarray:
        return np.rint(flat[i * n:(i + 1) * n]).astype(np.int64)

    ex = counter.exchange_steps()
    steps = []
    for i in range(counter.nsteps):
        e = ex[i] if i < len(ex) else dict(exchange="", comm_op=-1, execution=0, when=(),
                                           sends=np.zeros(n, np.int64),
                                           active=np.zeros(n, bool))
        ops = {d: per_step(v, i) for d, v in sorted(counter.ops.items())}
        mem = per_step(counter.mem, i)
        if i == len(ex) and i and not any(v.any() for v in ops.values()) and not mem.any():
            continue  # nothing after the last exchange
        steps.append(StepWork(index=len(steps), ops=ops, mem_bytes=mem,
                              reads=frozenset(counter.reads[i]),
                              writes=frozenset(counter.writes[i]), **e))
    return KernelWork(_kernel_name(view.func), view.mesh, tuple(steps),
                      _per_core_buffers(view.func),
                      tuple(f"{k} x {v}" for k, v in sorted(uncounted.items())))


# -- times on a machine ------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class StepTime:
    """One superstep on a machine (seconds). Per core: ``arith`` (operations / FLOP/s)
    and ``memory`` (bytes / the core's memory bandwidth in this phase,
    ``mem_bandwidth``). ``compute`` is the slowest core's ``max(arith, memory)``,
    ``critical_core`` that core (``None`` when no core works). The exchange runs with
    ``algorithm`` (the cheapest of ``alternatives``, :mod:`.comm_cost`): ``link`` is its
    streaming part (bytes over links and ports, message issue), ``latency`` the rest
    (hops and barriers); ``link_bytes`` the busiest link's bytes of the direct
    transfers on the machine's topology, ``link_axes`` the mesh axes they use,
    ``link_bandwidth`` the machine's (for the roofline). In the
    report's timeline the compute phase starts at ``start`` and the exchange at
    ``exchange_start``. ``bound`` is the largest of the critical core's arithmetic and
    memory times, ``link`` and ``latency`` (:data:`BOUNDS`), or ``"none"`` for an empty
    superstep."""

    work: StepWork
    start: float
    arith: np.ndarray
    memory: np.ndarray
    critical_core: int | None
    compute: float
    link: float
    latency: float
    bound: str
    algorithm: str = ""
    alternatives: tuple[AlgorithmCost, ...] = ()
    exchange_start: float = 0.0
    link_bytes: int = 0
    link_axes: frozenset = frozenset()
    mem_bandwidth: float = 0.0
    link_bandwidth: float = 0.0

    @property
    def exchange(self) -> float:
        return self.link + self.latency

    @property
    def total(self) -> float:
        """The superstep's compute and exchange durations, added (its serial time)."""
        return self.compute + self.exchange

    @property
    def end(self) -> float:
        """When its exchange ends in the timeline (its compute phase, if it has none)."""
        return self.exchange_start + self.exchange if self.work.has_exchange \
            else self.start + self.compute

    @property
    def busy(self) -> np.ndarray:
        """Each core's compute phase: ``max(arith, memory)``."""
        return np.maximum(self.arith, self.memory)

    @property
    def ops(self) -> float:
        """The critical core's operations (all element types)."""
        c = self.critical_core
        return 0.0 if c is None else float(sum(v[c] for v in self.work.ops.values()))

    @property
    def intensity(self) -> float:
        """Roofline: the critical core's operations per byte it moves to or from global
        memory (``inf`` when it moves none, 0 when it computes nothing)."""
        c = self.critical_core
        nbytes = 0 if c is None else int(self.work.mem_bytes[c])
        return self.ops / nbytes if nbytes else (math.inf if self.ops else 0.0)

    @property
    def flop_share(self) -> float:
        """Roofline: the share of the compute phase the critical core's arithmetic runs
        at its peak FLOP/s (1.0: compute-bound; less: memory-bound)."""
        c = self.critical_core
        return float(self.arith[c]) / self.compute if c is not None and self.compute else 0.0

    @property
    def link_share(self) -> float:
        """Roofline: the share of the exchange its algorithm's busiest link streams at
        full link bandwidth (its bytes / link bandwidth / the exchange's time)."""
        a = self.alternatives[0] if self.alternatives else None
        if a is None or not self.exchange or not self.link_bandwidth:
            return 0.0
        return a.link_bytes / self.link_bandwidth / self.exchange


def _unit(seconds: float) -> tuple[str, float]:
    for name, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return name, scale
    return "ns", 1e-9


def _bytes(n: float) -> str:
    for name, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {name}"
    return f"{int(n)} B"


def _flop(n: float) -> str:
    """``34.6 MFLOP``; ``16 FLOP`` for a small count (not ``0.0 MFLOP``)."""
    for name, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {name}"
    return f"{int(n)} FLOP"


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(width - 1, 0)] + "~"


@dataclass(frozen=True)
class MemoryUse:
    """One memory of a core: its ``name`` (``"local"`` for all per-core buffers
    together, else a buffer scope such as ``shared.rsram``), the bytes a kernel's
    buffers ``used`` in it, its ``capacity``."""

    name: str
    used: int
    capacity: int

    @property
    def fits(self) -> bool:
        return self.used <= self.capacity


@dataclass(frozen=True, eq=False)
class PerfReport:
    """A kernel's estimated time on a machine (:func:`estimate_mesh_kernel`): its
    supersteps (:class:`StepTime`, in execution order, timed on the report's timeline:
    the overlapped schedule when the machine overlaps, else the serial one), the
    ``serial`` and ``overlapped`` times and the estimate ``total``, and whether its
    per-core buffers fit the machine's memories."""

    work: KernelWork
    machine: Machine
    steps: tuple[StepTime, ...]
    serial: float = 0.0
    overlapped: float = 0.0

    @property
    def total(self) -> float:
        """Estimated seconds: ``serial - overlap x (serial - overlapped)``, ``overlap``
        the machine's (1: the overlapped schedule; 0: bulk-synchronous)."""
        return self.serial - self.machine.overlap * (self.serial - self.overlapped)

    @property
    def timeline_end(self) -> float:
        """When the last superstep ends on the report's timeline."""
        return max((s.end for s in self.steps), default=0.0)

    def memory(self) -> tuple[MemoryUse, ...]:
        """Each memory of a core against what the kernel's per-core buffers use of it:
        all buffers against ``local_memory_bytes``, then each scope the machine lists
        (:attr:`Machine.memories`) that the kernel uses."""
        m, bufs = self.machine, self.work.buffers
        out = [MemoryUse("local", self.work.local_bytes, m.local_memory_bytes)]
        for scope, cap in m.memories.items():
            used = sum(b for _, sc, b in bufs if sc == scope)
            if used:
                out.append(MemoryUse(scope, used, cap))
        return tuple(out)

    @property
    def fits_local_memory(self) -> bool:
        """Whether every memory of :meth:`memory` holds what the kernel puts in it."""
        return all(u.fits for u in self.memory())

    def per_core(self) -> dict[str, np.ndarray]:
        """Seconds per core over the kernel: ``arith``, ``memory``, ``busy`` (its compute
        phases, ``max(arith, memory)`` per superstep), ``exchange`` (the exchanges it
        sends or receives in) and ``wait`` (the rest of the timeline on its compute
        engine: ``busy + wait = timeline_end``; in the serial timeline the exchanges
        fall in ``wait``)."""
        n = self.work.mesh.size
        out = {k: np.zeros(n) for k in ("arith", "memory", "busy", "exchange")}
        for s in self.steps:
            out["arith"] += s.arith
            out["memory"] += s.memory
            out["busy"] += s.busy
            out["exchange"] += np.where(s.work.active, s.exchange, 0.0)
        out["wait"] = self.timeline_end - out["busy"]
        return out

    def by_bound(self) -> dict[str, float]:
        """Seconds of the supersteps each bound dominates (their serial times)."""
        out = {b: 0.0 for b in BOUNDS}
        for s in self.steps:
            if s.bound in out:
                out[s.bound] += s.total
        return out

    def algorithms(self) -> dict[str, int]:
        """How many exchanges each collective algorithm runs."""
        out: dict[str, int] = {}
        for s in self.steps:
            if s.work.has_exchange and s.algorithm:
                key = s.algorithm.split("/")[0]
                out[key] = out.get(key, 0) + 1
        return out

    def roofline(self) -> list[dict[str, Any]]:
        """Per superstep: ``step``, ``ops`` and ``mem_bytes`` of the critical core,
        ``intensity`` (FLOP/byte), ``flop_share`` (of peak, in the compute phase),
        ``link_share`` (of link bandwidth, in the exchange), ``bound``."""
        return [dict(step=s.work.index, ops=s.ops,
                     mem_bytes=0 if s.critical_core is None
                     else int(s.work.mem_bytes[s.critical_core]),
                     intensity=s.intensity, flop_share=s.flop_share,
                     link_share=s.link_share, bound=s.bound) for s in self.steps]

    def step_label(self, s: StepTime) -> str:
        """A short name of the exchange ending a superstep (``"end"`` for the last)."""
        w = s.work
        if not w.exchange:
            return "end"
        head, _, rest = w.exchange.partition(": ")
        words = rest.split(" ")
        text = " ".join(words[:2]) if head.startswith("comm") else rest.replace(" ", "")
        return f"{head.replace(' ', '')} {text} #{w.execution}"

    def summary(self, width: int = 80, max_steps: int | None = 40, title: str = "") -> str:
        """The report in at most ``width`` columns: header, time (overlapped and serial),
        time by bound, the collective algorithms used, memory per memory, and one line
        per superstep (the first ``max_steps``; ``None`` for all) with its roofline."""
        m, w = self.machine, self.work
        unit, scale = _unit(max(self.total, self.serial))
        mesh = "x".join(map(str, w.mesh.shape))
        lines = [*textwrap.wrap(title or f"{w.name} on a {mesh} mesh", width,
                                subsequent_indent="  "),
                 *textwrap.wrap(f"machine {m.name} ({'x'.join(map(str, m.mesh_shape))}"
                                f" cores): {m.description or 'a machine file'}", width,
                                subsequent_indent="  ")]
        if m.overlap:
            lines.append(f"estimated time {self.total / scale:.3f} {unit} over "
                         f"{plural(len(self.steps), 'superstep')}")
            lines.append(f"  serial {self.serial / scale:.3f} {unit}, overlapped "
                         f"{self.overlapped / scale:.3f} {unit} (machine overlap "
                         f"{m.overlap:g})")
        else:
            lines.append(f"estimated time {self.total / scale:.3f} {unit} over "
                         f"{plural(len(self.steps), 'superstep')} (bulk-synchronous: no "
                         f"overlap)")
        bb = self.by_bound()
        tot = sum(bb.values()) or 1.0
        lines.append("time by bound: " + ", ".join(
            f"{b} {100 * bb[b] / tot:.0f}%" for b in BOUNDS))
        algs = self.algorithms()
        if algs:
            lines.append("exchanges by algorithm: " + ", ".join(
                f"{a} {n}" for a, n in sorted(algs.items(), key=lambda x: -x[1])))
        ops = w.ops()
        peak = max((float(v.max()) for v in ops.values()), default=0.0)
        lines.append(f"busiest core: {_flop(peak)}, "
                     f"{_bytes(float(w.mem_bytes().max()))} to/from global memory")
        for u in self.memory():
            verdict = "fits" if u.fits else "DOES NOT FIT"
            what = "local memory per core" if u.name == "local" else f"{u.name} per core"
            lines.append(f"{what}: {_bytes(u.used)} of {_bytes(u.capacity)} ({verdict})")
        if w.uncounted:
            lines.append("not counted (no rule): " + ", ".join(w.uncounted))
        # the table: step, exchange, algorithm, bound, compute, exchange, FLOP%, link%
        fixed = 5 + 1 + 1 + 10 + 8 + 2 * 10 + 2 * 6
        lw = max(8, min(max(len(self.step_label(s)) for s in self.steps), width - fixed))
        lines.append(f"{'step':>5s} {'exchange':<{lw}s} {'algorithm':<10s}{'bound':<8s}"
                     f"{'compute':>10s}{'exch ' + unit:>10s}{'FLOP%':>6s}{'link%':>6s}")
        shown = self.steps if max_steps is None else self.steps[:max_steps]
        for s in shown:
            algo = s.algorithm.split("/")[0] if s.work.has_exchange else "-"
            fl = f"{100 * s.flop_share:.0f}" if s.compute else "-"
            ln = f"{100 * s.link_share:.0f}" if s.exchange else "-"
            lines.append(f"{s.work.index:>5d} {_fit(self.step_label(s), lw):<{lw}s} "
                         f"{_fit(algo, 9):<10s}{s.bound:<8s}{s.compute / scale:>10.3f}"
                         f"{s.exchange / scale:>10.3f}{fl:>6s}{ln:>6s}")
        if len(shown) < len(self.steps):
            lines.append(f"... {len(self.steps) - len(shown)} more supersteps (show all "
                         f"with max_steps=None, or --steps 0)")
        return "\n".join(_fit(line, width) for line in lines)


def _conflict(reads: frozenset, writes: frozenset, ex_reads: frozenset,
              ex_writes: frozenset) -> bool:
    """Whether statements reading ``reads`` and writing ``writes`` must wait for an
    exchange reading ``ex_reads`` and writing ``ex_writes`` (or it for them)."""
    if "*" in ex_reads or "*" in reads:
        return True
    return bool(ex_writes & (reads | writes)) or bool(ex_reads & writes)


@dataclass(frozen=True)
class PlanStep:
    """What the schedule reads of a superstep: its compute phase's seconds, whether it
    ends with an exchange and that exchange's seconds, the buffers the phase reads and
    writes, those the exchange reads and writes, and the mesh axes whose links the
    exchange uses (empty: none known; such an exchange waits for every earlier one)."""

    compute: float
    exchange: float = 0.0
    has_exchange: bool = False
    reads: frozenset = frozenset()
    writes: frozenset = frozenset()
    ex_reads: frozenset = frozenset()
    ex_writes: frozenset = frozenset()
    axes: frozenset = frozenset()


def _schedule(steps: list[PlanStep], overlapped: bool) -> list[tuple[float, float]]:
    """``(compute start, exchange start)`` of each superstep. Serial: one after the
    other. Overlapped: a core issues an exchange when it reaches it and goes on; a
    compute phase waits for the exchanges whose buffers it uses, an exchange for the
    exchanges whose buffers it uses, for a barrier, and for earlier exchanges on the
    same mesh axes (see the module docstring)."""
    out = []
    t = 0.0  # the compute engine is free from t
    if not overlapped:
        for s in steps:
            out.append((t, t + s.compute))
            t += s.compute + (s.exchange if s.has_exchange else 0.0)
        return out
    done: list[tuple[float, frozenset, frozenset, frozenset]] = []  # issued exchanges
    for s in steps:
        done = [d for d in done if d[0] > t]  # nothing starts before t: no wait for these
        start = t
        for end, r, w, _ in done:
            if end > start and _conflict(s.reads, s.writes, r, w):
                start = end
        t = start + s.compute
        ex_start = t
        if s.has_exchange:
            for end, r, w, axes in done:
                if end > ex_start and (not s.axes or not axes or (s.axes & axes)
                                       or _conflict(s.ex_reads, s.ex_writes, r, w)):
                    ex_start = end
            done.append((ex_start + s.exchange, s.ex_reads, s.ex_writes, s.axes))
        out.append((start, ex_start))
    return out


def time_plan(plan: list[PlanStep]) -> tuple[float, float, list, list]:
    """``(serial, overlapped, serial starts, overlapped starts)`` of a kernel's
    supersteps: the serial schedule's end, the overlapped one's, and each superstep's
    ``(compute start, exchange start)`` in both."""
    serial_at = _schedule(plan, overlapped=False)
    over_at = _schedule(plan, overlapped=True)

    def end(at):
        return max((max(c + p.compute, e + (p.exchange if p.has_exchange else 0.0))
                    for (c, e), p in zip(at, plan)), default=0.0)

    return end(serial_at), end(over_at), serial_at, over_at


def estimate_mesh_kernel(kernel: Any, machine: Any = "generic", mesh: Any = None
                         ) -> PerfReport:
    """The estimated time of a mesh kernel (or of its :class:`KernelWork`) on a
    machine (a preset name, a machine file, or a :class:`Machine`): see the module
    docstring for the model. ``ValueError`` when the kernel's mesh does not fit the
    machine's, or the machine lacks a FLOP/s figure for an element type it uses.

    >>> from meshtensor.tilelang.kernels.gemm import build_gemm
    >>> r = estimate_mesh_kernel(build_gemm("summa_comm", 64, 64, 64, mesh=2), "generic")
    >>> [s.bound for s in r.steps], r.overlapped <= r.total <= r.serial
    (['memory', 'link', 'compute', 'link', 'compute'], True)
    """
    work = kernel if isinstance(kernel, KernelWork) else count_mesh_kernel(kernel, mesh)
    m = get_machine(machine)
    if not m.fits(work.mesh.shape):
        raise ValueError(f"{WHERE}: the kernel's {'x'.join(map(str, work.mesh.shape))} mesh "
                         f"does not fit machine {m.name!r} "
                         f"({'x'.join(map(str, m.mesh_shape))} cores)")
    rates = {d: m.rate(d) for d in work.ops()}
    n, mesh_ = work.mesh.size, work.mesh
    wrap = m.wraps(mesh_.shape)
    timed = []
    for s in work.steps:
        arith = np.zeros(n)
        for d, v in s.ops.items():
            arith = arith + v / rates[d]
        bw = m.core_mem_bandwidth(int(np.count_nonzero(s.mem_bytes)))
        memory = s.mem_bytes / bw
        busy = np.maximum(arith, memory)
        crit = int(np.argmax(busy)) if busy.max() > 0 else None
        topo = s.topology(mesh_, wrap)
        algs: tuple[AlgorithmCost, ...] = ()
        link = latency = 0.0
        algorithm = ""
        if s.has_exchange:
            ex = Exchange(s.op_kind, tuple(mesh_.shape[a] for a in s.group_axes),
                          tuple(wrap[a] for a in s.group_axes), s.piece_bytes,
                          topo["max_piece"], topo["max_link_bytes"], topo["max_hops"],
                          topo["max_sent_bytes"], topo["max_messages"], s.flows)
            algs = exchange_cost(ex, m)
            best = algs[0]
            link, latency, algorithm = best.stream, best.latency, best.algorithm
        c = 0 if crit is None else crit
        parts = (arith[c], memory[c], link, latency)
        bound = BOUNDS[int(np.argmax(parts))] if max(parts) > 0 else "none"
        timed.append(dict(work=s, arith=arith, memory=memory, critical_core=crit,
                          compute=float(busy.max()), link=link, latency=latency,
                          bound=bound, algorithm=algorithm, alternatives=algs,
                          link_bytes=topo["max_link_bytes"],
                          link_axes=topo["link_axes"], mem_bandwidth=bw,
                          link_bandwidth=m.link_bandwidth))
    plan = [PlanStep(t["compute"], t["link"] + t["latency"], t["work"].has_exchange,
                     t["work"].reads, t["work"].writes, t["work"].exchange_reads,
                     t["work"].exchange_writes, t["link_axes"]) for t in timed]
    serial, overlapped, serial_at, over_at = time_plan(plan)
    at = over_at if m.overlap > 0 else serial_at
    steps = []
    for t, (c0, e0) in zip(timed, at):
        steps.append(StepTime(start=c0, exchange_start=e0, **t))
    return PerfReport(work, m, tuple(steps), serial=serial, overlapped=overlapped)
