"""SUNMMIO's current TileLang, run here: launches bound as the upstream binds them (2-D
grids, T.Kernel(), grids past the core count, T.Persistent), T.MeshTensor's balanced
split and accessors, comm ops reading DRAM and under conditions uniform over their
groups, T.gemm's transpose_B operand mode, the fork's layouts in T.annotate_layout, and
T.dist's placeholder."""
import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402

from meshtensor.tilelang import (compile_mesh_kernel, find_comm_ops,  # noqa: E402
                                 prepare_tilelang_mesh)
from meshtensor.tilelang import tilelang_mesh as tm  # noqa: E402
from meshtensor.tilelang.ir.mesh_param import mesh_params  # noqa: E402

FLAGS = ["-O1"]


@pytest.fixture(autouse=True)
def _mesh():
    tm.enable(mesh=(4, 4))
    yield
    tm.enable(mesh=(4, 4))


def _ints(rng, shape, lo=-3, hi=4, dtype=np.float32):
    return rng.integers(lo, hi, shape).astype(dtype)


# -- launches -----------------------------------------------------------------------------------
def summa_2d(M, N, K, bM, bN, bK, transpose_B=False):
    """The upstream's SUMMA of testing/python/compile_pipeline/test_summa.py: a 2-D grid
    (bx over N's blocks, by over M's), A and B broadcast from DRAM."""
    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"),
               C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_shared = T.alloc_shared((bM, bK), "float32", scope="shared.asram")
            B_shared = T.alloc_shared((bK, bN), "float32", scope="shared.wsram")
            C_local = T.alloc_shared((bM, bN), "float32", scope="shared.rsram")
            T.clear(C_local)
            for k_tile in range(T.ceildiv(K, bK)):
                T.comm.broadcast(A[by * bM:by * bM + bM, k_tile * bK:k_tile * bK + bK],
                                 A_shared, (by, k_tile), direction="h")
                T.comm.broadcast(B[k_tile * bK:k_tile * bK + bK, bx * bN:bx * bN + bN],
                                 B_shared, (k_tile, bx), direction="v")
                T.gemm(A_shared, B_shared, C_local, transpose_B=transpose_B)
            T.copy(C_local, C[by * bM, bx * bN])
    return kernel


@pytest.mark.slow
@pytest.mark.parametrize("transpose_B, N, bN, compat", [
    (False, 64, 16, None), (True, 32, 8, None), (True, 64, 16, "2025")],
    ids=["plain", "transpose_B_panel", "transpose_B_square_compat2025"])
def test_the_upstream_2d_summa_runs_exactly(transpose_B, N, bN, compat):
    """Block (bx, by) runs on core row by, column bx (block bx + 4 by): each core's A row
    block and B column block arrive from DRAM through its row's and column's
    broadcasts; transpose_B=True on a (K, N) tile that cannot be read transposed is
    SUNMMIO's operand mode, still the B(k, j) panel (a square tile too under
    compat="2025"). With rows and columns swapped C would be the sum of the diagonal
    blocks' products."""
    tm.enable(mesh=(4, 4), compat=compat)
    kernel = compile_mesh_kernel(summa_2d(64, N, 64, 16, bN, 16, transpose_B),
                                 compile_flags=FLAGS)
    rng = np.random.default_rng(1)
    a, b = _ints(rng, (64, 64)), _ints(rng, (64, N))
    c = torch.full((64, N), -5.0)
    kernel(torch.from_numpy(a), torch.from_numpy(b), c)
    np.testing.assert_array_equal(c.numpy(), a @ b)


def test_a_square_transpose_b_is_a_transpose_by_default():
    """The current upstream's attention kernels: T.gemm(Q, K, S, transpose_B=True) with
    square tiles is Q @ K^T."""
    @T.prim_func
    def k(Q: T.Tensor((8, 8), "float32"), K: T.Tensor((8, 8), "float32"),
          S: T.Tensor((16, 8, 8), "float32")):
        with T.Kernel() as cid:
            Qs = T.alloc_shared((8, 8), "float32")
            Ks = T.alloc_shared((8, 8), "float32")
            Ss = T.alloc_shared((8, 8), "float32")
            T.copy(Q, Qs)
            T.copy(K, Ks)
            T.clear(Ss)
            T.gemm(Qs, Ks, Ss, transpose_B=True)
            T.comm.broadcast(Ss, Ss, 0, "all")
            T.copy(Ss, S[cid, 0:8, 0:8])

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    rng = np.random.default_rng(2)
    q, kk = _ints(rng, (8, 8)), _ints(rng, (8, 8))
    s = torch.zeros(16, 8, 8)
    kernel(torch.from_numpy(q), torch.from_numpy(kk), s)
    np.testing.assert_array_equal(s.numpy(), np.broadcast_to(q @ kk.T, (16, 8, 8)))


