"""The older fork's compile-pipeline test kernels (T.Persistent over each core's tiles,
comm ops, T.Tiles), verbatim: wanghz18/Tilelang-Mesh at commit b5c29b04b275563f3401a332627e636701baab0b
(its main line, "Cg/main (#180)"). Import lines: the fork's, with ``target`` (its
``@target("Sunmmio")``) from the corpus harness and ``tm.enable`` providing SUNMMIO's
names.
"""
import importlib.util
import pathlib
import sys

import tilelang.language as T
from tilelang.carver.arch import driver
from tilelang.layout import make_zz_layout

_h = sys.modules.get("tm_corpus_harness")
if _h is None:  # loaded on its own
    _spec = importlib.util.spec_from_file_location(
        "tm_corpus_harness", pathlib.Path(__file__).parent / "harness.py")
    _h = importlib.util.module_from_spec(_spec)
    sys.modules["tm_corpus_harness"] = _h
    _spec.loader.exec_module(_h)
target = _h.target


# testing/python/compile_pipeline/test_comm.py::kernel_comm
@target("Sunmmio")
def kernel_comm(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float32"):
    shard_policy = T.MeshShardingPolicy(y=0, x=1)
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols

    A_shape = (M, K)
    B_shape = (K, N)
    C_shape = (M, N)
    A_layout = make_zz_layout(A_shape, [0, 1], (32, 32))
    B_layout = make_zz_layout(B_shape, [0, 1], (32, 32))
    C_layout = make_zz_layout(C_shape, [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor(A_shape, shard_policy, device_mesh_config, dtype, layout=A_layout),
        B: T.MeshTensor(B_shape, shard_policy, device_mesh_config, dtype, layout=B_layout),
        C: T.MeshTensor(C_shape, shard_policy, device_mesh_config, accum_dtype, layout=C_layout),
    ):
        # Initialize Kernel Context
        with T.Kernel(ncores) as _cid:
            sharded_M, _ = A.shape
            _, sharded_N = C.shape

            A_shared = T.alloc_shared((block_M, block_K), dtype=dtype)
            A_remote_1 = T.alloc_shared((block_M, block_K), dtype=dtype)
            A_remote_2 = T.alloc_shared((block_M, block_K), dtype=dtype)
            A_remote_3 = T.alloc_shared((block_M, block_K), dtype=dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype=dtype)
            B_remote_1 = T.alloc_shared((block_K, block_N), dtype=dtype)
            B_remote_2 = T.alloc_shared((block_K, block_N), dtype=dtype)
            B_remote_3 = T.alloc_shared((block_K, block_N), dtype=dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype=accum_dtype)
            C_allgather_1 = T.alloc_shared((16, block_M, block_N), dtype=accum_dtype)
            C_allgather_2 = T.alloc_shared((4, block_M, block_N), dtype=accum_dtype)
            C_allgather_3 = T.alloc_shared((4, block_M, block_N), dtype=accum_dtype)

            for _bx, _by in T.Persistent(
                [T.ceildiv(sharded_N, block_N), T.ceildiv(sharded_M, block_M)],
                ncores,
                _cid,
            ):
                T.clear(A_shared)
                T.clear(B_shared)
                T.clear(C_shared)  # Avoid Fill op unsupported scope error
                T.comm.broadcast(A_shared, A_remote_1, (0, 0), direction="all")
                T.comm.broadcast(A_shared, A_remote_2, (0, 0), direction="h")
                T.comm.broadcast(A_shared, A_remote_3, (0, 0), direction="v")
                T.comm.put(B_shared, B_remote_1, (1, 2), (2, 3))
                T.comm.put(B_shared, B_remote_2, (1, 2), (1, 3))
                T.comm.put(B_shared, B_remote_3, (1, 2), (3, 2))
                T.comm.all_gather(C_shared, C_allgather_1, direction="all")
                T.comm.all_gather(C_shared, C_allgather_2, direction="h")
                T.comm.all_gather(C_shared, C_allgather_3, direction="v")

    return main


# testing/python/compile_pipeline/test_overall.py::kernel_overall
@target("Sunmmio")
def kernel_overall(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float32"):
    shard_policy = T.MeshShardingPolicy(y=0, x=1)
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols

    A_shape = (M, K)
    B_shape = (K, N)
    C_shape = (M, N)
    A_layout = make_zz_layout(A_shape, [0, 1], (32, 32))
    B_layout = make_zz_layout(B_shape, [0, 1], (32, 32))
    C_layout = make_zz_layout(C_shape, [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor(A_shape, shard_policy, device_mesh_config, dtype, layout=A_layout),
        B: T.MeshTensor(B_shape, shard_policy, device_mesh_config, dtype, layout=B_layout),
        Bias: T.MeshTensor(C_shape, shard_policy, device_mesh_config, accum_dtype, layout=C_layout),
        C: T.MeshTensor(C_shape, shard_policy, device_mesh_config, accum_dtype, layout=C_layout),
    ):
        # Initialize Kernel Context
        with T.Kernel(ncores) as _cid:
            sharded_M, sharded_K = A.shape
            _, sharded_N = B.shape

            # [wanghz18] Automatic SRAM Scope Inference
            # We declare generic 'shared' scope, expecting InferSramScope pass to
            # refine them to 'shared.asram', 'shared.wsram', 'shared.rsram'
            A_shared = T.alloc_shared((block_M, block_K), dtype=dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype=dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            Bias_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            for bx, by in T.Persistent(
                [T.ceildiv(sharded_N, block_N), T.ceildiv(sharded_M, block_M)],
                ncores,
                _cid,
            ):
                T.clear(C_shared)  # Avoid Fill op unsupported scope error

                # [wanghz18] GEMM Lowering to mma_sunmmio intrinsic
                for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=2):
                    T.copy(A[by * block_M, k * block_K], A_shared)
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_shared)

                # Load Bias
                T.copy(Bias[by * block_M, bx * block_N], Bias_shared)

                # [weizzh] Tiles Loop for Element-wise operation
                # This loop should be legalized and vectorized by LegalizeTilesLoop/TilesLoop passes
                for i, j in T.Tiles(C_shared, parallel=True):
                    C_shared[i, j] = C_shared[i, j] + Bias_shared[i, j]

                # [xiaoyao-NKU] Inter-core Communication (Broadcast)
                C_remote = T.alloc_shared((block_M, block_N), accum_dtype)
                T.comm.broadcast(C_shared, C_remote, (0, 0), direction="h")

                # Store result
                T.copy(C_remote, C[by * block_M, bx * block_N])

    return main
