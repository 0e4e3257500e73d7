"""SUNMMIO's MX block-scaled kinds ``T.mxfp8`` and ``T.mxfp4`` in a kernel's on-chip
buffers, and ``T.mx_pack`` / ``T.mx_unpack``, as the upstream defines them.

An MX buffer is a container of two fields (SUNMMIO/Tilelang ``src/op/mx.cc``): its
elements (``float8_e4m3fn`` for ``mxfp8``, ``float4_e2m1fn`` for ``mxfp4``, one per
index of the buffer's shape) and their scales (``float8_e8m0fnu``, one per group of 32
elements: the scale shape of the buffer's MX layout, :func:`get_mx_scale_shape`).
``T.mx_pack(data, scale, mx)`` copies a prepared ``data`` buffer (the element kind) and
a ``scale`` buffer into the container, ``T.mx_unpack(mx, data, scale)`` copies them
out: no value is computed, so a round trip gives back exactly what was packed. The
quantisation itself (an amax, a scale, the casts) is the kernel's own code, which
``LegalizeNarrowFloats`` runs exactly.

Here an MX buffer is a buffer of its element kind (the buffer the kernel named) with a
companion ``float8_e8m0fnu`` buffer for its scales, made by the first pack, unpack or
copy that needs it. What the upstream accepts here is checked as it checks it: rank-2
static shapes, ``data`` of the element kind and ``mx``'s shape, ``scale`` of
``float8_e8m0fnu`` and the layout's scale shape, every buffer in RSRAM
(``T.alloc_shared``), full buffers, an MX layout (MXZZ, the default, or MXZNZ; the
MX row-major layout's pack is one the upstream's own tests mark as failing, and MXZNN
is internal to its GEMM). ``T.copy`` between two MX buffers copies elements and scales.

``T.gemm`` with an MX operand multiplies its values, each element times its scale
(exact in float32), with ``T.gemm``'s usual accumulation in the accumulator's dtype.

Inside, an MX buffer's scales are its *scale grid* (:func:`grid_shape`: one scale per
32 elements along the grouped dim), which pack and unpack convert from and to the
layout's ``(blocks, 32)`` field. An MX ``T.MeshTensor`` parameter takes an
``(elements, scale grid)`` pair from the caller (two kernel parameters); comm ops on
MX buffers run on the elements and on the matching scale regions (:func:`comm_scales`).

A region of an MX buffer (whole scale groups along its grouped dim) is a ``T.gemm``
operand and a ``T.copy`` source or destination between MX buffers. Not emulated yet,
a ``ValueError`` that says so: ``T.copy`` between an MX buffer and one that is not.

>>> import tilelang
>>> str(MXFP8), MX_KINDS["mxfp4"].element
('custom[mxfp8]8', 'float4_e2m1fn')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tilelang  # noqa: F401  (first: its bundled tvm)
import tilelang.language as T
from tvm import tirx
from tvm.ir import Range
from tvm.target import datatype as _datatype

from ..ir.expr import static_int

__all__ = ["MXKind", "MX_KINDS", "MXFP8", "MXFP4", "mx_kind", "get_mx_scale_shape",
           "scale_shape", "grid_shape", "grouped_dim",
           "mx_pack", "mx_unpack", "gemm_operands", "comm_scales", "MX_BLOCK", "SCALE_DTYPE"]

#: elements per scale (OCP MX), and the side of the upstream's MX layout blocks
MX_BLOCK = 32
SCALE_DTYPE = "float8_e8m0fnu"


@dataclass(frozen=True)
class MXKind:
    """One MX kind: its name, TVM's custom type code (the upstream's), and its element
    dtype.

    >>> MX_KINDS["mxfp8"].dtype_str
    'custom[mxfp8]8'
    """

    name: str
    code: int
    element: str
    bits: int

    @property
    def dtype_str(self) -> str:
        return f"custom[{self.name}]{self.bits}"


MX_KINDS = {k.name: k for k in (MXKind("mxfp8", 129, "float8_e4m3fn", 8),
                                MXKind("mxfp4", 130, "float4_e2m1fn", 4))}


def _register() -> None:
    for k in MX_KINDS.values():
        try:
            code = _datatype.get_type_code(k.name)
        except Exception:  # noqa: BLE001 - TVM raises when the name is unknown
            code = None
        if code is None:
            _datatype.register(k.name, k.code)


_register()
MXFP8 = tilelang.language.dtype(MX_KINDS["mxfp8"].dtype_str)
MXFP4 = tilelang.language.dtype(MX_KINDS["mxfp4"].dtype_str)


def mx_kind(dtype: Any) -> MXKind | None:
    """The MX kind of a dtype (``T.mxfp8``, ``"custom[mxfp4]4"``, ``"mxfp8"``), else
    ``None``.

    >>> mx_kind("custom[mxfp4]4").name, mx_kind("float32")
    ('mxfp4', None)
    """
    s = str(dtype)
    for k in MX_KINDS.values():
        if s in (k.dtype_str, k.name):
            return k
    return None


# -- layouts and scale shapes ---------------------------------------------------------
def _layout_kind(layout: Any) -> str:
    return str(getattr(layout, "kind", type(layout).__name__))


def get_mx_scale_shape(mx_layout: Any, dtype: Any = None) -> tuple[int, int]:
    """The scale buffer shape an MX layout needs (the upstream's
    ``tilelang.layout.get_mx_scale_shape``; :func:`scale_shape`).

    >>> from types import SimpleNamespace   # what make_mxzz_layout((64, 64), ...) records
    >>> get_mx_scale_shape(SimpleNamespace(kind="mxzz", shape=(64, 64)), MXFP8)
    (4, 32)
    """
    return scale_shape(_layout_kind(mx_layout), tuple(getattr(mx_layout, "shape", ())))


def scale_shape(kind: str, shape: tuple) -> tuple[int, int]:
    """The scale shape of an MX layout ``kind`` over ``shape``: MXZZ and MXZNZ (and
    MXZNN) cut the buffer into 32 x 32 blocks, one row of 32 scales per block
    (``(blocks, 32)``, blocks in row-major order); the MX row-major layout has one
    scale per 32 elements of a row (``(rows, cols / 32)``).

    >>> scale_shape("mxznz", (64, 32)), scale_shape("mx_row_major", (32, 1024))
    ((2, 32), (32, 32))
    """
    dims = [static_int(s) if not isinstance(s, int) else s for s in shape]
    if kind not in ("mxzz", "mxznz", "mxznn", "mx_row_major"):
        raise ValueError(f"get_mx_scale_shape: {kind} is not an MX layout; make one with "
                         f"make_mxzz_layout, make_mxznz_layout or make_mx_row_major_layout")
    if len(dims) != 2 or any(not isinstance(d, int) for d in dims):
        raise ValueError(f"get_mx_scale_shape: MX layouts are rank-2 and static here, got "
                         f"shape {shape}")
    m, n = dims
    if kind == "mx_row_major":
        if n % MX_BLOCK:
            raise ValueError(f"get_mx_scale_shape: an MX row-major row of {n} elements is "
                             f"not a whole number of {MX_BLOCK}-element scale groups")
        return (m, n // MX_BLOCK)
    if m % MX_BLOCK or n % MX_BLOCK:
        raise ValueError(f"get_mx_scale_shape: shape {tuple(dims)} is not whole 32 x 32 "
                         f"blocks of the {kind.upper()} layout (padding is not defined "
                         f"here)")
    return ((m // MX_BLOCK) * (n // MX_BLOCK), MX_BLOCK)


def grouped_dim(kind: str) -> int:
    """The dim along which 32 elements share a scale: 1 (along a row) for MXZZ and
    the MX row-major layout, 0 (along a column) for MXZNZ and MXZNN."""
    return 0 if kind in ("mxznz", "mxznn") else 1


def grid_shape(kind: str, shape: tuple) -> tuple[int, int]:
    """The shape of an MX tensor's scale grid: its shape with the grouped dim
    (:func:`grouped_dim`) divided by 32; element ``(i, j)``'s scale is at
    ``(i, j // 32)`` (MXZZ) or ``(i // 32, j)`` (MXZNZ). It is how a caller passes an
    MX ``T.MeshTensor``'s scales, and how meshtensor keeps an MX buffer's scales.

    >>> grid_shape("mxzz", (64, 128)), grid_shape("mxznz", (64, 128))
    ((64, 4), (2, 128))
    """
    dims = [int(d) for d in shape]
    g = grouped_dim(kind)
    if len(dims) != 2 or dims[g] % MX_BLOCK:
        raise ValueError(f"MX scale grid: shape {tuple(dims)} of the {kind.upper()} layout "
                         f"must be rank 2 with dim {g} a multiple of {MX_BLOCK} (one scale "
                         f"per {MX_BLOCK} elements along it)")
    dims[g] //= MX_BLOCK
    return (dims[0], dims[1])


# -- the containers of the kernel being built -------------------------------------------
def _builder() -> Any:
    from tilelang.language.eager.builder import Builder
    b = Builder.current()
    if b is None:
        raise ValueError("T.mx_pack/T.mx_unpack: call them inside a T.prim_func")
    return b


def _containers() -> list:
    """``[(buffer, kind, [scale buffer or None])]`` of the kernel being built."""
    from tilelang.language.eager.builder import Builder
    b = Builder.current()
    if b is None:
        return []
    return b.__dict__.setdefault("_meshtensor_mx", [])


def container(buf: Any) -> tuple | None:
    """The MX record of a buffer of the kernel being built, or ``None``."""
    if not isinstance(buf, tirx.Buffer):
        return None
    for rec in _containers():
        if rec[0].same_as(buf):
            return rec
    return None


def alloc_wrapper(stock: Any) -> Any:
    """``T.alloc_shared`` (and its kin) that makes an MX dtype's buffer a container."""
    def alloc(shape: Any, dtype: Any, *args: Any, **kw: Any) -> Any:
        kind = mx_kind(dtype)
        if kind is None:
            return stock(shape, dtype, *args, **kw)
        buf = stock(shape, kind.element, *args, **kw)
        _containers().append((buf, kind, [None, None]))  # scales, their layout kind
        return buf

    alloc.__doc__ = stock.__doc__
    alloc.__name__ = getattr(stock, "__name__", "alloc")
    alloc._meshtensor = stock  # type: ignore[attr-defined]
    return alloc


def _layout_of(buf: tirx.Buffer) -> Any:
    objs = _builder().__dict__.get("_meshtensor_layout_objs", {})
    return objs.get(str(buf.name))


def _scales(rec: tuple, op: str) -> tirx.Buffer:
    """The container's scale buffer (made now if this is its first use)."""
    buf, kind, holder = rec
    if holder[0] is None:
        layout = _layout_of(buf)
        kind_name = (_layout_kind(layout) if layout is not None
                     else holder[1] or "mxzz")
        if layout is not None and kind_name not in ("mxzz", "mxznz"):
            if kind_name == "mxznn":
                raise ValueError(f"{op}: {buf.name!r} has the MXZNN layout, which the "
                                 f"upstream keeps internal to its GEMM; use MXZNZ for data "
                                 f"staged in RSRAM")
            if kind_name == "mx_row_major":
                raise ValueError(f"{op}: {buf.name!r} has the MX row-major layout, whose "
                                 f"pack and unpack the upstream does not define yet (its "
                                 f"own tests expect them to fail: the scale field has no "
                                 f"padded extent); use make_mxzz_layout or "
                                 f"make_mxznz_layout")
            raise ValueError(f"{op}: {buf.name!r} needs an MX layout (make_mxzz_layout, "
                             f"make_mxznz_layout), got {layout}")
        shape = tuple(static_int(s) for s in buf.shape)
        scale_shape(kind_name, shape)  # the layout's checks (whole blocks)
        holder[0] = T.alloc_shared(grid_shape(kind_name, shape), SCALE_DTYPE,
                                   scope=buf.scope())
        from tvm.script.ir_builder import IRBuilder
        IRBuilder.name(f"{buf.name}_scales", holder[0])  # messages and reports name it
        holder[1] = kind_name
    return holder[0]


def _full(x: Any, op: str, name: str) -> tirx.Buffer:
    if isinstance(x, tirx.Buffer):
        return x
    if isinstance(x, tirx.BufferRegion):
        buf = x.buffer
        for r, s in zip(x.region, buf.shape):
            if static_int(r.min) != 0 or static_int(r.extent) != static_int(s):
                raise ValueError(f"{op} takes full buffers; {name} is the region "
                                 f"{x} of {buf.name!r}")
        return buf
    raise TypeError(f"{op}: {name} must be a buffer, got {type(x).__name__}")


def _check(op: str, data: tirx.Buffer, scale: tirx.Buffer, mx: tirx.Buffer) -> tuple:
    rec = container(mx)
    if rec is None:
        raise ValueError(f"{op}: mx {mx.name!r} has dtype {mx.dtype}; it must be an MX "
                         f"buffer (T.alloc_shared(shape, T.mxfp8 or T.mxfp4))")
    kind = rec[1]
    for name, b in (("data", data), ("scale", scale), ("mx", mx)):
        if len(b.shape) != 2 or any(static_int(s) is None for s in b.shape):
            raise ValueError(f"{op} takes static rank-2 buffers; {name} {b.name!r} has "
                             f"shape {list(b.shape)}")
        if not b.scope().startswith("shared"):
            raise ValueError(f"{op} takes RSRAM buffers (T.alloc_shared); {name} "
                             f"{b.name!r} has scope {b.scope()!r}")
    if str(data.dtype) != kind.element:
        raise ValueError(f"{op}: data {data.name!r} must be {kind.element} for an "
                         f"{kind.name} buffer, got {data.dtype}")
    if str(scale.dtype) != SCALE_DTYPE:
        raise ValueError(f"{op}: scale {scale.name!r} must be {SCALE_DTYPE}, got "
                         f"{scale.dtype}")
    dshape = tuple(static_int(s) for s in data.shape)
    mshape = tuple(static_int(s) for s in mx.shape)
    if dshape != mshape:
        raise ValueError(f"{op}: data {data.name!r} has shape {dshape}, mx {mx.name!r} "
                         f"{mshape}; they must be equal")
    scales = _scales(rec, op)
    want = scale_shape(rec[2][1], mshape)
    got = tuple(static_int(s) for s in scale.shape)
    if got != want:
        raise ValueError(f"{op}: scale {scale.name!r} has shape {got}; the MX layout of "
                         f"{mx.name!r} needs {want} (get_mx_scale_shape)")
    return rec, scales


def _stock_copy() -> Any:
    """TileLang's ``T.copy``, whose call is a statement here (inside a helper, the
    builder does not evaluate a returned expression)."""
    from tilelang.language.common import evaluate
    stock = getattr(T.copy, "_meshtensor", T.copy)
    return lambda src, dst: evaluate(stock(src, dst))


def mx_pack(data: Any, scale: Any, mx: Any) -> None:
    """SUNMMIO's ``T.mx_pack(data, scale, mx)``: copy prepared elements and scales into
    the MX buffer ``mx`` (module docstring)."""
    op = "T.mx_pack"
    d, s, m = _full(data, op, "data"), _full(scale, op, "scale"), _full(mx, op, "mx")
    rec, scales = _check(op, d, s, m)
    _stock_copy()(d, m)
    nbc = static_int(m.shape[1]) // MX_BLOCK
    (_blocks_to_cols if rec[2][1] == "mxznz" else _blocks_to_rows)(s, scales, nbc)


def mx_unpack(mx: Any, data: Any, scale: Any) -> None:
    """SUNMMIO's ``T.mx_unpack(mx, data, scale)``: copy an MX buffer's elements and
    scales out (module docstring)."""
    op = "T.mx_unpack"
    m, d, s = _full(mx, op, "mx"), _full(data, op, "data"), _full(scale, op, "scale")
    rec, scales = _check(op, d, s, m)
    _stock_copy()(m, d)
    nbc = static_int(m.shape[1]) // MX_BLOCK
    (_cols_to_blocks if rec[2][1] == "mxznz" else _rows_to_blocks)(scales, s, nbc)


def copy_wrapper(stock: Any) -> Any:
    """``T.copy`` that moves an MX buffer's scales with its elements."""
    def copy(src: Any, dst: Any, *args: Any, **kw: Any) -> Any:
        rs = container(getattr(src, "buffer", src))
        rd = container(getattr(dst, "buffer", dst))
        if rs is None and rd is None:
            return stock(src, dst, *args, **kw)
        if rs is None or rd is None or rs[1] is not rd[1]:
            mxb = (rs or rd)[0]
            raise ValueError(f"T.copy: {mxb.name!r} is an MX buffer; SUNMMIO's TileLang "
                             f"does not define a copy between it and anything but an MX "
                             f"buffer (or region) of the same kind (its codes or its "
                             f"values?); use T.mx_unpack / T.mx_pack")
        from tilelang.language.common import evaluate
        _scales(rs, "T.copy")
        if rd[2][0] is None and _layout_of(rd[0]) is None:
            rd[2][1] = rs[2][1]  # an unannotated destination groups as its source
        _scales(rd, "T.copy")
        if grouped_dim(rd[2][1]) != grouped_dim(rs[2][1]):
            raise ValueError(f"T.copy: {rs[0].name!r} groups its scales along dim "
                             f"{grouped_dim(rs[2][1])} ({rs[2][1].upper()}), "
                             f"{rd[0].name!r} along dim {grouped_dim(rd[2][1])} "
                             f"({rd[2][1].upper()}); a copy moves elements with their "
                             f"scales and cannot regroup them (requantise: T.mx_unpack, "
                             f"compute, T.mx_pack)")
        src_scales = _scale_operand("T.copy", "src", src, rs)
        dst_scales = _scale_operand("T.copy", "dst", dst, rd)
        evaluate(stock(src, dst, *args, **kw))
        evaluate(stock(src_scales, dst_scales))
        return None

    copy.__doc__ = stock.__doc__
    copy._meshtensor = stock  # type: ignore[attr-defined]
    return copy


# The layout's scale field (blocks, 32), as T.mx_pack / T.mx_unpack take it, and the
# scale grid meshtensor keeps (grid_shape): block b = (b // nbc, b % nbc) of 32 x 32.
@T.macro
def _blocks_to_rows(blk, grid, nbc):
    for b, r in T.grid(*blk.shape):
        grid[(b // nbc) * 32 + r, b % nbc] = blk[b, r]


@T.macro
def _blocks_to_cols(blk, grid, nbc):
    for b, c in T.grid(*blk.shape):
        grid[b // nbc, (b % nbc) * 32 + c] = blk[b, c]


@T.macro
def _rows_to_blocks(grid, blk, nbc):
    for b, r in T.grid(*blk.shape):
        blk[b, r] = grid[(b // nbc) * 32 + r, b % nbc]


@T.macro
def _cols_to_blocks(grid, blk, nbc):
    for b, c in T.grid(*blk.shape):
        blk[b, c] = grid[b // nbc, (b % nbc) * 32 + c]


def _group_index(op: str, side: str, name: str, v: Any, what: str) -> Any:
    """``v // 32`` where ``v`` (a start or an extent along the grouped dim) is a
    multiple of 32, else a ValueError: a scale group moves whole."""
    from tvm import arith
    an = arith.Analyzer()
    if not an.can_prove_equal(tirx.floormod(v, MX_BLOCK), 0):
        raise ValueError(f"{op}: {side} {name!r} is an MX buffer; its {what} {v} along "
                         f"the grouped dim is not a multiple of {MX_BLOCK}, so the region "
                         f"cuts a scale group (32 elements share one scale and move "
                         f"together)")
    return an.simplify(tirx.floordiv(v, MX_BLOCK))


def _scale_operand(op: str, side: str, x: Any, rec: tuple) -> Any:
    """The scale-grid operand that goes with an MX comm operand ``x`` (a buffer, a
    region, or an element that starts one)."""
    buf, _, holder = rec
    grid = _scales(rec, op)
    g = grouped_dim(holder[1])
    name = str(buf.name)
    if isinstance(x, tirx.Buffer):
        return grid
    if isinstance(x, tirx.BufferRegion):
        rng = [Range.from_min_extent(
            _group_index(op, side, name, r.min, "start") if d == g else r.min,
            _group_index(op, side, name, r.extent, "extent") if d == g else r.extent)
            for d, r in enumerate(x.region)]
        return tirx.BufferRegion(grid, rng)
    if isinstance(x, tirx.BufferLoad):
        return tirx.BufferLoad(grid, [_group_index(op, side, name, i, "start") if d == g
                                      else i for d, i in enumerate(x.indices)])
    raise TypeError(f"{op}: {side} must be a buffer or a region of one, got "
                    f"{type(x).__name__}")


def comm_scales(op: str, src: Any, dst: Any, size: Any = -1, axis: Any = None
                ) -> tuple | None:
    """For a comm op that moves MX data: ``(src scales, dst scales, scale size)``,
    the same op on the scale grids (run before the elements' op: the scales move with
    their elements); ``None`` when neither operand is an MX buffer. Both must be MX
    buffers of one kind and grouping; a region must cover whole scale groups."""
    rs = container(getattr(src, "buffer", src))
    rd = container(getattr(dst, "buffer", dst))
    if rs is None and rd is None:
        return None
    if rs is None or rd is None or rs[1] is not rd[1]:
        def what(r: Any, x: Any) -> str:
            b = getattr(x, "buffer", x)
            return (f"{r[1].name} buffer {r[0].name!r}" if r is not None
                    else f"{getattr(b, 'dtype', type(b).__name__)} buffer "
                         f"{getattr(b, 'name', '?')!r}")
        raise ValueError(f"{op}: src is the {what(rs, src)}, dst the {what(rd, dst)}; a "
                         f"comm op moves MX data between MX buffers of one kind (elements "
                         f"and scales together); T.mx_unpack / T.mx_pack to move parts")
    _scales(rs, op)
    if rd[2][0] is None and _layout_of(rd[0]) is None:
        rd[2][1] = rs[2][1]  # an unannotated destination groups as its source
    _scales(rd, op)
    g = grouped_dim(rs[2][1])
    if grouped_dim(rd[2][1]) != g:
        raise ValueError(f"{op}: {rs[0].name!r} groups its scales along dim {g}, "
                         f"{rd[0].name!r} along dim {grouped_dim(rd[2][1])}; the chip moves "
                         f"bytes, which cannot regroup scales")
    ssize = size
    if size is not None and size != -1:
        n = static_int(size)
        if n is None or n % MX_BLOCK or (g == 0 and n % (MX_BLOCK * _width(src))):
            raise ValueError(f"{op}: size={size} on the MX buffer {rs[0].name!r} is not "
                             f"whole {MX_BLOCK}-element scale groups of its "
                             f"{rs[2][1].upper()} layout")
        ssize = n // MX_BLOCK
    return (_scale_operand(op, "src", src, rs), _scale_operand(op, "dst", dst, rd), ssize)


def _width(x: Any) -> int:
    """The last extent of a comm operand (static; a load's is its buffer's)."""
    if isinstance(x, tirx.BufferRegion):
        w = static_int(x.region[-1].extent)
    else:
        w = static_int(getattr(x, "buffer", x).shape[-1])
    return int(w or 1)


@T.macro
def _scale_rows(vals, sf):
    """Each element times the scale of its 32-element row segment (MXZZ)."""
    for i, j in T.grid(*vals.shape):
        vals[i, j] = vals[i, j] * sf[i, j // 32]


@T.macro
def _scale_cols(vals, sf):
    """Each element times the scale of its 32-element column segment (MXZNZ)."""
    for i, j in T.grid(*vals.shape):
        vals[i, j] = vals[i, j] * sf[i // 32, j]


def _dequantized(x: Any, rec: tuple) -> tirx.Buffer:
    """An MX buffer's (or region's) values, element times scale, in a float32 buffer
    of its own (exact: an element has at most 4 significant bits, a scale is a power
    of two). A region must cover whole scale groups along the grouped dim."""
    from tilelang.utils.language import retrieve_shape, to_buffer_region
    buf, kind, holder = rec
    sx = _scale_operand("T.gemm", "operand", x, rec)
    shape = [static_int(s) for s in retrieve_shape(to_buffer_region(x))]
    sshape = [static_int(s) for s in retrieve_shape(to_buffer_region(sx))]
    if any(d is None for d in shape + sshape):
        raise ValueError(f"T.gemm: the region {x} of the MX buffer {buf.name!r} has "
                         f"symbolic extents; an MX operand's extents must be static")
    vals = T.alloc_shared(shape, "float32")
    sf = T.alloc_shared(sshape, "float32")
    _stock_copy()(x, vals)
    _stock_copy()(sx, sf)
    (_scale_cols if grouped_dim(holder[1]) == 0 else _scale_rows)(vals, sf)
    return vals


def gemm_operands(A: Any, B: Any) -> tuple[Any, Any]:
    """``T.gemm``'s operands with an MX buffer's dequantised values in its place (and
    the other operand in float32, exactly): the chip's block-scaled MMA multiplies each
    element by its scale; the accumulation is ``T.gemm``'s, in the accumulator's dtype.
    A region of an MX buffer must cover whole 32-element scale groups along its
    grouped dim (a ``ValueError`` otherwise)."""
    recs = [container(getattr(x, "buffer", x)) for x in (A, B)]
    if all(r is None for r in recs):
        return A, B
    out = []
    for x, rec in zip((A, B), recs):
        if rec is not None:
            out.append(_dequantized(x, rec))
        else:
            from tilelang.utils.language import retrieve_shape, to_buffer_region
            shape = [static_int(s) for s in retrieve_shape(to_buffer_region(x))]
            vals = T.alloc_shared(shape, "float32")
            _stock_copy()(x, vals)
            out.append(vals)
    return out[0], out[1]
