"""Kernels of the current SUNMMIO/Tilelang's ``testing/python/sunmmio/transform/``,
``layout/``, ``pipeline/`` and ``language/`` tests that use T.comm or T.MeshTensor and
are not yet elsewhere in the corpus, verbatim; each names its source file and the commit
it was read at. A kernel written inside a test function is copied as that function's
statements up to its ``@T.prim_func``, returned (named after its test). Import lines
only differ: ``target`` (the tests' ``@target("Sunmmio")``) and ``determine_target``
(SUNMMIO's target; here the C target, the mesh being ``tm.enable``'s) come from the
corpus harness; ``make_tileview`` from ``tilelang.layout`` (SUNMMIO's
``tilelang.tileview``); ``tm.enable`` provides SUNMMIO's names (``T.comm``,
``T.MeshTensor``, ``T.placement``, the mesh symbols, ``T.Tiles``, the layout makers).
"""
# flake8: noqa
import importlib.util
import pathlib
import sys

import tilelang
import tilelang.language as T
from tilelang import tvm as tvm
from tilelang.language.mesh_tensor import MeshReplicationType, MeshShardingPolicy
from tilelang.layout import (
    make_aligned_row_major,
    make_row_major,
    make_tileview,
    make_zz_layout,
)
from tvm import tirx as tir

_h = sys.modules.get("tm_corpus_harness")
if _h is None:  # loaded on its own
    _spec = importlib.util.spec_from_file_location(
        "tm_corpus_harness", pathlib.Path(__file__).parent / "harness.py")
    _h = importlib.util.module_from_spec(_spec)
    sys.modules["tm_corpus_harness"] = _h
    _spec.loader.exec_module(_h)
target = _h.target
determine_target = _h.determine_target


# ---- testing/python/sunmmio/language/test_mesh_tensor_shape_api.py
# @ 1f6a0068ca4cdbcf27f89d558c0c0d976a6d4aa9

SUNMMIO_TARGET = determine_target("Sunmmio", return_object=True)


# ::test_mesh_tensor_shape_api_in_kernel
def test_mesh_tensor_shape_api_in_kernel():
    tensor = T.MeshTensor(
        (513, 4097),
        T.MeshShardingPolicy(y=0, x=1),
        (4, 4),
        "float16",
    )

    assert tensor.global_shape == (513, 4097)
    assert not hasattr(tensor, "shape")
    assert tensor.local_shape == (129, 1025)
    assert tensor.get_local_extent(0) == (129, 1025)
    assert tensor.get_local_extent(1) == (129, 1024)
    assert tensor.get_local_extent(4) == (128, 1025)
    assert tensor.get_local_extent(15) == (128, 1024)

    with tvm.target.Target(SUNMMIO_TARGET):

        @T.prim_func
        def kernel(A: tensor):
            with T.Kernel(T.mesh_ncores()) as cid:
                global_m, global_n = A.global_shape
                local_m, local_n = A.local_shape
                valid_m, valid_n = A.get_local_extent(cid)
                core0_m, core0_n = A.get_local_extent(0)
                core15_m, core15_n = A.get_local_extent(15)

                assert not hasattr(A, "shape")
                assert global_m == 513
                assert global_n == 4097
                assert local_m == 129
                assert local_n == 1025
                assert valid_m <= local_m
                assert valid_n <= local_n
                assert core0_m == 129
                assert core0_n == 1025
                assert core15_m == 128
                assert core15_n == 1024

    return kernel


# ::test_mesh_tensor_same_dim_row_then_col_extent
def test_mesh_tensor_same_dim_row_then_col_extent():
    tensor = T.MeshTensor(
        (65, 9),
        T.MeshShardingPolicy(y=0, x=0),
        (4, 4),
        "float16",
    )

    assert tensor.global_shape == (65, 9)
    assert not hasattr(tensor, "shape")
    assert tensor.local_shape == (5, 9)
    assert tensor.get_local_extent(0) == (5, 9)
    assert tensor.get_local_extent(1) == (4, 9)
    assert tensor.get_local_extent(15) == (4, 9)

    with tvm.target.Target(SUNMMIO_TARGET):

        @T.prim_func
        def kernel(A: tensor):
            with T.Kernel(T.mesh_ncores()) as cid:
                global_m, global_n = A.global_shape
                local_m, local_n = A.local_shape
                valid_m, valid_n = A.get_local_extent(cid)
                core0_m, core0_n = A.get_local_extent(0)
                core1_m, core1_n = A.get_local_extent(1)
                core15_m, core15_n = A.get_local_extent(15)

                assert not hasattr(A, "shape")
                assert global_m == 65
                assert global_n == 9
                assert local_m == 5
                assert local_n == 9
                assert valid_m <= local_m
                assert valid_n <= local_n
                assert core0_m == 5
                assert core0_n == 9
                assert core1_m == 4
                assert core1_n == 9
                assert core15_m == 4
                assert core15_n == 9

    return kernel


# ---- testing/python/sunmmio/transform/test_resolve_mesh_symbols.py
# @ 25478d65c294999489ec184bbab56326f125b169

def _sunmmio_target(nrows=4, ncols=4):
    return determine_target(f"llvm -mcpu=sunmmio-a4e -mattr=device_mesh_nrow_{nrows},device_mesh_ncol_{ncols}", return_object=True)


# (the test's helper pairs SUNMMIO's target with an LLVM host through
# `tvm.target.Target.canon_target`, which the bundled TVM lacks; here: the target alone)
def _sunmmio_target_with_host(nrows=4, ncols=4):
    return _sunmmio_target(nrows, ncols)


