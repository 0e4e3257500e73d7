"""The one reduction type of the package: every reduction kind, declared once.

A :class:`Reduction` names the binary operation it folds with, whether it folds
absolute values, its identity, and the dialects that have it: MLIR's ``shard`` dialect
(partial shardings, the host collectives, ``mesh_comm``: sum, max, min, prod) and
SUNMMIO's ``T.comm`` (sum, abssum, max, min, absmax, bitand, bitor, bitxor). The NumPy
simulator, ``meshtensor.dist``, the TIR lowering and the models all read these records;
each maps :attr:`Reduction.op` to its own arithmetic.

>>> REDUCTIONS["absmax"].op, REDUCTIONS["absmax"].absolute
('max', True)
>>> kinds("shard")
('sum', 'max', 'min', 'prod')
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Sequence

import numpy as np

__all__ = ["Reduction", "REDUCTIONS", "REDUCTION_KINDS", "kinds", "get_reduction",
           "check_reduction", "check_accumulation", "identity", "reduce_arrays"]


@dataclass(frozen=True)
class Reduction:
    """One reduction kind: ``op`` is the binary operation (``add``, ``mul``, ``max``,
    ``min``, ``and``, ``or``, ``xor``), ``absolute`` folds ``|x|``, ``integer_only``
    refuses floats, ``dialects`` the front ends that have it."""

    name: str
    op: str
    absolute: bool = False
    integer_only: bool = False
    dialects: frozenset = frozenset({"shard"})

    @property
    def ufunc(self) -> np.ufunc:
        """The NumPy form of :attr:`op`."""
        return _UFUNC[self.op]

    def identity(self, dtype: np.dtype) -> np.generic:
        """The value every fold of this kind starts from, in ``dtype`` (max: -inf or
        the dtype's minimum; bitand: all bits set).

        >>> REDUCTIONS["max"].identity(np.dtype("int8"))
        np.int8(-128)
        """
        dtype = np.dtype(dtype)
        if self.op in ("add", "or", "xor"):
            return dtype.type(0)
        if self.op == "mul":
            return dtype.type(1)
        if self.op == "and":
            return dtype.type(np.iinfo(dtype).max if dtype.kind == "u" else -1)
        if dtype.kind == "f":
            return dtype.type(-np.inf if self.op == "max" else np.inf)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            return dtype.type(info.min if self.op == "max" else info.max)
        if dtype.kind == "b":
            return dtype.type(self.op == "min")
        raise TypeError(f"no identity for reduction {self.name!r} in dtype {dtype}")


_UFUNC = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
          "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}
_BOTH = frozenset({"shard", "T.comm"})
_FORK = frozenset({"T.comm"})

#: every reduction kind, by name
REDUCTIONS: Mapping[str, Reduction] = MappingProxyType({r.name: r for r in (
    Reduction("sum", "add", dialects=_BOTH),
    Reduction("abssum", "add", absolute=True, dialects=_FORK),
    Reduction("max", "max", dialects=_BOTH),
    Reduction("min", "min", dialects=_BOTH),
    Reduction("absmax", "max", absolute=True, dialects=_FORK),
    Reduction("prod", "mul"),
    Reduction("bitand", "and", integer_only=True, dialects=_FORK),
    Reduction("bitor", "or", integer_only=True, dialects=_FORK),
    Reduction("bitxor", "xor", integer_only=True, dialects=_FORK),
)})


def kinds(dialect: str) -> tuple[str, ...]:
    """The reduction kinds of a dialect (``"shard"`` or ``"T.comm"``), in order."""
    return tuple(n for n, r in REDUCTIONS.items() if dialect in r.dialects)


#: the kinds of MLIR's ``shard`` dialect: partial shardings and the collectives
REDUCTION_KINDS = kinds("shard")


def get_reduction(op: str, kind: str, dialect: str = "shard") -> Reduction:
    """The :class:`Reduction` named ``kind``; ``ValueError`` naming ``op`` (the caller)
    when ``dialect`` has no such kind.

    >>> get_reduction("all_reduce", "mean")
    Traceback (most recent call last):
    ...
    ValueError: all_reduce: reduction 'mean' is not one of ['sum', 'max', 'min', 'prod']
    """
    allowed = kinds(dialect)
    if kind not in allowed:
        raise ValueError(f"{op}: reduction {kind!r} is not one of {list(allowed)}")
    return REDUCTIONS[kind]


def check_reduction(op: str, kind: str) -> str:
    """Validate a reduction kind of the ``shard`` dialect; ``op`` names the caller."""
    return get_reduction(op, kind).name


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
    return REDUCTIONS[kind].identity(dtype)


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
    r = REDUCTIONS[kind]
    prep = np.abs if r.absolute else (lambda a: a)
    out = np.array(prep(arrays[0]), dtype=dtype, copy=True)
    for a in arrays[1:]:
        r.ufunc(out, prep(a).astype(dtype, copy=False), out=out)
    return out
