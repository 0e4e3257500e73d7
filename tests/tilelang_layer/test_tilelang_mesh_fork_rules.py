"""What the corpus of SUNMMIO's kernels needed of the layer, one rule each: the fork's
modules import unchanged, a launch grid with fewer blocks than cores (idle cores, and
the comm ops they cannot join), replicated outputs of such a launch, a kernel with no
T.Kernel, fragments as T.clear targets, T.gemm operands read before the accumulator is
written and multiplied in its dtype, and float16 infinities in a vectorised fill."""
import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402

from meshtensor.tilelang import compile_mesh_kernel, prepare_tilelang_mesh  # noqa: E402
from meshtensor.tilelang import tilelang_mesh as tm  # noqa: E402

FLAGS = ["-O1"]


@pytest.fixture(autouse=True)
def _mesh():
    tm.enable(mesh=(4, 4))
    yield
    tm.enable(mesh=(4, 4))


def _ints(rng, shape, lo=-3, hi=4):
    return rng.integers(lo, hi, shape).astype(np.float32)


def test_the_forks_modules_import_unchanged():
    """A kernel file's `from tilelang.language.mesh_tensor import ...` and
    `from tilelang.layout.sunmmio_layouts import ...` lines work after tm.enable."""
    from tilelang.language.mesh_tensor import MeshReplicationType, MeshShardingPolicy
    from tilelang.layout.sunmmio_layouts import make_row_major, make_zz_layout
    assert MeshShardingPolicy is T.MeshShardingPolicy
    assert MeshReplicationType.ALL is T.MeshReplicationType.ALL
    assert str(make_row_major((4, 8))) == "row_major(shape=(4, 8))"
    assert make_zz_layout((64, 64)).kind == "zz"


# -- launches with fewer blocks than cores ----------------------------------------------------
def row_broadcast(blocks, src=(0, 0), direction="h"):
    """The fork's comm_broadcast_kernel shape: T.Kernel(blocks) on 16 cores, block b
    copies its tile and a broadcast sends core `src`'s along its row (or column)."""
    @T.prim_func
    def k(A: T.Tensor((8, 8 * blocks), "float32"), B: T.Tensor((8, 8 * blocks), "float32")):
        with T.Kernel(blocks, threads=1) as bx:
            S = T.alloc_shared((8, 8), "float32", scope="shared.rsram")
            D = T.alloc_shared((8, 8), "float32", scope="shared.rsram")
            T.copy(A[0, bx * 8], S)
            T.comm.broadcast(S, D, src, direction=direction)
            T.copy(D, B[0, bx * 8])
    return k


@pytest.mark.slow
def test_a_grid_of_fewer_blocks_runs_where_its_comm_ops_involve_running_cores():
    """T.Kernel(4) on 16 cores: blocks 0-3 on row 0's cores, the rest idle; a row
    broadcast from (0, 0) involves only running cores, so it runs (the chip runs it
    too): every block gets block 0's tile."""
    kernel = compile_mesh_kernel(row_broadcast(4), compile_flags=FLAGS)
    a = np.arange(8 * 32, dtype=np.float32).reshape(8, 32)
    b = torch.zeros(8, 32)
    kernel(torch.from_numpy(a), b)
    np.testing.assert_array_equal(b.numpy(), np.tile(a[:, 0:8], (1, 4)))


@pytest.mark.parametrize("blocks, src, direction, idle", [
    (4, (0, 0), "v", r"\[\(1, 0\), \(2, 0\), \(3, 0\)\]"),
    (1, (0, 0), "h", r"\[\(0, 1\), \(0, 2\), \(0, 3\)\]"),
    (4, (1, 2), "all", r"\[\(1, 0\), \(1, 1\)"),
])
def test_a_comm_op_that_involves_an_idle_core_is_refused(blocks, src, direction, idle):
    """A core that runs no block never reaches the op: the chip cannot complete it (a
    broadcast down a column from row 0, or a broadcast from a core past the grid)."""
    with pytest.raises(ValueError, match=r"T.comm.broadcast \(comm op #0\) involves cores "
                       + idle + r".*which run no block of the launch grid"):
        prepare_tilelang_mesh(row_broadcast(blocks, src, direction))


