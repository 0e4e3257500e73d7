"""Per-core memory, decided by allocation.

A mesh kernel is one program per core. What a core owns is decided by where a buffer
is allocated, never by its scope string: every buffer allocated inside the kernel body
(``T.alloc_shared`` / ``alloc_local`` / ``alloc_fragment`` / ``alloc_var`` /
``alloc_buffer``, any scope, SUNMMIO's scopes included) is core-private; the kernel's
parameters are global memory that every core sees.

A *view* (``T.reshape``, ``T.view``, ``T.decl_buffer(data=...)``, a region of a
buffer) is an allocation seen with its own shape, strides, element offset and dtype:
in TIR, another ``Buffer`` with the same data variable. :meth:`Memory.view` resolves
any buffer to its allocation and the byte layout it sees there, so that no pass
reads a view with its parent's shape, nor its parent with the view's.

>>> import tilelang
>>> import tilelang.language as T
>>> @T.prim_func
... def k():
...     with T.Kernel(1, threads=1) as bx:
...         S = T.alloc_shared((8,), "int32", scope="shared")
...         G = T.alloc_buffer((1,), "int32")
...         V = T.reshape(S, (2, 4))
...         G[0] = V[1, 2] + G[0]
>>> mem = Memory.of(k)
>>> sorted(b.name for b in mem.allocations)
['G', 'S']
>>> loads = []
>>> tvm_ffi = __import__("tvm").tirx.stmt_functor.post_order_visit(
...     k.body, lambda n: loads.append(n) if isinstance(n, tirx.BufferLoad) else None)
>>> [(l.buffer.name, mem.is_per_core(l.buffer)) for l in loads]
[('V', True), ('G', True)]
>>> v = mem.view(loads[0].buffer)
>>> v.alloc.name, v.strides, v.byte_offset(loads[0].indices)
('S', (4, 1), 24)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from tvm import tirx

from .expr import static_int
from .scope import itemsize

__all__ = ["Memory", "View", "compact_strides"]


def compact_strides(shape: Sequence[Any]) -> tuple[int, ...] | None:
    """Row-major strides (in elements) of a static ``shape``, else ``None``.

    >>> compact_strides((2, 3, 4))
    (12, 4, 1)
    """
    dims = [static_int(n) for n in shape]
    if None in dims:
        return None
    return tuple(int(np.prod(dims[d + 1:], dtype=np.int64)) for d in range(len(dims)))


@dataclass(frozen=True, eq=False)
class View:
    """How one ``Buffer`` sees its allocation: ``strides`` and ``elem_offset`` in the
    view's own elements (of ``dtype``), ``alloc`` the allocation's buffer."""

    buffer: tirx.Buffer
    alloc: tirx.Buffer
    strides: tuple[int, ...]
    elem_offset: tirx.PrimExpr

    @property
    def dtype(self) -> str:
        return str(self.buffer.dtype)

    @property
    def itemsize(self) -> int:
        return itemsize(self.buffer.dtype)

    def elem_index(self, indices: Sequence[Any]) -> tirx.PrimExpr:
        """The element (of the view's dtype) that ``indices`` address, counted from the
        allocation's first byte, as a TIR expression."""
        off: Any = self.elem_offset if static_int(self.elem_offset) != 0 else None
        for i, s in zip(indices, self.strides):
            term = i if s == 1 else i * s
            off = term if off is None else off + term
        return tirx.IntImm("int32", 0) if off is None else off

    def byte_offset(self, indices: Sequence[Any]) -> int | tirx.PrimExpr:
        """The byte of the allocation that ``indices`` address (an int when static)."""
        e = self.elem_index(indices)
        v = static_int(e) if not isinstance(e, int) else e
        if v is None:
            from tvm import arith
            v = static_int(arith.Analyzer().simplify(e))
        return v * self.itemsize if v is not None else e * self.itemsize

    def byte_span(self) -> tuple[int, int] | None:
        """``[first, last]`` bytes of the allocation the whole view covers, when its
        shape and offset are static (``None`` otherwise)."""
        off = static_int(self.elem_offset)
        dims = [static_int(n) for n in self.buffer.shape]
        if off is None or None in dims or 0 in dims:
            return None
        last = off + sum((n - 1) * s for n, s in zip(dims, self.strides))
        lo = min(off, last) if any(s < 0 for s in self.strides) else off
        return lo * self.itemsize, (last + 1) * self.itemsize - 1


@dataclass(frozen=True, eq=False)
class Memory:
    """The allocations of one kernel: ``allocations`` are the buffers allocated inside
    its body (per-core memory), keyed for lookup by their data variable."""

    allocations: tuple[tirx.Buffer, ...]
    params: tuple[tirx.Buffer, ...]

    @staticmethod
    def of(func: tirx.PrimFunc | tirx.Stmt, extra: Sequence[tirx.Buffer] = ()) -> "Memory":
        """The memory model of a kernel (``extra``: buffers a pass allocates itself)."""
        body = func.body if isinstance(func, tirx.PrimFunc) else func
        found: list[tirx.Buffer] = []

        def visit(n: Any) -> None:
            if isinstance(n, tirx.SBlock):
                found.extend(n.alloc_buffers)
            elif isinstance(n, tirx.AllocBuffer):
                found.append(n.buffer)

        tirx.stmt_functor.post_order_visit(body, visit)
        params = tuple(func.buffer_map.values()) if isinstance(func, tirx.PrimFunc) else ()
        return Memory(tuple(found) + tuple(extra), params)

    def _alloc(self, data: tirx.Var) -> tirx.Buffer | None:
        for b in self.allocations:
            if b.data.same_as(data):
                return b
        return None

    def is_per_core(self, buf: tirx.Buffer) -> bool:
        """Whether ``buf`` (an allocation or a view of one) is core-private memory."""
        return self._alloc(buf.data) is not None

    def alloc_of(self, buf: tirx.Buffer) -> tirx.Buffer:
        """The allocation a per-core buffer or view lives in (``ValueError`` else)."""
        a = self._alloc(buf.data)
        if a is None:
            raise ValueError(f"buffer {buf.name!r} is not allocated inside the kernel")
        return a

    def view(self, buf: tirx.Buffer) -> View:
        """``buf`` resolved to its allocation (``buf`` may be the allocation itself)."""
        alloc = self.alloc_of(buf)
        strides = tuple(static_int(s) for s in buf.strides) if len(buf.strides) else \
            compact_strides(buf.shape)
        if strides is None or None in strides:
            raise ValueError(f"buffer {buf.name!r} (a view of {alloc.name!r}) has symbolic "
                             f"strides or shape {[str(n) for n in buf.shape]}; per-core "
                             f"buffers need static shapes")
        return View(buf, alloc, strides, buf.elem_offset)  # type: ignore[arg-type]

    def reads(self, node: Any) -> bool:
        """Whether ``node`` (an expression or statement) loads per-core memory: a value
        that differs between cores as much as the core id does."""
        hit: list = []

        def visit(n: Any) -> None:
            if isinstance(n, tirx.BufferLoad) and self.is_per_core(n.buffer):
                hit.append(n)

        stmt = node if isinstance(node, tirx.Stmt) else tirx.Evaluate(node)
        tirx.stmt_functor.post_order_visit(stmt, visit)
        return bool(hit)
