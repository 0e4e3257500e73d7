"""``LegalizeNarrowFloats``: bfloat16 and the float8 kinds on TileLang's C back end.

Stock TileLang 0.1.15 lowers a ``bfloat16`` kernel for target ``c`` only as far as TVM's
``BF16ComputeLegalize``, which widens every ``bfloat16`` buffer allocated inside the
kernel to ``float32`` (so values the chip would round are kept at 24 bits) and misses the
allocations TileLang's flattening leaves; the C code generator then has no type for the
parameters ("Cannot convert type bfloat16 to C type"). The float8 kinds fail the same
way. This pass replaces that step of TileLang's CPU pipeline (``engine`` runs it there:
after the tile ops became loads and stores, before vectorisation) and defines the
semantics the chip has, exactly:

- **storage**: every buffer of a narrow dtype (parameters, allocations, views) holds the
  format's bits in an unsigned integer of the same width (``uint16`` for ``bfloat16``,
  ``uint8`` for float8), as torch and ``ml_dtypes`` store them; a value is rounded to
  the format (round to nearest even, as the chip rounds) when it is stored;
- **arithmetic**: an operation whose TIR dtype is narrow is computed in ``float32`` and
  its result rounded to the format, one rounding per operation, as an ``ml_dtypes``
  array computes (``float32`` holds every exact product and correctly rounded sum of
  two narrow values, so this is the correctly rounded narrow operation); an operation
  in another dtype (a ``float32`` accumulator of ``T.gemm``) is computed in that dtype
  on the exact widened operands;
- **conversions**: to a narrow format round to nearest even from the source's own
  value (a ``float64`` or integer source is rounded once, from 64 bits), NaN stays NaN,
  overflow gives infinity where the format has one and NaN where it has none (the
  ``fn``/``fnuz`` kinds), as ``ml_dtypes`` converts; from a narrow format is exact.

Formats: :data:`FORMATS` (``bfloat16``, ``float8_e4m3fn``, ``float8_e5m2``,
``float8_e4m3fnuz``, ``float8_e5m2fnuz``, ``float8_e4m3``, ``float8_e3m4``, and OCP's MX
element and scale kinds ``float4_e2m1fn`` (every code finite, overflow saturates to 6,
one code a byte) and ``float8_e8m0fnu`` (powers of two, ties up, no zero)); another
sub-32-bit float dtype (``float6_*``, the packed ``float4_e2m1fnx2``) is a
``ValueError`` naming it. ``float16`` is left to TileLang (its C header has a type), but
a vectorised loop converting to or from it stays scalar (TileLang's C vector type cannot
convert between element types: ``vec_type<half, 4>(float4)`` does not compile) and is
left to the C compiler's vectoriser.

>>> FORMATS["float8_e4m3fn"].max_finite
448.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import tvm
from tvm import ir, tirx
from tvm.tirx import _ffi_api as _tirx_api

from .c_math import c_math_call

__all__ = ["FORMATS", "NarrowFloat", "narrow_dtypes", "legalize_narrow_floats",
           "LegalizeNarrowFloats", "UNSUPPORTED_NARROW", "f32_const", "exact_float_constants"]

WHERE = "LegalizeNarrowFloats"


@dataclass(frozen=True)
class NarrowFloat:
    """A narrow binary float format: ``exp`` exponent bits, ``man`` mantissa bits,
    ``bias``; ``kind`` ``"ieee"`` (infinities, NaNs with an all-ones exponent), ``"fn"``
    (no infinity, the all-ones code is NaN), ``"fnuz"`` (no infinity, no negative
    zero, the sign bit alone is NaN), ``"sat"`` (every code finite: OCP's
    ``float4_e2m1fn``; overflow saturates) or ``"e8m0"`` (OCP's MX scale
    ``float8_e8m0fnu``: no sign, no mantissa, no zero; code ``c`` is ``2**(c - 127)``,
    ``0xFF`` is NaN)."""

    name: str
    exp: int
    man: int
    bias: int
    kind: str

    @property
    def bits(self) -> int:
        return self.exp + self.man + (self.kind != "e8m0")

    @property
    def storage(self) -> str:
        """The unsigned integer dtype that holds the bits (a 4-bit code: one a byte, as
        ``ml_dtypes`` stores it)."""
        return f"uint{max(self.bits, 8)}"

    @property
    def nan_code(self) -> int:
        """The NaN this pass writes, without the sign (``fnuz``: with it; ``sat``, which
        has none: the code ``ml_dtypes`` gives a positive NaN, ``-0``)."""
        if self.kind == "e8m0":
            return 0xFF
        if self.kind == "ieee":
            return ((1 << self.exp) - 1) << self.man | 1 << (self.man - 1)
        if self.kind == "fn":
            return (1 << (self.exp + self.man)) - 1
        return 1 << (self.exp + self.man)

    @property
    def max_code(self) -> int:
        """The code of the largest finite value, without the sign."""
        if self.kind == "ieee":
            return (((1 << self.exp) - 1) << self.man) - 1
        if self.kind in ("fn", "e8m0"):
            return (1 << (self.exp + self.man)) - 2
        return (1 << (self.exp + self.man)) - 1

    @property
    def overflow_code(self) -> int:
        """What a finite value past ``max_code`` becomes: infinity, NaN, or (``sat``)
        the largest finite value."""
        if self.kind == "sat":
            return self.max_code
        return self.max_code + 1 if self.kind == "ieee" else self.nan_code

    @property
    def max_finite(self) -> float:
        if self.kind == "e8m0":
            return float(2.0 ** (self.max_code - self.bias))
        e, m = self.max_code >> self.man, self.max_code & ((1 << self.man) - 1)
        return float((1 + m / (1 << self.man)) * 2.0 ** (e - self.bias))


FORMATS: dict[str, NarrowFloat] = {f.name: f for f in (
    NarrowFloat("bfloat16", 8, 7, 127, "ieee"),
    NarrowFloat("float8_e4m3fn", 4, 3, 7, "fn"),
    NarrowFloat("float8_e5m2", 5, 2, 15, "ieee"),
    NarrowFloat("float8_e4m3fnuz", 4, 3, 8, "fnuz"),
    NarrowFloat("float8_e5m2fnuz", 5, 2, 16, "fnuz"),
    NarrowFloat("float8_e4m3", 4, 3, 7, "ieee"),
    NarrowFloat("float8_e3m4", 3, 4, 3, "ieee"),
    NarrowFloat("float8_e8m0fnu", 8, 0, 127, "e8m0"),
    NarrowFloat("float4_e2m1fn", 2, 1, 1, "sat"),
)}
#: narrow float dtypes TileLang names that this pass refuses
UNSUPPORTED_NARROW = ("float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fnx2")


def _scalar(dtype: Any) -> str:
    t = tvm.runtime.DataType(str(dtype))
    return str(t.with_lanes(1)) if t.lanes > 1 else str(t)


def _lanes(dtype: Any) -> int:
    return int(tvm.runtime.DataType(str(dtype)).lanes)


def _vec(scalar: str, lanes: int) -> str:
    return scalar if lanes == 1 else f"{scalar}x{lanes}"


def _fmt(dtype: Any) -> NarrowFloat | None:
    name = _scalar(dtype)
    if name in FORMATS:
        return FORMATS[name]
    if name in UNSUPPORTED_NARROW:
        raise ValueError(f"{WHERE}: dtype {name} is not supported on the C back end here "
                         f"(supported narrow floats: {sorted(FORMATS)}); compute in one of "
                         f"those, float16 or float32")
    return None


def _c(value: int | float, dtype: str) -> tirx.PrimExpr:
    if _scalar(dtype) == "float32":
        return f32_const(float(value), _lanes(dtype))
    return tirx.const(value, dtype)


def f32_const(value: float, lanes: int = 1) -> tirx.PrimExpr:
    """A ``float32`` constant that reaches the C code unchanged: TVM's C code generator
    prints float constants with 7 significant digits (``2**-16`` becomes
    ``1.525879e-05f``, another float), so a value those digits do not give back is
    written as its bits.

    >>> import tilelang
    >>> str(f32_const(0.5)), str(f32_const(2.0 ** -16))
    ('T.float32(0.5)', 'T.reinterpret("float32", T.uint32(931135488))')
    """
    v32 = np.float32(value)
    short = np.float32(float(f"{float(v32):.6e}")) if np.isfinite(v32) else v32
    if not np.isfinite(v32) or short.view(np.uint32) != v32.view(np.uint32):
        bits = tirx.const(int(v32.view(np.uint32)), "uint32")
        out = tirx.reinterpret("float32", bits)
    else:
        out = tirx.const(float(v32), "float32")
    return out if lanes == 1 else tirx.Broadcast(out, lanes)


def exact_float_constants(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with every ``float32`` constant written so that the C code reads back
    the float the kernel names (:func:`f32_const`): ``x * 0.18033688`` (a softmax
    scale) reached C as ``x * 1.803369e-01f``, another float, and the kernel computed
    with a constant one unit in the last place away from its own.

    >>> import tilelang
    >>> x = tirx.Var("x", "float32")
    >>> str(exact_float_constants(tirx.Evaluate(x * tirx.const(2.0 ** -16, "float32"))).value)
    'x * T.reinterpret("float32", T.uint32(931135488))'
    """
    def post(n: Any) -> Any:
        if isinstance(n, tirx.FloatImm) and str(n.dtype) == "float32":
            out = f32_const(float(n.value))
            return None if isinstance(out, tirx.FloatImm) else out
        return None

    return tirx.stmt_functor.ir_transform(stmt, None, post, ["ir.FloatImm"])


