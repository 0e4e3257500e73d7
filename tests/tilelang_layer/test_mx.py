"""SUNMMIO's MX kinds (T.mxfp8, T.mxfp4) in on-chip buffers, T.mx_pack / T.mx_unpack
(language/mx.py), and the SUNMMIO-scoped reductions their quantisation kernels use:
a round trip gives back exactly what was packed, T.copy between MX buffers moves the
scales too, what the upstream refuses is a ValueError naming it, and what is not
emulated yet says so."""
import numpy as np
import pytest

pytest.importorskip("tilelang")
ml_dtypes = pytest.importorskip("ml_dtypes")
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402

from meshtensor.tilelang import compile_mesh_kernel  # noqa: E402
from meshtensor.tilelang import tilelang_mesh as tm  # noqa: E402
from meshtensor.tilelang.language import mx  # noqa: E402

FLAGS = ["-O1"]
KINDS = {"mxfp8": ("float8_e4m3fn", 8), "mxfp4": ("float4_e2m1fn", 4)}


@pytest.fixture(autouse=True)
def _mesh():
    tm.enable(mesh=(1, 1))
    yield
    tm.enable(mesh=(4, 4))


def _layouts():
    import tilelang.layout as L
    return L


# -- kinds and scale shapes ----------------------------------------------------------------
def test_the_kinds_are_the_upstreams_custom_dtypes():
    assert str(T.dtype(T.mxfp8)) == "custom[mxfp8]8"
    assert str(T.dtype(T.mxfp4)) == "custom[mxfp4]4"
    assert mx.mx_kind(T.mxfp4).element == "float4_e2m1fn"
    assert mx.mx_kind("bfloat16") is None


@pytest.mark.parametrize("maker,shape,want", [
    ("make_mxzz_layout", (32, 32), (1, 32)), ("make_mxzz_layout", (128, 32), (4, 32)),
    ("make_mxzz_layout", (64, 64), (4, 32)), ("make_mxznz_layout", (64, 32), (2, 32)),
    ("make_mx_row_major_layout", (32, 1024), (32, 32))])
def test_scale_shapes_are_the_upstream_tests(maker, shape, want):
    """The shapes the upstream's tests assert (test_mx_quant_dequant_opt_validate.py)."""
    L = _layouts()
    for kind in (T.mxfp8, T.mxfp4):
        assert L.get_mx_scale_shape(getattr(L, maker)(shape, dtype=kind), kind) == want


def test_a_scale_shape_of_partial_blocks_is_refused():
    L = _layouts()
    with pytest.raises(ValueError, match=r"shape \(48, 32\) is not whole 32 x 32 blocks"):
        L.get_mx_scale_shape(L.make_mxzz_layout((48, 32), dtype=T.mxfp8), T.mxfp8)
    with pytest.raises(ValueError, match="zz is not an MX layout"):
        L.get_mx_scale_shape(L.make_zz_layout((32, 32)), T.mxfp8)


# -- pack and unpack, compiled ---------------------------------------------------------------
def _roundtrip_kernel(kind, layout="mxzz", shape=(64, 64), copy_between=False):
    element, _ = KINDS[kind]
    L = _layouts()
    lay = getattr(L, f"make_{layout}_layout")(shape, dtype=getattr(T, kind))
    sshape = L.get_mx_scale_shape(lay, getattr(T, kind))

    @T.prim_func
    def k(D: T.Tensor(shape, element), S: T.Tensor(sshape, "float8_e8m0fnu"),
          D2: T.Tensor(shape, element), S2: T.Tensor(sshape, "float8_e8m0fnu")):
        with T.Kernel(1) as _:
            data = T.alloc_shared(shape, element)
            scale = T.alloc_shared(sshape, "float8_e8m0fnu")
            box = T.alloc_shared(shape, getattr(T, kind))
            box2 = T.alloc_shared(shape, getattr(T, kind))
            T.annotate_layout({box: lay, box2: lay})
            T.copy(D, data)
            T.copy(S, scale)
            T.mx_pack(data, scale, box)
            if copy_between:
                T.copy(box, box2)
                T.mx_unpack(box2, data, scale)
            else:
                T.mx_unpack(box, data, scale)
            T.copy(data, D2)
            T.copy(scale, S2)

    return k, sshape


