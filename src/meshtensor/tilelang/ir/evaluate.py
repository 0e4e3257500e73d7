"""The one evaluator of a kernel's integer TIR expressions: :func:`static_int` for a
constant, :func:`eval_np` with NumPy over every point at which a statement executes
(the launch grid times its enclosing loops, with ``let`` bindings and ``if``
conditions applied). Every mesh pass reads copy offsets, comm-op regions and roots
through it; nothing is compiled.

Every value is computed in its expression's own dtype, as the generated C computes it:
a cast to a narrower integer wraps (gcc's conversion, two's complement), unsigned 32-
and 64-bit arithmetic wraps; signed arithmetic that overflows its dtype (undefined in
C), or arithmetic in an 8- or 16-bit dtype whose value leaves it (TVM's dtype says it
wraps, the C code computes it in ``int``), raises :class:`Overflow`, a ``ValueError``
that callers never treat as "cannot evaluate": it refuses the statement.

A point is one execution of the statement: one value of every enclosing loop variable.
Loop bounds are evaluated in the enclosing environment (a bound may use outer loops or
lets: ragged spaces), and points whose enclosing conditions do not hold are dropped.
The :class:`~.launch.Launch` says which core executes a point (decision 17 in
docs/decisions.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from tvm import tirx

from ...mesh import _is_int
from .expr import int_bits, static_int
from .scope import Cond, CopyRegion, Let, WhileLoop

_ARITH = {
    tirx.Add: np.add, tirx.Sub: np.subtract, tirx.Mul: np.multiply,
    tirx.Min: np.minimum, tirx.Max: np.maximum,
    tirx.EQ: np.equal, tirx.NE: np.not_equal, tirx.LT: np.less, tirx.LE: np.less_equal,
    tirx.GT: np.greater, tirx.GE: np.greater_equal,
    tirx.And: np.logical_and, tirx.Or: np.logical_or,
}
_DIVS = (tirx.Div, tirx.Mod, tirx.FloorDiv, tirx.FloorMod)
#: bitwise calls (WrapNarrowingCasts writes a narrowing cast's wrap with bitwise_and)
_BITWISE = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
            "bitwise_xor": np.bitwise_xor, "shift_right": np.right_shift,
            "shift_left": np.left_shift}
_WRAPPING = (tirx.Add, tirx.Sub, tirx.Mul)


class Overflow(ValueError):
    """An integer expression's value leaves its dtype where C does not define (or does
    not compute) the wrapped value: the statement holding it is refused."""


def _wrap(v: Any, bits: int, signed: bool) -> Any:
    """``v`` modulo ``2**bits``, as a ``bits``-bit (un)signed integer."""
    if bits >= 64 and signed:
        return v
    if isinstance(v, np.ndarray):
        if bits == 64:  # uint64: NumPy's int64 cannot hold it; keep the two's complement
            return v
        m = np.int64(1) << bits
        w = np.mod(v, m)
        return np.where(w >= (m >> 1), w - m, w) if signed else w
    m = 1 << bits
    w = int(v) % m
    return w - m if signed and w >= m >> 1 else w


def _fits(v: Any, bits: int, signed: bool) -> bool:
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if isinstance(v, np.ndarray):
        return bool(v.size == 0 or (v.min() >= lo and v.max() <= hi))
    return lo <= int(v) <= hi


def _in_dtype(expr: Any, v: Any) -> Any:
    """An arithmetic result in ``expr``'s dtype, as the C code computes it."""
    t = int_bits(expr.dtype)
    if t is None or isinstance(v, (bool, np.bool_)) or \
            (isinstance(v, np.ndarray) and v.dtype == bool):
        return v
    bits, signed = t
    if _fits(v, bits, signed):
        return v
    if not signed and bits >= 32:
        return _wrap(v, bits, signed)  # C's unsigned arithmetic wraps
    why = "undefined in C" if bits >= 32 else \
        f"C computes it in int, where TVM's {expr.dtype} wraps"
    raise Overflow(f"{expr} overflows {expr.dtype} ({why}); compute it in a wider dtype")


def _int64(x: Any) -> np.ndarray:
    return np.asarray(x).astype(np.int64, copy=False)