# -- the conversions, as TIR expressions ------------------------------------------------
def _bound(x: tirx.PrimExpr, body: Any) -> tirx.PrimExpr:
    """``body(v)`` with ``v`` a fresh variable let-bound to ``x``. A conversion
    reinterprets its operand's bits, and TVM's C code generator names a reinterpreted
    expression by its text, then reuses that name for the same text later in the
    kernel: a load of ``A[i]`` reinterpreted after a store to ``A[i]`` read the value
    from before the store. A variable is its own name. And a float8 conversion reads
    its operand several times: an operation nested in ``k`` others of the format, its
    operand unbound, was written about ``5 ** k`` times (softplus in bfloat16 did not
    finish compiling). A bfloat16 code computed by a rounding is read once and is not
    bound: binding it made TileLang's passes take minutes on that softplus."""
    v = tirx.Var("nf", x.dtype)
    return tirx.Let(v, x, body(v))


def decode(code: tirx.PrimExpr, fmt: NarrowFloat) -> tirx.PrimExpr:
    """The ``float32`` value of ``code`` (the format's bits in its storage dtype): exact.

    >>> import tilelang
    >>> str(decode(tirx.Var("c", "uint16"), FORMATS["bfloat16"]))
    'T.reinterpret("float32", T.shift_left(T.Cast("uint32", c), T.uint32(16)))'
    """
    if isinstance(code, tirx.BufferLoad) or (
            fmt.name != "bfloat16" and not isinstance(code, (tirx.Var, tirx.IntImm))):
        # (bfloat16 reads a computed code once: binding it only slows TVM's passes)
        return _bound(code, lambda v: decode(v, fmt))
    n = _lanes(code.dtype)
    u32, f32 = _vec("uint32", n), _vec("float32", n)
    c = tirx.Cast(u32, code)
    if fmt.name == "bfloat16":
        return tirx.reinterpret(f32, c << _c(16, u32))
    if fmt.kind == "e8m0":
        # 2**(c - 127): float32's exponent field, but 2**-127 (code 0) is a subnormal
        value = tirx.Select(c == _c(0, u32), tirx.reinterpret(f32, _c(0x400000, u32)),
                            tirx.reinterpret(f32, c << _c(23, u32)))
        return tirx.Select(c == _c(0xFF, u32), tirx.reinterpret(f32, _c(0x7FC00000, u32)),
                           value)
    return _decode(c, fmt, u32, f32)


