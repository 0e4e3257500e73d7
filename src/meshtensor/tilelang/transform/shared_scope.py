"""``OneDynamicShared``: a kernel with several ``shared.dyn`` buffers runs on the C back end.

``T.alloc_shared`` without a scope allocates ``shared.dyn``, and TileLang 0.1.15 stops
with "Only one dynamic shared memory allocation is allowed" when a kernel holds two
(stock ``tilelang.compile`` too). On the C back end a core's ``shared`` and
``shared.dyn`` memory are the same thing, its own array, so when a kernel allocates
more than one ``shared.dyn`` buffer they all become ``shared``: each allocation and
every view of it (``T.reshape``, ``T.view``, ``T.decl_buffer(data=...)``) gets a data
variable of the new scope, with its own shape, strides, offset and dtype kept. A kernel
with at most one is returned as it is.
"""

from __future__ import annotations

from typing import Any

import tvm
from tvm import ir, tirx

__all__ = ["OneDynamicShared", "one_dynamic_shared"]


def _allocations(body: tirx.Stmt) -> list[tirx.Buffer]:
    out: list = []

    def visit(n: Any) -> None:
        if isinstance(n, tirx.SBlock):
            out.extend(n.alloc_buffers)
        elif isinstance(n, tirx.AllocBuffer):
            out.append(n.buffer)

    tirx.stmt_functor.post_order_visit(body, visit)
    return out


def one_dynamic_shared(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """The function form of :func:`OneDynamicShared`.

    >>> import tilelang
    >>> import tilelang.language as T
    >>> @T.prim_func
    ... def k():
    ...     with T.Kernel(1, threads=1) as bx:
    ...         A = T.alloc_shared((4,), "float32")
    ...         B = T.alloc_shared((4,), "float32")
    ...         A[0] = B[0]
    >>> sorted(b.scope() for b in _allocations(one_dynamic_shared(k).body))
    ['shared', 'shared']
    """
    dyn = [b for b in _allocations(func.body) if b.scope() == "shared.dyn"]
    if len(dyn) < 2:
        return func
    datas = {b.data: tirx.Var(b.data.name, ir.PointerType(ir.PrimType(str(b.dtype)), "shared"))
             for b in dyn}
    new: list = []  # (old buffer, new buffer): views included, each rebuilt once

    def moved(buf: tirx.Buffer) -> tirx.Buffer | None:
        data = next((v for d, v in datas.items() if d.same_as(buf.data)), None)
        if data is None:
            return None
        for old, b in new:
            if old.same_as(buf):
                return b
        b = tirx.decl_buffer(buf.shape, str(buf.dtype), buf.name, data=data,
                             strides=buf.strides or None, elem_offset=buf.elem_offset,
                             scope="shared")
        new.append((buf, b))
        return b

    def post(n: Any) -> Any:
        if isinstance(n, (tirx.BufferLoad, tirx.BufferStore)):
            b = moved(n.buffer)
            if b is None:
                return None
            if isinstance(n, tirx.BufferLoad):
                return tirx.BufferLoad(b, n.indices, n.predicate)
            return tirx.BufferStore(b, n.value, n.indices, n.predicate)
        if isinstance(n, (tirx.AllocBuffer, tirx.DeclBuffer)):
            b = moved(n.buffer)
            if b is None:
                return None
            return tirx.AllocBuffer(b) if isinstance(n, tirx.AllocBuffer) else tirx.DeclBuffer(b)
        if isinstance(n, tirx.SBlock) and any(moved(b) is not None for b in n.alloc_buffers):
            allocs = [moved(b) or b for b in n.alloc_buffers]
            return tirx.SBlock(n.iter_vars, n.reads, n.writes, n.name_hint, n.body, n.init,
                               allocs, n.match_buffers, n.annotations)
        return None

    body = tirx.stmt_functor.ir_transform(
        func.body, None, post, ["tirx.BufferLoad", "tirx.BufferStore", "tirx.AllocBuffer",
                                "tirx.DeclBuffer", "tirx.SBlock"])
    # the data variables themselves (an access_ptr, a call taking the buffer)
    body = tirx.stmt_functor.substitute(body, dict(datas))
    return func.with_body(body)


def OneDynamicShared() -> tvm.transform.Pass:  # noqa: N802 (TVM naming)
    """The ``prim_func_pass`` ``"meshtensor.OneDynamicShared"`` (module docstring).

    >>> OneDynamicShared().info.name
    'meshtensor.OneDynamicShared'
    """
    return tirx.transform.prim_func_pass(lambda f, m, c: one_dynamic_shared(f), opt_level=0,
                                         name="meshtensor.OneDynamicShared")
