"""``LowerMeshComm``: run a mesh kernel with comm ops on TileLang's C backend, in
bulk-synchronous supersteps; ``compile_mesh_kernel`` puts the mesh passes before
``tilelang.compile``.

The kernel keeps one launch (its block loops get extent 1); inside it:

- every maximal comm-free statement run (a *segment*) is wrapped in serial loops over
  the cores, with the launch variables replaced by the loop variables: each core's code
  between two comm ops runs for every core before the exchange;
- loops and ``if``s that contain comm ops stay outside; their bounds and conditions must
  not depend on the core (the collective rule), else ``ValueError`` naming the op;
- a per-core buffer that lives across supersteps is *promoted*: one array off the
  stack (tiles of all cores would overflow it) holding every core's copy, ``malloc``'d
  in the kernel or taken from a workspace argument (``workspace="argument"``); a
  segment sees core ``c``'s copy through a pointer to its slice, so its code is
  unchanged. A buffer no comm op touches stays an ordinary per-core buffer when it is
  used by one segment that runs once per core or that overwrites it entirely before
  reading it, or when it is small (``MeshPassConfig.small_private_bytes``) and every
  segment using it overwrites it entirely before reading it (the micro-kernel's accumulator stays in registers); a small one
  used by one segment inside a loop is copied in and out of its slice around the
  segment, and so is, around every segment using it, a buffer that a reduction or a
  ``T.transpose`` uses (TileLang's CPU lowering takes those only in local memory) and
  no ``T.decl_buffer`` views; region starts may not read per-core buffers;
- each comm op becomes a loop nest over destination cores copying (or reducing) between
  cores' slices, through a staging array when ``src`` and ``dst`` share a buffer;
- lets that depend on the core are substituted where they are used.

A kernel without comm ops is returned unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import tvm
from tvm import arith, ir, tirx

from ...reduction import REDUCTIONS
from ..ir.comm_op import CommOp, decode, find_comm_ops, is_comm_call
from ..ir.expr import static_int
from ..ir.evaluate import Overflow, iteration_space
from ..ir.launch import Launch, row_major as _row_major, unravel as _unravel
from ..pass_config import DEFAULT, WORKSPACES, MeshPassConfig
from ..ir.memory import Memory, View
from ..ir.names import DIST_RANK_ATTR
from ..ir.resolve import prim_func
from ..ir.scope import LOCAL_OPERANDS, Found, Let, WhileLoop, find_calls, itemsize, region_of
from .narrow_float import FORMATS

_POINTER_REFUSED = ("tl.tileop.reduce", "tl.tileop.transpose")
__all__ = ["LowerMeshComm", "lower_mesh_comm", "check_collective_rule", "WORKSPACE_ATTR",
           "COMM_OP_ATTR", "TIR"]

WORKSPACE_PARAM = "mesh_workspace"
WORKSPACE_ATTR = "mesh_workspace_bytes"
COMM_OP_ATTR = "meshtensor_comm_op"  # AttrStmt around each exchange: the comm op's index
_MAX_LANES = 32767  # TVM's DataType holds a lane count in 16 bits (see _Store.far)


# -- small TIR helpers ---------------------------------------------------------------------
def _i32(v: int) -> tirx.IntImm:
    return tirx.IntImm("int32", int(v))


def _seq(stmts: Sequence[tirx.Stmt]) -> tirx.Stmt:
    stmts = [s for s in stmts if s is not None]
    if not stmts:
        return tirx.Evaluate(_i32(0))
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def _loop(var: tirx.Var, extent: Any, body: tirx.Stmt) -> tirx.Stmt:
    return tirx.For(var, _i32(0), extent if isinstance(extent, tirx.PrimExpr) else _i32(extent),
                    tirx.ForKind.SERIAL, body)


def _nest(vars_: Sequence[tirx.Var], extents: Sequence[Any], body: tirx.Stmt) -> tirx.Stmt:
    for v, e in reversed(list(zip(vars_, extents))):
        body = _loop(v, e, body)
    return body


def _fresh_idx(ndim: int) -> list[tirx.Var]:
    return [tirx.Var(f"i{d}", "int32") for d in range(ndim)]


def _vars_in(node: Any) -> set:
    out: set = set()

    def visit(n: Any) -> None:
        if isinstance(n, tirx.Var):
            out.add(n)
        elif isinstance(n, (tirx.BufferLoad, tirx.BufferStore)):
            out.add(n.buffer.data)

    stmt = node if isinstance(node, tirx.Stmt) else tirx.Evaluate(node)
    tirx.stmt_functor.post_order_visit(stmt, visit)
    return out


def _remap_buffers(stmt: tirx.Stmt, remap: Callable[[tirx.Buffer], Any]) -> tirx.Stmt:
    """Replace the buffer of every load and store by ``remap(buffer)`` (unchanged where
    it returns ``None``)."""

    def post(n: Any) -> Any:
        new = remap(n.buffer)
        if new is None:
            return None
        if isinstance(n, tirx.BufferLoad):
            return tirx.BufferLoad(new, n.indices, n.predicate)
        return tirx.BufferStore(new, n.value, n.indices, n.predicate)

    return tirx.stmt_functor.ir_transform(stmt, None, post, ["tirx.BufferLoad", "tirx.BufferStore"])


def _strip_decls(stmt: tirx.Stmt, stores: dict) -> tirx.Stmt:
    """``stmt`` without the allocations of promoted buffers (``T.alloc_buffer`` in the
    body) and the declarations of their views (``T.decl_buffer(data=...)``): each core's
    copy lives in the shared array, declared where it is used."""

    def post(n: Any) -> Any:
        st = stores.get(n.buffer.data)
        # a private buffer is allocated in the block instead; its views stay declared
        if st is not None and (isinstance(n, tirx.AllocBuffer) or not st.private):
            return tirx.Evaluate(_i32(0))
        return None

    return tirx.stmt_functor.ir_transform(stmt, None, post, ["tirx.AllocBuffer", "tirx.DeclBuffer"])


def _contains_comm(stmt: tirx.Stmt) -> bool:
    return bool(find_calls(stmt, is_comm_call))


def _reads_memory(node: Any) -> bool:
    """Whether ``node`` loads from any buffer."""
    hit: list = []
    tirx.stmt_functor.post_order_visit(
        node if isinstance(node, tirx.Stmt) else tirx.Evaluate(node),
        lambda n: hit.append(n) if isinstance(n, tirx.BufferLoad) else None)
    return bool(hit)


def _is_call_to(name: str) -> Callable[[tirx.Call], bool]:
    return lambda call: getattr(call.op, "name", None) == name


# -- plan: the kernel body cut into segments and exchanges ------------------------------------
@dataclass
class _Seg:
    stmts: list
    in_loop: bool          # inside a loop that also runs comm ops (executes repeatedly)
    uses: set = field(default_factory=set)


@dataclass
class _Comm:
    op: CommOp
    in_loop: bool


class _Planner:
    """Walks the kernel body once: checks the collective rule, substitutes core-dependent
    lets, and records segments and comm ops (emission comes after buffer analysis)."""

    def __init__(self, launch: Launch, ops: list[CommOp], mem: Memory):
        self.launch = launch
        self.mem = mem
        self.by_call = ops
        self.core_vars = set(launch.vars)
        self.own_programs = False  # each core its own program (a T.dist rank's)
        self.segs: list[_Seg] = []
        self.comms: list[_Comm] = []
        self.blocks: list[tirx.SBlock] = []  # blocks inside the launch holding comm ops
        self.inside_launch = False
        self.comm_loops: list = []  # enclosing For/While loops that hold comm ops
        self.new_allocs: list[tirx.Buffer] = []  # per-core variables made from lets

    def _op_of(self, call: tirx.Call) -> CommOp:
        for o in self.by_call:
            if o.call.same_as(call):
                return o
        raise AssertionError("comm call not found")  # pragma: no cover

    def _first_op(self, stmt: tirx.Stmt) -> CommOp:
        return self._op_of(find_calls(stmt, is_comm_call)[0].call)

    def _core_dependent(self, expr: Any) -> bool:
        # a per-core buffer's value (S[0]) differs between cores like the core id does
        return bool(_vars_in(expr) & self.core_vars) or self.mem.reads(expr)

    def _segment(self, stmts: list, in_loop: bool) -> _Seg:
        """A new segment; refuses control flow that would escape the core loop it is
        wrapped in (a break aimed at a loop holding comm ops, a return)."""
        for s in stmts:
            for f in [] if self.own_programs else find_calls(s, _is_call_to("tirx.ret")):
                o = self.by_call[0]
                raise ValueError(f"LowerMeshComm: a `return` in a kernel with comm ops (first: "
                                 f"mesh_comm.{o.op}, comm op #{o.index}) would end the kernel for "
                                 f"every core, since the cores run in loops inside one launch; "
                                 f"guard the code with an `if` instead")
            for f in find_calls(s, _is_call_to("tl.loop_break")):
                if any(isinstance(i, (tirx.For, WhileLoop)) for i in f.scope):
                    continue  # it breaks a loop inside the segment: unchanged by lowering
                if not self.comm_loops:
                    raise ValueError("LowerMeshComm: T.loop_break() outside any loop")
                lp = self.comm_loops[-1]
                name = lp.loop_var.name if isinstance(lp, tirx.For) else "while"
                self._refuse(lp, f"inside loop {name!r} left by a T.loop_break() in the code "
                                 f"between comm ops (LowerMeshComm runs that code in a loop over "
                                 f"the cores, which the break would leave instead)")
        seg = _Seg(list(stmts), in_loop)
        self.segs.append(seg)
        return seg

    def _refuse(self, stmt: tirx.Stmt, what: str) -> None:
        o = self._first_op(stmt)
        raise ValueError(f"{o.name} is {what}; every core must run every comm op the same "
                         f"number of times (the collective rule)")

    # a plan tree: a list of _Seg, _Comm and ("for" | "if" | "while" | "block" | "launch" |
    # "attr" | "keep", stmt, sub-plans...) items
    def plan(self, stmt: tirx.Stmt, in_loop: bool) -> list:
        if not _contains_comm(stmt):
            return [self._segment([stmt], in_loop)]
        if isinstance(stmt, tirx.SeqStmt):
            return self._plan_seq(list(stmt.seq), in_loop)
        if isinstance(stmt, tirx.Evaluate) and is_comm_call(stmt.value):
            c = _Comm(self._op_of(stmt.value), in_loop)
            self.comms.append(c)
            return [c]
        if (isinstance(stmt, tirx.For) and stmt.kind == tirx.ForKind.THREAD_BINDING
                and self.launch.is_launch_var(stmt.loop_var)):
            self.inside_launch = True
            return [("launch", stmt, self.plan(stmt.body, in_loop))]
        if isinstance(stmt, tirx.For):
            if stmt.kind not in (tirx.ForKind.SERIAL, tirx.ForKind.UNROLLED):
                kind = tirx.ForKind(int(stmt.kind)).name.lower()
                self._refuse(stmt, f"inside a {kind} loop {stmt.loop_var.name!r} (T.Parallel "
                                   f"or T.vectorized: its iterations run at once, so the "
                                   f"exchange's count and order are undefined; use T.serial)")
            for e in (stmt.min, stmt.extent):
                if self._core_dependent(e):
                    self._refuse(stmt, f"inside loop {stmt.loop_var.name!r} whose bounds depend "
                                       f"on the core ({stmt.min}, extent {stmt.extent})")
            self.comm_loops.append(stmt)
            body = self.plan(stmt.body, True)
            self.comm_loops.pop()
            return [("for", stmt, body)]
        if isinstance(stmt, tirx.IfThenElse):
            if self._core_dependent(stmt.condition):
                self._refuse(stmt, f"under `if {stmt.condition}`, a condition that depends on "
                                   f"the core")
            other = self.plan(stmt.else_case, in_loop) if stmt.else_case is not None else None
            return [("if", stmt, self.plan(stmt.then_case, in_loop), other)]
        if isinstance(stmt, tirx.While):
            if self._core_dependent(stmt.condition):
                self._refuse(stmt, f"inside `while {stmt.condition}`, a condition that "
                                   f"depends on the core")
            self.comm_loops.append(stmt)
            body = self.plan(stmt.body, True)
            self.comm_loops.pop()
            return [("while", stmt, body)]
        if isinstance(stmt, tirx.SBlockRealize):
            if self._core_dependent(stmt.predicate):
                self._refuse(stmt, "under a block predicate that depends on the core")
            if self.inside_launch:
                self.blocks.append(stmt.block)
            return [("block", stmt, self.plan(stmt.block.body, in_loop))]
        if not isinstance(stmt, tirx.AttrStmt):
            self._refuse(stmt, f"inside an unsupported {type(stmt).__name__}")
        if self._core_dependent(stmt.value):
            self._refuse(stmt, f"inside an attribute {stmt.attr_key!r} that depends on the core")
        return [("attr", stmt, self.plan(stmt.body, in_loop))]

    def _plan_seq(self, stmts: list, in_loop: bool) -> list:
        out: list = []
        run: list = []

        def flush() -> None:
            if run:
                out.append(self._segment(run, in_loop))
                run.clear()

        for i, s in enumerate(stmts):
            if isinstance(s, tirx.Bind) and self._core_dependent(s.value):
                if not any(_contains_comm(t) for t in stmts[i + 1:]):
                    run.append(s)  # it lives inside one segment: unchanged
                    continue
                if _reads_memory(s.value):
                    # a value read from memory must be read where the kernel reads it
                    # (a later write may change that memory): each core computes it into
                    # a per-core variable, kept across the exchanges like T.alloc_var
                    var = tirx.decl_buffer((1,), s.var.dtype, f"{s.var.name}_var",
                                           scope="local.var")
                    self.new_allocs.append(var)
                    self.mem = Memory(self.mem.allocations + (var,), self.mem.params)
                    run.append(tirx.BufferStore(var, s.value, [_i32(0)]))
                    value: Any = tirx.BufferLoad(var, [_i32(0)])
                else:
                    # a function of the core and loop variables: substituted, so every
                    # segment gets the value for its own core
                    self.core_vars.add(s.var)
                    value = s.value
                rest = [tirx.stmt_functor.substitute(t, {s.var: value}) for t in stmts[i + 1:]]
                flush()
                self._rebind(stmts[i + 1:], rest)  # substitution rebuilt the comm calls
                return out + self._plan_seq(rest, in_loop)
            if isinstance(s, tirx.Bind):
                if not any(_contains_comm(t) for t in stmts[i + 1:]):
                    # the rest is one segment: splitting it here would end the scope of
                    # a per-core let before it (found by the fuzzer)
                    run.append(s)
                    continue
                flush()  # a core-independent let stays where it is, visible to all segments
                out.append(("keep", s))
                continue
            if not _contains_comm(s):
                run.append(s)
                continue
            flush()
            out.extend(self.plan(s, in_loop))
        flush()
        return out

    def _rebind(self, old: list, new: list) -> None:
        """Comm ops re-found after a substitution keep their index and params."""
        a = [f for s in old for f in find_calls(s, is_comm_call)]
        b = [f for s in new for f in find_calls(s, is_comm_call)]
        for fo, fn in zip(a, b):
            o = self._op_of(fo.call)
            n = decode(Found(fn.call, o.scope, o.order), o.index)
            self.by_call[self.by_call.index(o)] = n


# -- buffers -------------------------------------------------------------------------------
def _slice_stride(numel: int, itemsize: int) -> int:
    """Elements between two cores' copies of a buffer of ``numel``: rounded up to a
    multiple of 64, or of the next power of two for smaller buffers, so that core
    ``c``'s copy starts where a vector access of the buffer's own alignment stays
    aligned (TVM's C code generator emits a vector load only where it can prove the
    index aligned; otherwise an element-wise gather that TileLang's vector types cannot
    build); and to a multiple of 8 bytes, so that a view of the buffer in another dtype
    (``T.view``) starts on one of its own elements in every core's copy."""
    align = min(64, 1 << max(numel - 1, 0).bit_length())
    align = max(align, 8 // itemsize if itemsize < 8 else 1)
    return -(-numel // align) * align


@dataclass
class _Store:
    """Every core's copy of a promoted per-core buffer, in one heap array: core ``c``'s
    copy at element ``c * stride``. Views of the buffer (``T.reshape``, ``T.view``,
    ``T.decl_buffer(data=...)``) address the same bytes with their own shape, strides,
    offset and dtype (:class:`~meshtensor.tilelang.ir.memory.View`)."""

    buf: tirx.Buffer       # the allocation (per-core buffer)
    flat: tirx.Buffer      # (ncores * stride,) over the malloc'd pointer
    numel: int
    private: bool          # copied in/out around its single segment
    stride: int = 0        # elements from one core's copy to the next (_slice_stride)
    # the same bytes in other dtypes (views with another dtype), declared beside ``flat``
    flats: dict = field(default_factory=dict)

    @property
    def stride_bytes(self) -> int:
        return self.stride * _itemsize(self.buf)

    def flat_of(self, dtype: str) -> tirx.Buffer:
        """The whole array as elements of ``dtype`` (``flat`` for the buffer's own)."""
        if dtype == str(self.buf.dtype):
            return self.flat
        if dtype not in self.flats:
            n = int(self.flat.shape[0]) * _itemsize(self.buf) // itemsize(dtype)
            self.flats[dtype] = tirx.decl_buffer((n,), dtype, f"{self.buf.name}_all_{dtype}",
                                                 data=self.flat.data)
        return self.flats[dtype]

    def core_offset(self, view: View, core: Any) -> Any:
        """Where core ``core``'s copy starts, in elements of the view's dtype."""
        per = self.stride_bytes // view.itemsize
        return core * per

    def far(self, view: View) -> bool:
        """Whether cores' copies lie 32768 or more elements of ``view``'s dtype apart.
        TileLang 0.1.15's StorageRewrite records every scalar load as a vector type of
        as many lanes as the coefficient its modular-set analysis finds for the index,
        and TVM holds a lane count in 16 bits: a load at ``core * stride + c`` with a
        stride past 32767 stops the compile ("Can't fetch the lanes of a scalable
        vector"; stock TileLang fails alike on ``A[i, 0]`` of a 32768-wide tensor).
        Such copies are reached through a pointer to the core's copy
        (``tvm_access_ptr``, which loads nothing), so their indices are the copy's own;
        nearer copies keep one array and their offsets, which prove vector accesses
        aligned."""
        return self.stride_bytes // view.itemsize > _MAX_LANES

    def core_ptr(self, view: View, core: Any) -> tirx.PrimExpr:
        """A pointer to the start of core ``core``'s copy, in ``view``'s dtype."""
        flat = self.flat_of(view.dtype)
        return tirx.call_intrin("handle", "tirx.tvm_access_ptr", tirx.type_annotation(view.dtype),
                                flat.data, self.core_offset(view, core),
                                self.stride_bytes // view.itemsize, _i32(3))

    def at(self, view: View, core: Any, idx: Sequence[Any]) -> tirx.PrimExpr:
        """Element ``idx`` of ``view`` in core ``core``'s copy."""
        off = view.elem_index(idx)
        if self.far(view):
            ptr = tirx.Var(f"{self.buf.name}_at", ir.PointerType(ir.PrimType(view.dtype), "global"))
            copy = tirx.decl_buffer((self.stride_bytes // view.itemsize,), view.dtype,
                                    f"{self.buf.name}_at", data=ptr)
            return tirx.Let(ptr, self.core_ptr(view, core), tirx.BufferLoad(copy, [off]))
        base = self.core_offset(view, core)
        return tirx.BufferLoad(self.flat_of(view.dtype),
                               [base if static_int(off) == 0 else base + off])

    def put(self, view: View, core: Any, idx: Sequence[Any], value: Any) -> tirx.BufferStore:
        off = view.elem_index(idx)  # (a store is not read: any index compiles)
        base = self.core_offset(view, core)
        return tirx.BufferStore(self.flat_of(view.dtype), value,
                                [base if static_int(off) == 0 else base + off])

    def decls(self) -> list:
        return [tirx.DeclBuffer(self.flat)] + [tirx.DeclBuffer(f) for f in self.flats.values()]


def _numel(buf: tirx.Buffer) -> int | None:
    dims = [static_int(n) for n in buf.shape]
    return None if None in dims else int(np.prod(dims, dtype=np.int64))


def _itemsize(buf: tirx.Buffer) -> int:
    return itemsize(buf.dtype)


def _dead_at_entry(stmt: tirx.Stmt, buf: tirx.Buffer) -> bool:
    """Whether every execution of ``stmt`` overwrites all of ``buf`` before reading it: the
    first statement touching ``buf`` (in program order, reached through loops of static
    positive extent and statement lists only) is a nest of loops over exactly ``buf``'s
    dims whose only body is a store to every element that does not read ``buf``
    (e.g. the micro-kernel's accumulator). Conservative: anything else gives False."""
    shape = [static_int(n) for n in buf.shape]
    if None in shape:
        return False

    def touches(n: Any) -> bool:
        return buf.data in _vars_in(n)

    def full_store(node: Any, idx_loops: list) -> bool:
        if isinstance(node, tirx.For):
            return full_store(node.body, idx_loops + [node])
        if not isinstance(node, tirx.BufferStore) or not node.buffer.same_as(buf):
            return False  # a view of buf may cover only part of it
        if touches(node.value) or len(node.indices) != len(shape) or len(idx_loops) != len(shape):
            return False
        for i, lp, n in zip(node.indices, idx_loops, shape):
            if not (isinstance(i, tirx.Var) and i.same_as(lp.loop_var) and static_int(lp.min) == 0
                    and static_int(lp.extent) == n):
                return False
        return True

    def first(node: Any) -> bool:
        if isinstance(node, tirx.SeqStmt):
            for s in node.seq:
                if touches(s):
                    return first(s)
            return False
        if isinstance(node, tirx.For):
            if full_store(node, []):
                return True
            ext = static_int(node.extent)
            return ext is not None and ext > 0 and first(node.body)
        return False

    return first(stmt)


# -- the pass --------------------------------------------------------------------------------
class _Lowering:
    def __init__(self, func: tirx.PrimFunc, ops: list[CommOp], workspace: str = "malloc",
                 shadow: Any = None, config: MeshPassConfig = DEFAULT):
        if workspace not in WORKSPACES:
            raise ValueError(f"LowerMeshComm: workspace must be one of {list(WORKSPACES)}, got "
                             f"{workspace!r}")
        self.workspace = workspace
        self.shadow = shadow  # a RaceShadow: the checked run's record (race_check)
        self.config = config
        self.ws_buf = None
        meshes = {tuple(o.mesh.as_dict.items()) for o in ops}
        if len(meshes) > 1:
            raise ValueError(f"LowerMeshComm: comm ops on different meshes "
                             f"{[dict(m) for m in meshes]}")
        self.func = func
        self.mesh = ops[0].mesh
        self.launch = Launch.of(func, self.mesh, "LowerMeshComm")
        self.mem = Memory.of(func)
        self.planner = _Planner(self.launch, ops, self.mem)
        # a T.dist rank's program: split_cores runs each core as its own program, where
        # a `return` ends that core only
        self.planner.own_programs = bool(func.attrs and DIST_RANK_ATTR in func.attrs)
        self.ncores = self.mesh.size

    # each segment and exchange gets fresh core loop variables
    def _core_vars(self, tag: str) -> list[tirx.Var]:
        return [tirx.Var(f"{tag}_{n}", "int32") for n in self.mesh.axis_names]

    def run(self) -> tirx.PrimFunc:
        body = self.func.body
        tree = self.planner.plan(body, False)
        self.mem = self.planner.mem  # with the per-core variables made from lets
        self.ops = self.planner.by_call
        self._check_roots()
        self._check_regions()
        self._choose_stores()
        new_body = self._emit(tree)
        if self.workspace == "malloc":
            return self.func.with_body(new_body)
        # the scratch memory is one more (uint8) argument, which MeshKernel supplies
        f = self.func
        ws_var = tirx.Var(WORKSPACE_PARAM, "handle")
        out = tirx.PrimFunc(list(f.params) + [ws_var], new_body, f.ret_type,
                            {**dict(f.buffer_map), ws_var: self.ws_buf}, f.attrs)
        return out.with_attr(WORKSPACE_ATTR, int(self.ws_buf.shape[0]))

    def _value_range(self, o: CommOp, expr: Any) -> tuple[int, int, bool] | None:
        """``(min, max, exact)`` of an index expression over every execution of ``o``:
        exact over its iteration space (enclosing uniform conditions applied, e.g. a
        prefetch's ``if k + 1 < n``), else bounded through the enclosing loops' ranges
        and lets (``exact`` False); ``None`` when the statement never runs."""
        try:
            space = iteration_space(o, self.launch, o.name)
            if not space.size:
                return None
            v = space.value(expr)
            return int(v.min()), int(v.max()), True
        except Overflow as err:
            raise Overflow(f"{o.name}: {err}") from None
        except ValueError:
            pass  # e.g. under `while` or a condition on memory: bound it instead
        ana = arith.Analyzer()
        for item in o.scope:  # loops and lets in nesting order (root=[s % 2] via a let)
            if isinstance(item, tirx.For) and item.kind != tirx.ForKind.THREAD_BINDING:
                ana.bind(item.loop_var, ir.Range.from_min_extent(item.min, item.extent))
            elif isinstance(item, Let) and not self.planner._core_dependent(item.value):
                ana.bind(item.var, item.value)
        b = self.launch.bound(ana).const_int_bound(expr)
        return int(b.min_value), int(b.max_value), False

    # root range: static roots were checked when built; loop-variable roots here
    def _check_roots(self) -> None:
        for o in self.ops:
            if o.op != "broadcast":
                continue
            for r, a in zip(o.root, o.mesh_axes):
                if self.planner._core_dependent(r):
                    raise ValueError(f"{o.name}: root {r} depends on the core; a root is one "
                                     f"in-group index for all groups")
                if static_int(r) is not None:
                    continue
                got = self._value_range(o, r)
                size = self.mesh.shape[a]
                if got is not None and (got[0] < 0 or got[1] >= size):
                    how = "takes values in" if got[2] else \
                        "cannot be shown to stay in range: its bounds are"
                    raise ValueError(f"{o.name}: root coordinate {r} {how} [{got[0]}, "
                                     f"{got[1]}], out of range [0, {size}) on mesh axis "
                                     f"{self.mesh.axis_names[a]!r}")

    # region range: static starts were checked when built; loop-dependent ones here (an
    # exchange out of range would write into the next core's slice, silently)
    def _check_regions(self) -> None:
        for o in self.ops:
            if o.src is None:
                continue
            for side, r in (("src", o.src), ("dst", o.dst)):
                for d, (start, ext, n) in enumerate(zip(r.starts, r.extents, r.buffer.shape)):
                    if static_int(start) is not None:
                        continue  # checked when the op was built
                    if self.mem.reads(start):
                        # the exchange reads every core's region at once: a start held in
                        # one core's buffer is not known there
                        raise ValueError(f"{o.name}: the start {start} of the {side} region "
                                         f"of {r.buffer.name!r} (dim {d}) reads a per-core "
                                         f"buffer; a region start may depend on the core "
                                         f"and loop variables, not on per-core data")
                    got = self._value_range(o, start)
                    e, n = static_int(ext), static_int(n)
                    if got is None:
                        continue  # never executed
                    if got[0] < 0 or got[1] + e > n:
                        how = "takes values in" if got[2] else \
                            "cannot be shown to stay in range: its bounds are"
                        raise ValueError(f"{o.name}: {side} region of {r.buffer.name!r} runs "
                                         f"outside dim {d} of size {n}: start {start} {how} "
                                         f"[{got[0]}, {got[1]}] with extent {e}")

    def _choose_stores(self) -> None:
        """Which per-core buffers need one copy per core (see the module docstring)."""
        # every buffer allocated in the kernel is per-core, whatever its scope (fragments
        # and T.alloc_buffer's "global" included); views share their allocation's data
        allocs = list(self.mem.allocations)
        seg_uses: dict = {}
        for i, seg in enumerate(self.planner.segs):
            vs = set()
            for s in seg.stmts:
                vs |= _vars_in(s)
            seg.uses = vs
            for b in allocs:
                if b.data in vs:
                    seg_uses.setdefault(b.data, []).append(i)
        in_comm = {r.buffer.data for o in self.ops if o.src is not None for r in (o.src, o.dst)}
        # a tile op TileLang's CPU lowering refuses through a pointer (a reduction, a
        # transpose) keeps its buffer local: copied in and out of its slice around each
        # segment. T.gemm's accumulator and a T.fill target are read through their
        # pointer: a private copy in and out of every segment cost the comm GEMMs about
        # 10% against torch.mm
        local_ops = {region_of(f.call.args[pos]).buffer.data
                     for seg in self.planner.segs for s in seg.stmts
                     for f in find_calls(s, lambda c: getattr(c.op, "name", None)
                                         in _POINTER_REFUSED)
                     for pos in LOCAL_OPERANDS[f.call.op.name]}
        # (not an allocation a view declares again: its private copy in each segment
        # would define the view twice, which TileLang's host/device split refuses; such
        # a buffer is read through its pointer, as before)
        viewed: set = set()
        for seg in self.planner.segs:
            for st in seg.stmts:
                tirx.stmt_functor.post_order_visit(st, lambda n: viewed.add(n.buffer.data)
                                                   if isinstance(n, tirx.DeclBuffer) else None)
        local_ops -= viewed
        self.stores: dict = {}
        self.ptrs: list = []
        for b in allocs:
            segs = seg_uses.get(b.data, [])
            n = _numel(b)
            small = n is not None and n * _itemsize(b) <= self.config.small_private_bytes

            def dead(i: int, b: tirx.Buffer = b) -> bool:  # segment i overwrites b first
                return _dead_at_entry(_seq(self.planner.segs[i].stmts), b)

            if b.data not in in_comm and len(segs) <= 1:
                if not segs or not self.planner.segs[segs[0]].in_loop:
                    continue  # scratch of one segment that runs once per core
                if dead(segs[0]):
                    continue  # overwritten before it is read: nothing to carry over
                private = small or b.data in local_ops
            elif b.data not in in_comm and small and all(dead(i) for i in segs):
                # every segment using it overwrites it first: a small scratch (it lives on
                # the stack), nothing carried
                continue
            else:
                private = b.data in local_ops
            if n is None:
                raise ValueError(f"LowerMeshComm: per-core buffer {b.name!r} has symbolic shape "
                                 f"{list(b.shape)}; buffers live across comm ops need static "
                                 f"shapes")
            ptr = tirx.Var(f"{b.name}_all", ir.PointerType(ir.PrimType(str(b.dtype)), "global"))
            stride = _slice_stride(n, _itemsize(b))
            flat = tirx.decl_buffer((stride * self.ncores,), str(b.dtype), f"{b.name}_all",
                                    data=ptr)
            self.stores[b.data] = _Store(b, flat, n, private, stride)
            self.ptrs.append((ptr, stride * self.ncores * _itemsize(b)))
        for o in self.ops:
            for side, r in (("src", o.src), ("dst", o.dst)):
                if r is not None and r.buffer.data not in self.stores:
                    raise ValueError(f"{o.name}: {side} {r.buffer.name!r} is not a per-core "
                                     f"buffer allocated in the kernel (T.alloc_shared, "
                                     f"T.alloc_local, T.alloc_fragment, ...), or a view of "
                                     f"one; a kernel parameter is global memory")
                if r is not None:
                    self._view(r.buffer, o.name)  # fits its allocation
        # staging arrays for comm ops whose src and dst share a buffer
        self.stage = None
        need = [int(np.prod(o.static_extents("src"), dtype=np.int64)) * _itemsize(o.src.buffer)
                for o in self.ops if o.src is not None and o.src.buffer.data.same_as(o.dst.buffer.data)]
        if need:
            nbytes = max(need) * self.ncores
            ptr = tirx.Var("comm_stage", ir.PointerType(ir.PrimType("uint8"), "global"))
            self.stage = (ptr, nbytes)

    def _view(self, buf: tirx.Buffer, where: str) -> View:
        """``buf`` resolved to its allocation; ``ValueError`` when the view reaches past
        the allocation (it would read or write the next core's copy)."""
        view = self.mem.view(buf)
        span = view.byte_span()
        size = _numel(view.alloc)
        size = None if size is None else size * _itemsize(view.alloc)
        if span is not None and size is not None and (span[0] < 0 or span[1] >= size):
            raise ValueError(f"{where}: {buf.name!r}, a view of {view.alloc.name!r}, covers "
                             f"bytes [{span[0]}, {span[1]}] of an allocation of {size} bytes; "
                             f"a view must lie inside the buffer it views")
        return view

    # -- emission ------------------------------------------------------------------------
    def _emit(self, tree: Any) -> tirx.Stmt:
        if isinstance(tree, list):
            return _seq([self._emit(t) for t in tree])
        if isinstance(tree, _Seg):
            return self._segment(tree)
        if isinstance(tree, _Comm):
            # tagged, so the lowered kernel still says which comm op each exchange is
            ex = tirx.AttrStmt(tree.op.op, COMM_OP_ATTR, _i32(tree.op.index),
                               self._exchange(tree.op))
            return ex if self.shadow is None else _seq([ex, self.shadow.bump()])
        kind, stmt = tree[0], tree[1]
        if kind == "keep":
            return stmt
        if kind == "for":
            # a loop around exchanges runs as the serial loop it means: T.Pipelined's
            # stages (annotations) are a schedule hint that must not reorder exchanges
            return tirx.For(stmt.loop_var, stmt.min, stmt.extent, tirx.ForKind.SERIAL,
                            self._emit(tree[2]))
        if kind == "if":
            other = self._emit(tree[3]) if tree[3] is not None else None
            return tirx.IfThenElse(stmt.condition, self._emit(tree[2]), other)
        if kind == "while":
            return tirx.While(stmt.condition, self._emit(tree[2]))
        if kind == "attr":
            return tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, self._emit(tree[2]))
        if kind == "launch":
            # one launch: the cores are the serial loops inside it
            tb = stmt.thread_binding
            dom = None if tb.dom is None else ir.Range.from_min_extent(0, 1)
            iv = tirx.IterVar(dom, tb.var, tb.iter_type, tb.thread_tag)
            return tirx.For(stmt.loop_var, _i32(0), _i32(1), stmt.kind, self._emit(tree[2]), iv,
                            stmt.annotations)
        if kind == "block":
            return self._block(stmt, tree[2])
        raise AssertionError(kind)  # pragma: no cover

    def _block(self, realize: tirx.SBlockRealize, sub: list) -> tirx.Stmt:
        blk = realize.block
        mine = list(blk.alloc_buffers)
        if self.planner.blocks and blk.same_as(self.planner.blocks[0]):
            # the per-core variables made from lets, and the private buffers that
            # statements of the body allocated (T.alloc_buffer: stripped from segments)
            inblocks = {b.data for k in self.planner.blocks for b in k.alloc_buffers}
            mine += [b for b in self.mem.allocations if b.data not in inblocks and
                     (b.data not in self.stores or self.stores[b.data].private) and
                     (any(b.same_as(n) for n in self.planner.new_allocs) or
                      b.data in self.stores)]
        keep = [b for b in mine if b.data not in self.stores or self.stores[b.data].private]
        body = self._emit(sub)
        if not self.planner.blocks:
            raise ValueError("LowerMeshComm: no block inside the launch holds the comm ops "
                             "(expected TileLang's T.Kernel body)")
        if blk.same_as(self.planner.blocks[0]):
            pre, post = [], []
            allocs = [(p, n) for p, n in self.ptrs] + ([self.stage] if self.stage else [])
            if self.workspace == "argument":
                # one caller-owned array: each buffer at a 64-byte aligned offset
                offs = np.concatenate([[0], np.cumsum([-(-n // 64) * 64 for _, n in allocs])])
                self.ws_buf = tirx.decl_buffer((max(int(offs[-1]), 1),), "uint8",
                                               WORKSPACE_PARAM)
                for (ptr, _), off in zip(allocs, offs[:-1].tolist()):
                    pre.append(tirx.Bind(ptr, tirx.call_intrin(
                        "handle", "tirx.address_of",
                        tirx.BufferLoad(self.ws_buf, [tirx.IntImm("int64", off)]))))
                allocs = []
            for ptr, nbytes in allocs:
                # malloc(uint64_t) and free(void*) match <stdlib.h>'s prototypes, which the C
                # backend's generated declarations must not contradict
                raw = tirx.Var(f"{ptr.name}_mem", "handle")
                pre.append(tirx.Bind(raw, tirx.call_extern("handle", "malloc",
                                                           tirx.IntImm("uint64", max(nbytes, 1)))))
                pre.append(tirx.Bind(ptr, raw))
                post.append(tirx.Evaluate(tirx.call_extern("void", "free", raw)))
            for s in self.stores.values():
                pre.extend(s.decls())
            body = _seq(pre + [body] + post)
        new = tirx.SBlock(blk.iter_vars, blk.reads, blk.writes, blk.name_hint, body, blk.init,
                          keep, blk.match_buffers, blk.annotations)
        return tirx.SBlockRealize(realize.iter_values, realize.predicate, new)

    def _segment(self, seg: _Seg) -> tirx.Stmt:
        loops = self._core_vars("core")
        # a mesh axis of size 1 has the coordinate 0, not a loop: TileLang drops a loop of
        # extent 1 but leaves its variable in the views' elem_offset below (MakePackedAPI
        # then fails: "kernel variables (core_col) are used, but are not passed in")
        coords = [v if n > 1 else _i32(0) for v, n in zip(loops, self.mesh.shape)]
        lin = _row_major(coords, self.mesh.shape)
        vmap = dict(self.launch.at(coords))
        pre, post, ptrs = [], [], []
        for data, st in self.stores.items():
            if data not in seg.uses:
                continue
            if st.private:
                # copy the core's slice into the ordinary per-core buffer and back
                view = self.mem.view(st.buf)
                shape = [int(static_int(n)) for n in st.buf.shape]
                i, o = _fresh_idx(len(shape)), _fresh_idx(len(shape))
                pre.append(_nest(i, shape, tirx.BufferStore(st.buf, st.at(view, lin, i), i)))
                post.append(_nest(o, shape, st.put(view, lin, o, tirx.BufferLoad(st.buf, o))))
                continue
            # the data variable itself (an access_ptr, a call taking the buffer) is the
            # core's own copy: a pointer to its slice
            ptr = tirx.Var(f"{st.buf.name}_core",
                           ir.PointerType(ir.PrimType(str(st.buf.dtype)), "global"))
            vmap[data] = ptr
            view = self.mem.view(st.buf)
            ptrs.append((ptr, st.core_ptr(view, lin) if st.far(view) else
                         tirx.call_intrin("handle", "tirx.address_of", st.at(view, lin, []))))
        views: dict = {}

        def core_view(buf: tirx.Buffer) -> tirx.Buffer | None:
            """Core ``lin``'s copy of a promoted buffer or of a view of it: a buffer over
            the shared array at the core's offset, with the view's own shape, strides,
            offset and dtype; the stride keeps vector accesses aligned. A copy 32768 or
            more elements from the next has its own pointer instead (``_Store.far``: a
            pointer taken as ``address_of(flat[core * stride])`` is itself such a scalar
            load)."""
            st = self.stores.get(buf.data)
            if st is None or st.private:
                return None
            for b, new in views.values():
                if b.same_as(buf):
                    return new
            view = self._view(buf, "LowerMeshComm")
            flat = st.flat_of(view.dtype)
            if st.far(view):  # its own pointer to the core's copy (see _Store.far)
                ptr = tirx.Var(f"{buf.name}_core", ir.PointerType(ir.PrimType(view.dtype),
                                                                  "global"))
                ptrs.append((ptr, st.core_ptr(view, lin)))
                new = tirx.decl_buffer(buf.shape, view.dtype, buf.name, data=ptr,
                                       strides=buf.strides, elem_offset=view.elem_offset,
                                       scope=flat.scope())
                views[len(views)] = (buf, new)
                return new
            new = tirx.decl_buffer(buf.shape, view.dtype, buf.name, data=flat.data,
                                   strides=buf.strides,
                                   elem_offset=st.core_offset(view, lin) if
                                   static_int(view.elem_offset) == 0 else
                                   st.core_offset(view, lin) + view.elem_offset,
                                   scope=flat.scope())
            views[len(views)] = (buf, new)
            return new

        body = _strip_decls(_seq(seg.stmts), self.stores)
        if self.shadow is not None:  # the checked run: record what touches global memory
            body = self.shadow.instrument(body, self.launch.core_id())
        body = _remap_buffers(tirx.stmt_functor.substitute(body, vmap), core_view)
        used = _vars_in(body)
        pre = [tirx.Bind(p, v) for p, v in ptrs if p in used] + \
            [tirx.DeclBuffer(new) for _, new in views.values()] + pre
        kept = [(v, n) for v, n in zip(loops, self.mesh.shape) if n > 1]
        return _nest([v for v, _ in kept], [n for _, n in kept], _seq(pre + [body] + post))

    # -- exchanges -------------------------------------------------------------------------
    def _starts(self, region, coords) -> list:
        vmap = self.launch.at(coords)
        return [tirx.stmt_functor.substitute(s, vmap) if isinstance(s, tirx.PrimExpr) else s
                for s in region.starts]

    def _exchange(self, o: CommOp) -> tirx.Stmt:
        if o.op == "barrier":
            return tirx.Evaluate(_i32(0))
        src_st, dst_st = self.stores[o.src.buffer.data], self.stores[o.dst.buffer.data]
        src_view = self.mem.view(o.src.buffer)
        ext = list(o.static_extents("src"))
        E = int(np.prod(ext, dtype=np.int64))
        if not o.src.buffer.data.same_as(o.dst.buffer.data):
            def read(core_coords, idx):
                core = _row_major(core_coords, self.mesh.shape)
                starts = self._starts(o.src, core_coords)
                return src_st.at(src_view, core, [s + i for s, i in zip(starts, idx)])

            return _ExchangeBuilder(self, o, read, dst_st).build()
        # src and dst share an allocation: stage every core's src region first
        dtype = str(o.src.buffer.dtype)
        sptr = tirx.Var("stage", ir.PointerType(ir.PrimType(dtype), "global"))
        sbuf = tirx.decl_buffer((E * self.ncores,), dtype, "stage", data=sptr)
        estr = [int(np.prod(ext[d + 1:], dtype=np.int64)) for d in range(len(ext))]

        def staged(core_coords, idx):
            off = _row_major(core_coords, self.mesh.shape) * E
            for i, s in zip(idx, estr):
                off = off + i * s
            return tirx.BufferLoad(sbuf, [off])

        c = self._core_vars("src")
        idx = _fresh_idx(len(ext))
        starts = self._starts(o.src, c)
        value = src_st.at(src_view, _row_major(c, self.mesh.shape),
                          [s + i for s, i in zip(starts, idx)])
        copy_in = _nest(c, self.mesh.shape,
                        _nest(idx, ext, tirx.BufferStore(sbuf, value, staged(c, idx).indices)))
        return _seq([tirx.Bind(sptr, self.stage[0]), tirx.DeclBuffer(sbuf), copy_in,
                     _ExchangeBuilder(self, o, staged, dst_st).build()])


class _ExchangeBuilder:
    """The loop nest of one comm op: for every destination core, what its ``dst`` gets."""

    def __init__(self, low: _Lowering, o: CommOp, read: Callable, dst: _Store):
        self.low, self.o, self.read, self.dst = low, o, read, dst
        self.dst_view = low.mem.view(o.dst.buffer)
        self.mesh = low.mesh
        self.axes = list(o.mesh_axes)
        self.ext = list(o.static_extents("src"))
        self.k = int(np.prod([self.mesh.shape[a] for a in self.axes], dtype=np.int64))

    def write(self, coords, idx, value) -> tirx.Stmt:
        starts = self.low._starts(self.o.dst, coords)
        core = _row_major(coords, self.mesh.shape)
        return self.dst.put(self.dst_view, core, [s + i for s, i in zip(starts, idx)], value)

    def dst_value(self, coords, idx) -> tirx.BufferLoad:
        starts = self.low._starts(self.o.dst, coords)
        core = _row_major(coords, self.mesh.shape)
        return self.dst.at(self.dst_view, core, [s + i for s, i in zip(starts, idx)])

    def member(self, coords, pos) -> list:
        """Coordinates of the group member at in-group position ``pos`` (an expression)."""
        out = list(coords)
        for a, v in zip(self.axes, _unravel(pos, [self.mesh.shape[a] for a in self.axes])):
            out[a] = v
        return out

    def position(self, coords) -> tirx.PrimExpr:
        return _row_major([coords[a] for a in self.axes], [self.mesh.shape[a] for a in self.axes])

    def build(self) -> tirx.Stmt:
        method = TIR[self.o.op]
        if self.o.op == "permute":
            return method(self)
        c = self.low._core_vars("dst")
        idx = _fresh_idx(len(self.ext))
        return _nest(c, self.mesh.shape, method(self, c, idx))

    def _permute(self) -> tirx.Stmt:
        # the pairs are static: one copy nest per pair between constant cores (a table
        # lookup by destination would leave TileLang's simplifier a Select chain per
        # element, seconds per op)
        nests = []
        for s, d in self.o.params["pairs"]:
            idx = _fresh_idx(len(self.ext))
            src = [_i32(v) for v in self.mesh.multi_index(s)]
            dst = [_i32(v) for v in self.mesh.multi_index(d)]
            nests.append(_nest(idx, self.ext, self.write(dst, idx, self.read(src, idx))))
        return _seq(nests)


    def _barrier(self, c, idx):
        return tirx.Evaluate(_i32(0))  # every exchange ends a superstep for every core

    def _broadcast(self, c, idx):
        src = list(c)
        for a, r in zip(self.axes, self.o.root):
            src[a] = r
        return _nest(idx, self.ext, self.write(c, idx, self.read(src, idx)))

    def _shift(self, c, idx):
        a, off, rot = (self.o.params["shift_axis"], self.o.params["offset"],
                       self.o.params["rotate"])
        size = self.mesh.shape[a]
        src = list(c)
        if rot:
            src[a] = tirx.floormod(c[a] - off + size * (abs(off) // size + 1), size)
            return _nest(idx, self.ext, self.write(c, idx, self.read(src, idx)))
        src[a] = c[a] - off
        cond = tirx.all(src[a] >= 0, src[a] < size)
        return tirx.IfThenElse(cond, _nest(idx, self.ext, self.write(c, idx, self.read(src, idx))),
                               None)

    def _all_gather(self, c, idx):
        p = tirx.Var("p", "int32")
        ax = self.o.params["gather_axis"]
        e = self.ext[ax]
        didx = [p * e + i if d == ax else i for d, i in enumerate(idx)]
        return _loop(p, self.k, _nest(idx, self.ext,
                                      self.write(c, didx, self.read(self.member(c, p), idx))))

    def _combine(self, a, b):
        return _apply(REDUCTIONS[self.o.params["reduction"]], a, b)

    def _reduced(self, c, sidx, didx, extents, idx):
        """dst[didx] = reduce over members of src[sidx], in group order (as the host)."""
        p = tirx.Var("p", "int32")
        first = self.write(c, didx, self.read(self.member(c, _i32(0)), sidx))
        acc = self.write(c, didx, self._combine(self.dst_value(c, didx),
                                                self.read(self.member(c, p + 1), sidx)))
        # the second nest gets its own loop variables (TIR defines each variable once)
        idx2 = _fresh_idx(len(idx))
        acc = tirx.stmt_functor.substitute(acc, dict(zip(idx, idx2)))
        return _seq([_nest(idx, extents, first),
                     _loop(p, self.k - 1, _nest(idx2, extents, acc)) if self.k > 1 else None])

    def _all_reduce(self, c, idx):
        return self._reduced(c, idx, idx, self.ext, idx)

    def _piece(self, n: int, pos):
        cp = -(-n // self.k)
        start = tirx.min(pos * cp, n)
        size = tirx.min((pos + 1) * cp, n) - start
        return cp, start, size

    def _reduce_scatter(self, c, idx):
        ax = self.o.params["scatter_axis"]
        cp, start, size = self._piece(self.ext[ax], self.position(c))
        sidx = [start + i if d == ax else i for d, i in enumerate(idx)]
        extents = [size if d == ax else e for d, e in enumerate(self.ext)]
        return self._reduced(c, sidx, idx, extents, idx)

    def _all_to_all(self, c, idx):
        sa, ca = self.o.params["split_axis"], self.o.params["concat_axis"]
        cp, start, size = self._piece(self.ext[sa], self.position(c))
        p = tirx.Var("p", "int32")
        along = size if sa == ca else self.ext[ca]
        sidx = [start + i if d == sa else i for d, i in enumerate(idx)]
        didx = [p * along + i if d == ca else i for d, i in enumerate(idx)]
        extents = [size if d == sa else e for d, e in enumerate(self.ext)]
        return _loop(p, self.k, _nest(idx, extents,
                                      self.write(c, didx, self.read(self.member(c, p), sidx))))

    # -- Tilelang-Mesh's ops (language.tilelang_mesh; semantics in docs/tilelang_mesh.md) --
    def _tm_check(self) -> None:
        """Evaluate the cores the op names over its iteration space: out of range, a put
        to itself or two senders to one destination is a ValueError naming it."""
        from ..analysis.flows import tm_executions
        tm_executions(self.o, iteration_space(self.o, self.low.launch, self.o.name),
                      "LowerMeshComm")

    def _tm_prefix(self, src, dst, n, place=None) -> tirx.Stmt:
        """``dst``'s region gets the first ``n`` elements (row-major) of ``src``'s region
        (core coordinates); ``place`` maps a src-shaped index into ``dst`` (a gather
        slot), else the regions' own row-major orders pair up."""
        s_ext = self.ext
        d_ext = s_ext if place is not None else list(self.o.static_extents("dst"))
        place = place or (lambda i: i)
        if n == int(np.prod(s_ext, dtype=np.int64)) and list(s_ext) == list(d_ext):
            idx = _fresh_idx(len(s_ext))
            return _nest(idx, s_ext, self.write(dst, place(idx), self.read(src, idx)))
        f = tirx.Var("f", "int32")
        return _loop(f, n, self.write(dst, place(_unravel(f, d_ext)),
                                      self.read(src, _unravel(f, s_ext))))

    def _tm_cores(self, keys) -> tuple:
        """The op's cores (linear-id expressions) as the core ``k`` evaluates them: ``(k,
        exprs)`` with ``k`` a fresh loop variable over the cores, or ``(None, exprs)``
        when no expression depends on the core (every core names the same ones)."""
        exprs = []
        for key in keys:
            e = self.o.params[key]
            exprs.append(e[0] if len(e) == 1 else e[0] * self.mesh.shape[1] + e[1])
        if not any(self.low.planner._core_dependent(e) for e in exprs):
            return None, exprs
        k = tirx.Var("k", "int32")
        vmap = self.low.launch.at(_unravel(k, self.mesh.shape))
        return k, [tirx.stmt_functor.substitute(e, vmap) for e in exprs]

    def _tm_phase(self, c, k, exprs, hit) -> tirx.Stmt:
        """For every core ``k`` (once when ``k`` is None) whose named cores ``exprs``
        make ``hit(sender, *rest)`` true for destination ``c``, copy from that sender.
        Several cores may name the same transfer (the checks made their data agree):
        copying it again is harmless, and a loop is far cheaper for TileLang to
        compile than a table of senders."""
        # the named cores go through memory, not lets: TileLang inlines a let, and
        # FlattenBuffer's iter-map simplification then rewrites a sender index such as
        # (k // 3) * 3 + (k % 3 + 1) % 3 into (k + 1) % 6 (wrong at k = 2): a load is
        # opaque to it
        ids = tirx.decl_buffer((len(exprs),), "int32", "tm_core", scope="local")
        vs = [tirx.BufferLoad(ids, [_i32(i)]) for i in range(len(exprs))]
        copy = self._tm_prefix(_unravel(vs[0], self.mesh.shape), c, self.o.params["size"])
        body = _seq([tirx.BufferStore(ids, e if e.dtype == "int32" else tirx.Cast("int32", e),
                                      [_i32(i)]) for i, e in enumerate(exprs)] +
                    [tirx.IfThenElse(hit(*vs), copy, None)])
        return _seq([tirx.AllocBuffer(ids), body if k is None else _loop(k, self.mesh.size, body)])

    def _tm_broadcast(self, c, idx):
        self._tm_check()
        ncols, axes = self.mesh.shape[1], tuple(self.axes)
        k, exprs = self._tm_cores(("src_core",))

        def member(s):
            if axes == (0, 1):
                return tirx.IntImm("bool", True)
            return (tirx.floordiv(s, ncols) == c[0] if axes == (1,) else
                    tirx.floormod(s, ncols) == c[1])

        return self._tm_phase(c, k, exprs, member)

    def _tm_put(self, c, idx):
        # vertical phase first (puts down a column, first legs of two-leg puts, which
        # write the intermediate core's dst), then the horizontal phase (puts along a row,
        # second legs); the data is each sender's src
        self._tm_check()
        ncols = self.mesh.shape[1]
        lin = _row_major(c, self.mesh.shape)

        def parts(s, d):
            sr, sc = tirx.floordiv(s, ncols), tirx.floormod(s, ncols)
            dr, dc = tirx.floordiv(d, ncols), tirx.floormod(d, ncols)
            return sr, sc, dr, dc, tirx.all(sr != dr, sc != dc)

        def vertical(s, d):
            sr, sc, dr, dc, diag = parts(s, d)
            return tirx.any(tirx.all(sc == dc, d == lin), tirx.all(diag, dr * ncols + sc == lin))

        def horizontal(s, d):
            sr, sc, dr, dc, diag = parts(s, d)
            return tirx.all(tirx.any(sr == dr, diag), d == lin)

        phases = []
        for hit in (vertical, horizontal):  # fresh loop variables for each phase
            k, exprs = self._tm_cores(("src_core", "dst_core"))
            phases.append(self._tm_phase(c, k, exprs, hit))
        return _seq(phases)

    def _tm_all_gather(self, c, idx):
        p = tirx.Var("p", "int32")
        ax, e = self.o.params["axis"], self.ext
        if self.o.params["stacked"]:
            def place(i):
                return [p] + list(i)
        else:
            def place(i):
                return [p * e[ax] + v if d == ax else v for d, v in enumerate(i)]
        return _loop(p, self.k, self._tm_prefix(self.member(c, p), c, self.o.params["size"],
                                                place))

    def _tm_all_reduce(self, c, idx):
        # out = fold over the group (h, v: in group order; all: each row's columns, then
        # the rows) of each core's fold over `dim`; every fold starts from the identity
        kind, dim, clear = (self.o.params[k] for k in ("reduce_type", "dim", "clear"))
        dtype = str(self.o.dst.buffer.dtype)
        acc = tirx.decl_buffer((3,), dtype, "tm_acc", scope="local")
        jext = [v for d, v in enumerate(self.ext) if d != dim]
        j = _fresh_idx(len(jext))
        i = tirx.Var("i", "int32")
        src = list(j[:dim]) + [i] + list(j[dim:])
        keep = len(self.o.static_extents("dst")) == len(self.ext)
        out = list(j[:dim]) + [_i32(0)] + list(j[dim:]) if keep else list(j)

        def at(a):
            return tirx.BufferLoad(acc, [_i32(a)])

        def put(a, v):
            return tirx.BufferStore(acc, v, [_i32(a)])

        init = _tm_identity(kind, dtype)

        def fold(a, x):
            return _tm_combine(kind, a, _tm_abs(x) if REDUCTIONS[kind].absolute else x)

        def local(member):
            return _seq([put(0, init),
                         _loop(i, self.ext[dim], put(0, fold(at(0), self.read(member, src))))])

        q = tirx.Var("q", "int32")
        if tuple(self.axes) == (0, 1):
            r = tirx.Var("r", "int32")
            row = _loop(q, self.mesh.shape[1], _seq([local([r, q]), put(1, fold(at(1), at(0)))]))
            body = _seq([put(2, init), _loop(r, self.mesh.shape[0], _seq(
                [put(1, init), row, put(2, fold(at(2), at(1)))]))])
            top = 2
        else:
            body = _seq([put(1, init), _loop(q, self.k, _seq([local(self.member(c, q)),
                                                            put(1, fold(at(1), at(0)))]))])
            top = 1
        result = at(top) if clear else _tm_combine(kind, self.dst_value(c, out), at(top))
        return _seq([tirx.AllocBuffer(acc),
                     _nest(j, jext, _seq([body, self.write(c, out, result)]))])


def _tm_identity(kind: str, dtype: str) -> tirx.PrimExpr:
    """The start of a fold of ``kind`` (as the fork's reductions start), in TIR."""
    r = REDUCTIONS[kind]
    t = tvm.runtime.DataType(dtype)
    flt = t.type_code in (tvm.runtime.DataTypeCode.FLOAT, tvm.runtime.DataTypeCode.BFLOAT)
    fmt = FORMATS.get(dtype)
    if fmt is not None and r.op in ("max", "min"):
        # TVM has no infinity for bfloat16/float8: build it in float32 and convert (a
        # format without infinities starts from its largest finite value)
        big = float("inf") if fmt.kind == "ieee" else fmt.max_finite
        return tirx.Cast(dtype, tirx.const(-big if r.op == "max" else big, "float32"))
    if r.op == "max":
        return -tirx.infinity(dtype) if flt else tirx.min_value(dtype)
    if r.op == "min":
        return tirx.infinity(dtype) if flt else tirx.max_value(dtype)
    if r.op == "and":
        return tirx.max_value(dtype) if dtype.startswith("uint") else tirx.const(-1, dtype)
    return tirx.const(1 if r.op == "mul" else 0, dtype)


def _tm_abs(x: tirx.PrimExpr) -> tirx.PrimExpr:
    # a select, not tirx.abs: the C backend has no lowering for its float intrinsic
    if str(x.dtype).startswith("uint"):
        return x
    return tirx.Select(x < tirx.const(0, x.dtype), -x, x)


#: each binary operation of a Reduction (meshtensor.reduction) in TIR
_OPS: dict[str, Callable] = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b,
                             "max": tirx.max, "min": tirx.min, "and": tirx.bitwise_and,
                             "or": tirx.bitwise_or, "xor": tirx.bitwise_xor}


def _apply(r: Any, a: tirx.PrimExpr, b: tirx.PrimExpr) -> tirx.PrimExpr:
    return _OPS[r.op](a, b)


def _tm_combine(kind: str, a: tirx.PrimExpr, b: tirx.PrimExpr) -> tirx.PrimExpr:
    return _apply(REDUCTIONS[kind], a, b)


#: the TIR backend of each comm op's forms (meshtensor.comm_ops): what one exchange does
TIR: dict[str, Callable] = {
    "broadcast": _ExchangeBuilder._broadcast, "all_gather": _ExchangeBuilder._all_gather,
    "all_reduce": _ExchangeBuilder._all_reduce,
    "reduce_scatter": _ExchangeBuilder._reduce_scatter,
    "all_to_all": _ExchangeBuilder._all_to_all, "shift": _ExchangeBuilder._shift,
    "permute": _ExchangeBuilder._permute, "barrier": _ExchangeBuilder._barrier,
    "tm_broadcast": _ExchangeBuilder._tm_broadcast, "tm_put": _ExchangeBuilder._tm_put,
    "tm_all_gather": _ExchangeBuilder._tm_all_gather,
    "tm_all_reduce": _ExchangeBuilder._tm_all_reduce,
}


def lower_mesh_comm(func: tirx.PrimFunc, workspace: str = "malloc",
                    race_shadow: Any = None, config: MeshPassConfig = DEFAULT) -> tirx.PrimFunc:
    """The function form of :func:`LowerMeshComm` (a PrimFunc in, a PrimFunc out).
    ``race_shadow``: a :class:`~.race_check.RaceShadow`, for the checked run (the
    segments record their global accesses in it; the caller adds its argument);
    ``config``: the options (:class:`~meshtensor.tilelang.pass_config.MeshPassConfig`).

    >>> import tilelang.language as T
    >>> from meshtensor.tilelang import find_comm_ops, mesh_comm
    >>> mc = mesh_comm({"x": 2, "y": 2})
    >>> @T.prim_func
    ... def k():
    ...     with T.Kernel(2, 2, threads=1) as (bx, by):
    ...         S = T.alloc_local((4,), "float32")
    ...         mc.all_reduce(S, S, ["x"])
    >>> find_comm_ops(lower_mesh_comm(k))  # every comm op became loops over the cores
    []
    """
    ops = find_comm_ops(func)
    if not ops:
        return func
    return _Lowering(func, ops, workspace, race_shadow, config).run()


def check_collective_rule(func: Any) -> None:
    """Raise ``ValueError`` naming the first comm op under a core-dependent ``if`` or in
    a loop with core-dependent bounds (what :func:`LowerMeshComm` refuses).

    >>> import tilelang.language as T
    >>> from meshtensor.tilelang import mesh_comm
    >>> mc = mesh_comm({"x": 2, "y": 2})
    >>> @T.prim_func
    ... def k():
    ...     with T.Kernel(2, 2, threads=1) as (bx, by):
    ...         S = T.alloc_local((4,), "float32")
    ...         if bx == 0:
    ...             mc.all_reduce(S, S, ["y"])
    >>> check_collective_rule(k)
    Traceback (most recent call last):
    ...
    ValueError: mesh_comm.all_reduce (comm op #0) is under `if bx == 0`, a condition that depends on the core; ...
    """
    pf = prim_func(func, "check_collective_rule")
    ops = find_comm_ops(pf)
    if ops:
        low = _Lowering(pf, ops)
        low.planner.plan(pf.body, False)
        low.ops = low.planner.by_call
        low._check_roots()
        low._check_regions()


def LowerMeshComm(workspace: str = "malloc", race_shadow: Any = None,  # noqa: N802
                  config: MeshPassConfig = DEFAULT) -> tvm.transform.Pass:
    """The ``prim_func_pass`` ``"meshtensor.LowerMeshComm"``: make a kernel with comm ops
    run on TileLang's C backend (bulk-synchronous supersteps; see the module docstring).

    ``workspace="malloc"``: the kernel allocates (and frees) its per-core copies itself,
    so it keeps its signature. ``"argument"``: they live in one more argument, a uint8
    array of the byte size in the function attribute ``mesh_workspace_bytes``, which the
    caller allocates once and reuses (:class:`MeshKernel` does; faster, since every call
    of a ``malloc`` kernel page-faults its fresh megabytes again).

    >>> import tvm
    >>> LowerMeshComm().info.name
    'meshtensor.LowerMeshComm'
    """
    if workspace not in WORKSPACES:
        raise ValueError(f"LowerMeshComm: workspace must be one of {list(WORKSPACES)}, got "
                         f"{workspace!r}")

    def transform(func, mod, ctx):
        return lower_mesh_comm(func, workspace, race_shadow, config)

    return tirx.transform.prim_func_pass(transform, opt_level=0, name="meshtensor.LowerMeshComm")
