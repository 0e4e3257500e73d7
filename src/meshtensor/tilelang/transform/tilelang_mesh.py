"""``PrepareTilelangMesh``: make a kernel written for Tilelang-Mesh (``T.MeshTensor``
parameters, ``T.comm`` ops, SRAM scopes) a mesh kernel that ``LowerMeshComm`` and
TileLang's C backend run exactly. ``compile_mesh_kernel`` applies it first; a kernel
with neither ``T.MeshTensor`` parameters nor Tilelang-Mesh comm ops is unchanged (but
for step 3 where a ``T.fill`` or a reduction reaches a ``shared`` buffer, which stock
TileLang's C backend cannot lower).

What it does, in order:

1. A comm op whose source is a ``T.MeshTensor`` slice (the sender's DRAM shard) reads
   it through a per-core staging buffer: a ``T.copy`` of the slice just before the op
   (the slice must lie inside the shard at every execution, else ``ValueError``).
2. Each ``T.MeshTensor`` parameter of shard shape ``S`` becomes a parameter of shape
   ``(cores, *S)``, one shard per core, and every access ``A[i, ...]`` (loads, stores,
   tile-op regions) becomes ``A[core, i, ...]``: TileLang guards every dim of a global
   access, so a tile running past the shard reads zeros and its writes are dropped, as
   for the fork's shard buffer. The caller's global tensors are split into (and
   gathered from) these stacks by :class:`~meshtensor.tilelang.MeshKernel`.
3. Every on-chip buffer is core-private memory in a scope stock TileLang's C backend
   takes: the targets of ``T.clear``/``T.fill`` and ``T.gemm``'s accumulator become
   ``local``; the other ``shared.*`` buffers (``shared.dyn``, the SUNMMIO scopes
   ``shared.rsram``/``shared.asram``/``shared.wsram``) become ``shared``.
(A ``T.Pipelined`` loop holding comm ops runs as the serial loop it means:
``LowerMeshComm`` drops its stages.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import tilelang.language as T
from tilelang.language.utils import region as _tl_region
from tvm import arith, ir, tirx

from ...mesh import Mesh
from ..ir.comm_op import DISPLAY, CommOp, encode, find_comm_ops, is_comm_call
from ..ir.evaluate import iteration_space, region_box
from ..ir.expr import static_int
from ..ir.launch import Launch, launch_grid, upstream_launch_guard
from ..ir.mesh_param import MeshParam, mesh_params, with_mesh_params
from ..ir.names import DIST_RANK_ATTR
from ..ir.scope import LOCAL_OPERANDS as _LOCAL_OPERANDS
from ..ir.scope import find_calls, region_of
from .narrow_float import exact_float_constants

__all__ = ["PrepareTilelangMesh", "prepare_tilelang_mesh", "PreparedKernel", "specialize_sizes",
           "is_tilelang_mesh_kernel", "SIZE_PARAMS"]

WHERE = "PrepareTilelangMesh"
#: the function attribute naming the symbolic sizes the kernel takes as scalar
#: parameters after its own (see :func:`_size_params`)
SIZE_PARAMS = "meshtensor.size_params"


@dataclass(frozen=True, eq=False)
class PreparedKernel:
    """What :func:`prepare_tilelang_mesh` made: the rewritten ``func``; ``params``, one
    ``(parameter index, MeshParam, written)`` per ``T.MeshTensor`` (``written``: the
    kernel may store into it, so the caller's tensor gets the cores' shards back);
    ``mesh`` (``None`` for a kernel left unchanged)."""

    func: tirx.PrimFunc
    params: tuple[tuple[int, MeshParam, bool], ...] = ()
    mesh: Mesh | None = None


def is_tilelang_mesh_kernel(func: tirx.PrimFunc) -> bool:
    """Whether a kernel has ``T.MeshTensor`` parameters or Tilelang-Mesh comm ops."""
    return bool(mesh_params(func)) or any(o.op in DISPLAY for o in find_comm_ops(func))


def _is_region(n: Any) -> bool:
    return isinstance(n, tirx.Call) and getattr(n.op, "name", None) == "tl.region"


def _data_vars(node: Any) -> set:
    out: set = set()

    def visit(n: Any) -> None:
        if isinstance(n, tirx.Var):
            out.add(n)

    tirx.stmt_functor.post_order_visit(node, visit)
    return out


def _rebuffer(stmt: tirx.Stmt, bmap: dict, prefix: dict) -> tirx.Stmt:
    """Replace buffers (keyed by their data var) in loads, stores, tile-op regions and
    block allocations; a buffer in ``prefix`` gets those indices in front (and a region
    of it leading extents of 1)."""
    if not bmap:
        return stmt

    def post(n: Any) -> Any:
        if isinstance(n, tirx.BufferLoad) and n.buffer.data in bmap:
            pre = prefix.get(n.buffer.data, [])
            return tirx.BufferLoad(bmap[n.buffer.data], pre + list(n.indices), n.predicate)
        if isinstance(n, tirx.BufferStore) and n.buffer.data in bmap:
            pre = prefix.get(n.buffer.data, [])
            return tirx.BufferStore(bmap[n.buffer.data], n.value, pre + list(n.indices),
                                    n.predicate)
        if _is_region(n) and isinstance(n.args[0], tirx.BufferLoad):
            load, ext = n.args[0], list(n.args[2:])
            missing = len(load.indices) - len(ext)
            if missing > 0 and any(load.buffer.same_as(b) for b in bmap.values()):
                one = [tirx.IntImm("int32", 1)] * missing
                return tirx.Call(n.dtype, n.op, [load, n.args[1]] + one + ext)
        if isinstance(n, tirx.SBlock) and any(b.data in bmap for b in n.alloc_buffers):
            allocs = [bmap.get(b.data, b) for b in n.alloc_buffers]
            return tirx.SBlock(n.iter_vars, n.reads, n.writes, n.name_hint, n.body, n.init,
                               allocs, n.match_buffers, n.annotations)
        return None

    out = tirx.stmt_functor.ir_transform(
        stmt, None, post, ["tirx.BufferLoad", "tirx.BufferStore", "tirx.Call", "tirx.SBlock"])
    return tirx.stmt_functor.substitute(out, {old: new.data for old, new in bmap.items()
                                              if old not in prefix})


def _add_allocs(stmt: tirx.Stmt, buffers: list) -> tirx.Stmt:
    """Allocate ``buffers`` in the kernel's root block (TileLang's ``tilelang_root``)."""
    if not buffers:
        return stmt
    done: list = []

    def post(n: Any) -> Any:
        if done or n.name_hint != "tilelang_root":
            return None
        done.append(n)
        return tirx.SBlock(n.iter_vars, n.reads, n.writes, n.name_hint, n.body, n.init,
                           list(n.alloc_buffers) + buffers, n.match_buffers, n.annotations)

    out = tirx.stmt_functor.ir_transform(stmt, None, post, ["tirx.SBlock"])
    if not done:
        raise ValueError(f"{WHERE}: the kernel has no T.Kernel body block (tilelang_root) "
                         f"to hold the staging buffers of its T.MeshTensor comm sources")
    return out


# -- 1. comm ops reading global memory: a staging copy first ------------------------------------
def _stage_sources(stmt: tirx.Stmt, ops: list[CommOp], params: dict, launch: Launch,
                   globals_: dict) -> tirx.Stmt:
    """A comm op whose source is global memory (a ``T.MeshTensor`` slice: the sending
    core's part; another parameter: DRAM every core sees) reads it through a per-core
    staging buffer copied just before the op: the sender's copy is what it sends."""
    shards = {p_buf.data: p for p_buf, p in params.items()}
    staged = [o for o in ops if o.src is not None and (o.src.buffer.data in shards
                                                       or o.src.buffer.data in globals_)]
    if not staged:
        return stmt
    for o in staged:  # the slice must lie in the shard (the tensor) at every execution
        mesh_t = o.src.buffer.data in shards
        shape = (shards[o.src.buffer.data].shard_shape if mesh_t
                 else tuple(static_int(n) for n in globals_[o.src.buffer.data].shape))
        what = "T.MeshTensor" if mesh_t else "global tensor"
        try:
            lo, hi = region_box(o.src, iteration_space(o, launch, o.name), o.name)
        except ValueError as err:
            raise ValueError(f"{WHERE}: {o.name} reads {what} "
                             f"{o.src.buffer.name!r} at a region that cannot be evaluated "
                             f"({err}); its start may use the core id and loop variables "
                             f"only") from None
        if None in shape:
            raise ValueError(f"{WHERE}: {o.name} reads {what} {o.src.buffer.name!r} of "
                             f"symbolic shape; a comm source in global memory needs a "
                             f"static shape here")
        if len(lo) and (lo.min(axis=0) < 0).any() or len(hi) and (hi.max(axis=0) >
                                                                  np.asarray(shape)).any():
            part = "its shard of shape" if mesh_t else "its shape"
            raise ValueError(f"{WHERE}: {o.name} reads {what} {o.src.buffer.name!r} "
                             f"outside {part} {shape} (region "
                             f"[{lo.min(axis=0).tolist()}, {hi.max(axis=0).tolist()}))")
    new_bufs: list = []
    by_call = {o.call: o for o in staged}

    def post(n: Any) -> Any:
        if not isinstance(n, tirx.Evaluate) or not is_comm_call(n.value):
            return None
        o = next((v for c, v in by_call.items() if c.same_as(n.value)), None)
        if o is None:
            return None
        ext = [int(static_int(e)) for e in o.src.extents]
        stage = tirx.decl_buffer(ext, str(o.src.buffer.dtype),
                                 f"{o.src.buffer.name}_send{o.index}", scope="shared")
        new_bufs.append(stage)
        ranges = [ir.Range.from_min_extent(s, e) for s, e in zip(o.src.starts, ext)]
        load = T.copy(tirx.BufferRegion(o.src.buffer, ranges), stage)
        src = _tl_region(tirx.BufferLoad(stage, [tirx.IntImm("int32", 0)] * len(ext)), "r",
                         *ext)
        dst = n.value.args[-1]
        call = encode(o.op, o.mesh, o.mesh_axes, dict(o.params), src, dst)
        return tirx.SeqStmt([tirx.Evaluate(load), tirx.Evaluate(call)])

    out = tirx.stmt_functor.ir_transform(stmt, None, post, ["tirx.Evaluate"])
    return _add_allocs(out, new_bufs)


def _launch_names(expr: Any, launch: Launch) -> str:
    """A note naming the block indices ``expr`` uses: TileLang's IR calls them ``bx``
    (``by``) whatever name the kernel's ``with T.Kernel(...) as ...`` gave them."""
    used = sorted(str(v.name) for v in set(launch.vars) & _data_vars(expr))
    return (f" ({', '.join(used)}: the block index T.Kernel binds, whatever you named "
            f"it)") if used else ""


# -- DMA copies out of a blocked DRAM layout -------------------------------------------------------
#: the fork's layouts whose blocks are column-major inside (not "ZZ-like")
_ZN_LIKE = ("zn(",)


def _check_dram_layout_copies(func: tirx.PrimFunc, by_buffer: dict) -> None:
    """SUNMMIO's DMA writes WSRAM only from a ZZ-like DRAM layout (zz, zzz, nzz: row-major
    inside each block); its compiler refuses a ``T.copy`` from a ``T.MeshTensor`` kept in
    a ZN layout into WSRAM (``CopyNode::InferLayout``: "copy requires ZZ-like DRAM
    layout"): a ``shared.wsram`` buffer, or one of the default scope that a ``T.gemm``
    reads as its ``B``, which the fork's ``InferSramScope`` places in WSRAM. Into ASRAM
    it stages the copy through RSRAM, which takes any layout, so that copy runs."""
    def named(name: str):
        return lambda c: getattr(c.op, "name", None) == name

    # a buffer of the default scope that is some T.gemm's B operand is WSRAM on the chip
    # (the fork's InferSramScope)
    weights = {region_of(f.call.args[1]).buffer.data
               for f in find_calls(func, named("tl.tileop.gemm"))}
    for found in find_calls(func, named("tl.tileop.copy")):
        src, dst = (region_of(a).buffer for a in found.call.args[:2])
        p = by_buffer.get(src)
        if p is None or not (p.layout or "").startswith(_ZN_LIKE):
            continue
        scope = str(dst.scope())
        weight = scope in ("shared", "shared.dyn") and any(
            dst.data.same_as(w) for w in weights)
        if scope == "shared.wsram" or weight:
            where = "WSRAM (T.gemm's B operand)" if weight else "WSRAM"
            raise ValueError(
                f"{WHERE}: T.copy({src.name} -> {dst.name}): {src.name} is kept in DRAM "
                f"in layout {p.layout}, and SUNMMIO's DMA writes {dst.name}, in {where}, "
                f"only from a ZZ-like DRAM layout (zz, zzz, nzz; its compiler refuses "
                f"this copy): give {src.name} a zz layout, or copy through a "
                f"shared.rsram buffer")


#: SUNMMIO's pad/unpad layout transform: the most rows (the product of a region's extents
#: but the last) it moves between unpadded DRAM and an alignment-padded RSRAM buffer
PAD_ROWS = 32
_PADDED = re.compile(r"aligned_row_major\(shape=\((?P<shape>[^)]*)\), pitch=(?P<pitch>\d+)\)")


def _padding(text: Any) -> tuple | None:
    """``(columns, pitch)`` of a recorded ``aligned_row_major`` layout whose rows are
    padded, else ``None``."""
    m = _PADDED.fullmatch(str(text or ""))
    if m is None:
        return None
    shape = [int(n) for n in m["shape"].split(",") if n.strip()]
    return (shape[-1], int(m["pitch"])) if shape and int(m["pitch"]) != shape[-1] else None


def _check_padded_copies(func: tirx.PrimFunc, by_buffer: dict) -> None:
    """A ``T.copy`` between unpadded global memory and an on-chip buffer laid out
    ``make_aligned_row_major`` with padded rows goes through SUNMMIO's pad/unpad
    layout transform, which takes a leading dimension (the product of the on-chip
    region's extents but the last) of at most 32; its compiler refuses a larger one
    (``CopyNode::LowerSunmmioDmaCopy``: "leading dimension"). A DRAM tensor laid out
    padded too is copied without the transform."""
    layouts = dict(func.attrs["meshtensor.layouts"]) if (
        func.attrs and "meshtensor.layouts" in func.attrs) else {}
    padded = {str(n): pad for n, t in layouts.items() if (pad := _padding(t)) is not None}
    if not padded:
        return
    for found in find_calls(func, lambda c: getattr(c.op, "name", None) == "tl.tileop.copy"):
        src, dst = (region_of(a) for a in found.call.args[:2])
        for side, other in ((src, dst), (dst, src)):
            name = str(side.buffer.name)
            if name not in padded or str(other.buffer.scope()) != "global":
                continue
            param = by_buffer.get(other.buffer)
            dram = param.layout if param is not None else layouts.get(str(other.buffer.name))
            if _padding(dram) is not None:
                continue  # padded in DRAM as well: no pad/unpad transform
            ext = [static_int(e) for e in side.extents]
            rows = int(np.prod(ext[:-1])) if None not in ext[:-1] else None
            if rows is not None and rows > PAD_ROWS:
                cols, pitch = padded[name]
                raise ValueError(
                    f"{WHERE}: T.copy({src.buffer.name} -> {dst.buffer.name}): {name} is "
                    f"laid out padded row-major ({cols} columns at a pitch of {pitch}), "
                    f"and SUNMMIO's pad/unpad layout transform moves a leading dimension "
                    f"(the product of the region's extents but the last) of at most "
                    f"{PAD_ROWS}, here {rows} (its compiler refuses this copy): copy at "
                    f"most {PAD_ROWS} rows at a time, or pad the columns to the alignment")


# -- T.gemm: SUNMMIO's transpose_B operand mode outside SUNMMIO kernels -------------------------
def _stock_gemms(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """A kernel with neither ``T.MeshTensor`` parameters nor ``T.comm`` ops is not a
    SUNMMIO kernel: a ``T.gemm(..., transpose_B=True)`` that ``tm.enable``'s ``T.gemm``
    read as SUNMMIO's operand mode gets stock TileLang's meaning back (``B`` transposed),
    or, for a ``B`` that is not square, stock TileLang's shape error."""
    from ..language.tilelang_mesh import SUNMMIO_TRANSPOSE_B

    def post(n: Any) -> Any:
        if not (isinstance(n, tirx.Call) and getattr(n.op, "name", None) == "tl.tileop.gemm"
                and n.annotations and SUNMMIO_TRANSPOSE_B in n.annotations):
            return None
        b = region_of(n.args[1])
        ext = [static_int(e) for e in b.extents]
        if len(ext) < 2 or ext[-1] != ext[-2]:
            raise ValueError(f"T.gemm(..., transpose_B=True): B {b.buffer.name!r} has shape "
                             f"{tuple(ext)}, which transposed does not fit the product (K "
                             f"shape check failed); SUNMMIO's operand mode (B(k, j) panel) "
                             f"applies only in kernels for its chip (with T.comm ops or "
                             f"T.MeshTensor parameters)")
        args = list(n.args)
        args[4] = tirx.IntImm("bool", 1) if not isinstance(args[4], bool) else True
        ann = {k: v for k, v in n.annotations.items() if k != SUNMMIO_TRANSPOSE_B}
        return tirx.Call(n.dtype, n.op, args, ann)

    body = tirx.stmt_functor.ir_transform(func.body, None, post, ["tirx.Call"])
    if body.same_as(func.body):
        return func
    return tirx.PrimFunc(func.params, body, func.ret_type, func.buffer_map, func.attrs)


# -- 0. T.Persistent as SUNMMIO's TileLang lowers it ----------------------------------------------
def _upstream_persistent(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """Stock TileLang guards every tile of a ``T.Persistent`` loop with ``if <last tile
    coordinate> < <its extent>``; SUNMMIO's lowering has no such guard (a single wave
    runs every core's body, whatever tile it names; more waves stop past the domain,
    which stock's own wave guard does too). The stock loop is recognised by its
    coordinate lets, which read the wave variable of the loop that follows them."""
    found: list = []

    def fix(seq: tirx.SeqStmt) -> Any:
        stmts = list(seq.seq)
        changed = False
        for i, st in enumerate(stmts):
            if not isinstance(st, tirx.For):
                continue
            values = [b.value for b in stmts[:i] if isinstance(b, tirx.Bind)
                      and st.loop_var in _data_vars(b.value)]
            if not values:
                continue

            def drop(n: Any, values: list = values) -> Any:
                if (isinstance(n, tirx.IfThenElse) and n.else_case is None
                        and isinstance(n.condition, tirx.LT)
                        and any(ir.structural_equal(n.condition.a, v) for v in values)):
                    found.append(n)
                    return n.then_case
                return None

            stmts[i] = tirx.stmt_functor.ir_transform(st, None, drop, ["tirx.IfThenElse"])
            changed = True
        return tirx.SeqStmt(stmts) if changed else None

    body = tirx.stmt_functor.ir_transform(func.body, None, fix, ["tirx.SeqStmt"])
    if not found:
        return func
    return tirx.PrimFunc(func.params, body, func.ret_type, func.buffer_map, func.attrs)


# -- 1b. comm ops under a condition uniform over their groups ------------------------------------
def _contains_tm(stmt: Any) -> bool:
    return bool(find_calls(stmt, lambda c: is_comm_call(c)))


def _reads_memory(expr: Any) -> bool:
    hit: list = []
    tirx.stmt_functor.post_order_visit(tirx.Evaluate(expr) if isinstance(expr, tirx.PrimExpr)
                                       else expr,
                                       lambda n: hit.append(n) if isinstance(
                                           n, tirx.BufferLoad) else None)
    return bool(hit)


class _Guards:
    """Hoists SUNMMIO comm ops out of conditions that depend on the core (``if by ==
    0: T.comm.broadcast(..., "h")``): the op runs on every core; the cores whose
    condition is false keep their ``dst`` (saved before, restored after) and, checked
    after the rewrite, name no transfer the cores that run it do not name; the other
    statements of the branch keep the condition. The condition must hold on all or none
    of each group the op involves (the chip's rule: every member of a group takes part),
    else ``ValueError``."""

    def __init__(self, core_vars: set, ops: list[CommOp]):
        self.core_vars = set(core_vars)
        self.ops = ops
        self.guards: dict = {}      # comm call -> its condition
        self.temps: list = []       # save buffers (allocated in the root block)

    def core_dependent(self, expr: Any) -> bool:
        return bool(_data_vars(expr) & self.core_vars)

    def visit(self, stmt: Any) -> Any:
        if isinstance(stmt, tirx.Bind) and self.core_dependent(stmt.value):
            self.core_vars.add(stmt.var)
        if isinstance(stmt, tirx.IfThenElse) and _contains_tm(stmt) and \
                self.core_dependent(stmt.condition):
            if _reads_memory(stmt.condition):
                o = self._op(stmt)
                raise ValueError(f"{WHERE}: {o.name} is under `if {stmt.condition}`, a "
                                 f"condition that depends on the core and reads memory; the "
                                 f"emulator runs a comm op under a condition on the core id "
                                 f"and loop variables only")
            out = self.push(stmt.condition, stmt.then_case)
            if stmt.else_case is not None:
                out += self.push(tirx.Not(stmt.condition), stmt.else_case)
            return tirx.SeqStmt(out) if len(out) > 1 else out[0]
        return None

    def _op(self, stmt: Any) -> CommOp:
        call = find_calls(stmt, is_comm_call)[0].call
        return next(o for o in self.ops if o.call.same_as(call))

    def push(self, cond: Any, stmt: Any) -> list:
        """``stmt`` under ``cond``, with each comm op in it run by every core."""
        if stmt is None:
            return []
        if isinstance(stmt, tirx.Bind) and not _reads_memory(stmt.value):
            # a name for a value (the launch's block indices): the statements after it
            # use it, under the condition or hoisted out of it
            if self.core_dependent(stmt.value):
                self.core_vars.add(stmt.var)
            return [stmt]
        if not _contains_tm(stmt):
            return [tirx.IfThenElse(cond, stmt, None)]
        if isinstance(stmt, tirx.SeqStmt):
            return [x for s in stmt.seq for x in self.push(cond, s)]
        if isinstance(stmt, tirx.Bind):
            if self.core_dependent(stmt.value):
                self.core_vars.add(stmt.var)
            return [stmt]
        if isinstance(stmt, tirx.For):
            body = self.push(cond, stmt.body)
            return [tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind,
                             tirx.SeqStmt(body) if len(body) > 1 else body[0],
                             stmt.thread_binding, stmt.annotations)]
        if isinstance(stmt, tirx.IfThenElse):
            if _reads_memory(stmt.condition) and self.core_dependent(stmt.condition):
                raise ValueError(f"{WHERE}: {self._op(stmt).name} is under `if "
                                 f"{stmt.condition}`, a condition that reads memory")
            return (self.push(tirx.And(cond, stmt.condition), stmt.then_case) +
                    self.push(tirx.And(cond, tirx.Not(stmt.condition)), stmt.else_case))
        if isinstance(stmt, tirx.AttrStmt):
            body = self.push(cond, stmt.body)
            return [tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value,
                                  tirx.SeqStmt(body) if len(body) > 1 else body[0])]
        if isinstance(stmt, tirx.Evaluate) and is_comm_call(stmt.value):
            return self._hoist(cond, stmt)
        raise ValueError(f"{WHERE}: {self._op(stmt).name} is under `if {cond}` inside a "
                         f"{type(stmt).__name__}, which the emulator cannot run the op "
                         f"around; put the comm op directly in the `if`")

    def _hoist(self, cond: Any, stmt: tirx.Evaluate) -> list:
        o = next(v for v in self.ops if v.call.same_as(stmt.value))
        self.guards[stmt.value] = cond
        if o.dst is None:
            return [stmt]
        ext = [int(static_int(e)) for e in o.dst.extents]
        tmp = tirx.decl_buffer(ext, str(o.dst.buffer.dtype), f"{o.dst.buffer.name}_kept{o.index}",
                               scope="shared")
        self.temps.append(tmp)
        ranges = [ir.Range.from_min_extent(st, e) for st, e in zip(o.dst.starts, ext)]
        region = tirx.BufferRegion(o.dst.buffer, ranges)
        skip = tirx.Not(cond)
        save = tirx.IfThenElse(skip, tirx.Evaluate(T.copy(region, tmp)), None)
        restore = tirx.IfThenElse(skip, tirx.Evaluate(T.copy(tmp, region)), None)
        return [save, stmt, restore]


@dataclass(frozen=True)
class _Idle:
    """The launch's guard: the condition under which a core runs a block (cores past a
    grid smaller than the mesh, or past the last wave's blocks, run none), and the
    grid, for the message."""

    cond: Any
    grid: tuple
    cores: int

    def why(self, o: CommOp, off: list, mesh: Mesh) -> str:
        total = int(np.prod(self.grid))
        return (f"{WHERE}: {o.name} involves cores {[mesh.multi_index(c) for c in off]}, "
                f"which run no block of the launch grid {self.grid} there ({total} "
                f"block{'s' if total != 1 else ''} "
                f"on {self.cores} cores: core c runs blocks c, c + {self.cores}, ...); a "
                f"core takes part only in its own blocks' comm ops, on the chip too, so the "
                f"op cannot complete: launch T.Kernel() (one program per core), or a grid "
                f"whose blocks cover every core of each group the op involves")


def _uniform_conditions(func: tirx.PrimFunc, launch: Launch, idle: _Idle | None
                        ) -> tirx.PrimFunc:
    ops = [o for o in find_comm_ops(func)]
    if not any(o.scope for o in ops):
        return func
    g = _Guards(set(launch.vars), ops)
    body = tirx.stmt_functor.ir_transform(func.body, g.visit, None,
                                          ["tirx.IfThenElse", "tirx.Bind"])
    if not g.guards:
        return func
    body = _add_allocs(body, g.temps)
    out = tirx.PrimFunc(func.params, body, func.ret_type, func.buffer_map, func.attrs)
    for o in find_comm_ops(out):
        cond = next((c for call, c in g.guards.items() if call.same_as(o.call)), None)
        if cond is not None:
            _check_guard(o, cond, launch, idle)
    return out


def _groups(o: CommOp, mesh: Mesh, space: Any) -> list:
    """Per point of ``space``, the cores the op involves there (as a frozenset)."""
    n, ncols = mesh.size, mesh.shape[1]
    coords = mesh.coords
    core = space.core

    def lin(key: str) -> np.ndarray:
        e = o.params[key]
        vals = [space.value(x) for x in e]
        return vals[0] if len(vals) == 1 else vals[0] * ncols + vals[1]

    def group(c: int) -> frozenset:
        rc = coords[c]
        return frozenset(k for k in range(n) if all(coords[k][a] == rc[a]
                                                    for a in range(2) if a not in o.mesh_axes))

    out = []
    if o.op == "tm_broadcast":
        snd = lin("src_core")
        for s in snd:
            out.append(group(int(s)) | {int(s)})
    elif o.op == "tm_put":
        snd, dst = lin("src_core"), lin("dst_core")
        for s, d in zip(snd, dst):
            s, d = int(s), int(d)
            via = {int(coords[d][0] * ncols + coords[s][1])}
            out.append(frozenset({s, d} | via))
    else:
        for c in core:
            out.append(group(int(c)))
    return out


def _check_guard(o: CommOp, cond: Any, launch: Launch, idle: _Idle | None = None) -> None:
    """The chip's rule for a comm op under a condition: every core of each group the op
    involves where the condition holds also meets it; and the cores that skip it name
    only transfers the others name (the emulator runs the op on every core)."""
    mesh = launch.mesh
    space = iteration_space(o, launch, o.name)
    active = np.asarray(space.value(cond)).astype(bool)
    running = (np.broadcast_to(np.asarray(space.value(idle.cond)).astype(bool), active.shape)
               if idle is not None else np.ones_like(active))
    loops = [it.loop_var for it in o.scope if isinstance(it, tirx.For)
             and not launch.is_launch_var(it.loop_var)]
    keys = (np.stack([np.broadcast_to(space.env[v], (space.size,)) for v in loops], axis=1)
            if loops else np.zeros((space.size, 0), dtype=np.int64))
    groups = _groups(o, mesh, space)
    by_exec: dict = {}
    for p in range(space.size):
        by_exec.setdefault(tuple(keys[p].tolist()), []).append(p)
    for pts in by_exec.values():
        on = {int(space.core[p]) for p in pts if active[p]}
        named = {groups[p] for p in pts if active[p]}
        for grp in named:
            off = sorted(grp - on)
            asleep = sorted({int(space.core[p]) for p in pts if not running[p]} & set(off))
            if asleep:
                raise ValueError(idle.why(o, asleep, mesh))
            if off:
                raise ValueError(
                    f"{WHERE}: {o.name} is under `if {cond}`, which holds on some cores of "
                    f"its group {[mesh.multi_index(c) for c in sorted(grp)]} but not on "
                    f"{[mesh.multi_index(c) for c in off]}; every core of a group takes "
                    f"part in the op on the chip, so the condition must be uniform over "
                    f"each group the op involves" + _launch_names(cond, launch))
        if o.op in ("tm_broadcast", "tm_put"):
            for p in pts:
                if not active[p] and groups[p] not in named:
                    c = int(space.core[p])
                    raise ValueError(
                        f"{WHERE}: {o.name} is under `if {cond}`; core "
                        f"{mesh.multi_index(c)}, where it is false, names cores "
                        f"{[mesh.multi_index(v) for v in sorted(groups[p])]} that no core "
                        f"running the op names; the emulator runs such an op on every "
                        f"core, so write its cores so that they agree (e.g. constants)")


# -- 2. T.MeshTensor parameters: one shard per core ---------------------------------------------
# calls that take a buffer location by a BufferLoad, and where their access mask is
# (None: a raw address, whose use is unknown: counted as a write)
_POINTER_CALLS = {"tl.region": 1, "tl.access_ptr": 2, "tirx.address_of": None}


def _written(stmt: tirx.Stmt, buf: tirx.Buffer) -> bool:
    """Whether the kernel may store into ``buf``: a store, a tile-op region or an access
    pointer (``T.atomic_add`` ...) with write access, or a raw address of it."""
    hit: list = []

    def visit(n: Any) -> None:
        if isinstance(n, tirx.BufferStore) and n.buffer.same_as(buf):
            hit.append(n)
        elif isinstance(n, tirx.Call) and getattr(n.op, "name", None) in _POINTER_CALLS \
                and n.args and isinstance(n.args[0], tirx.BufferLoad) \
                and n.args[0].buffer.same_as(buf):
            pos = _POINTER_CALLS[n.op.name]
            mask = None if pos is None or len(n.args) <= pos else static_int(n.args[pos])
            if mask is None or mask & 2:
                hit.append(n)

    tirx.stmt_functor.post_order_visit(stmt, visit)
    return bool(hit)


def _stack_params(func: tirx.PrimFunc, stmt: tirx.Stmt, params: dict[int, MeshParam],
                  launch: Launch) -> tuple[tirx.Stmt, list, dict, list]:
    core = launch.core_id()
    n = launch.mesh.size
    bmap, prefix, new_params, new_map, flags = {}, {}, list(func.params), dict(func.buffer_map), []
    for i, p in params.items():
        old = func.buffer_map[func.params[i]]
        flags.append(_written(stmt, old))
        new = tirx.decl_buffer((n,) + tuple(old.shape), str(old.dtype), str(old.name))
        handle = tirx.Var(f"{old.name}_cores", "handle")
        bmap[old.data], prefix[old.data] = new, [core]
        del new_map[func.params[i]]
        new_params[i] = handle
        new_map[handle] = new
    out = _rebuffer(stmt, bmap, prefix)
    left = _data_vars(out) & set(bmap)
    if left:
        names = sorted(func.buffer_map[func.params[i]].name for i in params
                       if func.buffer_map[func.params[i]].data in left)
        raise ValueError(f"{WHERE}: T.MeshTensor parameters {names} are used other than "
                         f"through loads, stores and tile-op regions (e.g. a raw pointer); "
                         f"the emulator cannot place such an access on a core's shard")
    return out, new_params, new_map, flags


# -- 2b. T.gemm's operands as SUNMMIO's MMA reads them ---------------------------------------
def _gemm_operands(stmt: tirx.Stmt) -> tirx.Stmt:
    """SUNMMIO's MMA reads its ``A`` and ``B`` operands (from their SRAMs) before it
    writes ``C``, and multiplies in the accumulator's dtype: an operand in ``C``'s
    buffer (``T.gemm(C_s, B_s, C_s)``: the fork's scope inference stages it through a
    copy) is read from a copy made just before the op, and an operand whose dtype is
    not the other's (``float32`` ``A``, ``float16`` ``B``) is converted to the
    accumulator's dtype first (exactly: each value of the narrower dtype is one of the
    wider). Stock TileLang reads an aliased operand while it writes and refuses mixed
    dtypes."""
    new_bufs: list = []

    def stage(reg: Any, dtype: str, name: str) -> tuple:
        ext = [static_int(e) for e in reg.extents]
        if None in ext:
            raise ValueError(f"{WHERE}: T.gemm operand {reg.buffer.name!r} has a symbolic "
                             f"region {list(map(str, reg.extents))}; a staged operand needs "
                             f"a static one")
        buf = tirx.decl_buffer(ext, dtype, f"{reg.buffer.name}_{name}{len(new_bufs)}",
                               scope="local")
        new_bufs.append(buf)
        ranges = [ir.Range.from_min_extent(st, e) for st, e in zip(reg.starts, ext)]
        copy = tirx.Evaluate(T.copy(tirx.BufferRegion(reg.buffer, ranges), buf))
        return copy, _tl_region(tirx.BufferLoad(buf, [tirx.IntImm("int32", 0)] * len(ext)),
                                "r", *ext)

    def post(n: Any) -> Any:
        if not (isinstance(n, tirx.Evaluate) and isinstance(n.value, tirx.Call)
                and getattr(n.value.op, "name", None) == "tl.tileop.gemm"):
            return None
        call = n.value
        a, b, c = (region_of(call.args[i]) for i in range(3))
        mixed = str(a.buffer.dtype) != str(b.buffer.dtype)
        acc = str(c.buffer.dtype)
        args, pre = list(call.args), []
        for i, reg in ((0, a), (1, b)):
            alias = reg.buffer.data.same_as(c.buffer.data)
            convert = mixed and str(reg.buffer.dtype) != acc
            if alias or convert:
                copy, args[i] = stage(reg, acc if convert else str(reg.buffer.dtype),
                                      "acc" if convert else "read")
                pre.append(copy)
        if not pre:
            return None
        return tirx.SeqStmt(pre + [tirx.Evaluate(tirx.Call(call.dtype, call.op, args,
                                                           call.annotations))])

    out = tirx.stmt_functor.ir_transform(stmt, None, post, ["tirx.Evaluate"])
    return _add_allocs(out, new_bufs) if new_bufs else out


# -- 3. on-chip buffers in scopes the C backend takes ------------------------------------------
def _private_targets(stmt: tirx.Stmt) -> set:
    """The data vars of the on-chip buffers that a tile op which stock TileLang's C
    backend lowers only on ``local`` buffers (``T.fill``/``T.clear``'s target, a
    reduction's operands ...) reaches in another scope."""
    local: set = set()
    for f in find_calls(stmt, lambda c: getattr(c.op, "name", None) in _LOCAL_OPERANDS):
        for pos in _LOCAL_OPERANDS[f.call.op.name]:
            buf = region_of(f.call.args[pos]).buffer
            if buf.scope().startswith("shared") or buf.scope() in ("local.fragment",
                                                                    "local.var"):
                local.add(buf.data)
    return local


def _core_private(stmt: tirx.Stmt) -> tirx.Stmt:
    local = _private_targets(stmt)
    allocs: list = []

    def visit(n: Any) -> None:
        if isinstance(n, tirx.SBlock):
            allocs.extend(n.alloc_buffers)

    tirx.stmt_functor.post_order_visit(stmt, visit)
    bmap = {}
    for b in allocs:
        scope = b.scope()
        want = "local" if b.data in local else "shared" if scope.startswith("shared") else scope
        if want != scope:
            bmap[b.data] = tirx.decl_buffer(b.shape, str(b.dtype), str(b.name), scope=want,
                                            strides=b.strides or None)
    return _rebuffer(stmt, bmap, {})


def _allocs_of(stmt: tirx.Stmt, datas: set) -> list:
    """The buffers allocated in ``stmt`` whose data vars are in ``datas``."""
    found: list = []

    def visit(n: Any) -> None:
        if isinstance(n, tirx.SBlock):
            found.extend(b for b in n.alloc_buffers if b.data in datas)

    tirx.stmt_functor.post_order_visit(stmt, visit)
    return found


def _zeroed(stmt: tirx.Stmt) -> tirx.Stmt:
    """Every buffer the kernel allocates starts zeroed on every core, before its first
    block. The chip's memory holds whatever it held: a kernel that reads memory
    nothing wrote (an accumulator never cleared) has no defined result there; here it
    runs, and gives the same values on every core and every run (so the copies of a
    replicated output agree, as they would for any one memory state)."""
    done: list = []

    def zero(buf: tirx.Buffer) -> tirx.Stmt:
        idx = [tirx.Var(f"z{d}", "int32") for d in range(len(buf.shape))]
        body: Any = tirx.BufferStore(buf, tirx.const(0, str(buf.dtype)), idx)
        for v, n in reversed(list(zip(idx, buf.shape))):
            body = tirx.For(v, tirx.IntImm("int32", 0), n, tirx.ForKind.SERIAL, body)
        return body

    def post(n: Any) -> Any:
        if done or n.name_hint != "tilelang_root" or not n.alloc_buffers:
            return None
        done.append(n)
        body = tirx.SeqStmt([zero(b) for b in n.alloc_buffers] + [n.body])
        return tirx.SBlock(n.iter_vars, n.reads, n.writes, n.name_hint, body, n.init,
                           n.alloc_buffers, n.match_buffers, n.annotations)

    return tirx.stmt_functor.ir_transform(stmt, None, post, ["tirx.SBlock"])


def _size_params(func: tirx.PrimFunc, params: dict[int, MeshParam], new_map: dict
                 ) -> list:
    """The symbolic sizes of ``T.MeshTensor`` shapes that no parameter has as a dim of
    its own (a split dim is ``(m + 3) // 4`` in the per-core stack, which TileLang
    cannot read ``m`` back from): scalar parameters after the kernel's own, sorted by
    name, which ``MeshKernel`` fills from the caller's tensors. A size that is a dim
    TileLang reads itself, as for any symbolic shape."""
    sizes: dict = {}
    for i in params:
        for dim in func.buffer_map[func.params[i]].shape:
            for v in _data_vars(dim):
                sizes.setdefault(v.name, v)
    bare = {d.name for b in new_map.values() for d in b.shape if isinstance(d, tirx.Var)}
    return [sizes[k] for k in sorted(sizes) if k not in bare
            and not any(v.same_as(sizes[k]) for v in func.params)]


def _without_launch(func: tirx.PrimFunc, params: dict[int, MeshParam], mesh: Mesh
                    ) -> PreparedKernel:
    """A kernel with no ``T.Kernel`` runs nothing on the cores (its body is host code,
    which here may only name its parameters' shapes): its ``T.MeshTensor`` parameters
    still take the per-core stacks the caller's tensors are split into."""
    work: list = []

    def visit(n: Any) -> None:
        if isinstance(n, (tirx.BufferLoad, tirx.BufferStore, tirx.Call)):
            work.append(n)

    tirx.stmt_functor.post_order_visit(func.body, visit)
    if work:
        raise ValueError(f"{WHERE}: the kernel has no T.Kernel, so its statements are host "
                         f"code, which SUNMMIO's chip does not run (here: {work[0]}); put "
                         f"them in `with T.Kernel() as cid:` (one program per core)")
    new_params, new_map = list(func.params), dict(func.buffer_map)
    for i in params:
        old = func.buffer_map[func.params[i]]
        new = tirx.decl_buffer((mesh.size,) + tuple(old.shape), str(old.dtype), str(old.name))
        handle = tirx.Var(f"{old.name}_cores", "handle")
        del new_map[func.params[i]]
        new_params[i] = handle
        new_map[handle] = new
    out = tirx.PrimFunc(new_params, func.body, func.ret_type, new_map, func.attrs)
    return PreparedKernel(out, tuple((i, p, False) for i, p in params.items()), mesh)


def prepare_tilelang_mesh(func: tirx.PrimFunc) -> PreparedKernel:
    """The function form of :func:`PrepareTilelangMesh`, with the ``T.MeshTensor``
    parameters the caller's tensors map to (see the module docstring).

    >>> import tilelang.language as T
    >>> @T.prim_func
    ... def k():
    ...     T.evaluate(0)
    >>> prepare_tilelang_mesh(k).func.same_as(k)   # nothing of Tilelang-Mesh: unchanged
    True
    """
    params = mesh_params(func)
    ops = find_comm_ops(func)
    if not params and not any(o.op in DISPLAY for o in ops):
        stock = _stock_gemms(func)
        if any(b.scope().startswith("shared") for b in _allocs_of(stock.body, _private_targets(
                stock.body))):
            # a T.fill (or reduction) of a shared buffer, as SUNMMIO kernels launched by
            # T.Kernel() without T.MeshTensor parameters write: stock TileLang's C backend
            # cannot lower it (an InternalError); a block's on-chip memory is its own, so
            # core-private memory means the same
            stock = stock.with_body(_core_private(stock.body))
        return PreparedKernel(stock)
    meshes = {p.mesh for p in params.values()} | {o.mesh for o in ops}
    if len(meshes) != 1:
        raise ValueError(f"{WHERE}: the kernel's T.MeshTensor parameters and comm ops name "
                         f"different meshes {sorted(str(m) for m in meshes)}; one kernel runs "
                         f"on one mesh (tm.enable(mesh=...) and each device_mesh_config)")
    mesh = meshes.pop()
    grid = tuple(launch_grid(func))
    if not grid and mesh.size > 1:
        return _without_launch(func, params, mesh)
    if None in grid and ops:
        raise ValueError(f"{WHERE}: the launch grid of a kernel with comm ops is symbolic "
                         f"({ops[0].name} first); which cores run a block, and so which "
                         f"take part in each op, must be known when the ops are compiled "
                         f"(on the chip too): launch T.Kernel() (one program per core) and "
                         f"loop over the blocks in the kernel")
    func, guard = upstream_launch_guard(_upstream_persistent(func), mesh, WHERE)
    idle = None if guard is None else _Idle(guard, grid, mesh.size)
    launch = Launch.of(func, mesh, WHERE)
    func = _uniform_conditions(func, launch, idle)
    ops = find_comm_ops(func)
    by_buffer = {func.buffer_map[func.params[i]]: p for i, p in params.items()}
    _check_dram_layout_copies(func, by_buffer)
    _check_padded_copies(func, by_buffer)
    globals_ = {b.data: b for i, v in enumerate(func.params)
                if (b := func.buffer_map.get(v)) is not None and i not in params}
    body = _stage_sources(func.body, ops, by_buffer, launch, globals_)
    body, new_params, new_map, written = _stack_params(func, body, params, launch)
    body = _gemm_operands(body)
    body = _core_private(body)
    if not (func.attrs and DIST_RANK_ATTR in func.attrs):
        # a T.dist rank's program is left unzeroed: another rank's put may land in a
        # buffer before this core's program starts, and zeroing it would race with it
        body = _zeroed(body)
    body = exact_float_constants(body)
    sizes = _size_params(func, params, new_map)
    out = tirx.PrimFunc(new_params + sizes, body, func.ret_type, new_map, func.attrs)
    if sizes:
        out = out.with_attr(SIZE_PARAMS, [v.name for v in sizes])
    record = {p.name: {"global_shape": list(p.global_shape), "split_axes": p.sharding.spec(),
                       "policy": p.policy, "layout": p.layout or ""}
              for p in params.values()}
    if record:
        out = out.with_attr("tilelang_mesh_tensors", record)
    total = int(np.prod(grid)) if grid and None not in grid else mesh.size  # (symbolic:
    # every core's copy counts; a replicated output is written alike or refused)
    running = tuple(range(total)) if total < mesh.size else None
    return PreparedKernel(out, tuple((i, p.run_by(running), w)
                                     for (i, p), w in zip(params.items(), written)), mesh)


def PrepareTilelangMesh():  # noqa: N802 (TVM naming)
    """The ``prim_func_pass`` ``"meshtensor.PrepareTilelangMesh"``: the rewrite of
    :func:`prepare_tilelang_mesh` (use ``compile_mesh_kernel``, which also turns the
    caller's global tensors into the per-core stacks the rewritten kernel takes).

    >>> PrepareTilelangMesh().info.name
    'meshtensor.PrepareTilelangMesh'
    """

    def transform(func, mod, ctx):
        return prepare_tilelang_mesh(func).func

    return tirx.transform.prim_func_pass(transform, opt_level=0,
                                         name="meshtensor.PrepareTilelangMesh")



def specialize_sizes(func: tirx.PrimFunc, sizes: dict[str, int]) -> tirx.PrimFunc:
    """``func`` with its symbolic sizes (``T.dynamic`` variables of its ``T.MeshTensor``
    shapes, by name) replaced by one call's values: the buffers' shapes, the loop
    bounds and the parameters' records become static, so the passes that must know
    every execution of a comm op (the region it reads, the cores it joins) see them.

    >>> import tilelang.language as T
    >>> @T.prim_func
    ... def k():
    ...     T.evaluate(0)
    >>> specialize_sizes(k, {"m": 6}).same_as(k)   # no symbolic size: unchanged
    True
    """
    found: dict = {}

    def visit(n: Any) -> None:
        if isinstance(n, tirx.Var) and n.name in sizes and str(n.dtype).startswith("int"):
            found.setdefault(n, tirx.IntImm(str(n.dtype), int(sizes[n.name])))

    bufs = [func.buffer_map[v] for v in func.params if v in func.buffer_map]
    allocs: list = []
    tirx.stmt_functor.post_order_visit(
        func.body, lambda n: allocs.extend(n.alloc_buffers) if isinstance(n, tirx.SBlock)
        else visit(n))
    for b in bufs + allocs:
        for d in b.shape:
            tirx.stmt_functor.post_order_visit(tirx.Evaluate(d), visit)
    if not found:
        return func
    ana = arith.Analyzer()

    def static(e: Any) -> Any:
        return ana.simplify(tirx.stmt_functor.substitute(e, found))

    bmap = {}
    for b in bufs + allocs:
        shape = [static(d) for d in b.shape]
        if any(not s.same_as(d) for s, d in zip(shape, b.shape)):
            bmap[b.data] = tirx.decl_buffer(shape, str(b.dtype), str(b.name),
                                            scope=b.scope(), strides=b.strides or None)
    body = _rebuffer(tirx.stmt_functor.substitute(func.body, found), bmap, {})
    new_map = {v: bmap.get(b.data, b) for v, b in func.buffer_map.items()}
    out = tirx.PrimFunc(func.params, body, func.ret_type, new_map, func.attrs)
    params = mesh_params(func)
    return with_mesh_params(out, {i: p.bind({k: int(v) for k, v in sizes.items()
                                             if k in p.symbols})
                                  for i, p in params.items()})
