"""``estimate_mesh_kernel``: how long a mesh kernel takes on a machine, and what bounds
each of its supersteps (a core's arithmetic, its memory, a hot link, or latency).

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
   by stores and bindings). A global-view kernel (copies of other cores' shards, no comm
   ops) reads everything from global memory: no exchange.
2. :func:`estimate_mesh_kernel` divides by a :class:`~meshtensor.machines.Machine`:
   a superstep takes ``max over cores of max(ops / FLOP/s, bytes / memory bandwidth)``
   plus its exchange, ``busiest link's bytes / link bandwidth + longest route's hops x
   hop latency + most messages one core sends x message overhead``; the kernel takes
   the sum. Bulk-synchronous: no superstep overlaps another, and no exchange overlaps
   compute. Each superstep names its bound (the largest of the critical core's
   arithmetic and memory times, the link time and the latency) and its critical core.

A loop whose bounds are read from memory, or a ``while`` loop, cannot be counted: one
``ValueError`` names the statement.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from tvm import tirx

from ...boxes import clip_boxes, volume
from ...machines import Machine, get_machine
from ...mesh import Mesh
from ...text import plural
from ..ir.comm_op import is_comm_call
from ..ir.expr import static_int
from ..ir.evaluate import IterSpace, region_box
from ..ir.kernel import KernelView, execution_keys
from ..ir.scope import (COPY_OP, Cond, CopyRegion, Found, Let, WhileLoop, find_calls,
                        itemsize, region_of)
from .traffic import CommReport, analyze_mesh_communication

__all__ = ["BOUNDS", "StepWork", "KernelWork", "StepTime", "PerfReport",
           "count_mesh_kernel", "estimate_mesh_kernel"]

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
    superstep, which ends the kernel), ``comm_op`` its index (``-1``), ``execution``
    which execution of it, ``when`` its program-order key. Per core (linear order): ``ops`` maps element types to
    operations (FLOPs), ``mem_bytes`` the bytes between global memory and the core,
    ``sends`` the messages the core sends in the exchange, ``active`` whether it sends
    or receives. The exchange: ``exchange_bytes`` over ``flows`` point-to-point
    transfers, ``max_link_bytes`` on ``busiest_link`` (``"(0, 1)->(0, 2)"``, XY
    routing), ``max_hops`` the longest route.
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

    @property
    def messages(self) -> int:
        """The most messages one core sends in the exchange."""
        return int(self.sends.max()) if self.sends.size else 0


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
    total = itemsize(stmt.buffer.dtype) if store and is_global(stmt.buffer) else 0
    hits: list = []

    def visit(n: Any) -> bool:
        if isinstance(n, tirx.Call) and \
                str(getattr(n.op, "name", "")).rsplit(".", 1)[-1] in _ADDRESS_CALLS:
            return False
        if isinstance(n, tirx.BufferLoad) and is_global(n.buffer):
            hits.append(itemsize(n.buffer.dtype))
        return True

    for e in [stmt.value, *(stmt.indices if store else ())]:
        tirx.stmt_functor.pre_order_visit(tirx.Evaluate(e), visit)
    return total + sum(hits)


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
        if not ops and not mem:
            return  # a copy between per-core buffers, index arithmetic bound to a name
        space, count, order = self.space(found, name, collapse=True)
        self.add(self.steps_of(space, order), space.core, ops, mem, count)

    def gemm(self, found: Found) -> None:
        a, b, c = (region_of(x) for x in found.call.args[:3])
        m, n, k = (static_int(x) for x in found.call.args[5:8])
        name = f"T.gemm({a.buffer.name}, {b.buffer.name}, {c.buffer.name})"
        if None in (m, n, k):
            raise ValueError(f"{WHERE}: cannot count {name}: its M, N, K "
                             f"{[str(x) for x in found.call.args[5:8]]} are not constants")
        space, count, order = self.space(found, name, collapse=True)
        mem = sum(r.nbytes for r in (a, b, c) if self.is_global(r.buffer))
        self.add(self.steps_of(space, order), space.core, {str(a.buffer.dtype): 2 * m * n * k},
                 mem, count)

    def region_bytes(self, region: CopyRegion, space: IterSpace) -> np.ndarray:
        """Bytes of a global region at each point, clipped to the tensor."""
        shape = tuple(static_int(s) for s in region.buffer.shape)
        if None in shape:
            raise ValueError(f"{WHERE}: global buffer {region.buffer.name!r} has a symbolic "
                             f"shape {list(region.buffer.shape)}; count a specialised kernel")
        lo, hi = clip_boxes(*region_box(region, space, WHERE), shape)
        return volume(lo, hi) * itemsize(region.buffer.dtype)

    def fill(self, found: Found) -> None:
        region = region_of(found.call.args[0])
        if not self.is_global(region.buffer):
            _check_countable(found, f"T.fill({region.buffer.name})")
            return
        space, count, order = self.space(found, f"T.fill({region.buffer.name})", False)
        self.add(self.steps_of(space, order), space.core, mem=self.region_bytes(region, space))

    def copy(self, c: Any) -> None:
        sides = [(r, w) for r, w in ((c.src, False), (c.dst, True)) if self.is_global(r.buffer)]
        name = f"T.copy({c.src.buffer.name} -> {c.dst.buffer.name})"
        if not sides:
            _check_countable(c, name)
            return
        # each execution is enumerated: clipping makes its bytes vary from point to point
        space, _, order = self.space(c, name, collapse=False)
        steps = self.steps_of(space, order)
        for region, _ in sides:
            self.add(steps, space.core, mem=self.region_bytes(region, space))

    # -- exchanges -----------------------------------------------------------------------------
    def exchange_steps(self) -> list[dict]:
        """Per exchange: its name, messages sent per core, active cores, link facts."""
        r, n = self.report, self.ncores
        out = []
        for s in self.exchanges:
            i = self.ident[tuple(s.when)]
            m = (r.op == i) & (r.step == s.execution) & (r.phase == s.phase)
            snd, rcv = r.peer[m], r.core[m]  # receiver rows, the sender as peer
            pairs = np.unique(snd * n + rcv)
            sends = np.bincount(pairs // n, minlength=n).astype(np.int64)
            active = (sends > 0) | (np.bincount(pairs % n, minlength=n) > 0)
            out.append(dict(exchange=s.statement, comm_op=i, execution=s.execution,
                            when=tuple(s.when),
                            sends=sends, active=active, exchange_bytes=s.nbytes,
                            flows=s.flows, max_link_bytes=s.max_link_bytes,
                            busiest_link=_busiest_link(self.mesh, s.link_loads)
                            if s.flows else "", max_hops=s.max_hops))
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
                    int(np.prod(shape, dtype=np.int64)) * itemsize(b.dtype)))
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
        steps.append(StepWork(index=len(steps), ops=ops, mem_bytes=mem, **e))
    return KernelWork(_kernel_name(view.func), view.mesh, tuple(steps),
                      _per_core_buffers(view.func),
                      tuple(f"{k} x {v}" for k, v in sorted(uncounted.items())))


# -- times on a machine ------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class StepTime:
    """One superstep on a machine (seconds). Per core: ``arith`` (operations / FLOP/s)
    and ``memory`` (bytes / memory bandwidth). ``compute`` is the slowest core's
    ``max(arith, memory)``, ``critical_core`` that core (``None`` when no core works),
    ``link`` the busiest link's bytes / link bandwidth, ``latency`` the longest route's
    hops x hop latency plus the most messages one core sends x message overhead,
    ``start`` when the superstep begins; ``bound`` the largest of the critical core's
    arithmetic and memory times, ``link`` and ``latency`` (:data:`BOUNDS`), or
    ``"none"`` for an empty superstep."""

    work: StepWork
    start: float
    arith: np.ndarray
    memory: np.ndarray
    critical_core: int | None
    compute: float
    link: float
    latency: float
    bound: str

    @property
    def exchange(self) -> float:
        return self.link + self.latency

    @property
    def total(self) -> float:
        return self.compute + self.exchange

    @property
    def busy(self) -> np.ndarray:
        """Each core's compute phase: ``max(arith, memory)``."""
        return np.maximum(self.arith, self.memory)


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