def test_the_last_partial_wave_is_checked_per_wave():
    """24 blocks on 16 cores: in the second wave only rows 0 and 1 run; a row
    broadcast from (0, 0) is fine in both waves, a column one is not in the second."""
    def grid(direction):
        @T.prim_func
        def k(A: T.Tensor((8, 8), "float32")):
            with T.Kernel(8, 3, threads=1) as (bx, by):
                S = T.alloc_shared((8, 8), "float32", scope="shared.rsram")
                D = T.alloc_shared((8, 8), "float32", scope="shared.rsram")
                T.copy(A, S)
                T.comm.broadcast(S, D, (0, 0), direction=direction)
        return k

    prepare_tilelang_mesh(grid("h"))
    with pytest.raises(ValueError, match=r"involves cores \[\(2, 0\), \(3, 0\)\]"):
        prepare_tilelang_mesh(grid("v"))


@pytest.mark.slow
def test_a_replicated_output_of_a_one_block_launch_is_the_running_cores_copy():
    """T.Kernel(1) on 16 cores writes core 0's copy of a replicated T.MeshTensor; the
    other cores never touch theirs (they hold the caller's data): the result is core
    0's copy, not a disagreement."""
    rep = T.MeshShardingPolicy(replicate=T.MeshReplicationType.ALL)

    @T.prim_func
    def k(A: T.MeshTensor((16, 16), rep, (4, 4), "float32"),
          B: T.MeshTensor((16, 16), rep, (4, 4), "float32")):
        with T.Kernel(1, threads=128) as (bx,):
            S = T.alloc_shared((16, 16), "float32", scope="shared.rsram")
            T.copy(A, S)
            for i, j in T.Parallel(16, 16):
                S[i, j] = S[i, j] * 2
            T.copy(S, B)

    prepared = prepare_tilelang_mesh(k)
    assert [p.running for _, p, _ in prepared.params] == [(0,), (0,)]
    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    a = _ints(np.random.default_rng(0), (16, 16))
    b = torch.full((16, 16), 7.0)
    kernel(torch.from_numpy(a), b)
    np.testing.assert_array_equal(b.numpy(), 2 * a)


@pytest.mark.slow
def test_a_kernel_without_t_kernel_runs_nothing():
    """The fork's test_mesh_tensor_in_kernel: a body that only reads shapes, no launch:
    nothing runs on the cores, the tensors stay as they were."""
    tm.enable(mesh=(2, 2), legacy_shape=True)  # the fork reads A.shape
    policy = T.MeshShardingPolicy(y=0, x=1)

    @T.prim_func
    def k(A: T.MeshTensor((8, 8), policy, (2, 2), "float32")):
        sharded_M, sharded_K = A.shape

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    a = torch.arange(64, dtype=torch.float32).reshape(8, 8)
    kernel(a)
    assert torch.equal(a, torch.arange(64, dtype=torch.float32).reshape(8, 8))

    @T.prim_func
    def host(A: T.MeshTensor((8, 8), policy, (2, 2), "float32")):
        A[0, 0] = 1.0

    with pytest.raises(ValueError, match=r"has no T.Kernel, so its statements are host code"):
        prepare_tilelang_mesh(host)


# -- fragments, T.gemm's operands --------------------------------------------------------------
@pytest.mark.slow
def test_a_fragment_accumulator_and_fill_target_run():
    """The fork's example_gemm_with_mesh_tensor: T.alloc_fragment as T.clear's target
    and T.gemm's accumulator (stock TileLang's CPU fill refuses local.fragment, and its
    layout inference cannot place the fragment), on a 1x1 mesh with 4 blocks."""
    tm.enable(mesh=(1, 1))
    pol = T.MeshShardingPolicy(x=1, y=0)

    @T.prim_func
    def gemm(A: T.MeshTensor((32, 32), pol, (1, 1), "float16"),
             B: T.MeshTensor((32, 32), pol, (1, 1), "float16"),
             C: T.MeshTensor((32, 32), pol, (1, 1), "float16")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            A_s = T.alloc_shared((16, 8), "float16")
            B_s = T.alloc_shared((8, 16), "float16")
            C_l = T.alloc_fragment((16, 16), "float")
            T.clear(C_l)
            for k in T.Pipelined(4, num_stages=3):
                T.copy(A[by * 16, k * 8], A_s)
                T.copy(B[k * 8, bx * 16], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * 16, bx * 16])

    kernel = compile_mesh_kernel(gemm, compile_flags=FLAGS)
    rng = np.random.default_rng(1)
    a, b = _ints(rng, (32, 32)), _ints(rng, (32, 32))
    c = torch.zeros(32, 32, dtype=torch.float16)
    kernel(torch.from_numpy(a).half(), torch.from_numpy(b).half(), c)
    np.testing.assert_array_equal(c.float().numpy(), a @ b)