def _decode(c: tirx.PrimExpr, fmt: NarrowFloat, u32: str, f32: str) -> tirx.PrimExpr:
    E, M = fmt.exp, fmt.man
    sign = (c >> _c(E + M, u32)) & _c(1, u32)
    e = (c >> _c(M, u32)) & _c((1 << E) - 1, u32)
    m = c & _c((1 << M) - 1, u32)
    normal = tirx.reinterpret(f32, (sign << _c(31, u32)) | ((e + _c(127 - fmt.bias, u32))
                                                            << _c(23, u32))
                              | (m << _c(23 - M, u32)))
    mag = tirx.Cast(f32, m) * _c(2.0 ** (1 - fmt.bias - M), f32)
    value = tirx.Select(e == _c(0, u32), tirx.Select(sign == _c(1, u32), -mag, mag), normal)
    nan = tirx.reinterpret(f32, (sign << _c(31, u32)) | _c(0x7FC00000, u32))
    if fmt.kind == "ieee":
        inf = tirx.reinterpret(f32, (sign << _c(31, u32)) | _c(0x7F800000, u32))
        top = e == _c((1 << E) - 1, u32)
        return tirx.Select(top, tirx.Select(m == _c(0, u32), inf, nan), value)
    if fmt.kind == "fn":
        return tirx.Select((c & _c((1 << (E + M)) - 1, u32)) == _c(fmt.nan_code, u32),
                           nan, value)
    if fmt.kind == "sat":
        return value
    return tirx.Select(c == _c(fmt.nan_code, u32), nan, value)


def encode(x: tirx.PrimExpr, fmt: NarrowFloat) -> tirx.PrimExpr:
    """The format's bits (its storage dtype) of ``x`` (``float32`` or ``float64``), rounded
    to nearest even; NaN stays NaN; overflow is infinity or NaN (see the module)."""
    if isinstance(x, tirx.FloatImm):
        # a constant's code, known now: the C code cannot take the address of a constant
        # (``*(uint32_t *)&INFINITY`` does not compile)
        return _c(encode_const(float(x.value), fmt), fmt.storage)
    if not isinstance(x, tirx.Var):
        return _bound(x, lambda v: encode(v, fmt))
    src = _scalar(x.dtype)
    if src not in ("float32", "float64"):
        raise AssertionError(f"encode from {src}")  # pragma: no cover (callers widen)
    return _encode(x, fmt, src)


