"""The one resolver of "a kernel" to its PrimFunc, shared by every pass and analysis."""

from __future__ import annotations

from typing import Any

from tvm import tirx

from .names import ATTR_KEY, is_comm_call
from .scope import find_calls

__all__ = ["prim_func"]


def prim_func(func: Any, where: str) -> tirx.PrimFunc:
    """The PrimFunc of a kernel given as a PrimFunc, a compiled ``JITKernel`` or
    ``MeshKernel`` (its ``prim_func``: for a ``MeshKernel``, the source with comm ops
    intact), or an IRModule (its one function with mesh annotations or comm ops, else
    its only PrimFunc). ``where`` names the caller in errors.

    >>> import tilelang
    >>> import tvm
    >>> from meshtensor.tilelang.kernels.gemm import build_gemm
    >>> f = build_gemm("summa_comm", 32, 32, 32)
    >>> prim_func(tvm.IRModule({"main": f}), "example").same_as(f)
    True
    """
    if isinstance(func, tirx.PrimFunc):
        return func
    pf = getattr(func, "prim_func", None)
    if isinstance(pf, tirx.PrimFunc):
        return pf
    funcs = getattr(func, "functions", None)
    if funcs is None:
        raise TypeError(f"{where}: expected a PrimFunc, JITKernel, MeshKernel or IRModule, "
                        f"got {type(func).__name__}")
    prims = [f for f in funcs.values() if isinstance(f, tirx.PrimFunc)]
    mesh = [f for f in prims if (f.attrs is not None and ATTR_KEY in f.attrs)
            or find_calls(f, is_comm_call)]
    pick = mesh or prims
    if len(pick) != 1:
        names = [str(g.name_hint) for g, f in funcs.items() if any(f.same_as(p) for p in pick)]
        raise ValueError(f"{where}: the module has {len(pick)} candidate functions "
                         f"{names}; pass one PrimFunc")
    return pick[0]
