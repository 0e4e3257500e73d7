"""bfloat16 and the float8 kinds on TileLang's C back end (LegalizeNarrowFloats): every
conversion equals ml_dtypes' bit for bit (NaN, infinity, subnormals, halfway cases,
overflow), every operation in a narrow dtype is the correctly rounded one, tile ops keep
their dtypes' meaning (a bfloat16 T.gemm into a float32 accumulator), and what cannot run
is a ValueError naming the dtype."""
import numpy as np
import pytest

pytest.importorskip("tilelang")
ml_dtypes = pytest.importorskip("ml_dtypes")
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from meshtensor.tilelang import compile_mesh_kernel  # noqa: E402
from meshtensor.tilelang.transform.narrow_float import (  # noqa: E402
    FORMATS, encode_const, f32_const, legalize_narrow_floats, narrow_dtypes)

FLAGS = ["-O1"]
#: the formats torch has a dtype for (the others travel as uint8 bits)
TORCH = [n for n in FORMATS if hasattr(torch, n)]
N = 4096


def _bits(fmt):
    return np.dtype(FORMATS[fmt].storage)


def _same(got, want):
    """Bit equality, any NaN equal to any NaN (NaN payloads are not compared)."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    return (got.view(_bits_of(got)) == want.view(_bits_of(want))) | (np.isnan(g) & np.isnan(w))


def _bits_of(a):
    return np.dtype(f"uint{a.dtype.itemsize * 8}")


# -- the format table and constants --------------------------------------------------------
@pytest.mark.parametrize("name", list(FORMATS))
def test_format_table_matches_ml_dtypes(name):
    fmt, md = FORMATS[name], getattr(ml_dtypes, name)
    info = ml_dtypes.finfo(md)
    assert fmt.max_finite == float(info.max)
    assert max(fmt.bits, 8) == np.dtype(md).itemsize * 8
    assert fmt.bits == info.bits
    nan = np.array([fmt.nan_code], _bits(name)).view(md).astype(np.float32)[0]
    with np.errstate(invalid="ignore"):
        assert np.isnan(nan) if fmt.kind != "sat" else \
            nan == np.array([np.nan], np.float32).astype(md).astype(np.float32)[0]


@given(st.floats(allow_nan=False, width=32))
def test_f32_constants_reach_c_unchanged(x):
    """A float32 constant prints with enough digits, or as its bits."""
    c = f32_const(x)
    if c.dtype == "float32" and hasattr(c, "value"):
        assert np.float32(float(f"{np.float32(c.value):.6e}")) == np.float32(x)


def test_narrow_dtypes_finds_buffers_and_expressions():
    @T.prim_func
    def k(A: T.Tensor((4,), "bfloat16"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            S = T.alloc_shared((4,), "float8_e4m3fn")
            for i in T.serial(4):
                S[i] = T.cast(A[i], "float8_e4m3fn")
                B[i] = T.cast(S[i], "float32")

    assert narrow_dtypes(k) == {"bfloat16", "float8_e4m3fn"}


# -- conversions, compiled ------------------------------------------------------------------
def _convert_kernel(fmt, src):
    @T.prim_func
    def k(A: T.Tensor((N,), src), B: T.Tensor((N,), fmt), C: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(N):
                B[i] = T.cast(A[i], fmt)
            for i in T.serial(N):
                C[i] = T.cast(B[i], "float32")

    return compile_mesh_kernel(k, compile_flags=FLAGS)


def _probe_values(name, src, rng):
    """Random bit patterns (NaNs, infinities, subnormals), every value of the format,
    the halfway points between neighbours, and their next floats."""
    fmt, md = FORMATS[name], getattr(ml_dtypes, name)
    if src == "float32":
        x = rng.integers(0, 2 ** 32, N, dtype=np.uint64).astype(np.uint32).view(np.float32)
    else:
        x = rng.standard_normal(N) * np.exp2(rng.integers(-150, 150, N).astype(np.float64))
    x = x.astype(src)
    codes = np.arange(min(1 << fmt.bits, N // 4), dtype=np.uint32).astype(_bits(name))
    if fmt.bits == 16:
        codes = rng.integers(0, 1 << 16, N // 4).astype(np.uint16)
    vals = codes.view(md).astype(np.float64)
    nxt = np.nextafter(vals, np.inf)
    with np.errstate(all="ignore"):
        nb = np.array(nxt).astype(md).astype(np.float64)
        mid = vals + (nb - vals) / 2  # the halfway point to the next value of the format
    m = len(codes)
    x[:m] = vals.astype(src)
    x[m:2 * m] = mid.astype(src)
    x[2 * m:3 * m] = np.nextafter(mid.astype(src), np.array(np.inf, src))
    x[3 * m:3 * m + 10] = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0] * 2, src)
    return x


@pytest.mark.slow
@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("name", TORCH + ["float4_e2m1fn"])
def test_conversions_equal_ml_dtypes(name, src):
    md = getattr(ml_dtypes, name)
    rng = np.random.default_rng(7)
    x = _probe_values(name, src, rng)
    kernel = _convert_kernel(name, src)
    b = torch.zeros(N, dtype=getattr(torch, name, getattr(torch, FORMATS[name].storage)))
    c = torch.zeros(N)
    kernel(torch.from_numpy(x), b, c)
    with np.errstate(all="ignore"):
        want = x.astype(md)
    got = b.view(getattr(torch, FORMATS[name].storage)).numpy().view(md)
    ok = _same(got, want)
    assert ok.all(), (x[~ok][:5], got[~ok][:5].view(_bits(name)), want[~ok][:5].view(_bits(name)))
    back = want.astype(np.float32)
    assert _same(c.numpy(), back).all()


@pytest.mark.slow
def test_a_format_without_torch_dtype_travels_as_bits():
    """float8_e4m3 (IEEE-like, with infinities) has no torch dtype: uint8 bits in and
    out, as ml_dtypes views them."""
    name = "float8_e4m3"
    md = getattr(ml_dtypes, name)
    x = _probe_values(name, "float32", np.random.default_rng(3))
    kernel = _convert_kernel(name, "float32")
    b = torch.zeros(N, dtype=torch.uint8)
    c = torch.zeros(N)
    kernel(torch.from_numpy(x), b, c)
    with np.errstate(all="ignore"):
        want = x.astype(md)
    assert _same(b.numpy().view(md), want).all()
    with pytest.raises(ValueError, match=r"argument 1 must have dtype torch.uint8 \(the "
                                         r"kernel's parameter is float8_e4m3\)"):
        kernel(torch.from_numpy(x), torch.zeros(N), c)


# -- arithmetic: one rounding per operation --------------------------------------------------
M = 64


@pytest.fixture(scope="module")
def elementwise():
    @T.prim_func
    def k(A: T.Tensor((M, M), "bfloat16"), B: T.Tensor((M, M), "bfloat16"),
          C: T.Tensor((M, M), "bfloat16"), D: T.Tensor((M, M), "bfloat16")):
        with T.Kernel(1, threads=1) as bx:
            S = T.alloc_shared((M, M), "bfloat16", scope="shared")
            L = T.alloc_shared((M,), "bfloat16", scope="shared")
            T.copy(A, S)
            for i, j in T.Parallel(M, M):
                S[i, j] = S[i, j] * B[i, j] + C[i, j] - T.bfloat16(0.1)
            for i in T.serial(M):
                L[i] = T.max(S[i, 0], S[i, 1]) / B[i, 2]
            for i, j in T.Parallel(M, M):
                D[i, j] = S[i, j] + L[j]
    return compile_mesh_kernel(k, compile_flags=FLAGS)


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), scale=st.sampled_from([1.0, 1e-38, 1e30, 3e38]))
@pytest.mark.slow
def test_bf16_arithmetic_rounds_every_operation(elementwise, seed, scale):
    """As an ml_dtypes bfloat16 array computes: each operation rounded (overflow to
    infinity, subnormals, the constant 0.1 as bfloat16 0.10009765625); T.max as on
    TileLang's C back end."""
    bf = ml_dtypes.bfloat16
    rng = np.random.default_rng(seed)
    a, b, c = ((rng.standard_normal((M, M)) * scale).astype(bf) for _ in range(3))
    d = torch.zeros(M, M, dtype=torch.bfloat16)
    t = [torch.from_numpy(x.view(np.uint16).astype(np.int32)).to(torch.int16)
         .view(torch.bfloat16) for x in (a, b, c)]
    elementwise(*t, d)
    with np.errstate(all="ignore"):
        s = a * b + c - bf(0.1)
        # T.max is C's select(a > b, a, b): a NaN operand gives the other one
        lane = np.where(s[:, 0] > s[:, 1], s[:, 0], s[:, 1]) / b[:, 2]
        want = s + lane[None, :]
    got = d.view(torch.int16).numpy().view(bf)
    assert _same(got, want).all()


