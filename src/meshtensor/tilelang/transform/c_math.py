"""``CMathCalls``: the math intrinsics run on the C back end.

TVM's C code generator (TileLang's ``c`` target) prints a math intrinsic (``T.exp``,
``T.exp2``, ``T.log``, ``T.sqrt``, ``T.tanh``, ``T.abs`` of a float, ...) as the C
library's function for ``float32`` and ``float64`` scalars only. Three cases stop with
``InternalError: Unresolved call tirx.exp2`` (stock ``tilelang.compile`` too), and
this pass writes each in a form it prints, with the same value:

- a ``float16`` call: TileLang's CUDA half intrinsics compute it in float32 and round
  the result to float16 once, and so does the rewrite (each float16 argument
  converted to float32, exactly; the call in float32; the result converted back,
  round to nearest even);
- ``fabs`` (``T.abs`` of a float) and ``fmod``, which the generator has no name for:
  the C library's ``fabsf`` / ``fabs`` and ``fmodf`` / ``fmod``, which is what they
  mean (``-0.0`` and NaN included; C's remainder is exact);
- a call in a ``T.Parallel`` or vectorized loop, which TileLang would make a vector
  call the generator cannot print: the loop runs as the serial loop it means (its
  iterations are independent, so the order changes no value).

- TileLang's IEEE intrinsics (``T.ieee_frcp``, ``T.ieee_fsqrt``, ``T.ieee_add`` ...)
  in round-to-nearest: C's own ``float32``/``float64`` operation (``1 / x``,
  ``sqrtf``, ``fmaf``), which IEEE 754 rounds correctly; another rounding mode is a
  ``ValueError``.

Other calls are left as written. ``bfloat16`` and the float8 kinds are the narrow-float
lowering's (:mod:`.narrow_float`), which already computes in float32.
"""

from typing import Any

import tvm
from tvm import tirx

__all__ = ["CMathCalls", "c_math_calls", "c_math_call", "MATH_OPS", "IEEE_OPS"]

#: TVM's float intrinsics (what ``T.exp`` and the others build; ``fabs`` is ``T.abs``)
MATH_OPS = frozenset(f"tirx.{n}" for n in (
    "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
    "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh",
    "acosh", "atanh", "erf", "sigmoid", "fabs", "floor", "ceil", "round", "trunc",
    "nearbyint", "pow", "fmod", "atan2", "hypot", "copysign", "nextafter", "ldexp"))


def _scalar(dtype: Any) -> str:
    return str(tvm.runtime.DataType(str(dtype)).with_lanes(1))


def _is_math(n: Any) -> bool:
    return isinstance(n, tirx.Call) and getattr(n.op, "name", None) in MATH_OPS


def _fabs(x: tirx.PrimExpr) -> tirx.PrimExpr:
    name = {"float32": "fabsf", "float64": "fabs"}.get(str(x.dtype))
    return tirx.call_pure_extern(str(x.dtype), name, x) if name else tirx.abs(x)


#: TileLang's IEEE intrinsics with a rounding mode (``T.ieee_frcp`` and the others):
#: the C operation each is in round-to-nearest, IEEE 754's correctly rounded result
IEEE_OPS = {"tl.ieee_add": lambda a: a[0] + a[1], "tl.ieee_sub": lambda a: a[0] - a[1],
            "tl.ieee_mul": lambda a: a[0] * a[1], "tl.ieee_fdiv": lambda a: a[0] / a[1],
            "tl.ieee_frcp": lambda a: tirx.const(1, a[0].dtype) / a[0],
            "tl.ieee_fsqrt": lambda a: _libm("sqrt", a[0]),
            "tl.ieee_fmaf": lambda a: _libm("fma", *a)}


def _libm(name: str, *args: tirx.PrimExpr) -> tirx.PrimExpr:
    dtype = str(args[0].dtype)
    return tirx.call_pure_extern(dtype, name + ("f" if dtype == "float32" else ""), *args)