# ::_symbolic_mesh_gemm_mod
def _symbolic_mesh_gemm_mod():
    M, N, K = 128, 128, 128
    block_M, block_N, block_K = 32, 32, 32
    dtype = "bfloat16"
    accum_dtype = "float32"
    policy = T.MeshShardingPolicy(y=0, x=1)
    a_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    b_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    c_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    with tvm.target.Target(_sunmmio_target_with_host()):

        @T.prim_func
        def main(
            A: T.MeshTensor((M, K), policy, dtype, layout=a_layout),
            B: T.MeshTensor((K, N), policy, dtype, layout=b_layout),
            C: T.MeshTensor((M, N), policy, accum_dtype, layout=c_layout),
        ):
            with T.Kernel() as _cid:
                sharded_M, sharded_K = A.local_shape
                _, sharded_N = B.local_shape

                A_shared = T.alloc_shared((block_M, block_K), dtype)
                A_shared_dist = T.alloc_shared((block_M, block_K * T.mesh_ncols()), dtype)
                B_shared = T.alloc_shared((block_K, block_N), dtype)
                B_shared_dist = T.alloc_shared((block_K * T.mesh_nrows(), block_N), dtype)
                C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

                for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                    for by in T.serial(T.ceildiv(sharded_N, block_N)):
                        T.clear(C_shared)
                        for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=1):
                            T.copy(A[bx * block_M, k * block_K], A_shared)
                            T.comm.all_gather(A_shared, A_shared_dist, direction="horizontal", axis=-1)
                            T.copy(B[k * block_K, by * block_N], B_shared)
                            T.comm.all_gather(B_shared, B_shared_dist, direction="vertical", axis=0)
                            T.gemm(A_shared_dist, B_shared_dist, C_shared)
                        T.copy(C_shared, C[bx * block_M, by * block_N])

    return tvm.IRModule({"main": main})


# ::_symbolic_mesh_all_gather_mod
def _symbolic_mesh_all_gather_mod():
    block_M, block_N = 32, 32
    dtype = "bfloat16"

    with tvm.target.Target(_sunmmio_target_with_host()):

        @T.prim_func
        def main(A: T.Tensor((block_M, block_N), dtype)):
            with T.Kernel() as _cid:
                A_shared = T.alloc_shared((block_M, block_N), dtype)
                A_shared_dist = T.alloc_shared((block_M, block_N * T.mesh_ncols()), dtype)

                T.copy(A, A_shared)
                T.comm.all_gather(A_shared, A_shared_dist, direction="horizontal", axis=-1)

    return tvm.IRModule({"main": main})