@pytest.mark.slow
def test_gemm_operands_are_read_before_the_accumulator_is_written():
    """The fork's auto_insert_copy_matmul: T.gemm(C_s, B_s, C_s) multiplies C's old
    value (its scope inference stages the operand through a copy), with a float32 A
    and a float16 B multiplied in the accumulator's float32; and the sliced form,
    where the accumulator region overlaps B's (in a SUNMMIO kernel: stock TileLang
    refuses the mixed dtypes)."""
    tm.enable(mesh=(1, 1))
    one = T.MeshShardingPolicy(cross_mesh_dim=0)

    @T.prim_func
    def k(A: T.MeshTensor((8, 8), one, (1, 1), "float16"),
          B: T.MeshTensor((8, 8), one, (1, 1), "float16"),
          C: T.MeshTensor((8, 8), one, (1, 1), "float32"),
          D: T.MeshTensor((8, 16), one, (1, 1), "float16")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((8, 8), "float16")
            B_s = T.alloc_shared((8, 8), "float16")
            C_s = T.alloc_shared((8, 8), "float32")
            D_s = T.alloc_shared((8, 16), "float16")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C_s)
            T.gemm(A_s, B_s, C_s)
            T.gemm(C_s, B_s, C_s)
            T.copy(D, D_s)
            T.gemm(A_s, D_s[0:8, 4:12], D_s[0:8, 0:8])
            T.copy(C_s, C)
            T.copy(D_s, D)

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    rng = np.random.default_rng(2)
    a, b, d = _ints(rng, (8, 8), -1, 2), _ints(rng, (8, 8), -1, 2), _ints(rng, (8, 16), -1, 2)
    c = torch.zeros(8, 8)
    dt = torch.from_numpy(d).half()
    kernel(torch.from_numpy(a).half(), torch.from_numpy(b).half(), c, dt)
    ab = a @ b
    np.testing.assert_array_equal(c.numpy(), ab + ab @ b)
    want = d.copy()
    want[:, 0:8] = d[:, 0:8] + a @ d[:, 4:12]
    np.testing.assert_array_equal(dt.float().numpy(), want)


@pytest.mark.slow
def test_a_float16_infinity_fill_compiles_and_runs():
    """T.fill(x, -T.infinity("float16")) in a vectorised loop: TVM prints the constant
    as a float expression, which TileLang's half vector cannot take (a C compile
    error before); the loop stays scalar."""
    line = T.MeshShardingPolicy(cross_mesh_dim=0)

    @T.prim_func
    def k(O: T.MeshTensor((16, 64), line, (4, 4), "float16")):
        with T.Kernel() as cid:
            m = T.alloc_shared((64,), "float16")
            T.fill(m, -T.infinity("float16"))
            T.copy(m, O[0, 0])

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    o = torch.zeros(16, 64, dtype=torch.float16)
    kernel(o)
    assert torch.equal(o, torch.full((16, 64), -float("inf"), dtype=torch.float16))


# -- symbolic shapes ---------------------------------------------------------------------------
def scale_rows(policy=None):
    """B = 2 A on a T.MeshTensor of symbolic rows m (T.dynamic), row-sharded: each core
    doubles its slot (rows past its part read zero; their writes are dropped)."""
    m = T.dynamic("m")
    policy = policy or T.placement.row_shard(0)

    @T.prim_func
    def k(A: T.MeshTensor((m, 8), policy, "float32"),
          B: T.MeshTensor((m, 8), policy, "float32")):
        with T.Kernel() as cid:
            rows, cols = A.local_shape
            S = T.alloc_shared((8,), "float32")
            for i in T.serial(rows):
                T.copy(A[i, 0:8], S)
                for j in T.serial(8):
                    S[j] = S[j] * 2
                T.copy(S, B[i, 0:8])
    return k


