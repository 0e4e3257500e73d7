"""``WrapNarrowingCasts``: a cast to a narrower integer type, written so that TVM never
sees it overflow.

In C (and in :mod:`~meshtensor.tilelang.ir.evaluate`), ``(int16_t)x`` wraps ``x``
modulo 2**16. TVM's simplifier instead folds such a cast of a value it knows and
builds the literal unwrapped: TileLang 0.1.15's CPU pipeline then stops with "Literal
value 9985 exceeds maximum of uint8" on a kernel whose C code is well defined. This pass
writes the wrap out in the wider type first, so the cast's operand is always in range:

- unsigned ``n`` bits: ``x & (2**n - 1)``;
- signed ``n`` bits: ``((x + 2**(n-1)) & (2**n - 1)) - 2**(n-1)``.

Both equal C's conversion for every ``x`` (two's complement); floating-point casts and
widening casts are left alone.
"""

from __future__ import annotations

from typing import Any

import tvm
from tvm import tirx

from ..ir.expr import int_bits

__all__ = ["WrapNarrowingCasts", "wrap_narrowing_casts"]


def _wrapped(cast: tirx.Cast) -> tirx.PrimExpr | None:
    to, frm = int_bits(cast.dtype), int_bits(cast.value.dtype)
    if to is None or frm is None or to[0] >= frm[0] or frm[0] > 64:
        return None
    bits, signed = to
    x = cast.value
    mask = tirx.const((1 << bits) - 1, x.dtype)
    if not signed:
        return tirx.Cast(cast.dtype, tirx.bitwise_and(x, mask))
    half = tirx.const(1 << (bits - 1), x.dtype)
    return tirx.Cast(cast.dtype, tirx.bitwise_and(x + half, mask) - half)


def wrap_narrowing_casts(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """The function form of :func:`WrapNarrowingCasts`.

    >>> import tilelang
    >>> from tvm import tirx
    >>> i = tirx.Var("i", "int32")
    >>> f = tirx.PrimFunc([i], tirx.Evaluate(tirx.Cast("uint8", i * 256 + 1)))
    >>> print(wrap_narrowing_casts(f).body.value)
    T.Cast("uint8", T.bitwise_and(i * 256 + 1, 255))
    """
    def post(n: Any) -> Any:
        return _wrapped(n)

    body = tirx.stmt_functor.ir_transform(func.body, None, post, ["tirx.Cast"])
    return func if body.same_as(func.body) else func.with_body(body)


def WrapNarrowingCasts() -> tvm.transform.Pass:  # noqa: N802 (TVM naming)
    """The ``prim_func_pass`` ``"meshtensor.WrapNarrowingCasts"`` (module docstring).

    >>> WrapNarrowingCasts().info.name
    'meshtensor.WrapNarrowingCasts'
    """
    return tirx.transform.prim_func_pass(lambda f, m, c: wrap_narrowing_casts(f), opt_level=0,
                                         name="meshtensor.WrapNarrowingCasts")