def _divide(expr: Any, a: Any, b: Any) -> np.ndarray:
    """Exact int64 division: ``Div``/``Mod`` truncate toward zero (C), ``FloorDiv``/
    ``FloorMod`` round down (Python)."""
    a, b = _int64(a), _int64(b)
    if np.any(b == 0):
        raise ValueError(f"division by zero in {expr}")
    q = np.floor_divide(a, b)
    if isinstance(expr, (tirx.Div, tirx.Mod)):
        q = q + ((a - q * b != 0) & ((a < 0) != (b < 0)))
    return q if isinstance(expr, (tirx.Div, tirx.FloorDiv)) else a - q * b


def _lookup(var: tirx.Var, env: dict) -> Any:
    try:
        return env[var]
    except (KeyError, TypeError):
        pass
    for k, v in env.items():
        if k.same_as(var):
            return v
    raise ValueError(f"free variable {var.name} (bound: {sorted(k.name for k in env)})")


def _select(cond: Any, t: Any, f: Any, env: dict) -> Any:
    """``cond ? t : f`` evaluating each branch only at the points that take it (a guard
    such as ``k > 0 ? 8 // k : 0`` must not divide by zero where ``k == 0``)."""
    c = _eval(cond, env)
    if not isinstance(c, np.ndarray) or c.ndim == 0:
        return _eval(t if bool(c) else f, env)
    c = np.asarray(c, dtype=bool)
    arrays = [v for v in env.values() if isinstance(v, np.ndarray) and v.ndim > 0]
    if any(v.shape != c.shape for v in arrays):
        return np.where(c, _eval(t, env), _eval(f, env))  # mixed shapes: both branches
    parts = []
    for mask, branch in ((c, t), (~c, f)):
        idx = np.flatnonzero(mask.ravel())
        if len(idx):
            sub = {k: (v.ravel()[idx] if isinstance(v, np.ndarray) and v.ndim > 0 else v)
                   for k, v in env.items()}
            parts.append((idx, np.broadcast_to(np.asarray(_eval(branch, sub)), idx.shape)))
    out = np.empty(c.size, dtype=np.result_type(*[v for _, v in parts]))
    for idx, v in parts:
        out[idx] = v
    return out.reshape(c.shape)


def _eval(expr: Any, env: dict) -> Any:
    if isinstance(expr, (bool, np.bool_)):
        return bool(expr)
    if isinstance(expr, (int, np.integer)):
        return int(expr)
    if isinstance(expr, tirx.IntImm):
        return bool(expr.value) if expr.dtype == "bool" else int(expr.value)
    if isinstance(expr, tirx.Var):
        return _lookup(expr, env)
    fn = _ARITH.get(type(expr))
    if fn is not None:
        v = fn(_eval(expr.a, env), _eval(expr.b, env))
        return _in_dtype(expr, v) if isinstance(expr, _WRAPPING) else v
    if isinstance(expr, _DIVS):
        return _in_dtype(expr, _divide(expr, _eval(expr.a, env), _eval(expr.b, env)))
    if isinstance(expr, tirx.Not):
        return np.logical_not(_eval(expr.a, env))
    if isinstance(expr, tirx.Select):
        return _select(expr.condition, expr.true_value, expr.false_value, env)
    if is_if_then_else(expr):
        c, t, f = expr.args
        return _select(c, t, f, env)
    if isinstance(expr, tirx.Call) and len(expr.args) == 2:
        fn = _BITWISE.get(str(getattr(expr.op, "name", "")).split(".")[-1])
        if fn is not None:
            a, b = (_int64(_eval(x, env)) for x in expr.args)
            t = int_bits(expr.dtype)
            if fn in (np.left_shift, np.right_shift):
                bits = t[0] if t else 64
                if np.any((b < 0) | (b >= bits)):
                    raise Overflow(f"a shift by {b} in {expr}: C leaves a shift by a "
                                   f"negative amount or by {bits} or more undefined")
                if fn is np.right_shift and t is not None and not t[1]:
                    # unsigned: a logical shift (a uint64 value is held in two's complement)
                    return (np.asarray(a).astype(np.uint64) >> np.asarray(b).astype(
                        np.uint64)).astype(np.int64)
            v = fn(a, b)
            return _in_dtype(expr, v) if fn is np.left_shift else v
    if isinstance(expr, tirx.Let):
        return _eval(expr.body, {**env, expr.var: _eval(expr.value, env)})
    if isinstance(expr, tirx.Cast):
        v = _eval(expr.value, env)
        if expr.dtype == "bool":
            return np.not_equal(v, 0)
        t = int_bits(expr.dtype)
        if t is not None:
            # a conversion to a narrower integer wraps (gcc: modulo 2**bits)
            return _int64(v) if _fits(v, *t) else _wrap(_int64(v), *t)
    raise ValueError(f"cannot evaluate {type(expr).__name__} {expr}")


