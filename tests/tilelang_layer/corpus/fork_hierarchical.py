"""The older fork's kernels with its hierarchical T.MeshTensor layout arguments, verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/transform/test_tilelang_transform_sunmmio_global_layout_utils.py`` at commit f2597d94fcfc11978e039466c6a4d63d81ca3480 (branch copy_insert). Each kernel factory below is
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


# testing/python/transform/test_tilelang_transform_sunmmio_global_layout_utils.py::test_hierarchical_layout_values (line 199)
def test_hierarchical_layout_values():
    """
    Test that the hierarchical layout created from tensor_meta produces
    correct forward index mapping.
    """
    policy = MeshShardingPolicy(y=0, x=1, replicate=MeshReplicationType.NONE)
    device_mesh = (2, 2)

    M, N, K = 64, 64, 64
    block_M, block_N, block_K = 32, 32, 32

    # Simple row-major style hierarchical layout
    # After sharding by 2x2: sharded_shape = (32, 32)
    # sharded_hdims = (32, 32), sharded_hstrides = (32, 1)
    hdims = (64, 64)
    hgroups = ((0, 1), (1, 2))
    hstrides = (64, 1)  # row-major

    A_tensor = T.MeshTensor(
        (M, K),
        policy,
        device_mesh,
        dtype="float16",
        hierarchical_dims=hdims,
        hierarchical_groups=hgroups,
        hierarchical_strides=hstrides,
    )

    B_tensor = T.MeshTensor(
        (K, N),
        policy,
        device_mesh,
        dtype="float16",
        hierarchical_dims=(64, 64),
        hierarchical_groups=((0, 1), (1, 2)),
        hierarchical_strides=(64, 1),
    )

    C_tensor = T.MeshTensor(
        (M, N),
        policy,
        device_mesh,
        dtype="float32",
        hierarchical_dims=(64, 64),
        hierarchical_groups=((0, 1), (1, 2)),
        hierarchical_strides=(64, 1),
    )

    @T.prim_func
    def kernel(
        A: A_tensor,
        B: B_tensor,
        C: C_tensor,
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_shared = T.alloc_shared((block_M, block_N), "float32")

            # T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared)

            T.copy(C_shared, C[by * block_M, bx * block_N])
    return kernel