def _encode(x: tirx.PrimExpr, fmt: NarrowFloat, src: str) -> tirx.PrimExpr:
    n = _lanes(x.dtype)
    W, Ms, bias_s = (32, 23, 127) if src == "float32" else (64, 52, 1023)
    ut, it = _vec(f"uint{W}", n), _vec("int32", n)
    E, M, b = fmt.exp, fmt.man, fmt.bias
    u = tirx.reinterpret(ut, x)
    sign = u >> _c(W - 1, ut)
    a = u & _c((1 << (W - 1)) - 1, ut)
    exp_s = a >> _c(Ms, ut)
    is_nan = a > _c(((1 << (W - 1 - Ms)) - 1) << Ms, ut)
    shift = Ms - M
    if fmt.kind == "e8m0":
        return _encode_e8m0(x, fmt, n)
    if fmt.name == "bfloat16" and src == "float32":
        # the same exponent range: rounding the bits rounds subnormals too, and the
        # largest values round up to the infinity code
        r = (a + ((a >> _c(16, ut)) & _c(1, ut)) + _c(0x7FFF, ut)) >> _c(16, ut)
        code = tirx.Select(is_nan, _c(fmt.nan_code, ut), r)
        return tirx.Cast(_vec(fmt.storage, n), code | (sign << _c(15, ut)))
    # a value that is normal in the format: round the source's bits to M mantissa bits
    # (in the source's exponent space), then move the exponent to the format's bias
    r = (a + ((a >> _c(shift, ut)) & _c(1, ut)) + _c((1 << (shift - 1)) - 1, ut)) >> _c(shift, ut)
    emin_s = 1 - b + bias_s                  # the format's smallest normal, source-biased
    offset = (bias_s - b) << M
    if offset > 0:
        # below emin_s the subnormal branch is taken; keep this one from wrapping there
        r = tirx.Select(exp_s < _c(emin_s, ut), _c(offset, ut), r)
    normal = r - _c(offset, ut) if offset >= 0 else r + _c(-offset, ut)
    # a value below the format's smallest normal: its integer multiple of the smallest
    # subnormal, rounded to nearest even (shifts past Ms + 1 bits round to zero)
    full = (a & _c((1 << Ms) - 1, ut)) | tirx.Select(exp_s > _c(0, ut), _c(1 << Ms, ut),
                                                       _c(0, ut))
    eb = tirx.max(tirx.Cast(it, exp_s), _c(1, it))
    s2 = tirx.min(tirx.max(_c(shift + emin_s, it) - eb, _c(1, it)), _c(Ms + 2, it))
    s2u = tirx.Cast(ut, s2)
    sub = (full + ((full >> s2u) & _c(1, ut)) + ((_c(1, ut) << (s2u - _c(1, ut))) - _c(1, ut))
           ) >> s2u
    code = tirx.Select(exp_s < _c(emin_s, ut), sub, normal)
    code = tirx.Select(code > _c(fmt.max_code, ut), _c(fmt.overflow_code, ut), code)
    code = tirx.Select(is_nan, _c(fmt.nan_code, ut), code)
    signed = code | (sign << _c(E + M, ut))
    if fmt.kind == "sat":  # no NaN: ml_dtypes gives NaN the code of -0 (+0 if negative)
        signed = tirx.Select(is_nan, _c(fmt.nan_code, ut) ^ (sign << _c(E + M, ut)), signed)
    if fmt.kind == "fnuz":  # no negative zero; the one NaN has no sign of its own
        signed = tirx.Select(tirx.Or(code == _c(0, ut), code == _c(fmt.nan_code, ut)), code,
                             signed)
    return tirx.Cast(_vec(fmt.storage, n), signed)


def _encode_e8m0(x: tirx.PrimExpr, fmt: NarrowFloat, n: int) -> tirx.PrimExpr:
    """``float8_e8m0fnu``'s code of ``x``, as ``ml_dtypes`` converts: the nearest power
    of two with ties up (a mantissa of one half or more rounds up: the format has no
    mantissa bit to be even; between ``2**-127`` and ``2**-126``, float32's subnormals,
    always up), ``2**-127`` for every positive value up to it, NaN
    (``0xFF``) for NaN, zero, a negative value and what passes ``2**127``. A ``float64``
    source goes through ``float32`` first, as ``ml_dtypes`` converts it."""
    if _scalar(x.dtype) == "float64":
        x = tirx.Cast(_vec("float32", n), x)
    ut = _vec("uint32", n)
    u = tirx.reinterpret(ut, x)
    bad = tirx.Or(u >= _c(0x7F800000, ut), u == _c(0, ut))  # NaN, inf, negative, +0
    code = tirx.min((u + _c(1 << 22, ut)) >> _c(23, ut), _c(0xFF, ut))
    # below float32's normals ml_dtypes rounds up: 2**-127 (code 0) and what is below
    # it, 2**-126 for everything above it
    sub = tirx.Select(u > _c(0x400000, ut), _c(1, ut), _c(0, ut))
    code = tirx.Select(u < _c(0x800000, ut), sub, code)
    code = tirx.Select(bad, _c(0xFF, ut), code)
    return tirx.Cast(_vec(fmt.storage, n), code)


def round_to(x: tirx.PrimExpr, fmt: NarrowFloat) -> tirx.PrimExpr:
    """``x`` (``float32``) rounded to the format, as a ``float32`` value."""
    return decode(encode(x, fmt), fmt)