def _ieee(call: Any) -> Any:
    """A ``tl.ieee_*`` call in round-to-nearest on ``float32``/``float64``: C's own
    operation (IEEE 754, correctly rounded); another rounding mode or dtype has no C
    form here: a ValueError naming it."""
    name = call.op.name
    *args, mode = call.args
    dtype = _scalar(call.dtype)
    mode = getattr(mode, "value", str(mode))
    if mode != "rn" or dtype not in ("float32", "float64"):
        raise ValueError(
            f"T.{name[3:]}(..., rounding_mode={mode!r}) on {call.dtype} has no C form "
            f"here: the C back end runs only 'rn' (round to nearest, C's own float32 and "
            f"float64 arithmetic); write rounding_mode='rn', or the plain operator")
    return IEEE_OPS[name](list(args))


def _rewrite(call: Any) -> Any:
    if isinstance(call, tirx.Call) and getattr(call.op, "name", None) in IEEE_OPS:
        return _ieee(call)
    if not _is_math(call):
        return None
    if call.op.name == "tirx.fmod" and _scalar(call.dtype) in ("float32", "float64"):
        return _libm("fmod", *call.args)  # (TVM has no C rule for it; C's is exact)
    half = _scalar(call.dtype) == "float16"
    if not half and call.op.name != "tirx.fabs":
        return None
    args = [tirx.Cast("float32", a) if _scalar(a.dtype) == "float16" else a
            for a in call.args]
    dtype = "float32" if half else call.dtype
    out = _fabs(args[0]) if call.op.name == "tirx.fabs" else tirx.Call(dtype, call.op, args)
    return tirx.Cast(call.dtype, out) if half else out


def c_math_call(call: tirx.Call) -> tirx.PrimExpr:
    """``call`` in the form the C code generator prints, with the same value (the
    narrow-float lowering builds its ``float32`` calls after this pass ran).

    >>> import tilelang
    >>> str(c_math_call(tirx.abs(tirx.Var("x", "float32"))))
    'T.call_pure_extern("float32", "fabsf", x)'
    """
    out = _rewrite(call)
    return call if out is None else out


def _has_math(stmt: tirx.Stmt) -> bool:
    found: list = []
    tirx.stmt_functor.post_order_visit(stmt, lambda n: found.append(n) if _is_math(n)
                                       else None)
    return bool(found)


def _serial(loop: Any) -> Any:
    if not isinstance(loop, tirx.For) or loop.kind not in (
            tirx.ForKind.PARALLEL, tirx.ForKind.VECTORIZED) or not _has_math(loop.body):
        return None
    return tirx.For(loop.loop_var, loop.min, loop.extent, tirx.ForKind.SERIAL, loop.body,
                    loop.thread_binding, loop.annotations)


def c_math_calls(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """The function form of :func:`CMathCalls`.

    >>> import tilelang
    >>> import tilelang.language as T
    >>> @T.prim_func
    ... def k(X: T.Tensor((4,), "float16"), Y: T.Tensor((4,), "float32")):
    ...     with T.Kernel(1, threads=1) as bx:
    ...         X[0] = T.exp2(X[1])
    ...         Y[0] = T.abs(Y[1])
    >>> text = c_math_calls(k).script()
    >>> 'T.Cast("float16", T.exp2(T.Cast("float32", X[1])))' in text
    True
    >>> 'T.call_pure_extern("float32", "fabsf", Y[1])' in text
    True
    """
    body = tirx.stmt_functor.ir_transform(func.body, None, _serial, ["tirx.For"])
    body = tirx.stmt_functor.ir_transform(body, None, _rewrite, ["tirx.Call"])
    return func if body.same_as(func.body) else func.with_body(body)


def CMathCalls() -> tvm.transform.Pass:  # noqa: N802 (TVM naming)
    """The ``prim_func_pass`` ``"meshtensor.CMathCalls"`` (module docstring).

    >>> CMathCalls().info.name
    'meshtensor.CMathCalls'
    """
    return tirx.transform.prim_func_pass(lambda f, m, c: c_math_calls(f), opt_level=0,
                                         name="meshtensor.CMathCalls")