def test_a_symbolic_mesh_tensor_is_recorded_by_name_and_bound_per_call():
    from meshtensor.tilelang.ir.mesh_param import bind_symbols, mesh_params
    k = scale_rows()
    (_, a), (_, b) = mesh_params(k).items()
    assert a.global_shape == ("m", 8) and a.symbols == ("m",)
    assert a.local_shape == ("(m + 3) // 4", 8)
    bound, values = bind_symbols([(0, a, False), (1, b, True)],
                                 [torch.zeros(10, 8), torch.zeros(10, 8)], ["m"])
    assert values == [10] and bound[0][1].global_shape == (10, 8)
    assert bound[0][1].regions()[0][::4, 0].tolist() == [0, 3, 6, 8]  # rows: 3, 3, 2, 2
    with pytest.raises(ValueError, match=r"dim 0 is the size 'm', which is 10 in "
                                         r"T.MeshTensor parameter 'A' \(argument 0\) dim 0 "
                                         r"but 9 here"):
        bind_symbols([(0, a, False), (1, b, True)], [torch.zeros(10, 8), torch.zeros(9, 8)])
    prepared = prepare_tilelang_mesh(k)
    # the slot (m + 3) // 4 does not give m back: the kernel takes it after its own
    assert [str(v) for v in prepared.func.params[2:]] == ["m"]
    assert list(prepared.func.attrs["meshtensor.size_params"]) == ["m"]