# ::_symbolic_mesh_gqa_mod
def _symbolic_mesh_gqa_mod():
    batch, heads, seq_len, dim, groups = 2, 4, 32, 32, 2
    block_M, block_N = 32, 32
    head_kv = heads // groups
    dtype = "bfloat16"
    accum_dtype = "bfloat16"
    q_shape = [batch, seq_len, heads, dim]
    kv_shape = [batch, seq_len, head_kv, dim]
    policy = T.MeshShardingPolicy(y=0, x=2)
    q_layout = make_zz_layout(q_shape, [1, 3], (32, 32))
    kv_layout = make_zz_layout(kv_shape, [1, 3], (32, 32))

    with tvm.target.Target(_sunmmio_target_with_host()):

        @T.prim_func
        def main(
            Q: T.MeshTensor(q_shape, policy, dtype, layout=q_layout),
            K: T.MeshTensor(kv_shape, policy, dtype, layout=kv_layout),
            V: T.MeshTensor(kv_shape, policy, dtype, layout=kv_layout),
            Output: T.MeshTensor(q_shape, policy, dtype, layout=q_layout),
        ):
            with T.Kernel() as _cid:
                sharded_batch = Q.local_shape[0]
                sharded_heads = Q.local_shape[2]

                Q_shared = T.alloc_shared((block_M, dim), dtype)
                K_shared = T.alloc_shared((block_N, dim), dtype)
                V_shared = T.alloc_shared((block_N, dim), dtype)
                O_shared = T.alloc_shared((block_M, dim), dtype)
                acc_s = T.alloc_shared((block_M, block_N), accum_dtype)
                acc_s_cast = T.alloc_shared((block_M, block_N), dtype)
                acc_o = T.alloc_shared((block_M, dim), accum_dtype)

                for bz in T.serial(sharded_batch):
                    for by in T.serial(sharded_heads):
                        for bx in T.serial(T.ceildiv(seq_len, block_M)):
                            T.copy(Q[bz, bx * block_M : (bx + 1) * block_M, by, :], Q_shared)
                            T.clear(acc_s)
                            T.clear(acc_o)
                            for k in T.Pipelined(T.ceildiv(seq_len, block_N), num_stages=1):
                                T.copy(K[bz, k * block_N : (k + 1) * block_N, by // groups, :], K_shared)
                                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                                T.copy(acc_s, acc_s_cast)
                                T.copy(V[bz, k * block_N : (k + 1) * block_N, by // groups, :], V_shared)
                                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
                            T.copy(acc_o, O_shared)
                            T.copy(O_shared, Output[bz, bx * block_M : (bx + 1) * block_M, by, :])

    return tvm.IRModule({"main": main})


# ::test_resolve_replaces_mesh_intrinsics_in_body_and_kernel_extent
def test_resolve_replaces_mesh_intrinsics_in_body_and_kernel_extent():
    target = _sunmmio_target()

    with tvm.target.Target(target):

        @T.prim_func
        def main():
            with T.Kernel() as cid:
                scratch = T.alloc_shared((T.mesh_nrows(), T.mesh_ncols(), T.mesh_ncores()), "float32")
                scratch[0, 0, 0] = T.if_then_else(
                    cid < T.mesh_ncores(),
                    T.Cast("float32", T.mesh_nrows() + T.mesh_ncols() + T.mesh_ncores()),
                    T.float32(0),
                )

        mod = tvm.IRModule({"main": main})
    return mod


# ::test_resolve_updates_default_mesh_tensor_buffer_map_and_layout_metadata
def test_resolve_updates_default_mesh_tensor_buffer_map_and_layout_metadata():
    target = _sunmmio_target()
    policy = T.MeshShardingPolicy(y=0, x=1)
    layout = make_zz_layout((128, 96), [0, 1], (32, 32))

    with tvm.target.Target(target):

        @T.prim_func
        def main(A: T.MeshTensor((128, 96), policy, "float16", layout=layout)):
            with T.Kernel() as _cid:
                valid_M, valid_N = A.get_local_extent(_cid)
                for i in T.serial(valid_M):
                    for j in T.serial(valid_N):
                        A[i, j] = A[i, j]

    mod = tvm.IRModule({"main": main})
    return mod


# ::test_lower_and_optimize_resolve_kernel_default_mesh_ncores
def test_lower_and_optimize_resolve_kernel_default_mesh_ncores():
    target = _sunmmio_target_with_host()

    with tvm.target.Target(target):

        @T.prim_func
        def main():
            with T.Kernel() as cid:
                scratch = T.alloc_shared((1,), "float32")
                scratch[0] = T.if_then_else(
                    cid < T.mesh_ncores(),
                    T.Cast("float32", T.mesh_nrows() + T.mesh_ncols() + T.mesh_ncores()),
                    T.float32(0),
                )

        mod = tvm.IRModule({"main": main})
    return mod


# ---- testing/python/sunmmio/transform/test_global_layout_utils.py
# @ 75d8f2ee3b563cced0214eb90fb2dda2551943c4

# ::test_global_buffer_layout_populated_for_sunmmio
def test_global_buffer_layout_populated_for_sunmmio():
    """
    Test that global buffer layouts from tensor_meta are populated into layout_map
    during SunmmioLayoutInference pass for Sunmmio target.
    """
    policy = T.placement.full_shard(0, 1)

    M, N, K = 64, 64, 64
    block_M, block_N, block_K = 32, 32, 32

    A_layout = make_row_major((M, K))
    B_layout = make_row_major((K, N))
    C_layout = make_row_major((M, N))

    A_tensor = T.MeshTensor((M, K), policy, dtype="float16", layout=A_layout)
    B_tensor = T.MeshTensor((K, N), policy, dtype="float16", layout=B_layout)
    C_tensor = T.MeshTensor((M, N), policy, dtype="float32", layout=C_layout)

    @T.prim_func
    def kernel(A: A_tensor, B: B_tensor, C: C_tensor):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_shared = T.alloc_shared((block_M, block_N), "float32")

            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared)

            T.copy(C_shared, C[by * block_M, bx * block_N])

    return kernel


# ::test_row_major_global_layout_values
def test_row_major_global_layout_values():
    """
    Test that the layout created from tensor_meta produces correct forward index mapping.
    """
    policy = T.placement.full_shard(0, 1)

    M, N, K = 64, 64, 64
    block_M, block_N, block_K = 32, 32, 32

    A_layout = make_row_major((M, K))
    B_layout = make_row_major((K, N))
    C_layout = make_row_major((M, N))

    A_tensor = T.MeshTensor((M, K), policy, dtype="float16", layout=A_layout)
    B_tensor = T.MeshTensor((K, N), policy, dtype="float16", layout=B_layout)
    C_tensor = T.MeshTensor((M, N), policy, dtype="float32", layout=C_layout)

    @T.prim_func
    def kernel(A: A_tensor, B: B_tensor, C: C_tensor):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_shared = T.alloc_shared((block_M, block_N), "float32")

            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared)

            T.copy(C_shared, C[by * block_M, bx * block_N])

    return kernel


# ::test_dynamic_shape_global_buffer_layout
def test_dynamic_shape_global_buffer_layout():
    """
    Test that ParseGlobalBufferLayout correctly handles symbolic (dynamic) shapes.
    """
    M_var = tir.Var("M", "int32")
    K_var = tir.Var("K", "int32")

    block_M, block_N, block_K = 32, 32, 32

    policy = T.placement.replicated()

    A_tensor = T.MeshTensor((M_var, K_var), policy, dtype="float16")
    B_tensor = T.MeshTensor((K_var, 64), policy, dtype="float16")
    C_tensor = T.MeshTensor((M_var, 64), policy, dtype="float32")

    @T.prim_func
    def kernel(A: A_tensor, B: B_tensor, C: C_tensor):
        with T.Kernel(T.ceildiv(64, block_N), T.ceildiv(M_var, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_shared = T.alloc_shared((block_M, block_N), "float32")

            for k in T.Pipelined(T.ceildiv(K_var, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared)

            T.copy(C_shared, C[by * block_M, bx * block_N])

    return kernel


# ---- testing/python/sunmmio/transform/test_infer_sram_scope.py
# @ 3cb87329421b9e8cb1727fe4ba3d4dafba5dba76

# ::matmul
def matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    tile_size = (8, 8)
    index_map = (-2, -1)

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def gemm(
        A: T.MeshTensor(
            (M, K),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            dtype=dtype,
            layout=A_layout,
        ),
        B: T.MeshTensor(
            (K, N),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            dtype=dtype,
            layout=B_layout,
        ),
        C: T.MeshTensor(
            (M, N),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            dtype=accum_dtype,
            layout=C_layout,
        ),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.annotate_tileview({A_shared: make_tileview(A_shared, tile_size, index_map)})
            T.annotate_tileview({B_shared: make_tileview(B_shared, tile_size, index_map)})
            T.annotate_tileview({C_shared: make_tileview(C_shared, tile_size, index_map)})

            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=4):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared)

            T.copy(C_shared, C[by * block_M, bx * block_N])

    return gemm


# ::auto_insert_copy_matmul
def auto_insert_copy_matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def gemm(
        A: T.MeshTensor(
            (M, K),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            dtype=dtype,
            layout=A_layout,
        ),
        B: T.MeshTensor(
            (K, N),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            dtype=dtype,
            layout=B_layout,
        ),
        C: T.MeshTensor(
            (M, N),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            dtype=accum_dtype,
            layout=C_layout,
        ),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=4):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared)
                T.gemm(C_shared, B_shared, C_shared)
                T.gemm(A_shared, C_shared, C_shared)

            T.copy(C_shared, C[by * block_M, bx * block_N])

    return gemm


# ::sliced_conflict_matmul
def sliced_conflict_matmul(dtype="float16", accum_dtype="float"):
    A_layout = make_zz_layout((128, 128), [0, 1], (32, 32))
    B_layout = make_zz_layout((128, 128), [0, 1], (32, 32))
    C_layout = make_zz_layout((128, 128), [0, 1], (32, 32))

    @T.prim_func
    def gemm(
        A: T.MeshTensor(
            (128, 128),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            dtype=dtype,
            layout=A_layout,
        ),
        B: T.MeshTensor(
            (128, 128),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            dtype=dtype,
            layout=B_layout,
        ),
        C: T.MeshTensor(
            (128, 128),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            dtype=accum_dtype,
            layout=C_layout,
        ),
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((32, 32), dtype)
            B_shared = T.alloc_shared((32, 32), dtype)
            C_shared = T.alloc_shared((32, 32), accum_dtype)

            T.copy(A[0:32, 0:32], A_shared)
            T.copy(B[0:32, 0:32], B_shared)
            T.gemm(A_shared[0:16, 0:16], B_shared[0:16, 4:20], C_shared[0:16, 0:16])
            T.gemm(B_shared[0:16, 4:20], B_shared[0:16, 4:20], C_shared[0:16, 0:16])
            T.gemm(A_shared[0:16, 0:16], B_shared[0:16, 4:20], B_shared[0:16, 0:16])
            T.gemm(A_shared[0:16, 0:16], A_shared[0:16, 4:20], C_shared[0:16, 0:16])
            T.gemm(A_shared[0:16, 0:16], B_shared[0:16, 4:20], A_shared[0:16, 0:16])
            T.gemm(C_shared[0:16, 0:16], B_shared[0:16, 4:20], C_shared[0:16, 0:16])
            T.gemm(A_shared[0:16, 0:16], C_shared[0:16, 4:20], C_shared[0:16, 0:16])

    return gemm


# ---- testing/python/sunmmio/transform/test_pipeline.py
# @ 1f6a0068ca4cdbcf27f89d558c0c0d976a6d4aa9

# ::matmul
def pipeline_matmul(M, N, K, block_M, block_N, block_K, num_stages, dtype="bfloat16", accum_dtype="float"):
    @T.prim_func
    def gemm(
        A: T.MeshTensor(
            (M, K),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            device_mesh_config=(2, 2),
            dtype=dtype,
        ),
        B: T.MeshTensor(
            (K, N),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            device_mesh_config=(2, 2),
            dtype=dtype,
        ),
        C: T.MeshTensor(
            (M, N),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            device_mesh_config=(2, 2),
            dtype=accum_dtype,
        ),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared)
            T.copy(C_shared, C[by * block_M, bx * block_N])

    return gemm


# ::if_matmul
def if_matmul(M, N, K, block_M, block_N, block_K, num_stages, dtype="bfloat16", accum_dtype="float"):
    @T.prim_func
    def gemm(
        A: T.MeshTensor(
            (M, K),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            device_mesh_config=(2, 2),
            dtype=dtype,
        ),
        B: T.MeshTensor(
            (K, N),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            device_mesh_config=(2, 2),
            dtype=dtype,
        ),
        C: T.MeshTensor(
            (M, N),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            device_mesh_config=(2, 2),
            dtype=accum_dtype,
        ),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                if k > 1:
                    T.copy(A[by * block_M, k * block_K], A_shared)
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_shared)
            T.copy(C_shared, C[by * block_M, bx * block_N])

    return gemm


# ---- testing/python/sunmmio/transform/test_layout_transform.py
# @ 18c177315a0bdf8d332c4235bbe91d05a1638090

M, N = 128, 128
DTYPE = T.float16
# (MX_DTYPE = T.mxfp8 and its two MX-layout kernels are not ported: the emulator has no
# MX block-scaled kinds)


def _dram(shape, layout):
    """A DRAM tensor on the Sunmmio device mesh, carrying an explicit layout —
    the T.MeshTensor declaration style of sunmmio_example_gemm.py.

    A fully-replicated policy keeps each core's buffer at the declared shape:
    these are single-core layout tests (unlike the sharded GEMM example), so
    sharding must not perturb the shapes the assertions rely on.
    """
    policy = T.MeshShardingPolicy(replicate=MeshReplicationType.ALL)
    return T.MeshTensor(shape, policy, DTYPE, layout=layout)


def _dram_typed(shape, dtype, layout):
    policy = T.MeshShardingPolicy(replicate=MeshReplicationType.ALL)
    return T.MeshTensor(shape, policy, dtype, layout=layout)


def mismatched_copy_kernel():
    """Row-major DRAM <-> ZZ RSRAM (default), both directions — combos 1 & 2."""

    @T.prim_func
    def main(
        A: _dram((M, N), make_row_major((M, N))),
        B: _dram((M, N), make_row_major((M, N))),
    ):
        with T.Kernel(1, threads=128) as (bx,):
            A_shared = T.alloc_shared((M, N), DTYPE, scope="shared.rsram")
            T.copy(A, A_shared)  # DRAM(row-major) -> RSRAM(ZZ default)
            T.copy(A_shared, B)  # RSRAM(ZZ) -> DRAM(row-major)

    return tvm.IRModule({"main": main})


def zz_dram_kernel():
    """ZZ DRAM <-> row-major RSRAM, both directions — combos 3 & 4."""

    @T.prim_func
    def main(
        A: _dram((M, N), make_zz_layout((M, N), [0, 1], (32, 32))),
        B: _dram((M, N), make_zz_layout((M, N), [0, 1], (32, 32))),
    ):
        with T.Kernel(1, threads=128) as (bx,):
            A_shared = T.alloc_shared((M, N), DTYPE, scope="shared.rsram")
            T.annotate_layout({A_shared: make_row_major((M, N))})
            T.copy(A, A_shared)  # DRAM(ZZ) -> RSRAM(row-major)
            T.copy(A_shared, B)  # RSRAM(row-major) -> DRAM(ZZ)

    return tvm.IRModule({"main": main})


def matched_copy_kernel():
    """Row-major DRAM and row-major RSRAM (annotated) — layouts match, so the
    copy stays a plain dma_copy."""

    @T.prim_func
    def main(A: _dram((M, N), make_row_major((M, N)))):
        with T.Kernel(1, threads=128) as (bx,):
            A_shared = T.alloc_shared((M, N), DTYPE, scope="shared.rsram")
            T.annotate_layout({A_shared: make_row_major((M, N))})
            T.copy(A, A_shared)  # DRAM(row-major) -> RSRAM(row-major), matched

    return tvm.IRModule({"main": main})


def zz_dram_reduce_kernel():
    """End-to-end: ZZ DRAM (3x256x256) -> RSRAM, axis-2 reduction -> row-major
    RSRAM (3x256), copied back to ZZ DRAM (3x256).

    Out_sh needs no annotation: the reduction is over axis 2 — a blocked dim
    of the ZZ layout — so ReduceOp::InferLayout assigns Out_sh a row-major
    layout, making the final store a ZZ <- row-major transform.  The matched
    ZZ->ZZ load stays a plain dma_copy.
    """
    b, h, w = 3, 256, 256

    @T.prim_func
    def main(
        A: _dram((b, h, w), make_zz_layout((b, h, w), [1, 2], (32, 32))),
        Out: _dram((b, h), make_zz_layout((b, h), [0, 1], (32, 32))),
    ):
        with T.Kernel(1, threads=128) as (bx,):
            A_sh = T.alloc_shared((b, h, w), DTYPE, scope="shared.rsram")
            Out_sh = T.alloc_shared((b, h), DTYPE, scope="shared.rsram")
            T.copy(A, A_sh)  # ZZ DRAM -> ZZ RSRAM (matched)
            T.reduce_sum(A_sh, Out_sh, dim=2)  # axis-2 reduce -> row-major Out_sh
            T.copy(Out_sh, Out)  # row-major RSRAM -> ZZ DRAM (transform)

    return tvm.IRModule({"main": main})


def padded_rsram_copy_kernel(rows, cols):
    """Unpadded row-major DRAM <-> alignment-padded row-major RSRAM, both
    directions.  The leading-dimension pitch mismatch (e.g. cols 40 -> 64)
    forces a pad/unpad sunmmio_layout_transform rather than a plain dma_copy."""

    @T.prim_func
    def main(
        A: _dram((rows, cols), make_row_major((rows, cols))),
        B: _dram((rows, cols), make_row_major((rows, cols))),
    ):
        with T.Kernel(1, threads=128) as (bx,):
            X = T.alloc_shared((rows, cols), DTYPE, scope="shared.rsram")
            T.annotate_layout({X: make_aligned_row_major((rows, cols), "float16", 64)})
            T.copy(A, X)  # DRAM(unpadded) -> RSRAM(padded): PAD
            T.copy(X, B)  # RSRAM(padded) -> DRAM(unpadded): UNPAD

    return tvm.IRModule({"main": main})


def padded_rsram_copy_kernel_3d(d0, d1, cols):
    @T.prim_func
    def main(
        A: _dram((d0, d1, cols), make_row_major((d0, d1, cols))),
        B: _dram((d0, d1, cols), make_row_major((d0, d1, cols))),
    ):
        with T.Kernel(1, threads=128) as (bx,):
            X = T.alloc_shared((d0, d1, cols), DTYPE, scope="shared.rsram")
            T.annotate_layout({X: make_aligned_row_major((d0, d1, cols), "float16", 64)})
            T.copy(A, X)
            T.copy(X, B)

    return tvm.IRModule({"main": main})


def unit_dim_source_kernel():
    """4D DRAM sliced with unit dims (A[0,:,0,:], logical [2,64]) into a 2D ZZ
    RSRAM buffer.  The copy frontend's shape check sees the squeezed [2,64], but
    the lowered DRAM source region keeps its full 4D extents [1,2,1,64] (a
    region's rank equals its buffer's).  The staging must follow the RSRAM
    region [2,64] so the transform leg is rank-matched; the DMA leg carries the
    degenerate dims and folds them away."""

    @T.prim_func
    def main(A: _dram((2, 2, 2, 64), make_row_major((2, 2, 2, 64)))):
        with T.Kernel(1, threads=128) as (bx,):
            S = T.alloc_shared((2, 64), DTYPE, scope="shared.rsram")
            T.annotate_layout({S: make_zz_layout((2, 64), [0, 1], (32, 32))})
            T.copy(A[0, :, 0, :], S)  # DRAM region [1,2,1,64] -> ZZ RSRAM [2,64]

    return tvm.IRModule({"main": main})


def unit_dim_dest_kernel():
    """Store direction: ZZ RSRAM -> row-major DRAM 4D dest sliced with unit dims
    (B[0,:,0,:]).  The matched ZZ->ZZ load stays a plain dma_copy; only the store
    splits, and its staging follows the RSRAM region [2,64], not the 4D dest."""

    @T.prim_func
    def main(
        A: _dram((2, 64), make_zz_layout((2, 64), [0, 1], (32, 32))),
        B: _dram((2, 2, 2, 64), make_row_major((2, 2, 2, 64))),
    ):
        with T.Kernel(1, threads=128) as (bx,):
            X = T.alloc_shared((2, 64), DTYPE, scope="shared.rsram")
            T.annotate_layout({X: make_zz_layout((2, 64), [0, 1], (32, 32))})
            T.copy(A, X)  # ZZ DRAM -> ZZ RSRAM: matched, plain dma
            T.copy(X, B[0, :, 0, :])  # ZZ RSRAM -> rm DRAM 4D unit-dim: store split

    return tvm.IRModule({"main": main})


def unit_dim_source_pad_kernel():
    """Pad/unpad path with a unit-dim source: 4D DRAM slice [1,2,1,40] -> padded
    (aligned) RSRAM [2,40].  Exercises the 32-limit branch with unit dims (the
    leading product 1*2*1 = 2 stays <= 32)."""

    @T.prim_func
    def main(A: _dram((2, 2, 2, 40), make_row_major((2, 2, 2, 40)))):
        with T.Kernel(1, threads=128) as (bx,):
            X = T.alloc_shared((2, 40), DTYPE, scope="shared.rsram")
            T.annotate_layout({X: make_aligned_row_major((2, 40), "float16", 64)})
            T.copy(A[0, :, 0, :], X)  # DRAM [1,2,1,40] -> padded RSRAM [2,40]

    return tvm.IRModule({"main": main})


def leading_unit_dim_3d_kernel():
    """Unit dim in the leading position of a 3D source: A[0,:,:] -> [1,2,64]
    region into a ZZ RSRAM [2,64].  Varies the squeezed-dim position/rank."""

    @T.prim_func
    def main(A: _dram((2, 2, 64), make_row_major((2, 2, 64)))):
        with T.Kernel(1, threads=128) as (bx,):
            S = T.alloc_shared((2, 64), DTYPE, scope="shared.rsram")
            T.annotate_layout({S: make_zz_layout((2, 64), [0, 1], (32, 32))})
            T.copy(A[0, :, :], S)  # DRAM [1,2,64] -> ZZ RSRAM [2,64]

    return tvm.IRModule({"main": main})


# ::test_aligned_rsram_copy_already_32_multiple_stays_plain
def test_aligned_rsram_copy_already_32_multiple_stays_plain():
    """When the RSRAM 'aligned' layout is a no-op (inner already a 32-multiple)
    it matches the unpadded DRAM, so the copy stays a plain dma_copy."""
    target = determine_target("Sunmmio", return_object=True)

    @T.prim_func
    def main(
        A: _dram((2, 64), make_row_major((2, 64))),
        B: _dram((2, 64), make_row_major((2, 64))),
    ):
        with T.Kernel(1, threads=128) as (bx,):
            X = T.alloc_shared((2, 64), DTYPE, scope="shared.rsram")
            T.annotate_layout({X: make_aligned_row_major((2, 64), "float16", 64)})
            T.copy(A, X)
            T.copy(X, B)

    return main


# ---- testing/python/sunmmio/transform/test_tilelang_transform_validate_tile_view_regions.py
# @ 4e8152971aa2d90e489e7497752a95937023b5ae (its comm kernels; its copy kernels use
# plain T.Tensor parameters)

# (its DTYPE is "float16", the same dtype as the DTYPE above)


def _make_comm_kernel(comm_case):
    shape = (96, 96) if comm_case.endswith("_illegal_non_major_split") else (128, 128)
    layout = make_zz_layout(shape, axes=[0, 1], block_shape=(32, 32))

    if comm_case == "broadcast_valid":

        @T.prim_func
        def kernel(A: T.Tensor(shape, DTYPE)):
            with T.Kernel():
                A_shared = T.alloc_shared(shape, DTYPE)
                B_shared = T.alloc_shared(shape, DTYPE)
                T.annotate_layout({A_shared: layout, B_shared: layout})
                T.comm.broadcast(
                    A_shared[0:32, 0:32],
                    B_shared[32:64, 32:64],
                    (0, 0),
                    direction="h",
                )

    elif comm_case == "broadcast_illegal_non_major_split":

        @T.prim_func
        def kernel(A: T.Tensor(shape, DTYPE)):
            with T.Kernel():
                A_shared = T.alloc_shared(shape, DTYPE)
                B_shared = T.alloc_shared(shape, DTYPE)
                T.annotate_layout({A_shared: layout, B_shared: layout})
                T.comm.broadcast(
                    A_shared[0:32, 0:16],
                    B_shared[32:64, 16:32],
                    (0, 0),
                    direction="h",
                )

    elif comm_case == "broadcast_scalar_src_oob":

        @T.prim_func
        def kernel(A: T.Tensor(shape, DTYPE)):
            with T.Kernel():
                A_shared = T.alloc_shared(shape, DTYPE)
                B_shared = T.alloc_shared(shape, DTYPE)
                T.annotate_layout({A_shared: layout, B_shared: layout})
                T.comm.broadcast(
                    A_shared[999, 0],
                    B_shared[0:32, 0:32],
                    (0, 0),
                    direction="h",
                )

    elif comm_case == "put_valid":

        @T.prim_func
        def kernel(A: T.Tensor(shape, DTYPE)):
            with T.Kernel():
                A_shared = T.alloc_shared(shape, DTYPE)
                B_shared = T.alloc_shared(shape, DTYPE)
                T.annotate_layout({A_shared: layout, B_shared: layout})
                T.comm.put(
                    A_shared[0:32, 0:32],
                    B_shared[32:64, 32:64],
                    (0, 0),
                    (0, 1),
                )

    elif comm_case == "allgather_legacy_valid":
        recv_shape = (16, 32, 32)
        recv_layout = make_row_major(recv_shape)

        @T.prim_func
        def kernel(A: T.Tensor(shape, DTYPE)):
            with T.Kernel() as _bx:
                A_shared = T.alloc_shared((32, 32), DTYPE)
                R_shared = T.alloc_shared(recv_shape, DTYPE)
                T.annotate_layout(
                    {
                        A_shared: make_row_major((32, 32)),
                        R_shared: recv_layout,
                    }
                )
                T.comm.all_gather(A_shared, R_shared, direction="all")

    elif comm_case == "allgather_axis_last_valid":
        send_shape = (32, 32)
        recv_shape = (32, 512)

        @T.prim_func
        def kernel(A: T.Tensor(shape, DTYPE)):
            with T.Kernel() as _bx:
                A_shared = T.alloc_shared(send_shape, DTYPE)
                R_shared = T.alloc_shared(recv_shape, DTYPE)
                T.annotate_layout(
                    {
                        A_shared: make_row_major(send_shape),
                        R_shared: make_row_major(recv_shape),
                    }
                )
                T.comm.all_gather(A_shared, R_shared, direction="all", axis=-1)

    elif comm_case == "allgather_axis0_valid":
        send_shape = (32, 32)
        recv_shape = (512, 32)
        recv_layout = make_zz_layout(recv_shape, axes=[0, 1], block_shape=(32, 32))

        @T.prim_func
        def kernel(A: T.Tensor(shape, DTYPE)):
            with T.Kernel() as _bx:
                A_shared = T.alloc_shared(send_shape, DTYPE)
                R_shared = T.alloc_shared(recv_shape, DTYPE)
                T.annotate_layout(
                    {
                        A_shared: make_row_major(send_shape),
                        R_shared: recv_layout,
                    }
                )
                T.comm.all_gather(A_shared, R_shared, direction="all", axis=0)

    elif comm_case == "allgather_axis0_slot_extent_mismatch":
        send_shape = (32, 32)
        recv_shape = (544, 32)

        @T.prim_func
        def kernel(A: T.Tensor(shape, DTYPE)):
            with T.Kernel() as bx:
                A_shared = T.alloc_shared(send_shape, DTYPE)
                R_shared = T.alloc_shared(recv_shape, DTYPE)
                T.annotate_layout(
                    {
                        A_shared: make_row_major(send_shape),
                        R_shared: make_row_major(recv_shape),
                    }
                )
                T.evaluate(
                    tvm.tir.call_intrin(
                        "handle",
                        tvm.tir.op.Op.get("tl.tileop.comm_allgather"),
                        A_shared[0:32, 0:32],
                        R_shared[0:544, 0:32],
                        2,
                        -1,
                        0,
                        bx,
                    )
                )

    elif comm_case == "allgather_axis0_nonzero_recv_min_oob":
        send_shape = (32, 32)
        recv_shape = (512, 32)

        @T.prim_func
        def kernel(A: T.Tensor(shape, DTYPE)):
            with T.Kernel() as _bx:
                A_shared = T.alloc_shared(send_shape, DTYPE)
                R_shared = T.alloc_shared(recv_shape, DTYPE)
                T.annotate_layout(
                    {
                        A_shared: make_row_major(send_shape),
                        R_shared: make_row_major(recv_shape),
                    }
                )
                T.comm.all_gather(
                    A_shared,
                    R_shared[32:544, 0:32],
                    direction="all",
                    axis=0,
                )

    elif comm_case == "allreduce_low_level_valid":
        send_shape = (32, 32)
        out_shape = (32,)
        gather_shape = (16, 32)

        @T.prim_func
        def kernel(A: T.Tensor(shape, DTYPE)):
            with T.Kernel() as bx:
                A_shared = T.alloc_shared(send_shape, DTYPE)
                Out_shared = T.alloc_shared(out_shape, DTYPE)
                Row_gather = T.alloc_shared(gather_shape, DTYPE)
                Col_gather = T.alloc_shared(gather_shape, DTYPE)
                T.annotate_layout(
                    {
                        A_shared: make_row_major(send_shape),
                        Out_shared: make_row_major(out_shape),
                        Row_gather: make_row_major(gather_shape),
                        Col_gather: make_row_major(gather_shape),
                    }
                )
                T.evaluate(
                    tvm.tir.call_intrin(
                        "handle",
                        tvm.tir.op.Op.get("tl.tileop.comm_allreduce"),
                        A_shared[0:32, 0:32],
                        Out_shared[0:32],
                        Row_gather[0:16, 0:32],
                        Col_gather[0:16, 0:32],
                        "sum",
                        2,
                        1,
                        T.bool(True),
                        bx,
                    )
                )

    else:
        raise ValueError(f"unknown comm case: {comm_case}")

    return tvm.IRModule({"main": kernel})


# ---- testing/python/sunmmio/transform/test_legalize_datapath.py
# @ bfb622b41440065bd2751b646e9c340a5d6db5c3

# ::allgather_dram_to_rsram (this version: horizontal, axis 0, no direction argument)
def allgather_dram_to_rsram(block_M, block_K, dtype=T.float16):
    """Build a horizontal all-gather directly from DRAM to RSRAM.

    Each of four columns contributes [block_M, block_K] along axis 0, so the
    receive buffer is [4 * block_M, block_K].
    """

    @T.prim_func
    def main(
        A: T.Tensor((block_M, block_K), dtype),
    ):
        with T.Kernel():
            A_gathered = T.alloc_shared((4 * block_M, block_K), dtype, scope="shared.rsram")
            T.comm.all_gather(A, A_gathered, direction="h", axis=0)

    return tvm.IRModule({"main": main})


# ---- testing/python/transform/sunmmio_mesh_kernel_new_syntax_reference.py
# @ 3b5993cb7578aebc91f9469200b5b0de9c4b660b ::mesh_flashattn_new (the pipeline test
# testing/python/sunmmio/pipeline/test_sunmmio_pipeline_ilp_pass.py @ c56e28da plans it)

@target("Sunmmio")
def mesh_flashattn_new(
    batch=1,
    heads=64,
    seq_len=4096,
    dim=128,
    groups=16,
    is_causal=False,
    block_M=64,
    block_N=64,
    num_stages=2,
    dtype=T.bfloat16,
    accum_dtype=T.bfloat16,
):
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    head_kv = heads // groups
    q_shape = [batch, seq_len, heads, dim]
    kv_shape = [batch, seq_len, head_kv, dim]

    # 1) Sharding policy
    # Attention tensors are not matrices. The usual choice is:
    # - shard batch on mesh rows
    # - shard heads / kv-heads on mesh cols
    q_policy = T.MeshShardingPolicy(y=0, x=2)
    kv_policy = T.MeshShardingPolicy(y=0, x=2)

    # 2) Layout
    # For Q/K/V/O the compute-critical axes are typically sequence and dim.
    Q_layout = make_zz_layout(q_shape, [1, 3], (32, 32))
    K_layout = make_zz_layout(kv_shape, [1, 3], (32, 32))
    V_layout = make_zz_layout(kv_shape, [1, 3], (32, 32))
    O_layout = make_zz_layout(q_shape, [1, 3], (32, 32))

    @T.prim_func
    def main(
        Q: T.MeshTensor(q_shape, q_policy, (4, 4), dtype, layout=Q_layout),
        K: T.MeshTensor(kv_shape, kv_policy, (4, 4), dtype, layout=K_layout),
        V: T.MeshTensor(kv_shape, kv_policy, (4, 4), dtype, layout=V_layout),
        Output: T.MeshTensor(q_shape, q_policy, (4, 4), dtype, layout=O_layout),
    ):
        with T.Kernel() as _cid:
            sharded_batch = Q.local_shape[0]
            sharded_heads = Q.local_shape[2]
            local_q_tiles = T.ceildiv(Q.local_shape[1], block_M)

            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_shared([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_shared([block_M, block_N], dtype)
            acc_o = T.alloc_shared([block_M, dim], accum_dtype)
            scores_max = T.alloc_shared([block_M], accum_dtype)
            scores_max_prev = T.alloc_shared([block_M], accum_dtype)
            scores_scale = T.alloc_shared([block_M], accum_dtype)
            scores_sum = T.alloc_shared([block_M], accum_dtype)
            logsum = T.alloc_shared([block_M], accum_dtype)

            for bz in T.serial(sharded_batch):
                for by in T.serial(sharded_heads):
                    for bx in T.serial(local_q_tiles):
                        T.copy(Q[bz, bx * block_M : (bx + 1) * block_M, by, :], Q_shared)
                        T.fill(acc_o, 0)
                        T.fill(logsum, 0)
                        T.fill(scores_max, -T.infinity(accum_dtype))

                        loop_range = (
                            T.min(T.ceildiv(K.local_shape[1], block_N), T.ceildiv((bx + 1) * block_M, block_N))
                            if is_causal
                            else T.ceildiv(K.local_shape[1], block_N)
                        )

                        for k in T.Pipelined(loop_range, num_stages=num_stages):
                            T.copy(K[bz, k * block_N : (k + 1) * block_N, by // groups, :], K_shared)
                            if is_causal:
                                for i, j in T.Tiles(acc_s, parallel=True):
                                    acc_s[i, j] = T.if_then_else(
                                        bx * block_M + i >= k * block_N + j,
                                        0,
                                        -T.infinity(acc_s.dtype),
                                    )
                            else:
                                for i, j in T.Tiles(acc_s, parallel=True):
                                    acc_s[i, j] = T.if_then_else(
                                        k * block_N + j >= seq_len,
                                        -T.infinity(acc_s.dtype),
                                        0,
                                    )

                            T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                            T.copy(scores_max, scores_max_prev)
                            T.fill(scores_max, -T.infinity(accum_dtype))
                            T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                            for i in T.Tiles(scores_max, parallel=True):
                                scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                            for i in T.Tiles(scores_scale, parallel=True):
                                scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                            for i, j in T.Tiles(acc_s, parallel=True):
                                acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                            T.reduce_sum(acc_s, scores_sum, dim=1)
                            for i in T.Tiles(logsum, parallel=True):
                                logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                            T.copy(acc_s, acc_s_cast)

                            for i, j in T.Tiles(acc_o, parallel=True):
                                acc_o[i, j] *= scores_scale[i]

                            T.copy(V[bz, k * block_N : (k + 1) * block_N, by // groups, :], V_shared)
                            T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

                        for i, j in T.Tiles(acc_o, parallel=True):
                            acc_o[i, j] /= logsum[i]
                        T.copy(acc_o, O_shared)
                        T.copy(O_shared, Output[bz, bx * block_M : (bx + 1) * block_M, by, :])

    return main
