"""Kernels written for Tilelang-Mesh, compiled and run on CPU: the fork's GEMM on 2x2 and
4x4 (uneven sizes, T.serial and T.Pipelined k loops) equals NumPy; every sharding
policy places each core on its shard (zeros past the edge, writes there dropped);
replicated outputs whose copies disagree are refused; the demo."""
import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from meshtensor import Mesh  # noqa: E402
from meshtensor.cli import main as cli_main  # noqa: E402
from meshtensor.tilelang import compile_mesh_kernel  # noqa: E402
from meshtensor.tilelang import tilelang_mesh as tm  # noqa: E402
from meshtensor.tilelang.kernels.tilelang_mesh_gemm import matmul  # noqa: E402

FLAGS = ["-O1"]
Policy, Rep = tm.MeshShardingPolicy, tm.MeshReplicationType


# -- the fork's GEMM -------------------------------------------------------------------------
GEMMS = {  # (mesh side, M, N, K, block_M, block_N, block_K, pipelined)
    "2x2-uneven-serial": (2, 50, 37, 45, 8, 8, 8, False),
    "4x4-even-serial": (4, 64, 64, 64, 8, 8, 8, False),
    "4x4-uneven-pipelined": (4, 70, 50, 90, 8, 16, 8, True),
}


@pytest.fixture(scope="module", params=list(GEMMS), ids=list(GEMMS))
def gemm(request):
    n, M, N, K, bm, bn, bk, pipelined = GEMMS[request.param]
    tm.enable(mesh=(n, n))
    func = matmul(M, N, K, bm, bn, bk, num_stages=2, pipelined=pipelined, dtype="float32")
    return (M, N, K), compile_mesh_kernel(func, compile_flags=FLAGS)


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_fork_gemm_equals_numpy(gemm, seed):
    """Integer-valued data: every product and sum is exact, so C equals A @ B exactly;
    C starts as garbage and every cell is overwritten."""
    (M, N, K), kernel = gemm
    rng = np.random.default_rng(seed)
    a = rng.integers(-5, 6, (M, K)).astype(np.float32)
    b = rng.integers(-5, 6, (K, N)).astype(np.float32)
    c = torch.full((M, N), 123.0)
    kernel(torch.from_numpy(a), torch.from_numpy(b), c)
    np.testing.assert_array_equal(c.numpy(), a @ b)


def test_fork_gemm_keeps_the_caller_tensors(gemm):
    """Inputs come back unchanged; the kernel's source keeps its comm ops and shard
    shapes (MeshKernel.prim_func), the compiled one takes per-core stacks."""
    (M, N, K), kernel = gemm
    a = torch.ones(M, K)
    b = torch.ones(K, N)
    a0, b0 = a.clone(), b.clone()
    kernel(a, b, torch.zeros(M, N))
    assert torch.equal(a, a0) and torch.equal(b, b0)
    assert [str(p.name) for p in kernel.prim_func.params] == ["A_handle", "B_handle", "C_handle"]
    assert [w for _, _, w in kernel.mesh_tensors] == [False, False, True]


# -- every sharding policy ---------------------------------------------------------------------
R, C = 2, 4
G = (5, 9)
POLICIES = {  # id: (policy, which shard a core holds: f(row, col, cid))
    "x_and_y": (Policy(y=0, x=1), lambda r, c, i: i),
    "y_and_x_swapped": (Policy(y=1, x=0), lambda r, c, i: i),
    "x_only": (Policy(x=1), lambda r, c, i: c),
    "y_only": (Policy(y=0), lambda r, c, i: r),
    "x_equals_y": (Policy(x=0, y=0), lambda r, c, i: i),
    "cross_mesh_dim": (Policy(cross_mesh_dim=1), lambda r, c, i: i),
    "replicate_row": (Policy(y=0, replicate=Rep.ROW), lambda r, c, i: r),
    "replicate_column": (Policy(x=1, replicate=Rep.COLUMN), lambda r, c, i: c),
    "replicate_all": (Policy(replicate=Rep.ALL), lambda r, c, i: 0),
    "nothing_set": (Policy(), lambda r, c, i: 0),
}
NAMES = list(POLICIES)