@dataclass(frozen=True, eq=False)
class PerfReport:
    """A kernel's estimated time on a machine (:func:`estimate_mesh_kernel`): its
    supersteps (:class:`StepTime`, in execution order), the total, and whether its
    per-core buffers fit the machine's local memory."""

    work: KernelWork
    machine: Machine
    steps: tuple[StepTime, ...]

    @property
    def total(self) -> float:
        """Estimated seconds: the sum of the supersteps (bulk-synchronous, no overlap)."""
        return float(sum(s.total for s in self.steps))

    @property
    def fits_local_memory(self) -> bool:
        return self.work.local_bytes <= self.machine.local_memory_bytes

    def per_core(self) -> dict[str, np.ndarray]:
        """Seconds per core over the kernel: ``arith``, ``memory``, ``busy`` (the compute
        phases, ``max(arith, memory)`` per superstep), ``exchange`` (the exchanges the
        core sends or receives in), ``wait`` (the rest: waiting for the slowest core or
        for an exchange it takes no part in). ``busy + exchange + wait = total``."""
        n = self.work.mesh.size
        out = {k: np.zeros(n) for k in ("arith", "memory", "busy", "exchange")}
        for s in self.steps:
            out["arith"] += s.arith
            out["memory"] += s.memory
            out["busy"] += s.busy
            out["exchange"] += np.where(s.work.active, s.exchange, 0.0)
        out["wait"] = self.total - out["busy"] - out["exchange"]
        return out

    def by_bound(self) -> dict[str, float]:
        """Seconds of the supersteps each bound dominates."""
        out = {b: 0.0 for b in BOUNDS}
        for s in self.steps:
            if s.bound in out:
                out[s.bound] += s.total
        return out

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
        """The report in at most ``width`` columns: header, time by bound, local memory,
        and one line per superstep (the first ``max_steps``; ``None`` for all)."""
        m, w = self.machine, self.work
        unit, scale = _unit(self.total)
        mesh = "x".join(map(str, w.mesh.shape))
        lines = [*textwrap.wrap(title or f"{w.name} on a {mesh} mesh", width,
                                subsequent_indent="  "),
                 *textwrap.wrap(f"machine {m.name} ({'x'.join(map(str, m.mesh_shape))}"
                                f" cores): {m.description or 'a machine file'}", width,
                                subsequent_indent="  "),
                 f"estimated time {self.total / scale:.3f} {unit} over "
                 f"{plural(len(self.steps), 'superstep')} (bulk-synchronous: no overlap)"]
        bb = self.by_bound()
        tot = self.total or 1.0
        lines.append("time by bound: " + ", ".join(
            f"{b} {100 * bb[b] / tot:.0f}%" for b in BOUNDS))
        ops = w.ops()
        peak = max((float(v.max()) for v in ops.values()), default=0.0)
        lines.append(f"busiest core: {_flop(peak)}, "
                     f"{_bytes(float(w.mem_bytes().max()))} to/from global memory")
        verdict = "fits" if self.fits_local_memory else "DOES NOT FIT"
        lines.append(f"local memory per core: {_bytes(w.local_bytes)} of "
                     f"{_bytes(m.local_memory_bytes)} ({verdict})")
        if w.uncounted:
            lines.append("not counted (no rule): " + ", ".join(w.uncounted))
        # the table: step, exchange, bound, core, compute, exchange, total
        fixed = 5 + 1 + 1 + 8 + 7 + 3 * 10
        lw = max(8, min(max(len(self.step_label(s)) for s in self.steps), width - fixed))
        lines.append(f"{'step':>5s} {'exchange':<{lw}s} {'bound':<8s}{'core':<7s}"
                     f"{'compute':>10s}{'exchange':>10s}{'total ' + unit:>10s}")
        shown = self.steps if max_steps is None else self.steps[:max_steps]
        for s in shown:
            core = "-" if s.critical_core is None else \
                ",".join(map(str, w.mesh.multi_index(s.critical_core)))
            lines.append(f"{s.work.index:>5d} {_fit(self.step_label(s), lw):<{lw}s} "
                         f"{s.bound:<8s}{core:<7s}{s.compute / scale:>10.3f}"
                         f"{s.exchange / scale:>10.3f}{s.total / scale:>10.3f}")
        if len(shown) < len(self.steps):
            lines.append(f"... {len(self.steps) - len(shown)} more supersteps (show all "
                         f"with max_steps=None, or --steps 0)")
        return "\n".join(_fit(line, width) for line in lines)


