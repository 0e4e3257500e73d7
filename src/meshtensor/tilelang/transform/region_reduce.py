"""``RegionReductions``: a tile reduction over part of a buffer reduces that part.

``T.reduce_max(cm[0:4, 0:4], row_max[0:4], dim=1)`` (SUNMMIO's sinkhorn test reduces a
4x4 corner of a 4x32 buffer) means the maximum over the region's four columns.
TileLang 0.1.15's CPU lowering of ``tl.tileop.reduce`` reads the whole source buffer
whatever region the call names (here all 32 columns: the zeros the kernel filled the
rest with changed the maximum), and writes the whole destination: a silent wrong
value. This pass writes such a reduction as the loops it means, before TileLang lowers
it: for each index of the kept dims of the source region, a fold from the kind's
identity along ``dim`` in index order (the order TileLang's own loop adds in), then
``clear=False`` combines the destination's old value with the fold, as TileLang's
reduction does. A reduction over whole buffers is left to TileLang.
"""

from typing import Any

import tvm
from tvm import tirx

from ...reduction import REDUCTIONS
from ..ir.scope import region_of
from .lower_comm import _tm_abs, _tm_combine, _tm_identity

__all__ = ["region_reductions", "RegionReductions"]

_REDUCE = "tl.tileop.reduce"


def _whole(region: Any) -> bool:
    shape = [int(s) for s in region.buffer.shape]
    starts, extents = list(region.starts), list(region.extents)
    if len(starts) != len(shape):
        return False
    return all(isinstance(s, tirx.IntImm) and s.value == 0 for s in starts) and all(
        isinstance(e, tirx.IntImm) and e.value == n for e, n in zip(extents, shape))


def _loops(vars_: list, extents: list, body: tirx.Stmt) -> tirx.Stmt:
    for v, n in reversed(list(zip(vars_, extents))):
        body = tirx.For(v, tirx.IntImm("int32", 0), n, tirx.ForKind.SERIAL, body)
    return body


def _rewrite(stmt: Any) -> Any:
    if not isinstance(stmt, tirx.Evaluate) or not isinstance(stmt.value, tirx.Call):
        return None
    call = stmt.value
    if getattr(call.op, "name", None) != _REDUCE:
        return None
    src, dst = region_of(call.args[0]), region_of(call.args[1])
    if _whole(src) and _whole(dst):
        return None
    kind = str(call.args[2].value) if isinstance(call.args[2], tirx.StringImm) else str(
        call.args[2])
    dim, clear = int(call.args[3]), bool(call.args[4])
    rank = len(src.extents)
    kept = [d for d in range(rank) if d != dim]
    j = [tirx.Var(f"r{d}", "int32") for d in kept]
    i = tirx.Var("ri", "int32")
    idx = list(j[:dim]) + [i] + list(j[dim:])
    src_at = [s + v for s, v in zip(src.starts, idx)]
    dpos = list(j) if len(dst.extents) == len(kept) else list(j[:dim]) + [
        tirx.IntImm("int32", 0)] + list(j[dim:])
    # (a region may name fewer dims than its buffer has: its leading dims are 1)
    dpos = [tirx.IntImm("int32", 0)] * (len(dst.starts) - len(dpos)) + dpos
    dst_at = [s + v for s, v in zip(dst.starts, dpos)]
    dtype = str(dst.buffer.dtype)
    acc = tirx.decl_buffer((1,), dtype, "reduce_acc", scope="local")
    zero = [tirx.IntImm("int32", 0)]
    x = tirx.BufferLoad(src.buffer, src_at)
    if REDUCTIONS[kind].absolute:
        x = _tm_abs(x)
    if str(x.dtype) != dtype:
        x = tirx.Cast(dtype, x)
    fold = tirx.BufferStore(acc, _tm_combine(kind, tirx.BufferLoad(acc, zero), x), zero)
    result: Any = tirx.BufferLoad(acc, zero)
    if not clear:
        result = _tm_combine(kind, tirx.BufferLoad(dst.buffer, dst_at), result)
    body = tirx.SeqStmt([tirx.BufferStore(acc, _tm_identity(kind, dtype), zero),
                         _loops([i], [src.extents[dim]], fold),
                         tirx.BufferStore(dst.buffer, result, dst_at)])
    nest = _loops(j, [src.extents[d] for d in kept], body)
    return tirx.SeqStmt([tirx.AllocBuffer(acc), nest])


def region_reductions(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """The function form of :func:`RegionReductions`: each ``tl.tileop.reduce`` whose
    source or destination region is part of its buffer becomes its loops.

    >>> import tilelang
    >>> import tilelang.language as T
    >>> @T.prim_func
    ... def k(A: T.Tensor((4, 8), "float32"), S: T.Tensor((4,), "float32")):
    ...     with T.Kernel(1, threads=1) as bx:
    ...         a = T.alloc_fragment((4, 8), "float32")
    ...         s = T.alloc_fragment((4,), "float32")
    ...         T.reduce_max(a[0:4, 0:2], s, dim=1)
    >>> "T.reduce(" in region_reductions(k).script()
    False
    """
    body = tirx.stmt_functor.ir_transform(func.body, None, _rewrite, ["tirx.Evaluate"])
    return func if body.same_as(func.body) else func.with_body(body)


def RegionReductions() -> tvm.transform.Pass:  # noqa: N802 (TVM naming)
    """The ``prim_func_pass`` ``"meshtensor.RegionReductions"`` (module docstring).

    >>> RegionReductions().info.name
    'meshtensor.RegionReductions'
    """
    return tirx.transform.prim_func_pass(lambda f, m, c: region_reductions(f), opt_level=0,
                                         name="meshtensor.RegionReductions")
