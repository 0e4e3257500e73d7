"""Facts of a single TIR expression: its constant value, its integer dtype's width.

>>> import tilelang
>>> from tvm import tirx
>>> static_int(tirx.IntImm("int32", 4)), static_int(tirx.Var("n", "int32"))
(4, None)
"""

from __future__ import annotations

from typing import Any

from tvm import tirx

from ...mesh import _is_int

__all__ = ["static_int", "int_bits"]


def static_int(x: Any) -> int | None:
    """The value of an int or ``IntImm`` (a constant), else ``None`` (symbolic).

    >>> import tilelang
    >>> from tvm import tirx
    >>> static_int(tirx.IntImm("int32", 4)), static_int(tirx.Var("n", "int32"))
    (4, None)
    """
    if _is_int(x):
        return int(x)
    if isinstance(x, tirx.IntImm):
        return int(x.value)
    return None


def int_bits(dtype: str) -> tuple[int, bool] | None:
    """``(bits, signed)`` of an integer dtype (``None`` for bool and others).

    >>> int_bits("int16"), int_bits("uint8"), int_bits("float32")
    ((16, True), (8, False), None)
    """
    d = str(dtype)
    for prefix, signed in (("int", True), ("uint", False)):
        if d.startswith(prefix) and d[len(prefix):].isdigit():
            return int(d[len(prefix):]), signed
    return None