def is_if_then_else(expr: Any) -> bool:
    """Whether ``expr`` is a call of ``T.if_then_else`` (its op is ``tirx.`` in the TVM
    that TileLang bundles, ``tir.`` in others).

    >>> import tilelang
    >>> from tvm import tirx
    >>> x = tirx.Var("x", "int32")
    >>> is_if_then_else(tirx.if_then_else(x == 0, 1, 2)), is_if_then_else(x + 1)
    (True, False)
    """
    return isinstance(expr, tirx.Call) and \
        getattr(expr.op, "name", None) in ("tirx.if_then_else", "tir.if_then_else")


def eval_np(expr: Any, env: dict) -> np.ndarray | int:
    """The value of an integer or boolean TIR expression with NumPy arrays (or ints)
    bound to its variables in ``env``: an int (or bool) when it is constant, else an
    array (int64, or bool for conditions) broadcast over ``env``'s points.

    Arithmetic is in each expression's dtype, as the C code computes it (see the
    module docstring): ``Div``/``Mod`` truncate toward zero as in C, ``FloorDiv``/
    ``FloorMod`` round down, a narrowing integer cast wraps. Comparisons, ``And``/
    ``Or``/``Not``, ``Select``, ``if_then_else``, ``Let``, integer casts and the bitwise
    calls (``bitwise_and``/``or``/``xor``, shifts) are understood. Raises
    ``ValueError`` for a free variable, a division by zero or anything else, and
    :class:`Overflow` for a value C leaves undefined.

    >>> import tilelang
    >>> from tvm import tirx
    >>> i = tirx.Var("i", "int32")
    >>> eval_np(tirx.Div(i - 7, 2), {i: np.arange(3)}).tolist()
    [-3, -3, -2]
    >>> eval_np(tirx.Cast("int16", i * 20000), {i: np.arange(3)}).tolist()  # wraps
    [0, 20000, -25536]
    """
    v = _eval(expr, env)
    if isinstance(v, np.ndarray) and v.ndim == 0 or isinstance(v, np.generic):
        v = v.item()
    return v


@dataclass(frozen=True, eq=False)
class IterSpace:
    """Every point at which one statement executes: ``env`` maps each enclosing loop
    variable (launch loops included) and each evaluable let to an array with one value
    per point, ``core`` is the linear id of the core executing each point, ``size`` the
    number of points."""

    env: dict
    core: np.ndarray
    size: int

    def value(self, expr: Any) -> np.ndarray:
        """``expr`` evaluated at every point (int64 array of length ``size``)."""
        return np.broadcast_to(_int64(eval_np(expr, self.env)), (self.size,))

    def timestamps(self, order: tuple) -> np.ndarray:
        """The program-order key of every point: ``(size, len(order))`` int64, one column
        per item of a statement's ``order`` (a position, or a loop variable's value).
        Keys of two statements of one kernel compare lexicographically as their
        executions run on one core."""
        cols = [np.full(self.size, v, dtype=np.int64) if isinstance(v, int) else
                np.broadcast_to(_int64(self.env[v]), (self.size,)) for v in order]
        return np.stack(cols, axis=1) if cols else np.zeros((self.size, 0), dtype=np.int64)


def _subset(env: dict, idx: np.ndarray) -> dict:
    return {k: v[idx] for k, v in env.items()}


