"""The older fork's compile-pipeline sync kernel, verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/compile_pipeline/test_sync.py`` at commit 52fed911f7a4ae50d979e0d584066452c9826aaf (branch dev/codegen, the fork's newest). Each kernel factory below is
the source's text unchanged (a kernel written inside a test function is that function's
statements up to its ``@T.prim_func``, returned); only import lines differ:
``tm.enable`` provides SUNMMIO's names (``T.comm``, ``T.MeshTensor``, the layout makers,
``driver.get_sunmmio_device_mesh_config``, ``tilelang.language.mesh_tensor``).
"""
# flake8: noqa
import tilelang
import tilelang.language as T
from tilelang import tvm as tvm
from tilelang.carver.arch import driver
from tilelang.language.mesh_tensor import MeshReplicationType, MeshShardingPolicy
from tilelang.layout import make_row_major, make_tileview, make_zn_layout, make_zz_layout
from tvm import tirx as tir

import sys

target = sys.modules["tm_corpus_harness"].target  # the tests' @target("Sunmmio")


# testing/python/compile_pipeline/test_sync.py::kernel_sync (line 10)
@target("Sunmmio")
def kernel_sync(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    shard_policy = T.MeshShardingPolicy(y=0, x=1)
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols

    A_shape = (M, K)
    B_shape = (M, K)
    C_shape = (M, N)
    A_layout = make_zz_layout(A_shape, [0, 1], (32, 32))
    B_layout = make_zz_layout(B_shape, [0, 1], (32, 32))
    C_layout = make_zz_layout(C_shape, [0, 1], (32, 32))

    @T.prim_func
    def kernel(
        A: T.MeshTensor(A_shape, shard_policy, device_mesh_config, dtype, layout=A_layout),
        B: T.MeshTensor(B_shape, shard_policy, device_mesh_config, dtype, layout=B_layout),
        C: T.MeshTensor(C_shape, shard_policy, device_mesh_config, dtype, layout=C_layout),
    ):
        # Initialize Kernel Context
        with T.Kernel(ncores) as _cid:
            sharded_M, _ = A.shape
            _, sharded_N = C.shape

            A_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.asram")
            B_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.wsram")
            C_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.rsram")
            D_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.rsram")
            E_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.rsram")

            for bx, _by in T.Persistent(
                [T.ceildiv(sharded_N, block_N), T.ceildiv(sharded_M, block_M)],
                ncores,
                _cid,
            ):
                T.gemm(A_shared, B_shared, C_shared)
                if bx <= 2:
                    T.clear(D_shared)

                for i in range(5):
                    C_shared[i, 0] = C_shared[i, 0] + 1.0

                for _i in range(10):
                    T.comm.broadcast(D_shared, E_shared, (0, 0), direction="h")
                    E_shared[0, 0] = E_shared[0, 0] + 1.0
                    T.comm.broadcast(E_shared, D_shared, (0, 0), direction="h")

    return kernel
