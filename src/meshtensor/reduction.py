"""Element-wise reductions shared by partial shardings and reducing collectives."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .sharding import REDUCTION_KINDS

_UFUNCS = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}


def check_reduction(op: str, kind: str) -> str:
    """Validate a reduction kind; ``op`` names the caller in the error."""
    if kind not in _UFUNCS:
        raise ValueError(f"{op}: reduction {kind!r} is not one of {list(REDUCTION_KINDS)}")
    return kind


def check_accumulation(op: str, src, dst, *, safe: bool | None = None) -> None:
    """Refuse a reduction result dtype ``dst`` that cannot hold every ``src`` value.

    The rule is NumPy's ``"safe"`` casting (MLIR allows only a wider accumulation
    type): widening (int8 -> int32, float32 -> float64, int16 -> float32) passes;
    narrowing, float -> int and signed -> unsigned raise, instead of silently wrapping
    (int32 300 -> int8 44). ``safe`` overrides NumPy's verdict for dtypes NumPy lacks
    (torch's bfloat16); ``op`` names the caller in the error.

    >>> check_accumulation("all_reduce", np.dtype("int8"), np.dtype("int32"))
    >>> check_accumulation("all_reduce", np.dtype("int32"), np.dtype("int8"))
    Traceback (most recent call last):
    ...
    ValueError: all_reduce: dtype int8 cannot hold every int32 input value; ...
    """
    if safe is None:
        safe = bool(np.can_cast(src, dst, casting="safe"))
    if not safe:
        raise ValueError(f"{op}: dtype {dst} cannot hold every {src} input value; the result "
                         f"dtype must hold every input value (NumPy 'safe' casting: only a "
                         f"wider accumulation type, as in MLIR); pass dtype=None or a dtype "
                         f"at least as wide as {src}")


def identity(kind: str, dtype: np.dtype) -> np.generic:
    """The identity of a reduction in ``dtype`` (max: -inf or the dtype's minimum).

    >>> identity("max", np.dtype("int8"))
    np.int8(-128)
    """
    dtype = np.dtype(dtype)
    if kind == "sum":
        return dtype.type(0)
    if kind == "prod":
        return dtype.type(1)
    if dtype.kind == "f":
        return dtype.type(-np.inf if kind == "max" else np.inf)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return dtype.type(info.min if kind == "max" else info.max)
    if dtype.kind == "b":
        return dtype.type(kind == "min")
    raise TypeError(f"no identity for reduction {kind!r} in dtype {dtype}")


def reduce_arrays(arrays: Sequence[np.ndarray], kind: str, dtype: np.dtype | None = None
                  ) -> np.ndarray:
    """Reduce equally shaped arrays element-wise, accumulating in ``dtype``.

    Each input is converted to ``dtype`` first (MLIR's rule for a wider result type);
    a ``dtype`` that cannot hold every input value raises (see :func:`check_accumulation`).

    >>> reduce_arrays([np.int8([100]), np.int8([100])], "sum", np.int32)
    array([200], dtype=int32)
    """
    dtype = np.dtype(dtype if dtype is not None else arrays[0].dtype)
    for src in {np.dtype(a.dtype) for a in arrays}:
        check_accumulation("reduce_arrays", src, dtype)
    out = np.array(arrays[0], dtype=dtype, copy=True)
    ufunc = _UFUNCS[kind]
    for a in arrays[1:]:
        ufunc(out, a.astype(dtype, copy=False), out=out)
    return out