def iteration_space(found: Any, launch: Any, where: str) -> IterSpace:
    """The :class:`IterSpace` of a statement found by :func:`~.scope.find_calls` (any
    object with a ``scope``: loops, :class:`~.scope.Let` and :class:`~.scope.Cond`
    items, outermost first) in a kernel launched as ``launch``.

    Each loop's ``min``/``extent`` is evaluated at the points built so far (so it may
    depend on outer loops and lets), each let is bound in order (one that cannot be
    evaluated, such as ``launch_thread_idx``, stays unbound: an error only if used),
    each condition keeps only the points in the statement's branch, and a ``while``
    loop is refused (its trip count is data-dependent). ``ValueError`` names ``where``.

    >>> import tilelang
    >>> from tvm import tirx
    >>> from meshtensor import Mesh
    >>> from meshtensor.tilelang.ir.launch import Launch
    >>> from meshtensor.tilelang.ir.scope import Cond, Found
    >>> i, j = tirx.Var("i", "int32"), tirx.Var("j", "int32")
    >>> inner = tirx.For(j, 0, i + 1, tirx.ForKind.SERIAL, tirx.Evaluate(0))  # ragged
    >>> outer = tirx.For(i, 0, 3, tirx.ForKind.SERIAL, inner)
    >>> one_core = Launch(Mesh({"x": 1}), (), False)
    >>> s = iteration_space(Found(None, (outer, inner, Cond(j > 0, True))), one_core, "ex")
    >>> s.size, s.env[i].tolist(), s.env[j].tolist()
    (3, [1, 2, 2], [1, 1, 2])
    """
    env: dict = {}
    size = 1
    for item in tuple(found.scope):
        if isinstance(item, tirx.For):
            name = item.loop_var.name
            try:
                lo = np.broadcast_to(_int64(eval_np(item.min, env)), (size,))
                n = np.broadcast_to(_int64(eval_np(item.extent, env)), (size,))
            except Overflow as err:
                raise Overflow(f"{where}: {err}") from None
            except ValueError as err:
                raise ValueError(f"{where}: loop {name} has a symbolic range [{item.min}, "
                                 f"{item.min} + {item.extent}) ({err}); bind the shapes "
                                 f"first") from None
            counts = np.maximum(n, 0)
            idx = np.repeat(np.arange(size), counts)
            first = np.cumsum(counts) - counts
            env = _subset(env, idx)
            env[item.loop_var] = lo[idx] + (np.arange(len(idx)) - first[idx])
            size = len(idx)
        elif isinstance(item, Let):
            try:
                env[item.var] = np.broadcast_to(_int64(eval_np(item.value, env)), (size,)).copy()
            except Overflow as err:
                raise Overflow(f"{where}: {err}") from None
            except ValueError:
                pass  # e.g. launch_thread_idx: an error only if a later expression uses it
        elif isinstance(item, Cond):
            try:
                c = np.broadcast_to(np.asarray(eval_np(item.expr, env), dtype=bool), (size,))
            except Overflow as err:
                raise Overflow(f"{where}: {err}") from None
            except ValueError as err:
                raise ValueError(f"{where}: cannot evaluate the condition {item.expr} "
                                 f"enclosing a statement ({err})") from None
            keep = np.flatnonzero(c if item.taken else ~c)
            env, size = _subset(env, keep), len(keep)
        elif isinstance(item, WhileLoop):
            raise ValueError(f"{where}: a statement inside `while {item.expr}` runs a "
                             f"data-dependent number of times; use a for loop")
    missing = [v.name for v in launch.vars if v not in env]
    if missing:
        raise ValueError(f"{where}: the statement lies outside the kernel's launch "
                         f"(T.Kernel block indices {missing} are not in scope)")
    return IterSpace(env, launch.core_of(env, size), size)


def region_box(region: CopyRegion, space: IterSpace, where: str) -> tuple[np.ndarray, np.ndarray]:
    """The box ``[lo, hi)`` a region covers at every point of ``space``: two
    ``(space.size, rank)`` int64 arrays (starts and extents may use loop variables).

    >>> import tilelang
    >>> from tvm import tirx
    >>> from meshtensor.tilelang.ir.scope import CopyRegion
    >>> i = tirx.Var("i", "int32")
    >>> buf = tirx.decl_buffer((8, 8), "float32", "A")
    >>> s = IterSpace({i: np.arange(2)}, np.zeros(2, dtype=np.int64), 2)
    >>> lo, hi = region_box(CopyRegion(buf, (i * 4, 0), (4, 8)), s, "example")
    >>> lo.tolist(), hi.tolist()
    ([[0, 0], [4, 0]], [[4, 8], [8, 8]])
    """
    def column(exprs, what):
        try:
            return [space.value(x) for x in exprs]
        except Overflow as err:
            raise Overflow(f"{where}: {err}") from None
        except ValueError as err:
            raise ValueError(f"{where}: the {what} of a region of {region.buffer.name!r} "
                             f"cannot be evaluated ({err})") from None

    starts = column(region.starts, "start")
    extents = column(region.extents, "extent")
    lo = np.stack(starts, axis=1) if starts else np.zeros((space.size, 0), dtype=np.int64)
    ext = np.stack(extents, axis=1) if extents else np.zeros((space.size, 0), dtype=np.int64)
    return lo, lo + ext