def encode_const(value: float, fmt: NarrowFloat) -> int:
    """The code of a Python float, as ``ml_dtypes`` converts it (the reference this pass
    is tested against).

    >>> encode_const(1.0, FORMATS["bfloat16"])
    16256
    """
    import ml_dtypes

    with np.errstate(all="ignore"):
        arr = np.array([value], dtype=np.float64).astype(getattr(ml_dtypes, fmt.name))
    return int(arr.view(fmt.storage)[0])


def _decode_const(code: int, fmt: NarrowFloat) -> float:
    import ml_dtypes

    arr = np.array([code], dtype=fmt.storage).view(getattr(ml_dtypes, fmt.name))
    return float(arr.astype(np.float64)[0])


# -- the rewrite -----------------------------------------------------------------------
def narrow_dtypes(func: tirx.PrimFunc) -> set[str]:
    """The narrow float dtypes a function's buffers and expressions use (a dtype this
    pass refuses included; ``float16``, whose casting loops it keeps scalar, too)."""
    found: set = set()

    def see(dtype: Any) -> None:
        name = _scalar(dtype)
        if name in FORMATS or name in UNSUPPORTED_NARROW or name == "float16":
            found.add(name)

    def visit(n: Any) -> None:
        if isinstance(n, (tirx.BufferLoad, tirx.BufferStore)):
            see(n.buffer.dtype)
        elif isinstance(n, (tirx.AllocBuffer, tirx.DeclBuffer)):
            see(n.buffer.dtype)
        elif isinstance(n, tirx.SBlock):
            for b in list(n.alloc_buffers) + [m.buffer for m in n.match_buffers]:
                see(b.dtype)
        elif isinstance(n, tirx.PrimExpr):
            see(n.dtype)
            if _half_cast(n):
                found.add("float16")

    for buf in func.buffer_map.values():
        see(buf.dtype)
    tirx.stmt_functor.post_order_visit(func.body, visit)
    return found


def _half_cast(n: Any) -> bool:
    """A conversion to or from ``float16``: TileLang's C vector type has no constructor
    from a vector of another element type (``vec_type<half, 4>(float4)`` does not
    compile), so such a loop stays scalar. A non-finite ``float16`` constant counts:
    TVM prints it as a ``float`` expression (``INFINITY * (half)-1``)."""
    if isinstance(n, tirx.FloatImm) and _scalar(n.dtype) == "float16":
        return not np.isfinite(n.value)
    if isinstance(n, tirx.Call) and getattr(n.op, "name", None) == "tl.infinity":
        return _scalar(n.dtype) == "float16"
    return isinstance(n, tirx.Cast) and "float16" in (_scalar(n.dtype), _scalar(n.value.dtype)) \
        and _scalar(n.dtype) != _scalar(n.value.dtype)


def _touches_narrow(stmt: tirx.Stmt) -> bool:
    hit: list = []

    def visit(n: Any) -> None:
        if hit:
            return
        if isinstance(n, (tirx.BufferLoad, tirx.BufferStore)) and \
                _scalar(n.buffer.dtype) in FORMATS:
            hit.append(n)
        elif isinstance(n, tirx.PrimExpr) and _scalar(n.dtype) in FORMATS:
            hit.append(n)
        elif _half_cast(n):
            hit.append(n)

    tirx.stmt_functor.post_order_visit(stmt, visit)
    return bool(hit)


_ARITH = (tirx.Add, tirx.Sub, tirx.Mul, tirx.Div, tirx.Min, tirx.Max, tirx.Mod, tirx.FloorDiv,
          tirx.FloorMod)
_CMP = (tirx.EQ, tirx.NE, tirx.LT, tirx.LE, tirx.GT, tirx.GE)
_BUILD: dict[type, Callable] = {
    tirx.Add: lambda a, b: a + b, tirx.Sub: lambda a, b: a - b,
    tirx.Mul: lambda a, b: a * b, tirx.Div: tirx.Div, tirx.Min: tirx.Min, tirx.Max: tirx.Max,
    tirx.Mod: tirx.Mod, tirx.FloorDiv: tirx.FloorDiv, tirx.FloorMod: tirx.FloorMod,
    tirx.EQ: tirx.EQ, tirx.NE: tirx.NE, tirx.LT: tirx.LT, tirx.LE: tirx.LE, tirx.GT: tirx.GT,
    tirx.GE: tirx.GE, tirx.And: tirx.And, tirx.Or: tirx.Or,
}