def test_a_2d_grid_binds_block_x_to_columns():
    """On a 2x4 mesh, T.Kernel(4, 2) as (bx, by): block (bx, by) is core (by, bx)."""
    tm.enable(mesh=(2, 4))

    @T.prim_func
    def k(O: T.Tensor((8,), "int32")):
        with T.Kernel(4, 2) as (bx, by):
            S = T.alloc_shared((1,), "int32")
            D = T.alloc_shared((1,), "int32")
            S[0] = by * 4 + bx
            T.comm.broadcast(S, D, (1, 0), "v")   # column 0: cores (0, 0), (1, 0)
            O[by * 4 + bx] = D[0] * 100 + T.comm.current_core()

    prepared = prepare_tilelang_mesh(k).func
    assert [o.name for o in find_comm_ops(prepared)] == ["T.comm.broadcast (comm op #0)"]
    out = torch.zeros(8, dtype=torch.int32)
    compile_mesh_kernel(k, compile_flags=FLAGS)(out)
    # D is set only on column 0's cores (0 and 4), from core (1, 0) = block 4
    want = np.arange(8)
    want[[0, 4]] += 400
    assert out.tolist()[:1] == [400] and out.tolist()[4] == 404
    mask = np.isin(np.arange(8), [0, 4])
    np.testing.assert_array_equal(out.numpy()[mask], want[mask])