def estimate_mesh_kernel(kernel: Any, machine: Any = "generic", mesh: Any = None
                         ) -> PerfReport:
    """The estimated time of a mesh kernel (or of its :class:`KernelWork`) on a
    machine (a preset name, a machine file, or a :class:`Machine`): see the module
    docstring for the model. ``ValueError`` when the kernel's mesh does not fit the
    machine's, or the machine lacks a FLOP/s figure for an element type it uses.

    >>> from meshtensor.tilelang.kernels.gemm import build_gemm
    >>> r = estimate_mesh_kernel(build_gemm("summa_comm", 64, 64, 64, mesh=2), "generic")
    >>> [s.bound for s in r.steps], r.total > 0
    (['memory', 'link', 'compute', 'link', 'compute'], True)
    """
    work = kernel if isinstance(kernel, KernelWork) else count_mesh_kernel(kernel, mesh)
    m = get_machine(machine)
    if not m.fits(work.mesh.shape):
        raise ValueError(f"{WHERE}: the kernel's {'x'.join(map(str, work.mesh.shape))} mesh "
                         f"does not fit machine {m.name!r} "
                         f"({'x'.join(map(str, m.mesh_shape))} cores)")
    rates = {d: m.rate(d) for d in work.ops()}
    n = work.mesh.size
    out, start = [], 0.0
    for s in work.steps:
        arith = np.zeros(n)
        for d, v in s.ops.items():
            arith = arith + v / rates[d]
        memory = s.mem_bytes / m.mem_bandwidth
        busy = np.maximum(arith, memory)
        crit = int(np.argmax(busy)) if busy.max() > 0 else None
        link = s.max_link_bytes / m.link_bandwidth if s.flows else 0.0
        latency = s.max_hops * m.hop_latency + s.messages * m.message_overhead \
            if s.flows else 0.0
        c = 0 if crit is None else crit
        parts = (arith[c], memory[c], link, latency)
        bound = BOUNDS[int(np.argmax(parts))] if max(parts) > 0 else "none"
        out.append(StepTime(s, start, arith, memory, crit, float(busy.max()), link, latency,
                            bound))
        start += out[-1].total
    return PerfReport(work, m, tuple(out))