@pytest.mark.slow
def test_bf16_gemm_accumulates_in_float32():
    """T.gemm of bfloat16 tiles into a float32 accumulator, then rounded into a
    bfloat16 output: equal to NumPy's float32 product of the bfloat16 inputs (integer
    values: every sum is exact), rounded once."""
    n = 32

    @T.prim_func
    def k(A: T.Tensor((n, n), "bfloat16"), B: T.Tensor((n, n), "bfloat16"),
          C: T.Tensor((n, n), "bfloat16")):
        with T.Kernel(1, threads=1) as bx:
            As = T.alloc_shared((n, n), "bfloat16", scope="shared")
            Bs = T.alloc_shared((n, n), "bfloat16", scope="shared")
            Acc = T.alloc_local((n, n), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.clear(Acc)
            T.gemm(As, Bs, Acc)
            T.copy(Acc, C)

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    rng = np.random.default_rng(0)
    a = rng.integers(-200, 200, (n, n)).astype(np.float32)  # bf16-exact up to 256
    b = rng.integers(-8, 8, (n, n)).astype(np.float32)
    c = torch.zeros(n, n, dtype=torch.bfloat16)
    kernel(torch.from_numpy(a).bfloat16(), torch.from_numpy(b).bfloat16(), c)
    want = (a @ b).astype(ml_dtypes.bfloat16)
    assert np.array_equal(c.float().numpy(), want.astype(np.float32))


@pytest.mark.slow
def test_fp8_store_rounds_and_out_idx_returns_the_dtype():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float8_e4m3fn")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(8):
                B[i] = T.cast(A[i] * T.float32(3.0), "float8_e4m3fn")

    kernel = compile_mesh_kernel(k, out_idx=-1, compile_flags=FLAGS)
    x = np.array([0.1, 1.0, 100.0, 150.0, 1e6, -0.0, np.nan, 2.0 ** -10], np.float32)
    out = kernel(torch.from_numpy(x))
    assert out.dtype == torch.float8_e4m3fn
    with np.errstate(all="ignore"):
        want = (x * np.float32(3.0)).astype(ml_dtypes.float8_e4m3fn)
    assert _same(out.view(torch.uint8).numpy().view(ml_dtypes.float8_e4m3fn), want).all()


# -- what cannot run ------------------------------------------------------------------------
def test_an_unsupported_narrow_float_is_refused_by_name():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float6_e2m3fn")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(8):
                B[i] = T.cast(A[i], "float6_e2m3fn")

    with pytest.raises(ValueError, match="dtype float6_e2m3fn is not supported on the C back "
                                         "end here"):
        legalize_narrow_floats(k)


@pytest.mark.slow
def test_a_wrong_argument_dtype_names_the_parameter_dtype():
    @T.prim_func
    def k(A: T.Tensor((8,), "bfloat16")):
        with T.Kernel(1, threads=1) as bx:
            A[0] = T.bfloat16(1.0)

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    with pytest.raises(ValueError, match=r"argument 0 must have dtype torch.bfloat16"):
        kernel(torch.zeros(8))
    a = torch.zeros(8, dtype=torch.bfloat16)
    kernel(a)
    assert a[0].item() == 1.0


def test_encode_const_is_ml_dtypes():
    assert encode_const(0.1, FORMATS["bfloat16"]) == int(
        np.array([0.1]).astype(ml_dtypes.bfloat16).view(np.uint16)[0])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bfloat16"])
def test_a_narrow_infinity_is_the_formats_constant(name):
    """``-T.infinity("bfloat16")`` (a flash attention's masked score) is minus infinity
    in the format, NaN in one without infinity (ml_dtypes' conversion); it was rounded
    through the bits of C's INFINITY, whose address the C code cannot take (a compile
    error)."""
    @T.prim_func
    def k(A: T.Tensor((4,), name), B: T.Tensor((4,), name)):
        with T.Kernel(1, threads=1) as bx:
            S = T.alloc_shared((4,), name, scope="shared")
            for i in T.serial(4):
                S[i] = -T.infinity(name)
            for i in T.serial(4):
                B[i] = T.if_then_else(A[i] > 0, A[i], S[i])

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    a = np.array([1, -1, 2, 0], np.float32)
    dt = getattr(ml_dtypes, name)
    want = np.where(a > 0, a, -np.float32(np.inf)).astype(dt).astype(np.float32)
    if hasattr(torch, name):
        b = torch.zeros(4, dtype=getattr(torch, name))
        kernel(torch.from_numpy(a).to(getattr(torch, name)), b)
        assert _same(b.float().numpy(), want).all()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn"])
def test_a_load_after_a_store_reads_the_stored_value(name):
    """One loop body stores S[i] and then reads it (the upstream's T.Tiles kernels:
    ``A[i] = A[i] * 2; B[i] = A[i] * B[i]``). TVM's C code generator names a
    reinterpreted expression by its text and reused the first load's name after the
    store: the second statement read S[i] from before it (exp(a) + exp(b) where
    exp(2a) + exp(2ab) was meant)."""
    @T.prim_func
    def k(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            S = T.alloc_shared((8,), name, scope="shared")
            for i in T.serial(8):
                S[i] = T.cast(A[i], name)
            for i in T.serial(8):
                S[i] = T.cast(T.cast(S[i], "float32") * T.float32(2.0), name)
                B[i] = T.cast(S[i], "float32") + T.float32(1.0)

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    a = np.array([1, -1, 2, 0, 3, -3, 0.5, 4], np.float32)
    b = torch.zeros(8)
    kernel(torch.from_numpy(a), b)
    np.testing.assert_array_equal(b.numpy(), 2 * a + 1)

@pytest.mark.slow
def test_an_assert_in_a_narrow_float_kernel_compiles_and_holds():
    """A kernel's ``assert`` (an ``AssertStmt``) beside bfloat16 buffers: the rewrite
    rebuilt it from a ``kind`` field TVM's node does not have (an ``AttributeError``
    when the kernel compiled); it keeps its condition, checked when the kernel runs."""
    @T.prim_func
    def k(A: T.Tensor((4,), "bfloat16"), B: T.Tensor((4,), "bfloat16")):
        with T.Kernel(1, threads=1) as bx:
            n = bx + 4
            assert n <= 4, "n fits"
            for i in T.serial(4):
                B[i] = A[i] + A[i]

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    a = torch.tensor([1.0, -2.0, 3.5, 0.0], dtype=torch.bfloat16)
    b = torch.zeros(4, dtype=torch.bfloat16)
    kernel(a, b)
    assert torch.equal(b, a + a)
def test_nested_narrow_operations_are_written_once():
    """Each rounding reads its operand about five times: an operation nested in six
    others of bfloat16 was written 5 ** 6 times (bfloat16 softplus, six deep, never
    finished compiling); each operand is now bound once."""
    @T.prim_func
    def k(A: T.Buffer((8,), "bfloat16"), B: T.Buffer((8,), "bfloat16")):
        for i in T.serial(8):
            x = A[i]
            B[i] = ((((((x + x) * x) - x) * x) + x) * x) - x

    text = legalize_narrow_floats(k).script()
    assert len(text) < 20_000, len(text)


@pytest.mark.slow
def test_abs_of_a_narrow_value_is_c_fabsf():
    """``T.abs`` of a bfloat16 value (softplus's ``-T.abs(x)``) stopped in the C code
    generator ("Unresolved call tirx.fabs"): it is C's fabsf of the exact float32 value,
    stored in bfloat16."""
    @T.prim_func
    def k(A: T.Tensor((8,), "bfloat16"), B: T.Tensor((8,), "bfloat16")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(8):
                B[i] = -T.abs(A[i]) * T.bfloat16(3.0)

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    a = np.array([1.5, -2.25, 0, -0.0, 3.1, -7.7, 1e30, -1e-30], np.float32)
    bf = a.astype(ml_dtypes.bfloat16)
    b = torch.zeros(8, dtype=torch.bfloat16)
    kernel(torch.from_numpy(bf.astype(np.float32)).to(torch.bfloat16), b)
    want = (-np.abs(bf.astype(np.float32)) * 3).astype(ml_dtypes.bfloat16).astype(np.float32)
    assert _same(b.float().numpy(), want).all()