@pytest.mark.slow
def test_more_blocks_than_cores_run_in_a_loop_per_core():
    """64 blocks on 16 cores: core c runs blocks c, c + 16, c + 32, c + 48 (each with a
    broadcast along its row); a grid that is no multiple of the cores leaves cores idle
    in its last wave: its comm ops run where they involve running cores only (24
    blocks: rows 0 and 1 run the second wave, row 0's broadcast runs there), else
    refused (test_tilelang_mesh_fork_rules.py). Without comm ops any grid runs."""
    M = N = 64

    def build(gx, gy, with_comm):
        @T.prim_func
        def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
            with T.Kernel(gx, gy) as (bx, by):
                S = T.alloc_shared((8, 8), "float32", scope="shared")
                D = T.alloc_shared((8, 8), "float32", scope="shared")
                T.copy(A[by * 8, bx * 8], S)
                T.copy(S, D)
                if with_comm:
                    T.comm.broadcast(S, D, (0, 0), "h")
                T.copy(D, B[by * 8, bx * 8])
        return k

    kernel = compile_mesh_kernel(build(8, 8, True), compile_flags=FLAGS)
    a = np.arange(M * N, dtype=np.float32).reshape(M, N)
    b = torch.zeros(M, N)
    kernel(torch.from_numpy(a), b)
    want = a.copy()
    for blk in range(64):
        by, bx = divmod(blk, 8)
        core = blk % 16
        if core // 4 == 0:  # row 0's cores get core 0's current tile: block w*16
            src = (blk // 16) * 16
            sy, sx = divmod(src, 8)
            want[by * 8:by * 8 + 8, bx * 8:bx * 8 + 8] = a[sy * 8:sy * 8 + 8, sx * 8:sx * 8 + 8]
    np.testing.assert_array_equal(b.numpy(), want)
    uneven = compile_mesh_kernel(build(8, 3, True), compile_flags=FLAGS)
    b = torch.zeros(M, N)
    uneven(torch.from_numpy(a), b)
    want = a.copy()
    want[24:] = 0
    for blk in range(24):
        by, bx = divmod(blk, 8)
        if (blk % 16) // 4 == 0:  # row 0: core 0's block of the same wave
            sy, sx = divmod((blk // 16) * 16, 8)
            want[by * 8:by * 8 + 8, bx * 8:bx * 8 + 8] = a[sy * 8:sy * 8 + 8, sx * 8:sx * 8 + 8]
    np.testing.assert_array_equal(b.numpy(), want)
    small = compile_mesh_kernel(build(8, 3, False), compile_flags=FLAGS)
    b = torch.zeros(M, N)
    small(torch.from_numpy(a), b)
    np.testing.assert_array_equal(b.numpy()[:24], a[:24])
    assert not b.numpy()[24:].any()


def test_kernel_without_extent_and_mesh_symbols():
    tm.enable(mesh=(2, 4))

    @T.prim_func
    def k(O: T.Tensor((8,), "int32")):
        with T.Kernel() as cid:
            O[cid] = cid * T.mesh_ncores() + T.mesh_nrows() * 10 + T.mesh_ncols()

    out = torch.zeros(8, dtype=torch.int32)
    compile_mesh_kernel(k, compile_flags=FLAGS)(out)
    assert out.tolist() == [c * 8 + 24 for c in range(8)]


@pytest.mark.slow
def test_persistent_runs_as_the_upstream_lowers_it():
    """SUNMMIO's T.Persistent has no guard for a single wave: every core runs the body
    (here a comm op every core must reach), whatever tile it names (tiles past the
    domain read zeros); stock TileLang's coordinate guard would leave the comm op on
    some cores only."""
    nM, nN = 2, 2  # each core's 2x2 domain of 8x8 tiles, on 16 cores: one wave

    @T.prim_func
    def k(A: T.MeshTensor((16 * nM * 8, nN * 8), T.placement.mesh_as_line(0), "float32"),
          R: T.Tensor((16, 2, 8, 8), "float32")):
        with T.Kernel() as cid:
            S = T.alloc_shared((8, 8), "float32")
            D = T.alloc_shared((8, 8), "float32")
            for bx, by in T.Persistent([nM, nN], 16, cid):
                T.copy(A[bx * 8, by * 8], S)
                T.comm.broadcast(S, D, (0, 0), "all")
                T.copy(S, R[cid, 0, 0:8, 0:8])
                T.copy(D, R[cid, 1, 0:8, 0:8])

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    rows = 16 * nM * 8
    a = np.arange(rows * nN * 8, dtype=np.float32).reshape(rows, nN * 8)
    r = torch.full((16, 2, 8, 8), -1.0)
    kernel(torch.from_numpy(a), r)
    for core in range(16):
        # the tile core c names: rem = c, last coordinate (rem // 2 // 2) * 2 + rem % 2
        bx, by = (core // 2) % 2, (core // 4) * 2 + core % 2
        shard = a[core * 16:(core + 1) * 16]
        tile = np.zeros((8, 8), np.float32)
        part = shard[bx * 8:bx * 8 + 8, by * 8:by * 8 + 8]
        tile[:part.shape[0], :part.shape[1]] = part
        np.testing.assert_array_equal(r[core, 0].numpy(), tile, err_msg=str(core))
        np.testing.assert_array_equal(r[core, 1].numpy(), a[0:8, 0:8])


# -- T.MeshTensor -------------------------------------------------------------------------------
def line_kernel(n=5):
    @T.prim_func
    def k(A: T.MeshTensor((n,), T.MeshShardingPolicy(cross_mesh_dim=0), "float32"),
          E: T.Tensor((4,), "int32")):
        with T.Kernel() as cid:
            for i in T.serial(A.local_shape[0]):
                A[i] = A[i] * 10.0 + T.cast(cid, "float32")
            E[cid] = A.get_local_extent()[0]
    return k


@pytest.mark.parametrize("compat, parts, extents", [
    (None, [[0, 1], [2], [3], [4]], [2, 1, 1, 1]),
    ("2025", [[0, 1], [2, 3], [4], []], [2, 2, 1, 0]),
], ids=["balanced", "compat2025_ceil"])
def test_uneven_mesh_tensors_split_as_the_upstream(compat, parts, extents):
    """arange(5) with cross_mesh_dim=0 on 2x2: balanced [0,1], [2], [3], [4] (the first
    5 % 4 parts get one more); the older fork's ceil blocks under compat="2025"."""
    tm.enable(mesh=(2, 2), compat=compat)
    kernel = compile_mesh_kernel(line_kernel(), compile_flags=FLAGS)
    a = torch.arange(5, dtype=torch.float32)
    e = torch.zeros(4, dtype=torch.int32)
    kernel(a, e)
    want = np.zeros(5, np.float32)
    for core, part in enumerate(parts):
        for i in part:
            want[i] = i * 10 + core
    np.testing.assert_array_equal(a.numpy(), want)
    assert e.tolist() == extents


def test_mesh_tensor_accessors_and_placements():
    tm.enable(mesh=(2, 2))
    seen = {}

    @T.prim_func
    def k(A: T.MeshTensor((5, 9), [T.placement.S(0), T.placement.S(1)], "float16"),
          B: T.MeshTensor((7,), T.placement.full_shard(0, 0), (2, 2), "float32"),
          C: T.MeshTensor((6, 4), T.MeshShardingPolicy(y=0, replicate=1), (2, 2), "int8",
                          rank_placement=T.dist.placement.replicated())):
        with T.Kernel() as cid:
            seen["A"] = (A.global_shape, A.local_shape, A.rank_shape,
                         A.get_local_extent(3), T.get_local_extent(A, 0))
            seen["B"] = [B.get_local_extent(c)[0] for c in range(4)]
            seen["C"] = (C.local_shape, C.get_rank_extent(0))
            A[0, 0] = A[0, 0]

    assert seen["A"] == ((5, 9), (3, 5), (5, 9), (2, 4), (3, 5))
    assert seen["B"] == [2, 2, 2, 1]        # rows first (4, 3), then each over columns
    assert seen["C"] == ((3, 4), (6, 4))
    recs = mesh_params(k)
    assert recs[2].rank_placement == "RankReplicated()"
    assert recs[1].sharding.dim_bounds((7,), 0).tolist() == [0, 2, 4, 6, 7]
    with pytest.raises(AttributeError, match="'S' is not a T.MeshTensor parameter"):
        @T.prim_func
        def bad():
            with T.Kernel() as cid:
                S = T.alloc_shared((4,), "float32")
                S.local_shape  # noqa: B018



def _shape_kernel(seen):
    @T.prim_func
    def k(A: T.MeshTensor((8, 6), T.MeshShardingPolicy(y=0, x=1), (2, 2), "float32"),
          B: T.MeshTensor((8, 6), T.MeshShardingPolicy(y=0, x=1), (2, 2), "float32")):
        with T.Kernel() as cid:
            seen["has"] = hasattr(A, "shape")
            seen["shape"] = A.shape if seen["has"] else None
            S = T.alloc_shared(A.local_shape, "float32")
            T.copy(A, S)          # TileLang reads the slot's shape itself
            T.copy(S, B)
    return k


def test_a_mesh_tensor_has_no_shape_in_kernel_code():
    """SUNMMIO's TileLang: ``A.shape`` of a ``T.MeshTensor`` parameter is ambiguous (an
    ``AttributeError`` naming ``global_shape`` / ``local_shape``), in the kernel's own
    code only: TileLang's whole-buffer copies still read the slot."""
    tm.enable(mesh=(2, 2))
    seen = {}
    k = _shape_kernel(seen)
    assert seen == {"has": False, "shape": None}
    assert not hasattr(T.MeshTensor((8, 6), T.MeshShardingPolicy(y=0, x=1), (2, 2)), "shape")
    with pytest.raises(AttributeError, match=r"MeshTensor.shape is ambiguous. Use "
                                             r"`.global_shape` or `.local_shape`"):
        @T.prim_func
        def bad(A: T.MeshTensor((8, 6), T.MeshShardingPolicy(y=0, x=1), (2, 2))):
            with T.Kernel() as cid:
                m, n = A.shape
    assert [int(n) for n in k.buffer_map[k.params[0]].shape] == [4, 3]


@pytest.mark.parametrize("option", [dict(legacy_shape=True), dict(compat="2025")])
def test_legacy_shape_reads_the_slot(option):
    """The older API (the fork's kernels, SUNMMIO's before its shape API):
    ``A.shape`` is the core's slot shape."""
    tm.enable(mesh=(2, 2), **option)
    try:
        seen = {}
        _shape_kernel(seen)
        assert seen["has"] and [int(n) for n in seen["shape"]] == [4, 3]
    finally:
        tm.enable(mesh=(2, 2))
    with pytest.raises(TypeError, match="legacy_shape must be a bool"):
        tm.enable(mesh=(2, 2), legacy_shape="yes")


@pytest.mark.slow
def test_a_kernel_without_a_shape_copies_its_slots():
    tm.enable(mesh=(2, 2))
    k = _shape_kernel({})
    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    a = torch.arange(48, dtype=torch.float32).reshape(8, 6)
    b = torch.zeros(8, 6)
    kernel(a, b)
    assert torch.equal(a, b)

# -- comm ops under conditions ----------------------------------------------------------------
def cond_kernel(cond_of, bc_src=(0, 0)):
    @T.prim_func
    def k(A: T.Tensor((16, 4), "float32"), O: T.Tensor((16, 4), "float32")):
        with T.Kernel(4, 4) as (bx, by):
            S = T.alloc_shared((4,), "float32")
            D = T.alloc_shared((4,), "float32")
            T.copy(A[by * 4 + bx, 0:4], S)
            T.fill(D, -1.0)
            if cond_of(bx, by):
                S[0] = S[0] + 100.0
                T.comm.broadcast(S, D, bc_src, direction="h")
                D[1] = D[1] + 1000.0
            T.copy(D, O[by * 4 + bx, 0:4])
    return k


@pytest.mark.slow
def test_a_comm_op_under_a_condition_uniform_over_its_group():
    """`if by == 0` around a row broadcast: row 0's cores (by = 0: the upstream
    binding) run it, the others keep D; the statements around it keep the condition."""
    kernel = compile_mesh_kernel(cond_kernel(lambda bx, by: by == 0), compile_flags=FLAGS)
    a = np.arange(64, dtype=np.float32).reshape(16, 4)
    o = torch.zeros(16, 4)
    kernel(torch.from_numpy(a), o)
    want = np.full((16, 4), -1.0, np.float32)
    want[0:4] = a[0] + np.array([100, 0, 0, 0])
    want[0:4, 1] += 1000
    np.testing.assert_array_equal(o.numpy(), want)


@pytest.mark.parametrize("cond, src, match", [
    (lambda bx, by: bx == 0, (0, 0), r"holds on some cores of its group \[\(0, 0\), \(0, 1\), "
                                     r"\(0, 2\), \(0, 3\)\] but not on \[\(0, 1\)"),
    (lambda bx, by: by == 1, (0, 0), r"holds on some cores of its group"),
], ids=["column_condition_on_a_row_op", "row_1_names_row_0"])
def test_a_condition_that_splits_a_group_is_refused(cond, src, match):
    with pytest.raises(ValueError, match=match):
        prepare_tilelang_mesh(cond_kernel(cond, src))


def test_a_skipping_core_that_names_other_transfers_is_refused():
    """Row 0 runs a broadcast from (row, 0) along its row; the rows that skip it would
    name their own first cores: the emulator, which runs the op on every core, cannot."""
    @T.prim_func
    def k(O: T.Tensor((16,), "float32")):
        with T.Kernel() as cid:
            S = T.alloc_shared((1,), "float32")
            D = T.alloc_shared((1,), "float32")
            S[0] = T.cast(cid, "float32")
            if cid // 4 == 0:
                T.comm.broadcast(S, D, (cid // 4, 0), "h")
            O[cid] = D[0]

    with pytest.raises(ValueError, match=r"where it is false, names cores .* that no core "
                                         r"running the op names"):
        prepare_tilelang_mesh(k)


# -- T.gemm, layouts, T.dist ------------------------------------------------------------------
def test_transpose_b_keeps_its_stock_meaning_outside_sunmmio_kernels():
    """A kernel with no SUNMMIO names: T.gemm(..., transpose_B=True) multiplies by B's
    transpose, as stock TileLang does (and a B that does not fit transposed is the
    stock shape error, as a ValueError)."""
    @T.prim_func
    def k(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32"),
          C: T.Tensor((8, 8), "float32")):
        with T.Kernel(1, threads=1) as bx:
            As = T.alloc_shared((8, 8), "float32", scope="shared")
            Bs = T.alloc_shared((8, 8), "float32", scope="shared")
            Cl = T.alloc_local((8, 8), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.clear(Cl)
            T.gemm(As, Bs, Cl, transpose_B=True)
            T.copy(Cl, C)

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    rng = np.random.default_rng(0)
    a, b = _ints(rng, (8, 8)), _ints(rng, (8, 8))
    c = torch.zeros(8, 8)
    kernel(torch.from_numpy(a), torch.from_numpy(b), c)
    np.testing.assert_array_equal(c.numpy(), a @ b.T)

    @T.prim_func
    def bad():
        with T.Kernel(1, threads=1) as bx:
            As = T.alloc_shared((8, 4), "float32")
            Bs = T.alloc_shared((4, 8), "float32")
            Cl = T.alloc_local((8, 8), "float32")
            T.gemm(As, Bs, Cl, transpose_B=True)

    with pytest.raises(ValueError, match=r"transpose_B=True\): B 'Bs' has shape \(4, 8\)"):
        prepare_tilelang_mesh(bad)


def test_fork_layouts_in_annotate_layout_are_recorded():
    from tilelang.layout import make_row_major, make_zz_layout

    @T.prim_func
    def k(O: T.Tensor((16,), "float32")):
        with T.Kernel() as cid:
            S = T.alloc_shared((32, 32), "float32")
            T.annotate_layout({S: make_zz_layout(S, [0, 1], (32, 32))})
            R = T.alloc_shared((4,), "float32")
            T.annotate_layout({R: make_row_major((4,))})
            O[cid] = 1.0

    assert dict(k.attrs["meshtensor.layouts"]) == {
        "S": "zz(shape=(32, 32), axes=(0, 1), block=(32, 32))", "R": "row_major(shape=(4,))"}


def test_t_dist_is_the_rank_layer_after_enable():
    """T.dist was a placeholder refusing every name; it is the multi-chip layer now."""
    assert callable(T.dist.put) and hasattr(T.dist, "world_size")
    with pytest.raises(AttributeError):
        T.dist.no_such_op  # noqa: B018


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sum", "max", "abssum"])
def test_a_bfloat16_all_reduce_rounds_each_fold(kind):
    """T.comm.all_reduce in bfloat16 over the mesh: each core folds its row, then the
    group folds each row's results, then the rows (the fork's order), every addition
    rounded to bfloat16 as ml_dtypes rounds it."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf = ml_dtypes.bfloat16
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def k(X: T.MeshTensor((4, 4, 8), T.placement.mesh_as_line(0), "bfloat16"),
          Y: T.MeshTensor((4, 4), T.placement.mesh_as_line(0), "bfloat16")):
        with T.Kernel() as cid:
            S = T.alloc_shared((4, 8), "bfloat16")
            O = T.alloc_shared((4,), "bfloat16")
            T.copy(X[0, 0:4, 0:8], S)
            T.comm.all_reduce(S, O, kind, "all", dim=1)
            T.copy(O, Y[0, 0:4])

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((4, 4, 8)) * 100).astype(bf)
    y = torch.zeros(4, 4, dtype=torch.bfloat16)
    kernel(torch.from_numpy(x.astype(np.float32)).bfloat16(), y)

    def fold(vals):
        acc = {"sum": bf(0), "abssum": bf(0), "max": bf(-np.inf)}[kind]
        for v in vals:
            v = abs(v) if kind == "abssum" else v
            acc = max(acc, v) if kind == "max" else bf(acc + v)
        return acc

    want = np.zeros((4,), bf)
    for j in range(4):
        rows = []
        for r in range(2):
            rows.append(fold([fold(x[r * 2 + c, j, :]) for c in range(2)]))
        want[j] = fold(rows)
    got = y.float().numpy()
    for core in range(4):
        np.testing.assert_array_equal(got[core], want.astype(np.float32))


@pytest.mark.slow
def test_a_transpose_of_sunmmio_scoped_buffers_runs():
    """T.transpose(src, dst) of two shared.rsram buffers (ops/test_transpose.py): each
    core's dst is its src transposed. Stock TileLang's CPU lowering takes only local
    buffers (it crashed with an InternalError): both operands are core-private."""
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def k(X: T.MeshTensor((8, 4, 6), T.placement.mesh_as_line(0), "float32"),
          Y: T.MeshTensor((8, 6, 4), T.placement.mesh_as_line(0), "float32")):
        with T.Kernel():
            for i in T.serial(2):
                S = T.alloc_shared((4, 6), "float32", scope="shared.rsram")
                D = T.alloc_shared((6, 4), "float32", scope="shared.rsram")
                T.copy(X[i, 0:4, 0:6], S)
                T.transpose(S, D)
                T.copy(D, Y[i, 0:6, 0:4])

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    x = _ints(np.random.default_rng(3), (8, 4, 6))
    y = torch.zeros(8, 6, 4)
    kernel(torch.from_numpy(x), y)
    np.testing.assert_array_equal(y.numpy(), x.transpose(0, 2, 1))


def _tail_reduce(out_extent):
    """A T.reduce_max over a tail region of SUNMMIO-scoped buffers (codegen/
    test_reduce_opt_validate.py's reduce_tail_region_kernel, smaller): the extents are
    ``T.min(block, total - start)`` expressions of the loop variables."""
    tm.enable(mesh=(2, 2))
    m, n, bm, bn = 20, 30, 8, 12

    @T.prim_func
    def k(A: T.MeshTensor((bm, bn), T.placement.replicated(), "float32"),
          Out: T.MeshTensor((bm,), T.placement.replicated(), "float32")):
        with T.Kernel():
            S = T.alloc_shared((bm, bn), "float32", scope="shared.rsram")
            R = T.alloc_shared((bm,), "float32", scope="shared.rsram")
            T.copy(A, S)
            T.fill(R, -T.infinity("float32"))
            for by in T.serial(T.ceildiv(m, bm)):
                for bx in T.serial(T.ceildiv(n, bn)):
                    T.reduce_max(S[0:T.min(bm, m - by * bm), 0:T.min(bn, n - bx * bn)],
                                 R[0:out_extent(T.min(bm, m - by * bm))], dim=1, clear=False)
            T.copy(R, Out)

    return k


def test_a_reduction_over_expression_extents_is_accepted():
    """Both shapes are the same expressions, built twice: compared as Python objects
    they differed, and the kernel was refused as an "Invalid reduce output shape"."""
    k = _tail_reduce(lambda e: e)
    assert "T.reduce(" in k.script()


def test_a_reduction_whose_output_extent_differs_is_refused():
    with pytest.raises(ValueError, match="Invalid reduce output shape"):
        _tail_reduce(lambda e: e + 1)


@pytest.mark.slow
def test_a_tail_region_reduction_runs():
    """Every region is a prefix of the buffer's rows and columns: max over them all is
    the row maximum of the whole tile (integer data: exact)."""
    kernel = compile_mesh_kernel(_tail_reduce(lambda e: e), compile_flags=FLAGS)
    a = _ints(np.random.default_rng(5), (8, 12))
    out = torch.zeros(8)
    kernel(torch.from_numpy(a), out)
    np.testing.assert_array_equal(out.numpy(), a.max(1))


@pytest.mark.slow
def test_a_fill_of_shared_memory_runs_without_mesh_tensors():
    """A kernel launched by T.Kernel() with neither T.MeshTensor parameters nor comm ops
    (codegen/test_tiles_fallback_opt_validate.py's scalar fallbacks) fills a shared
    buffer: stock TileLang's C back end stopped with an InternalError ("CPU fill only
    supports local and global buffers"); the filled buffer is the block's own memory."""
    @T.prim_func
    def k(Out: T.Tensor((16, 4), "float32")):
        with T.Kernel() as cid:
            S = T.alloc_shared((4,), "float32")
            T.fill(S, 2)
            for i in T.Tiles([4], parallel=True):
                S[i] = S[i] + T.Cast("float32", cid)
            T.copy(S, Out[cid, 0:4])

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    out = torch.zeros(16, 4)
    kernel(out)
    np.testing.assert_array_equal(out.numpy(), 2 + np.arange(16)[:, None] + np.zeros(4))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["abssum", "absmax"])
def test_an_absolute_reduction_without_clear_folds_the_outputs_absolute_value(kind):
    """T.reduce_abssum takes SUNMMIO's clear= (stock TileLang's has none: a TypeError),
    and with clear=False on SUNMMIO scopes folds |out| as the upstream's lowering does:
    |out| + sum |x|, max(|out|, max |x|) (stock TileLang would fold out itself)."""
    tm.enable(mesh=(2, 2))
    op = getattr(T, f"reduce_{kind}")

    @T.prim_func
    def k(X: T.MeshTensor((4, 3), T.placement.replicated(), "float32"),
          Y: T.MeshTensor((4,), T.placement.replicated(), "float32")):
        with T.Kernel():
            S = T.alloc_shared((4, 3), "float32", scope="shared.rsram")
            R = T.alloc_shared((4,), "float32", scope="shared.rsram")
            T.copy(X, S)
            T.copy(Y, R)
            op(S, R, dim=1, clear=False)
            T.copy(R, Y)

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    x = np.array([[1, -2, 3], [0, 0, 0], [-1, -1, -1], [2, 2, -2]], np.float32)
    y = np.array([-5, -1, 2, 0], np.float32)
    out = torch.from_numpy(y.copy())
    kernel(torch.from_numpy(x), out)
    fold = np.abs(x).sum(1) + np.abs(y) if kind == "abssum" else np.maximum(
        np.abs(x).max(1), np.abs(y))
    np.testing.assert_array_equal(out.numpy(), fold)


@pytest.mark.slow
@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
def test_an_absolute_fold_reaches_every_index_of_a_2d_output(dt):
    """(In bfloat16 the fold is a select: TileLang's C back end has no fabs for it.)"""
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def k(X: T.MeshTensor((2, 4, 3), T.placement.replicated(), dt),
          Y: T.MeshTensor((2, 3), T.placement.replicated(), dt)):
        with T.Kernel():
            S = T.alloc_shared((2, 4, 3), dt, scope="shared.rsram")
            R = T.alloc_shared((2, 3), dt, scope="shared.rsram")
            T.copy(X, S)
            T.copy(Y, R)
            T.reduce_abssum(S, R, dim=1, clear=False)
            T.copy(R, Y)

    kernel = compile_mesh_kernel(k, compile_flags=FLAGS)
    rng = np.random.default_rng(1)
    x, y = _ints(rng, (2, 4, 3)), _ints(rng, (2, 3))
    out = torch.from_numpy(y.copy()).to(getattr(torch, dt))
    kernel(torch.from_numpy(x).to(getattr(torch, dt)), out)
    np.testing.assert_array_equal(out.float().numpy(), np.abs(x).sum(1) + np.abs(y))


def _dynamic_gather_sum(scale):
    """Each core all_gathers (along its mesh row) tile after tile of its shard of A,
    whose rows are ``m * scale`` (``scale`` None: ``m``), in a loop bounded by the
    symbolic shard size, and stores each gathered tile into its shard of C."""
    tm.enable(mesh=(2, 2))
    m = T.dynamic("m")
    rows = m if scale is None else m * scale
    pol = T.MeshShardingPolicy(y=0)

    @T.prim_func
    def k(A: T.MeshTensor((rows, 8), pol, "float32"),
          C: T.MeshTensor((rows, 16), pol, "float32")):
        with T.Kernel() as cid:
            n, _ = A.local_shape
            G = T.alloc_shared((4, 16), "float32")
            for t in T.serial(T.ceildiv(n, 4)):
                T.comm.all_gather(A[t * 4:(t + 1) * 4, 0:8], G, direction="h", axis=-1)
                T.copy(G, C[t * 4:(t + 1) * 4, 0:16])

    return k


def _gathered(a):
    """C of _dynamic_gather_sum: each row holds A's row twice side by side (both cores
    of a mesh row hold the same rows of A: it is replicated over the columns)."""
    return np.concatenate([a, a], axis=1)


def test_a_mesh_tensor_dim_may_be_a_multiple_of_a_size():
    """T.MeshTensor((m * 2, 8)): refused before ("an expression of sizes cannot be read
    back"); its record keeps the form, which a call reads m back from."""
    k = _dynamic_gather_sum(2)
    rec = mesh_params(k)[0]
    assert rec.global_shape == ("m*2+0", 8) and rec.symbols == ("m",)
    from meshtensor.tilelang.ir.mesh_param import bind_symbols
    assert bind_symbols([(0, rec, False)], [torch.zeros(12, 8)], ["m"])[1] == [6]
    with pytest.raises(ValueError, match=r"dim 0 is m\*2\+0, which no size 'm' makes 13"):
        bind_symbols([(0, rec, False)], [torch.zeros(13, 8)], ["m"])
    with pytest.raises(ValueError, match="must be a non-negative int, a symbolic size"):
        tm.enable(mesh=(2, 2))
        m = T.dynamic("m")
        T.MeshTensor((m * m, 8), T.MeshShardingPolicy(y=0), "float32")


@pytest.mark.slow
@pytest.mark.parametrize("scale", [None, 2])
def test_comm_ops_in_loops_over_a_symbolic_shard_run_per_call(scale):
    """The all_gather reads A in a loop bounded by the symbolic shard size: refused at
    compile time before ("a symbolic range ... bind the shapes first"). Each call now
    compiles the kernel for its sizes, once per size, and a size whose last tile runs
    past the shard is refused at that call."""
    from meshtensor.tilelang import SizedMeshKernel
    kernel = compile_mesh_kernel(_dynamic_gather_sum(scale), compile_flags=FLAGS)
    assert isinstance(kernel, SizedMeshKernel)
    rng = np.random.default_rng(4)
    for rows in (16, 8, 16):
        a = _ints(rng, (rows, 8))
        c = torch.zeros(rows, 16)
        kernel(torch.from_numpy(a), c)
        np.testing.assert_array_equal(c.numpy(), _gathered(a))
    assert len(kernel.kernels) == 2
    with pytest.raises(ValueError, match="outside its shard of shape"):
        kernel(torch.zeros(12, 8), torch.zeros(12, 16))
