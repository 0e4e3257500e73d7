"""``CMathCalls``: math intrinsics that TVM's C code generator cannot print run, with
the C library's values. Each run below stopped before with ``InternalError:
Unresolved call tirx.exp2`` (stock ``tilelang.compile`` too): a float16 call, ``T.abs``
of any float, and a float32 call in a ``T.Parallel`` loop."""
import ctypes
import ctypes.util

import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang  # noqa: E402,F401
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402
import tvm  # noqa: E402

from meshtensor.tilelang import compile_mesh_kernel  # noqa: E402
from meshtensor.tilelang.transform.c_math import c_math_calls  # noqa: E402

LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
N = 64


def _libm(name: str, x: np.ndarray) -> np.ndarray:
    """The C library's float32 function at each element (the generated code calls it)."""
    f = getattr(LIBM, name + "f")
    f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float]
    return np.array([f(float(v)) for v in x.astype(np.float32)], dtype=np.float32)


def _kernel(op, dtype, loop):
    fn = getattr(T, op)

    @T.prim_func
    def k(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(1, threads=1) as bx:
            S = T.alloc_shared((N,), dtype, scope="shared")
            T.copy(X, S)
            if loop == "parallel":
                for i in T.Parallel(N):
                    S[i] = fn(S[i])
            else:
                for i in T.serial(N):
                    S[i] = fn(S[i])
            T.copy(S, Y)
    return k


CASES = [("exp", "expf"), ("exp2", "exp2f"), ("log", "logf"), ("sqrt", "sqrtf"),
         ("tanh", "tanhf"), ("abs", "fabsf")]


# (a float32 call in a serial loop other than fabs: stock TileLang prints it itself)
RUNS = [(op, c, dt, loop) for op, c in CASES for dt in ("float16", "float32")
        for loop in ("serial", "parallel")
        if not (dt == "float32" and loop == "serial" and op != "abs")]


@pytest.mark.slow
@pytest.mark.parametrize("op,cname,dtype,loop", RUNS, ids=["-".join(r[::2]) + "-" + r[3]
                                                          for r in RUNS])
def test_math_calls_run_with_the_c_librarys_values(op, cname, dtype, loop):
    lo = 0.01 if op in ("log", "sqrt") else -3.0
    x = np.linspace(lo, 3.0, N).astype(dtype)
    want = _libm(cname[:-1], x).astype(dtype)  # float16: computed in float32, rounded once
    y = torch.zeros(N, dtype=getattr(torch, dtype))
    compile_mesh_kernel(_kernel(op, dtype, loop))(torch.from_numpy(x), y)
    assert np.array_equal(y.numpy().view(np.uint16 if dtype == "float16" else np.uint32),
                          want.view(np.uint16 if dtype == "float16" else np.uint32))


def test_c_math_calls_before_after():
    @T.prim_func
    def before(X: T.Tensor((4,), "float16"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.Parallel(4):
                Y[i] = T.exp(Y[i])
            X[0] = T.exp2(X[1])
            Y[0] = T.abs(Y[1])

    @T.prim_func
    def after(X: T.Tensor((4,), "float16"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(4):
                Y[i] = T.exp(Y[i])
            X[0] = T.Cast("float16", T.exp2(T.Cast("float32", X[1])))
            Y[0] = T.call_pure_extern("float32", "fabsf", Y[1])

    tvm.ir.assert_structural_equal(c_math_calls(before), after.with_attr("global_symbol", "before"))


def test_a_kernel_without_such_calls_is_unchanged():
    @T.prim_func
    def k(Y: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.Parallel(4):
                Y[i] = Y[i] * 2.0
    assert c_math_calls(k).same_as(k)


def test_ieee_intrinsics_and_fmod_before_after():
    """``T.ieee_frcp`` (the upstream's tile-ops test) and ``T.fmod`` stopped in the C
    generator ("Unresolved call tl.ieee_frcp", "tirx.fmod"): round-to-nearest is C's own
    operation, fmod C's fmodf."""
    @T.prim_func
    def before(Y: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            Y[0] = T.ieee_frcp(Y[1])
            Y[1] = T.ieee_fsqrt(Y[2])
            Y[2] = T.fmod(Y[3], T.float32(3.0))

    @T.prim_func
    def after(Y: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            Y[0] = T.float32(1.0) / Y[1]
            Y[1] = T.call_pure_extern("float32", "sqrtf", Y[2])
            Y[2] = T.call_pure_extern("float32", "fmodf", Y[3], T.float32(3.0))

    tvm.ir.assert_structural_equal(c_math_calls(before), after.with_attr("global_symbol", "before"))


def test_an_ieee_intrinsic_in_another_rounding_mode_is_refused():
    @T.prim_func
    def k(Y: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            Y[0] = T.ieee_frcp(Y[1], "rz")

    with pytest.raises(ValueError, match=r"T.ieee_frcp\(\.\.\., rounding_mode='rz'\) on "
                                         r"float32 has no C form here"):
        c_math_calls(k)


@pytest.mark.slow
def test_ieee_frcp_and_fmod_run_with_c_values():
    @T.prim_func
    def k(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"),
          Z: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(N):
                Y[i] = T.ieee_frcp(X[i])
                Z[i] = T.fmod(X[i], T.float32(0.7))

    x = np.linspace(-3.0, 3.0, N + 1)[1:].astype(np.float32)
    y, z = torch.zeros(N), torch.zeros(N)
    compile_mesh_kernel(k)(torch.from_numpy(x), y, z)
    assert np.array_equal(y.numpy(), np.float32(1) / x)
    assert np.array_equal(z.numpy(), np.fmod(x, np.float32(0.7)))


@pytest.mark.slow
def test_default_flags_round_each_float_operation():
    """``compile_mesh_kernel``'s own flags (-O3 -march=native) let g++ fuse ``x * s -
    m * s`` into one FMA, rounded once: 1164 of 4096 results differed from float32
    arithmetic (a softmax's exp2 argument; a float32 T.gemm's sums likewise)."""
    @T.prim_func
    def k(X: T.Tensor((4096,), "float32"), M: T.Tensor((4096,), "float32"),
          Y: T.Tensor((4096,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(4096):
                Y[i] = X[i] * T.float32(1.44269504) - M[i] * T.float32(1.44269504)

    rng = np.random.default_rng(0)
    x, m = (rng.standard_normal(4096).astype(np.float32) for _ in range(2))
    y = torch.zeros(4096)
    compile_mesh_kernel(k)(torch.from_numpy(x), torch.from_numpy(m), y)
    s = np.float32(1.44269504)
    assert np.array_equal(y.numpy(), x * s - m * s)