def _shifted(p):
    """The same policy on a tensor with one more leading dim."""
    f = (lambda d: None if d is None else d + 1)
    return Policy(x=f(p.x), y=f(p.y), replicate=p.replicate, cross_mesh_dim=f(p.cross_mesh_dim))


def policies_kernel(compat=None):
    tm.enable(mesh=(R, C), compat=compat)
    cfg, F = (R, C), "float32"
    P = [POLICIES[k][0] for k in NAMES]
    S = [_shifted(p) for p in P]
    sid = [POLICIES[k][1] for k in NAMES]
    line = Policy(cross_mesh_dim=0)

    @T.prim_func
    def kernel(I0: T.MeshTensor(G, P[0], cfg, F), O0: T.MeshTensor((2,) + G, S[0], cfg, F),
               I1: T.MeshTensor(G, P[1], cfg, F), O1: T.MeshTensor((2,) + G, S[1], cfg, F),
               I2: T.MeshTensor(G, P[2], cfg, F), O2: T.MeshTensor((2,) + G, S[2], cfg, F),
               I3: T.MeshTensor(G, P[3], cfg, F), O3: T.MeshTensor((2,) + G, S[3], cfg, F),
               I4: T.MeshTensor(G, P[4], cfg, F), O4: T.MeshTensor((2,) + G, S[4], cfg, F),
               I5: T.MeshTensor(G, P[5], cfg, F), O5: T.MeshTensor((2,) + G, S[5], cfg, F),
               I6: T.MeshTensor(G, P[6], cfg, F), O6: T.MeshTensor((2,) + G, S[6], cfg, F),
               I7: T.MeshTensor(G, P[7], cfg, F), O7: T.MeshTensor((2,) + G, S[7], cfg, F),
               I8: T.MeshTensor(G, P[8], cfg, F), O8: T.MeshTensor((2,) + G, S[8], cfg, F),
               I9: T.MeshTensor(G, P[9], cfg, F), O9: T.MeshTensor((2,) + G, S[9], cfg, F),
               FLAG: T.MeshTensor((1,), Policy(replicate=Rep.ALL), cfg, F),
               SUMS: T.MeshTensor((R * C, len(NAMES)), line, cfg, F)):
        with T.Kernel(R * C) as cid:
            acc = T.alloc_local((1,), F)
            # (a Python loop, unrolled; a buffer bound to a new name would be renamed)
            ins = (I0, I1, I2, I3, I4, I5, I6, I7, I8, I9)
            outs = (O0, O1, O2, O3, O4, O5, O6, O7, O8, O9)
            for p in list(range(len(NAMES))):
                acc[0] = 0.0
                for i, j in T.grid(ins[p].local_shape[0], ins[p].local_shape[1]):
                    outs[p][0, i, j] = ins[p][i, j] * 2.0 + 1.0
                    outs[p][1, i, j] = (T.cast(sid[p](cid // C, cid % C, cid) + cid * 0, F)
                                        + FLAG[0] * T.cast(cid, F))
                    acc[0] = acc[0] + ins[p][i, j]
                SUMS[0, p] = acc[0]

    return kernel


@pytest.fixture(scope="module", params=[None, "2025"], ids=["balanced", "compat2025"])
def policies(request):
    """The kernel under SUNMMIO's current balanced split, and under the older fork's
    ceil blocks (``compat="2025"``)."""
    try:
        kernel = compile_mesh_kernel(policies_kernel(request.param), compile_flags=FLAGS)
    finally:
        tm.enable(mesh=(R, C))
    return _Compiled(kernel, "ceil" if request.param == "2025" else "balanced")


class _Compiled:
    """A compiled kernel and the split rule it was built under."""

    def __init__(self, kernel, split):
        self.kernel, self.split = kernel, split

    def __call__(self, *args):
        return self.kernel(*args)


def _args(seed, flag):
    rng = np.random.default_rng(seed)
    ins = [rng.integers(-9, 10, G).astype(np.float32) for _ in NAMES]
    outs = [torch.full((2,) + G, -77.0) for _ in NAMES]
    args = []
    for i, o in zip(ins, outs):
        args += [torch.from_numpy(i), o]
    sums = torch.zeros(R * C, len(NAMES))
    return ins, outs, sums, args + [torch.tensor([float(flag)]), sums]


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_every_policy_puts_each_core_on_its_shard(policies, seed):
    """Per policy: the output is 2 * input + 1 everywhere (shards round-trip, padding
    writes dropped), the owner map equals meshtensor.Sharding's regions, and each core's
    sum over its shard is the sum of its valid region (cells past the edge read 0)."""
    ins, outs, sums, args = _args(seed, 0)
    policies(*args)
    mesh = Mesh({"row": R, "col": C})
    for k, (name, x, out) in enumerate(zip(NAMES, ins, outs)):
        policy, f = POLICIES[name]
        sharding = policy.to_sharding(mesh, 2, G, split=policies.split)
        np.testing.assert_array_equal(out[0].numpy(), 2 * x + 1, err_msg=name)
        starts, stops = sharding.regions(G)
        owner = np.full(G, -1.0, dtype=np.float32)
        for c in range(R * C):
            box = tuple(slice(a, b) for a, b in zip(starts[c], stops[c]))
            owner[box] = f(c // C, c % C, c)
            assert sums[c, k].item() == x[box].sum(), (name, c)
        np.testing.assert_array_equal(out[1].numpy(), owner, err_msg=name)


def test_replicated_outputs_must_agree(policies):
    """Writing the core id into every copy: the first replicated output (x only: copies
    down each column) is refused, naming the tensor and two cores that disagree; the
    fully split outputs before it were written."""
    _, outs, _, args = _args(0, 1)
    with pytest.raises(ValueError, match=r"T.MeshTensor output 'O2' \(MeshShardingPolicy\(x=2\)\) "
                                         r"is replicated, but the copies of cores \(0, 0\) and "
                                         r"\(1, 0\) disagree"):
        policies(*args)


@pytest.mark.parametrize("which, bad, match", [
    ("shape", lambda a: torch.zeros(4, 9), r"'I0' \(argument 0\): expected the global tensor "
                                           r"of shape \(5, 9\)"),
    ("dtype", lambda a: torch.zeros(5, 9, dtype=torch.float64), r"expected dtype float32"),
    ("type", lambda a: np.zeros((5, 9), np.float32), r"expected the global torch tensor"),
], ids=["shape", "dtype", "type"])
def test_global_arguments_are_checked(policies, which, bad, match):
    _, _, _, args = _args(0, 0)
    args[0] = bad(args[0])
    with pytest.raises((ValueError, TypeError), match=match):
        policies(*args)


def test_argument_count_is_checked(policies):
    _, _, _, args = _args(0, 0)
    with pytest.raises(ValueError, match="takes 22 positional arguments"):
        policies(*args[:-1])


def test_an_atomic_add_into_a_mesh_tensor_reaches_the_caller():
    """Every core adds into its shard with T.atomic_add (an access pointer, not a store):
    the caller's tensor gets the sums. It used to keep its old values (the parameter was
    not seen as written, so its shards were never copied back)."""
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def k(A: T.MeshTensor((5, 6), Policy(y=0, x=1), (2, 2), "float32"),
          X: T.MeshTensor((5, 6), Policy(y=0, x=1), (2, 2), "float32")):
        with T.Kernel(4) as cid:
            for i, j in T.grid(3, 3):
                T.atomic_add(A[i, j], X[i, j] * 2.0 + T.cast(cid, "float32"))

    kern = compile_mesh_kernel(k, compile_flags=["-O0"])
    a, x = torch.ones(5, 6), torch.arange(30, dtype=torch.float32).reshape(5, 6)
    kern(a, x)
    owner = np.add.outer([0, 0, 0, 2, 2], [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(a.numpy(), 1 + 2 * x.numpy() + owner)


@pytest.mark.slow
def test_a_reduction_reads_an_all_gathered_buffer():
    """A row's all_gather into G, then T.reduce_sum over the gathered axis (SUNMMIO's
    RMSNorm and reduction examples): each core gets the sum of its row's tiles. G lives
    across the comm op; it used to be read through a pointer into the cores' shared
    array, and TileLang's CPU reduction stopped with an InternalError ("CPU reduce only
    supports local src and local/local.var dst buffers")."""
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def k(A: T.Tensor((4, 3), "float32"), Out: T.Tensor((4, 3), "float32")):
        with T.Kernel(4) as cid:
            S = T.alloc_shared((3,), "float32")
            G = T.alloc_shared((2, 3), "float32")
            R = T.alloc_shared((3,), "float32")
            T.copy(A[cid, 0:3], S)
            T.comm.all_gather(S, G, "h")
            T.reduce_sum(G, R, dim=0)
            T.copy(R, Out[cid, 0:3])

    kern = compile_mesh_kernel(k, compile_flags=FLAGS)
    a = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    out = torch.zeros(4, 3)
    kern(a, out)
    rows = a.numpy().reshape(2, 2, 3).sum(axis=1)
    np.testing.assert_array_equal(out.numpy(), np.repeat(rows, 2, axis=0))


# -- the demo ---------------------------------------------------------------------------------
def test_demo_runs_the_fork_gemm_and_prints_its_traffic(capsys):
    assert cli_main(["demo", "--tilelang-mesh", "--size", "40", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "result equals NumPy" in out
    assert "T.comm.all_gather A_shared -> A_shared_dist h" in out
    assert all(len(line) <= 80 for line in out.splitlines()), out


@pytest.mark.slow
def test_the_bfloat16_benchmark_runs_quick(capsys):
    """benchmarks/bench_tilelang_mesh.py --quick: both GEMMs equal NumPy and the ratio
    is printed (the 1024^3 run holds the 2x target; a 128^3 run is too short to)."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "bench_tilelang_mesh.py"
    spec = importlib.util.spec_from_file_location("bench_tilelang_mesh", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    try:
        ratio = bench.main(64, quick=True)
    finally:
        tm.enable(mesh=(4, 4))
    out = capsys.readouterr().out
    assert ratio > 0 and "ratio bfloat16 / float32:" in out


@pytest.mark.slow
def test_the_fork_gemm_runs_in_bfloat16_exactly():
    """The fork's GEMM in its default dtypes (bfloat16 A and B, float32 C) against a
    bfloat16 NumPy reference (ml_dtypes): bfloat16-valued inputs, float32 accumulation;
    with fractional values the float32 sums are exact too (few terms, small exponent
    range), so the comparison is bit for bit."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    tm.enable(mesh=(4, 4))
    M, N, K = 96, 80, 72
    kernel = compile_mesh_kernel(matmul(M, N, K, 8, 8, 8), compile_flags=FLAGS)
    rng = np.random.default_rng(3)
    # multiples of 1/8 in [-4, 4]: exact in bfloat16, and every partial sum exact in float32
    a = (rng.integers(-32, 33, (M, K)) / 8).astype(ml_dtypes.bfloat16)
    b = (rng.integers(-32, 33, (K, N)) / 8).astype(ml_dtypes.bfloat16)
    c = torch.full((M, N), 7.0)
    kernel(torch.from_numpy(a.astype(np.float32)).bfloat16(),
           torch.from_numpy(b.astype(np.float32)).bfloat16(), c)
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_array_equal(c.numpy(), want)