def test_a_symbolic_shape_with_comm_ops_or_an_expression_is_refused():
    m = T.dynamic("m")
    with pytest.raises(ValueError, match=r"dim m // 2 must be a non-negative int, a "
                                         r"symbolic size"):
        T.MeshTensor((m // 2, 8), T.placement.row_shard(0), "float32")

    @T.prim_func
    def grid(A: T.MeshTensor((m, 8), T.placement.replicated(), "float32")):
        with T.Kernel(T.ceildiv(m, 8), threads=1) as bx:
            S = T.alloc_shared((8,), "float32")
            D = T.alloc_shared((8,), "float32")
            T.copy(A[bx, 0:8], S)
            T.comm.broadcast(S, D, (0, 0), "h")

    with pytest.raises(ValueError, match=r"the launch grid of a kernel with comm ops is "
                                         r"symbolic \(T.comm.broadcast \(comm op #0\) first\)"):
        prepare_tilelang_mesh(grid)


@pytest.mark.slow
def test_a_symbolic_mesh_tensor_runs_at_any_size_from_one_compile():
    """One compiled kernel, called with 10, 7 and 16 rows (the balanced split gives
    uneven parts; the slot is (m + 3) // 4 rows): B is exactly 2 A each time."""
    kernel = compile_mesh_kernel(scale_rows(), compile_flags=FLAGS)
    rng = np.random.default_rng(3)
    for rows in (10, 7, 16):
        a = _ints(rng, (rows, 8))
        b = torch.zeros(rows, 8)
        kernel(torch.from_numpy(a), b)
        np.testing.assert_array_equal(b.numpy(), 2 * a)
    line = compile_mesh_kernel(scale_rows(T.placement.mesh_as_line(0)), compile_flags=FLAGS)
    a = _ints(rng, (21, 8))
    b = torch.zeros(21, 8)
    line(torch.from_numpy(a), b)
    np.testing.assert_array_equal(b.numpy(), 2 * a)


@pytest.mark.slow
def test_a_symbolic_grid_without_comm_ops_runs_its_blocks_in_waves():
    """T.Kernel(T.ceildiv(m, 8)): ceil(m / 8) blocks over 16 cores, in as many waves as
    they need (the fork's dynamic-shape layout test launches so): block b adds b to
    rows [8 b, 8 b + 8) of a replicated A and writes them to a plain output, for any
    m (rows past m are dropped)."""
    m = T.dynamic("m")

    @T.prim_func
    def k(A: T.MeshTensor((m, 4), T.placement.replicated(), "float32"),
          B: T.Tensor((m, 4), "float32")):
        with T.Kernel(T.ceildiv(m, 8), threads=1) as bx:
            S = T.alloc_shared((8, 4), "float32")
            T.copy(A[bx * 8, 0], S)
            for i, j in T.Parallel(8, 4):
                S[i, j] = S[i, j] + bx
            T.copy(S, B[bx * 8, 0])

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    rng = np.random.default_rng(4)
    for rows in (20, 200):   # 3 blocks (one wave, cores 3-15 idle); 25 blocks (two waves)
        a = _ints(rng, (rows, 4))
        b = torch.zeros(rows, 4)
        kernel(torch.from_numpy(a), b)
        np.testing.assert_array_equal(b.numpy(), a + (np.arange(rows) // 8)[:, None])


# -- memory nothing wrote ----------------------------------------------------------------------
@pytest.mark.slow
def test_memory_nothing_wrote_reads_zero_on_every_core():
    """A kernel that reads an accumulator it never cleared has no defined result (on
    the chip its memory holds whatever it held); here every allocation starts zeroed on
    every core, so it runs deterministically and the copies of a replicated output
    agree (the fork's dynamic GEMMs accumulate into C_shared without a clear)."""
    rep = T.MeshShardingPolicy()

    @T.prim_func
    def k(A: T.MeshTensor((8, 8), rep, (4, 4), "float32"),
          C: T.MeshTensor((8, 8), rep, (4, 4), "float32")):
        with T.Kernel() as cid:
            A_s = T.alloc_shared((8, 8), "float32")
            C_s = T.alloc_shared((8, 8), "float32")
            T.copy(A, A_s)
            T.gemm(A_s, A_s, C_s)
            T.copy(C_s, C)

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    a = _ints(np.random.default_rng(5), (8, 8))
    for _ in range(2):
        c = torch.full((8, 8), 9.0)
        kernel(torch.from_numpy(a), c)
        np.testing.assert_array_equal(c.numpy(), a @ a)


def test_a_tdist_ranks_program_starts_unzeroed():
    """The zeroing above is left out of a T.dist rank's program (decision 86): another
    chip's put may land before a core starts. LowerDist marks the program, and
    PrepareTilelangMesh reads the mark (a pass that dropped the function's attributes
    would bring the zeroing back, and with it a race on every put's destination)."""
    from meshtensor.tilelang.ir.names import DIST_RANK_ATTR
    from meshtensor.tilelang.transform.lower_dist import lower_dist

    tm.enable(mesh=(2, 2))
    with tm.world(2):
        rp = T.dist.placement.shard(0)

        @T.prim_func
        def k(A: T.MeshTensor((8, 4), T.placement.row_shard(0), T.float32,
                              rank_placement=rp), rank_id: T.dist.RankId):
            with T.Kernel() as cid:
                s = T.alloc_shared((2, 4), T.float32)
                t = T.alloc_shared((2, 4), T.float32)
                g = T.dist.signal()
                T.copy(A, s)
                T.dist.put(s, t, (rank_id + 1) % 2, signal=g, submit=True)
                T.dist.wait_signal(g)
                T.copy(t, A)

    rank_program = lower_dist(k)[0]
    assert rank_program.attrs[DIST_RANK_ATTR]
    zeroing = "t[z0, z1] = T.float32(0.0)"  # the put's destination
    assert zeroing not in prepare_tilelang_mesh(rank_program).func.script()
    plain = rank_program.without_attr(DIST_RANK_ATTR)
    assert zeroing in prepare_tilelang_mesh(plain).func.script()


@pytest.mark.slow
def test_a_float_constant_reaches_the_c_code_unchanged():
    """The attention kernels' scale (1 / sqrt(64)) * log2(e) = 0.18033688... as float32:
    TVM printed it with 7 digits (1.803369e-01f, another float), so x * scale was one
    unit in the last place off for many x; it is written as its bits now."""
    tm.enable(mesh=(1, 1))
    one = T.MeshShardingPolicy(cross_mesh_dim=0)
    scale = (1.0 / 64) ** 0.5 * 1.44269504

    @T.prim_func
    def k(A: T.MeshTensor((256,), one, (1, 1), "float32"),
          O: T.MeshTensor((256,), one, (1, 1), "float32")):
        with T.Kernel() as cid:
            s = T.alloc_shared((256,), "float32")
            T.copy(A, s)
            for i in T.Parallel(256):
                s[i] = s[i] * scale - 1.0
            T.copy(s, O)

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    a = np.random.default_rng(6).standard_normal(256).astype(np.float32)
    o = torch.zeros(256)
    kernel(torch.from_numpy(a), o)
    np.testing.assert_array_equal(o.numpy(), a * np.float32(scale) - np.float32(1.0))
