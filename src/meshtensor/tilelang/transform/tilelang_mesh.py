"""``PrepareTilelangMesh``: make a kernel written for Tilelang-Mesh (``T.MeshTensor``
parameters, ``T.comm`` ops, SRAM scopes) a mesh kernel that ``LowerMeshComm`` and
TileLang's C backend run exactly. ``compile_mesh_kernel`` applies it first; a kernel
with neither ``T.MeshTensor`` parameters nor Tilelang-Mesh comm ops is unchanged.

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

from dataclasses import dataclass
from typing import Any

import numpy as np
import tilelang.language as T
from tilelang.language.utils import region as _tl_region
from tvm import ir, tirx

from ...mesh import Mesh
from ..ir.comm_op import DISPLAY, CommOp, encode, find_comm_ops, is_comm_call
from ..ir.expr import static_int
from ..ir.evaluate import iteration_space, region_box
from ..ir.launch import Launch
from ..ir.mesh_param import MeshParam, mesh_params
from ..ir.scope import find_calls, region_of

__all__ = ["PrepareTilelangMesh", "prepare_tilelang_mesh", "PreparedKernel",
           "is_tilelang_mesh_kernel"]

WHERE = "PrepareTilelangMesh"
# operands (by position) that stock TileLang's CPU lowering wants in local memory
_LOCAL_OPERANDS = {"tl.tileop.fill": (0,), "tl.tileop.gemm": (2,)}


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


# -- 1. comm ops reading a T.MeshTensor: a staging copy first ----------------------------------
def _stage_sources(stmt: tirx.Stmt, ops: list[CommOp], params: dict, launch: Launch
                   ) -> tirx.Stmt:
    shards = {p_buf.data: p for p_buf, p in params.items()}
    staged = [o for o in ops if o.src is not None and o.src.buffer.data in shards]
    if not staged:
        return stmt
    for o in staged:  # the slice must lie in the shard at every execution
        shape = shards[o.src.buffer.data].shard_shape
        try:
            lo, hi = region_box(o.src, iteration_space(o, launch, o.name), o.name)
        except ValueError as err:
            raise ValueError(f"{WHERE}: {o.name} reads T.MeshTensor "
                             f"{o.src.buffer.name!r} at a region that cannot be evaluated "
                             f"({err}); its start may use the core id and loop variables "
                             f"only") from None
        if len(lo) and (lo.min(axis=0) < 0).any() or len(hi) and (hi.max(axis=0) >
                                                                  np.asarray(shape)).any():
            raise ValueError(f"{WHERE}: {o.name} reads T.MeshTensor {o.src.buffer.name!r} "
                             f"outside its shard of shape {shape} (region "
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


# -- 3. on-chip buffers in scopes the C backend takes ------------------------------------------
def _core_private(stmt: tirx.Stmt) -> tirx.Stmt:
    local: set = set()
    for f in find_calls(stmt, lambda c: getattr(c.op, "name", None) in _LOCAL_OPERANDS):
        for pos in _LOCAL_OPERANDS[f.call.op.name]:
            buf = region_of(f.call.args[pos]).buffer
            if buf.scope().startswith("shared"):
                local.add(buf.data)
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
        return PreparedKernel(func)
    meshes = {p.mesh for p in params.values()} | {o.mesh for o in ops}
    if len(meshes) != 1:
        raise ValueError(f"{WHERE}: the kernel's T.MeshTensor parameters and comm ops name "
                         f"different meshes {sorted(str(m) for m in meshes)}; one kernel runs "
                         f"on one mesh (tm.enable(mesh=...) and each device_mesh_config)")
    mesh = meshes.pop()
    launch = Launch.of(func, mesh, WHERE)
    by_buffer = {func.buffer_map[func.params[i]]: p for i, p in params.items()}
    body = _stage_sources(func.body, ops, by_buffer, launch)
    body, new_params, new_map, written = _stack_params(func, body, params, launch)
    body = _core_private(body)
    out = tirx.PrimFunc(new_params, body, func.ret_type, new_map, func.attrs)
    record = {p.name: {"global_shape": list(p.global_shape), "split_axes": p.sharding.spec(),
                       "policy": p.policy, "layout": p.layout or ""}
              for p in params.values()}
    if record:
        out = out.with_attr("tilelang_mesh_tensors", record)
    return PreparedKernel(out, tuple((i, p, w) for (i, p), w in zip(params.items(), written)),
                          mesh)


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