class _Rewriter:
    """One function's rewrite: narrow buffers become storage buffers (a fresh data
    variable each), narrow expressions ``float32`` ones (``_expr`` returns an expression
    of the same dtype as its input unless that dtype is narrow)."""

    def __init__(self, func: tirx.PrimFunc):
        self.func = func
        self.data: dict = {}     # old data var -> new data var
        self.bufs: dict = {}     # old buffer -> new buffer (by identity of the object)
        self.vars: dict = {}     # narrow scalar var -> float32 var

    # buffers -----------------------------------------------------------------------
    def _new_data(self, var: tirx.Var, storage: str) -> tirx.Var:
        if var in self.data:
            return self.data[var]
        ptr = var.type_annotation
        scope = ptr.storage_scope if isinstance(ptr, ir.PointerType) else "global"
        elem = storage
        if isinstance(ptr, ir.PointerType) and isinstance(ptr.element_type, ir.PrimType):
            fmt = _fmt(ptr.element_type.dtype)
            elem = fmt.storage if fmt is not None else str(ptr.element_type.dtype)
        new = tirx.Var(var.name, ir.PointerType(ir.PrimType(elem), scope))
        self.data[var] = new
        return new

    def buffer(self, buf: tirx.Buffer) -> tirx.Buffer:
        for old, new in self.bufs.items():
            if old.same_as(buf):
                return new
        fmt = _fmt(buf.dtype)
        pointee = buf.data.type_annotation
        narrow_data = (isinstance(pointee, ir.PointerType)
                       and isinstance(pointee.element_type, ir.PrimType)
                       and _fmt(pointee.element_type.dtype) is not None)
        if fmt is None and not narrow_data and buf.data not in self.data:
            self.bufs[buf] = buf
            return buf
        dtype = fmt.storage if fmt is not None else str(buf.dtype)
        # a narrow view of storage that is not narrow (a parameter's bits, a workspace)
        # keeps its data variable; narrow storage gets a fresh one of the storage type
        data = self._new_data(buf.data, dtype) if narrow_data else buf.data
        new = tirx.decl_buffer(buf.shape, dtype, buf.name, data=data, strides=buf.strides,
                               elem_offset=buf.elem_offset, scope=buf.scope(),
                               data_alignment=buf.data_alignment,
                               offset_factor=buf.offset_factor,
                               axis_separators=buf.axis_separators)
        self.bufs[buf] = new
        return new

    # expressions ---------------------------------------------------------------------
    def _widen(self, e: tirx.PrimExpr) -> tirx.PrimExpr:
        """``e`` rewritten; a narrow one comes back as ``float32``."""
        return self.expr(e)

    def _rounded(self, value: tirx.PrimExpr, fmt: NarrowFloat) -> tirx.PrimExpr:
        """A ``float32`` result of an operation in ``fmt``, rounded to it."""
        return round_to(value, fmt)

    def _to_narrow(self, value: tirx.PrimExpr, fmt: NarrowFloat) -> tirx.PrimExpr:
        """``value`` (already rewritten, any dtype) converted to ``fmt``'s bits."""
        n = _lanes(value.dtype)
        if isinstance(value, tirx.FloatImm):
            return _c(encode_const(float(value.value), fmt), fmt.storage)
        src = _scalar(value.dtype)
        if src not in ("float32", "float64"):
            # ints and float16 go through float64: one rounding (exact for 32-bit ints)
            wide = "float32" if src in ("float16",) else "float64"
            value = tirx.Cast(_vec(wide, n), value)
        return encode(value, fmt)

    def bits(self, e: tirx.PrimExpr, fmt: NarrowFloat) -> tirx.PrimExpr:
        """``e`` as ``fmt``'s bits: a load of the same format is copied bit for bit, an
        operation or conversion in the format is rounded once."""
        efmt = _fmt(e.dtype)
        if efmt is fmt:
            if isinstance(e, tirx.BufferLoad):
                return tirx.BufferLoad(self.buffer(e.buffer), [self.expr(i) for i in e.indices],
                                       self.expr(e.predicate) if e.predicate is not None
                                       else None)
            if isinstance(e, tirx.Cast):
                if _fmt(e.value.dtype) is fmt:
                    return self.bits(e.value, fmt)
                return self._to_narrow(self.expr(e.value), fmt)
            if isinstance(e, _ARITH):
                return encode(_BUILD[type(e)](self.expr(e.a), self.expr(e.b)), fmt)
            if isinstance(e, tirx.Select):
                return tirx.Select(self.expr(e.condition), self.bits(e.true_value, fmt),
                                   self.bits(e.false_value, fmt))
            if isinstance(e, tirx.FloatImm):
                return _c(encode_const(float(e.value), fmt), fmt.storage)
        return self._to_narrow(self.expr(e), fmt)

    def expr(self, e: Any) -> Any:
        if not isinstance(e, tirx.PrimExpr):
            return e
        fmt = _fmt(e.dtype) if not isinstance(e, tirx.Var) or e.dtype != "handle" else None
        n = _lanes(e.dtype)
        f32 = _vec("float32", n)
        if isinstance(e, tirx.BufferLoad):
            buf = self.buffer(e.buffer)
            load = tirx.BufferLoad(buf, [self.expr(i) for i in e.indices],
                                   self.expr(e.predicate) if e.predicate is not None else None)
            bfmt = _fmt(e.buffer.dtype)
            return decode(load, bfmt) if bfmt is not None else load
        if isinstance(e, tirx.FloatImm):
            if fmt is None:
                return e
            return f32_const(_decode_const(encode_const(float(e.value), fmt), fmt), n)
        if isinstance(e, (tirx.IntImm, tirx.StringImm)):
            return e
        if isinstance(e, tirx.Var):
            if e in self.data:
                return self.data[e]
            if fmt is not None:
                if e not in self.vars:
                    raise ValueError(f"{WHERE}: variable {e.name!r} of dtype {e.dtype} is not "
                                     f"bound by a let in the kernel; a {e.dtype} scalar "
                                     f"parameter cannot be passed to the C back end: pass a "
                                     f"float32 and convert inside the kernel")
                return self.vars[e]
            return e
        if isinstance(e, tirx.Cast):
            inner = self.expr(e.value)
            if fmt is not None:
                return decode(self._to_narrow(inner, fmt), fmt)
            if _fmt(e.value.dtype) is not None and _scalar(e.dtype) == "float32":
                return inner
            return tirx.Cast(e.dtype, inner)
        if isinstance(e, _ARITH):
            a, b = self.expr(e.a), self.expr(e.b)
            out = _BUILD[type(e)](a, b)
            return self._rounded(out, fmt) if fmt is not None else out
        if isinstance(e, _CMP) or isinstance(e, (tirx.And, tirx.Or)):
            return _BUILD[type(e)](self.expr(e.a), self.expr(e.b))
        if isinstance(e, tirx.Not):
            return tirx.Not(self.expr(e.a))
        if isinstance(e, tirx.Select):
            return tirx.Select(self.expr(e.condition), self.expr(e.true_value),
                               self.expr(e.false_value))
        if isinstance(e, tirx.Let):
            value = self.expr(e.value)
            var = e.var
            if _fmt(var.dtype) is not None:
                var = tirx.Var(var.name, f32)
                self.vars[e.var] = var
            return tirx.Let(var, value, self.expr(e.body))
        if isinstance(e, tirx.Broadcast):
            return tirx.Broadcast(self.expr(e.value), e.lanes)
        if isinstance(e, tirx.Ramp):
            return tirx.Ramp(self.expr(e.base), self.expr(e.stride), e.lanes)
        if isinstance(e, tirx.Shuffle):
            return tirx.Shuffle([self.expr(v) for v in e.vectors], list(e.indices))
        if isinstance(e, tirx.Call):
            return self._call(e, fmt)
        if fmt is not None:
            raise ValueError(f"{WHERE}: a {type(e).__name__} of dtype {e.dtype} has no C "
                             f"lowering here: {e}")
        return e

    def _call(self, e: tirx.Call, fmt: NarrowFloat | None) -> tirx.PrimExpr:
        name = getattr(e.op, "name", "")
        n = _lanes(e.dtype)
        if name == "tirx.reinterpret":
            (arg,) = e.args
            afmt = _fmt(arg.dtype)
            if fmt is not None and afmt is None:   # bits -> narrow value
                bits = tirx.reinterpret(_vec(fmt.storage, n), self.expr(arg))
                return decode(bits, fmt)
            if afmt is not None and fmt is None:   # narrow value -> bits
                return tirx.reinterpret(e.dtype, encode(self.expr(arg), afmt))
        if name in ("tirx.address_of", "tirx.tvm_access_ptr", "tirx.type_annotation",
                    "tl.access_ptr"):
            return self._pointer_call(e)
        if name == "tl.infinity" and fmt is not None:
            # the format's infinity (NaN where it has none) is a constant: rounding
            # TileLang's float INFINITY through its bits took the address of a constant
            import ml_dtypes

            inf = np.array([np.inf], np.float32).astype(getattr(ml_dtypes, fmt.name))
            v = tirx.FloatImm("float32", float(inf.astype(np.float32)[0]))
            return v if n == 1 else tirx.Broadcast(v, n)
        args = [self.expr(a) for a in e.args]
        if fmt is not None:
            # (T.abs of a narrow value is a float32 fabs now: C's fabsf)
            call = c_math_call(tirx.Call(_vec("float32", n), e.op, args, e.annotations))
            return self._rounded(call, fmt)
        return tirx.Call(e.dtype, e.op, args, e.annotations)

    def _pointer_call(self, e: tirx.Call) -> tirx.PrimExpr:
        """Calls that take a buffer location or element type, not a value."""
        name = e.op.name
        if name == "tirx.type_annotation":
            fmt = _fmt(e.dtype)
            return tirx.Call(fmt.storage, e.op, [], e.annotations) if fmt else e
        args = []
        for a in e.args:
            if isinstance(a, tirx.BufferLoad):
                args.append(tirx.BufferLoad(self.buffer(a.buffer),
                                            [self.expr(i) for i in a.indices]))
            else:
                args.append(self.expr(a))
        return tirx.Call(e.dtype, e.op, args, e.annotations)

    # statements ----------------------------------------------------------------------
    def stmt(self, s: Any) -> Any:
        if s is None:
            return None
        if isinstance(s, tirx.SeqStmt):
            return tirx.SeqStmt([self.stmt(x) for x in s.seq])
        if isinstance(s, tirx.BufferStore):
            buf = self.buffer(s.buffer)
            fmt = _fmt(s.buffer.dtype)
            value = self.bits(s.value, fmt) if fmt is not None else self.expr(s.value)
            pred = self.expr(s.predicate) if s.predicate is not None else None
            return tirx.BufferStore(buf, value, [self.expr(i) for i in s.indices], pred)
        if isinstance(s, tirx.Evaluate):
            return tirx.Evaluate(self.expr(s.value))
        if isinstance(s, tirx.For):
            kind = s.kind
            if kind == tirx.ForKind.VECTORIZED and _touches_narrow(s.body):
                # TileLang would turn the conversions into vector casts between element
                # widths, which its C vector type has no constructor for; a serial loop
                # is left to the C compiler's own vectoriser
                kind = tirx.ForKind.SERIAL
            return tirx.For(s.loop_var, self.expr(s.min), self.expr(s.extent), kind,
                            self.stmt(s.body), s.thread_binding, s.annotations,
                            self.expr(s.step) if s.step is not None else None)
        if isinstance(s, tirx.While):
            return tirx.While(self.expr(s.condition), self.stmt(s.body))
        if isinstance(s, tirx.IfThenElse):
            return tirx.IfThenElse(self.expr(s.condition), self.stmt(s.then_case),
                                   self.stmt(s.else_case))
        if isinstance(s, tirx.Bind):
            value = self.expr(s.value)
            var = s.var
            ann = var.type_annotation
            if isinstance(ann, ir.PointerType) and isinstance(ann.element_type, ir.PrimType) \
                    and _fmt(ann.element_type.dtype) is not None:
                var = self._new_data(var, _fmt(ann.element_type.dtype).storage)
            elif _fmt(var.dtype) is not None:
                var = tirx.Var(var.name, _vec("float32", _lanes(var.dtype)))
                self.vars[s.var] = var
            return tirx.Bind(var, value)
        if isinstance(s, tirx.AllocBuffer):
            return tirx.AllocBuffer(self.buffer(s.buffer), s.annotations)
        if isinstance(s, tirx.DeclBuffer):
            return tirx.DeclBuffer(self.buffer(s.buffer))
        if isinstance(s, tirx.AttrStmt):
            node = s.node
            if isinstance(node, tirx.Var) and node in self.data:
                node = self.data[node]
            elif isinstance(node, tirx.Buffer):
                node = self.buffer(node)
            return tirx.AttrStmt(node, s.attr_key, self.expr(s.value), self.stmt(s.body))
        if isinstance(s, tirx.AssertStmt):
            # TVM's node is (condition, error_kind, message_parts); its Python wrapper
            # names the arguments in another order, so the constructor is called direct
            return _tirx_api.AssertStmt(self.expr(s.condition), s.error_kind,
                                        list(s.message_parts), None)
        raise ValueError(f"{WHERE}: a {type(s).__name__} statement in a kernel with narrow "
                         f"float buffers is not handled here")

    def run(self) -> tirx.PrimFunc:
        func = self.func
        new_map = {}
        for p in func.params:
            if p in func.buffer_map:
                new_map[p] = self.buffer(func.buffer_map[p])
        for p in func.params:
            if _fmt(p.dtype) is not None:
                raise ValueError(f"{WHERE}: scalar parameter {p.name!r} has dtype {p.dtype}: "
                                 f"pass a float32 and convert inside the kernel")
        body = self.stmt(func.body)
        body = tirx.stmt_functor.substitute(body, dict(self.data)) if self.data else body
        return tirx.PrimFunc(func.params, body, func.ret_type, new_map, func.attrs)


def legalize_narrow_floats(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """The function form of :func:`LegalizeNarrowFloats` (a function without narrow
    floats comes back unchanged).

    >>> import tilelang
    >>> import tilelang.language as T
    >>> @T.prim_func
    ... def k():
    ...     T.evaluate(0)
    >>> legalize_narrow_floats(k).same_as(k)
    True
    """
    if not narrow_dtypes(func):
        return func
    return _Rewriter(func).run()  # (float16 alone: only its casting loops stay scalar)


def LegalizeNarrowFloats():  # noqa: N802 (TVM naming)
    """The ``prim_func_pass`` ``"meshtensor.LegalizeNarrowFloats"`` (see the module); it
    expects flattened buffers and lowered tile ops, where TVM's ``BF16ComputeLegalize``
    runs in TileLang's CPU pipeline.

    >>> LegalizeNarrowFloats().info.name
    'meshtensor.LegalizeNarrowFloats'
    """

    def transform(func, mod, ctx):
        return legalize_narrow_floats(func)

    return tirx.transform.prim_func_pass(transform, opt_level=0,
                                         name="meshtensor.LegalizeNarrowFloats")