def _codes(n, bits, rng):
    return rng.integers(0, 1 << bits, n).astype(np.uint8)


@pytest.mark.slow
@pytest.mark.parametrize("copy_between", [False, True])
@pytest.mark.parametrize("layout", ["mxzz", "mxznz"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_pack_then_unpack_gives_back_every_code(kind, layout, copy_between):
    """Every element code (NaNs included) and every scale code survive the round trip,
    through a copy to a second MX buffer too (the scales travel with the elements)."""
    element, bits = KINDS[kind]
    func, sshape = _roundtrip_kernel(kind, layout, copy_between=copy_between)
    kernel = compile_mesh_kernel(func, compile_flags=FLAGS)
    rng = np.random.default_rng(1)
    d = _codes(64 * 64, bits, rng).reshape(64, 64)
    s = _codes(int(np.prod(sshape)), 8, rng).reshape(sshape)
    ins = [torch.from_numpy(d.copy()), torch.from_numpy(s.copy()).view(torch.float8_e8m0fnu),
           torch.zeros(64, 64, dtype=torch.uint8), torch.zeros(sshape, dtype=torch.uint8)]
    if element == "float8_e4m3fn":
        ins[0], ins[2] = ins[0].view(torch.float8_e4m3fn), ins[2].view(torch.float8_e4m3fn)
    ins[3] = ins[3].view(torch.float8_e8m0fnu)
    kernel(*ins)
    np.testing.assert_array_equal(ins[2].view(torch.uint8).numpy(), d)
    np.testing.assert_array_equal(ins[3].view(torch.uint8).numpy(), s)


# -- what the upstream refuses or does not define ----------------------------------------------
def _pack_kernel(data_dtype="float8_e4m3fn", scale_shape=(8, 32), data_scope="shared",
                 layout="mxzz", op="pack"):
    L = _layouts()
    shape = (64, 128)
    lay = {"mxzz": L.make_mxzz_layout(shape, dtype=T.mxfp8),
           "row_major": L.make_row_major(shape),
           "mx_row_major": L.make_mx_row_major_layout(shape, dtype=T.mxfp8),
           "mxznn": L.make_mxznn_layout(shape, dtype=T.mxfp8)}[layout]

    @T.prim_func
    def k():
        with T.Kernel(1) as _:
            data = (T.alloc_local(shape, data_dtype) if data_scope == "local"
                    else T.alloc_shared(shape, data_dtype))
            scale = T.alloc_shared(scale_shape, "float8_e8m0fnu")
            box = T.alloc_shared(shape, T.mxfp8)
            T.annotate_layout({box: lay})
            if op == "pack":
                T.mx_pack(data, scale, box)
            else:
                T.mx_unpack(box, data, scale)

    return k


@pytest.mark.parametrize("op", ["pack", "unpack"])
@pytest.mark.parametrize("kw,msg", [
    (dict(data_dtype="bfloat16"), "data 'data' must be float8_e4m3fn for an mxfp8 buffer"),
    (dict(scale_shape=(1, 32)), r"scale 'scale' has shape \(1, 32\); the MX layout of 'box' "
                                r"needs \(8, 32\)"),
    (dict(data_scope="local"), "takes RSRAM buffers .T.alloc_shared.; data 'data' has scope "
                               "'local'"),
    (dict(layout="row_major"), "'box' needs an MX layout"),
    (dict(layout="mxznn"), "MXZNN layout, which the upstream keeps internal"),
    (dict(layout="mx_row_major"), "MX row-major layout, whose pack and unpack the "
                                  "upstream does not define yet"),
])
def test_the_upstreams_invalid_contracts_are_refused_by_name(op, kw, msg):
    """The upstream's own invalid-contract kernels (test_mx_pack_unpack_codegen.py) and
    its row-major case, which its tests expect to fail."""
    with pytest.raises(ValueError, match=msg):
        _pack_kernel(op=op, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_region_of_an_mx_buffer_is_a_gemm_operand(kind):
    """T.gemm on a[0:32, 32:64] of an MXZZ buffer multiplies that region's elements by
    their own scales (was a ValueError "not emulated yet")."""
    element, _ = KINDS[kind]

    @T.prim_func
    def k(D: T.Tensor((32, 64), element), S: T.Tensor((2, 32), "float8_e8m0fnu"),
          B: T.Tensor((32, 32), "bfloat16"), C: T.Tensor((32, 32), "float32")):
        with T.Kernel(1) as _:
            data = T.alloc_shared((32, 64), element)
            scale = T.alloc_shared((2, 32), "float8_e8m0fnu")
            a = T.alloc_shared((32, 64), getattr(T, kind))
            b = T.alloc_shared((32, 32), "bfloat16")
            c = T.alloc_local((32, 32), "float32")
            T.copy(D, data)
            T.copy(S, scale)
            T.copy(B, b)
            T.mx_pack(data, scale, a)
            T.clear(c)
            T.gemm(a[0:32, 32:64], b, c)
            T.copy(c, C)

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    rng = np.random.default_rng(2)
    d = rng.integers(-3, 4, (32, 64)).astype(getattr(ml_dtypes, element))
    sc = (2.0 ** rng.integers(-4, 5, (2, 32))).astype(ml_dtypes.float8_e8m0fnu)
    b = rng.integers(-3, 4, (32, 32)).astype(np.float32)
    td = torch.from_numpy(d.view(np.uint8).copy())
    if element == "float8_e4m3fn":
        td = td.view(torch.float8_e4m3fn)
    c = torch.zeros(32, 32)
    kernel(td, torch.from_numpy(sc.view(np.uint8).copy()).view(torch.float8_e8m0fnu),
           torch.from_numpy(b).to(torch.bfloat16), c)
    # block 1 (columns 32:64): row i's 32 elements share scale S[1, i]
    av = d[:, 32:].astype(np.float32) * sc[1].astype(np.float32)[:, None]
    np.testing.assert_array_equal(c.numpy(), av @ b)


@pytest.mark.slow
def test_a_copy_of_an_mx_region_carries_its_scales():
    """T.copy(a[0:32, 32:64], b) between MX buffers: b holds block 1's elements and
    its 32 scales (was a ValueError "not emulated yet")."""
    @T.prim_func
    def k(D: T.Tensor((32, 64), "float8_e4m3fn"), S: T.Tensor((2, 32), "float8_e8m0fnu"),
          D2: T.Tensor((32, 32), "float8_e4m3fn"), S2: T.Tensor((1, 32), "float8_e8m0fnu")):
        with T.Kernel(1) as _:
            data = T.alloc_shared((32, 64), "float8_e4m3fn")
            scale = T.alloc_shared((2, 32), "float8_e8m0fnu")
            a = T.alloc_shared((32, 64), T.mxfp8)
            b = T.alloc_shared((32, 32), T.mxfp8)
            d2 = T.alloc_shared((32, 32), "float8_e4m3fn")
            s2 = T.alloc_shared((1, 32), "float8_e8m0fnu")
            T.copy(D, data)
            T.copy(S, scale)
            T.mx_pack(data, scale, a)
            T.copy(a[0:32, 32:64], b)
            T.mx_unpack(b, d2, s2)
            T.copy(d2, D2)
            T.copy(s2, S2)

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    rng = np.random.default_rng(4)
    d, s = _codes(32 * 64, 8, rng).reshape(32, 64), _codes(64, 8, rng).reshape(2, 32)
    out = [torch.zeros(32, 32, dtype=torch.float8_e4m3fn),
           torch.zeros(1, 32, dtype=torch.float8_e8m0fnu)]
    kernel(torch.from_numpy(d.copy()).view(torch.float8_e4m3fn),
           torch.from_numpy(s.copy()).view(torch.float8_e8m0fnu), *out)
    np.testing.assert_array_equal(out[0].view(torch.uint8).numpy(), d[:, 32:])
    np.testing.assert_array_equal(out[1].view(torch.uint8).numpy(), s[1:])


def test_a_gemm_operand_region_that_cuts_a_scale_group_is_refused():
    with pytest.raises(ValueError, match=r"T.gemm: operand 'a' is an MX buffer; its start 16 "
                                         r"along the grouped dim is not a multiple of 32"):
        @T.prim_func
        def k():
            with T.Kernel(1) as _:
                a = T.alloc_shared((32, 64), T.mxfp8)
                b = T.alloc_shared((32, 32), "bfloat16")
                c = T.alloc_local((32, 32), "float32")
                T.gemm(a[0:32, 16:48], b, c)


def test_copying_an_mx_buffer_to_a_plain_one_is_refused_as_undefined():
    with pytest.raises(ValueError, match="'box' is an MX buffer; SUNMMIO's TileLang does "
                                         "not define a copy between it and anything but"):
        @T.prim_func
        def k():
            with T.Kernel(1) as _:
                box = T.alloc_shared((32, 32), T.mxfp8)
                plain = T.alloc_shared((32, 32), "float8_e4m3fn")
                T.copy(box, plain)


@pytest.mark.slow
def test_comm_on_4_bit_elements_moves_their_codes():
    """An all_gather of float4_e2m1fn buffers (one code a byte): was a ValueError "not
    emulated yet", then a ZeroDivisionError in the lowering (0 bytes an element)."""
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def k(A: T.MeshTensor((64, 64), T.placement.full_shard(0, 1), "float4_e2m1fn"),
          Y: T.MeshTensor((64, 128), T.placement.full_shard(0, 1), "float4_e2m1fn")):
        with T.Kernel() as _:
            a = T.alloc_shared((32, 32), "float4_e2m1fn")
            b = T.alloc_shared((32, 64), "float4_e2m1fn")
            T.copy(A, a)
            T.comm.all_gather(a, b, "h", axis=1)
            T.copy(b, Y)

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    codes = np.random.default_rng(0).integers(0, 16, (64, 64)).astype(np.uint8)
    y = torch.zeros(64, 128, dtype=torch.uint8)
    kernel(torch.from_numpy(codes.copy()), y)
    np.testing.assert_array_equal(y.numpy(), np.concatenate([codes, codes], axis=1))


def _summa(kind, a_layout="mxzz", b_layout="mxznz", n=128, block=32):
    """SUNMMIO's SUMMA on MX T.MeshTensor operands (codegen/test_mx_gemm.py's shape):
    each step all-gathers MX slices (elements and scales) and multiplies them."""
    L = _layouts()
    dt = getattr(T, kind)
    pl = T.placement.full_shard(0, 1)
    la = getattr(L, f"make_{a_layout}_layout")((n, n), dtype=dt)
    lb = getattr(L, f"make_{b_layout}_layout")((n, n), dtype=dt)

    @T.prim_func
    def main(A: T.MeshTensor((n, n), pl, dt, layout=la),
             B: T.MeshTensor((n, n), pl, dt, layout=lb),
             C: T.MeshTensor((n, n), pl, "float32")):
        with T.Kernel() as _:
            sm, sk = A.local_shape
            _, sn = B.local_shape
            ad = T.alloc_shared((block, block * T.mesh_ncols()), dt)
            bd = T.alloc_shared((block * T.mesh_nrows(), block), dt)
            cs = T.alloc_shared((block, block), "float32")
            for bx in T.serial(T.ceildiv(sm, block)):
                for by in T.serial(T.ceildiv(sn, block)):
                    T.clear(cs)
                    for k in T.serial(T.ceildiv(sk, block)):
                        T.comm.all_gather(A[bx * block:(bx + 1) * block,
                                            k * block:(k + 1) * block], ad, "h", axis=-1)
                        T.comm.all_gather(B[k * block:(k + 1) * block,
                                            by * block:(by + 1) * block], bd, "v", axis=0)
                        T.gemm(ad, bd, cs)
                    T.copy(cs, C[bx * block, by * block])

    return main


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_summa_all_gathers_mx_slices_with_their_scales(kind):
    """Comm ops on MX buffers move elements and scales (was a ValueError "not emulated
    yet"): C is A's values times B's, exactly."""
    tm.enable(mesh=(2, 2))
    kernel = compile_mesh_kernel(_summa(kind), compile_flags=FLAGS)
    rng = np.random.default_rng(5)
    a, av = _host_mx(kind, "mxzz", (128, 128), rng, ints=True)
    b, bv = _host_mx(kind, "mxznz", (128, 128), rng, ints=True)
    c = torch.zeros(128, 128)
    kernel(a, b, c)
    np.testing.assert_array_equal(c.numpy(), av @ bv)


def test_comm_on_mx_buffers_checks_whole_scale_groups_and_kinds():
    tm.enable(mesh=(2, 2))
    with pytest.raises(ValueError, match=r"T.comm.all_gather: src 'a' is an MX buffer; its "
                                         r"extent 16 along the grouped dim is not a "
                                         r"multiple of 32"):
        @T.prim_func
        def k1():
            with T.Kernel() as _:
                a = T.alloc_shared((32, 32), T.mxfp8)
                b = T.alloc_shared((32, 32), T.mxfp8)
                T.comm.all_gather(a[0:32, 0:16], b, "h", axis=1)
    with pytest.raises(ValueError, match=r"src is the mxfp8 buffer 'a', dst the "
                                         r"float8_e4m3fn buffer 'b'"):
        @T.prim_func
        def k2():
            with T.Kernel() as _:
                a = T.alloc_shared((32, 32), T.mxfp8)
                b = T.alloc_shared((32, 64), "float8_e4m3fn")
                T.comm.all_gather(a, b, "h", axis=1)
    with pytest.raises(ValueError, match=r"T.comm.all_reduce: src 'a' is an MX buffer; a "
                                         r"reduction combines values"):
        @T.prim_func
        def k3():
            with T.Kernel() as _:
                a = T.alloc_shared((32, 32), T.mxfp8)
                b = T.alloc_shared((32,), "float32")
                T.comm.all_reduce(a, b, "sum", "h")


# -- the reductions of the quantisation kernels -------------------------------------------------
@pytest.mark.slow
def test_a_reduction_into_a_region_writes_only_the_region():
    """``T.reduce_absmax(a, amax[0:32], dim=1)`` of SUNMMIO-scoped buffers: TileLang's
    CPU lowering reduced into all of ``amax`` (64 entries, reading 32 rows past ``a``);
    now the region holds the row maxima and the rest keeps what it held. A bfloat16
    source into a float32 output crashed the lowering (its dtypes must match)."""

    @T.prim_func
    def k(A: T.MeshTensor((32, 32), T.placement.replicated(), "bfloat16"),
          O: T.MeshTensor((64,), T.placement.replicated(), "float32")):
        with T.Kernel() as _:
            a = T.alloc_shared((32, 32), "bfloat16", scope="shared.rsram")
            amax = T.alloc_shared((64,), "float32", scope="shared.rsram")
            T.copy(A, a)
            T.fill(amax, T.float32(-7.0))
            T.reduce_absmax(a, amax[0:32], dim=1, clear=True)
            T.reduce_max(a[0:32, 0:16], amax[32:64], dim=1, clear=False)
            T.copy(amax, O)

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    a = torch.randn(32, 32).to(torch.bfloat16)
    o = torch.zeros(64)
    kernel(a, o)
    af = a.float().numpy()
    np.testing.assert_array_equal(o.numpy()[:32], np.abs(af).max(axis=1))
    np.testing.assert_array_equal(o.numpy()[32:], np.maximum(af[:, :16].max(axis=1), -7.0))


@pytest.mark.slow
def test_a_sum_between_dtypes_accumulates_in_the_output_dtype():
    """T.reduce_sum of a bfloat16 buffer into a float32 one converts each element and
    adds in float32, as the upstream's reduction does (was a ValueError "not emulated
    yet"): 256 + 31 ones is 287 (in bfloat16 it would stay 256)."""

    @T.prim_func
    def k(A: T.MeshTensor((32, 32), T.placement.replicated(), "bfloat16"),
          O: T.MeshTensor((32,), T.placement.replicated(), "float32")):
        with T.Kernel() as _:
            a = T.alloc_shared((32, 32), "bfloat16", scope="shared.rsram")
            s = T.alloc_shared((32,), "float32", scope="shared.rsram")
            T.copy(A, a)
            T.reduce_sum(a, s, dim=1)
            T.copy(s, O)

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    a = torch.ones(32, 32)
    a[:, 0] = 256.0
    a[1] = torch.arange(32) * 0.5 - 3.0
    o = torch.zeros(32)
    kernel(a.to(torch.bfloat16), o)
    want = a.numpy().sum(axis=1)
    assert want[0] == 287.0
    np.testing.assert_array_equal(o.numpy(), want)


# -- real sizes ---------------------------------------------------------------------------------
def test_an_mx_buffer_counts_its_elements_real_size_and_its_scales():
    """mxfp4 elements are half a byte each (stored one a byte here), mxfp8 one byte;
    the scales one byte per 32 elements: the per-core footprint of count_mesh_kernel.
    A float4 buffer counted 0 bytes before (its itemsize, 4 // 8)."""
    from meshtensor.tilelang import count_mesh_kernel

    mesh = tm.enable(mesh=(2, 2))
    sizes = {}
    for kind, element in (("mxfp8", "float8_e4m3fn"), ("mxfp4", "float4_e2m1fn")):
        @T.prim_func
        def k(A: T.MeshTensor((64, 64), T.placement.replicated(), "float32")):
            with T.Kernel() as _:
                data = T.alloc_shared((64, 64), element)
                scale = T.alloc_shared((4, 32), "float8_e8m0fnu")
                box = T.alloc_shared((64, 64), getattr(T, kind))
                T.copy(A, data)
                T.fill(scale, 1.0)
                T.mx_pack(data, scale, box)

        sizes[kind] = sorted(b for _, _, b in count_mesh_kernel(k, mesh=mesh).buffers)
    assert sizes["mxfp8"] == [128, 128, 4096, 4096]
    assert sizes["mxfp4"] == [128, 128, 2048, 2048]


# -- MX T.MeshTensor parameters: (elements, scales) from the caller --------------------------
def _host_mx(kind, layout, shape, rng, ints=False):
    """An MX tensor as a caller builds it with ml_dtypes: its elements (float4 as one
    code a byte) and its scale grid (mx.grid_shape), as torch tensors; and its values."""
    element, _ = KINDS[kind]
    # integer elements keep a product's float32 sums exact in any order
    e = (rng.integers(-3, 4, shape) if ints else rng.standard_normal(shape)).astype(
        getattr(ml_dtypes, element))
    g = mx.grid_shape(layout, shape)
    s = (2.0 ** rng.integers(-4, 5, g)).astype(ml_dtypes.float8_e8m0fnu)
    axis = mx.grouped_dim(layout)
    vals = e.astype(np.float32) * np.repeat(s.astype(np.float32), 32, axis=axis)
    te = torch.from_numpy(e.view(np.uint8).copy())
    if element == "float8_e4m3fn":
        te = te.view(torch.float8_e4m3fn)
    return (te, torch.from_numpy(s.view(np.uint8).copy()).view(torch.float8_e8m0fnu)), vals


def _dequant_kernel(kind, layout, shape=(64, 64), placement=None):
    """Each core copies its part of an MX T.MeshTensor into an MX buffer, unpacks it
    and writes element times scale (the upstream's dequantise-only kernel, sharded)."""
    element, _ = KINDS[kind]
    L = _layouts()
    place = placement or T.placement.full_shard(0, 1)
    lay = getattr(L, f"make_{layout}_layout")(shape, dtype=getattr(T, kind))
    part = (shape[0] // 2, shape[1] // 2)
    play = getattr(L, f"make_{layout}_layout")(part, dtype=getattr(T, kind))
    sshape = L.get_mx_scale_shape(play, getattr(T, kind))
    nbc = part[1] // 32

    @T.prim_func
    def k(MX: T.MeshTensor(shape, place, getattr(T, kind), layout=lay),
          Y: T.MeshTensor(shape, place, "float32")):
        with T.Kernel() as _:
            box = T.alloc_shared(part, getattr(T, kind))
            data = T.alloc_shared(part, element)
            scale = T.alloc_shared(sshape, "float8_e8m0fnu")
            y = T.alloc_shared(part, "float32")
            T.annotate_layout({box: play})
            T.copy(MX, box)
            T.mx_unpack(box, data, scale)
            for i, j in T.grid(*part):
                if layout == "mxzz":
                    y[i, j] = T.Cast("float32", data[i, j]) * T.Cast(
                        "float32", scale[(i // 32) * nbc + j // 32, i % 32])
                else:
                    y[i, j] = T.Cast("float32", data[i, j]) * T.Cast(
                        "float32", scale[(i // 32) * nbc + j // 32, j % 32])
            T.copy(y, Y)

    return k


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["mxzz", "mxznz"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_an_mx_mesh_tensor_parameter_takes_elements_and_scales(kind, layout):
    """The caller passes (elements, scale grid); each core gets its part of both (a
    2x2 mesh, S(row)S(col)); was a ValueError "not emulated yet"."""
    tm.enable(mesh=(2, 2))
    kernel = compile_mesh_kernel(_dequant_kernel(kind, layout), compile_flags=FLAGS)
    arg, vals = _host_mx(kind, layout, (64, 64), np.random.default_rng(3))
    y = torch.zeros(64, 64)
    kernel(arg, y)
    np.testing.assert_array_equal(y.numpy(), vals)
    with pytest.raises(TypeError, match=r"MX T.MeshTensor parameter 'MX' takes an "
                                        r"\(elements, scales\) pair"):
        kernel(arg[0], y)
    with pytest.raises(ValueError, match=r"'MX_scales' \(argument 1\): expected the global "
                                         r"tensor of shape"):
        kernel((arg[0], arg[1][:1]), y)


def test_an_mx_mesh_tensor_split_inside_a_scale_group_is_refused():
    tm.enable(mesh=(4, 4))
    with pytest.raises(ValueError, match=r"gives a core a part that is not whole scale "
                                         r"groups along dim 1"):
        T.MeshTensor((64, 64), T.placement.full_shard(0, 1), T.mxfp8,
                     layout=_layouts().make_mxzz_layout((64, 64), dtype=T.mxfp8))


def test_comm_traffic_counts_real_element_sizes_and_the_scales():
    """An all_gather of a (32, 32) mxfp4 buffer over a row of 2: each transfer is 512
    bytes of elements (half a byte each; counted 0, then 1024, before) plus 32 of
    scales, as a comm op of its own on the scale grids."""
    from meshtensor.tilelang import analyze_mesh_communication

    tm.enable(mesh=(2, 2))

    @T.prim_func
    def k():
        with T.Kernel() as _:
            a = T.alloc_shared((32, 32), T.mxfp4)
            b = T.alloc_shared((32, 64), T.mxfp4)
            T.comm.all_gather(a, b, "h", axis=1)

    r = analyze_mesh_communication(k)
    assert r.comm_ops == ("comm 0: tm_all_gather a_scales -> b_scales over ('col',)",
                          "comm 1: tm_all_gather a -> b over ('col',)")
    assert r.nbytes.tolist() == [32] * 4 + [512] * 4
