"""The older fork's DMA copy test kernel with its hierarchical T.MeshTensor layout arguments, verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/ops/test_tilelang_ops_sunmmio_dma_copy.py`` at commit f2597d94fcfc11978e039466c6a4d63d81ca3480 (branch copy_insert). Each kernel factory below is
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
from tilelang.layout import make_blockwise_zz_layout  # the source file imports it (its line 9)
from tvm import tirx as tir

import sys

target = sys.modules["tm_corpus_harness"].target  # the tests' @target("Sunmmio")


# testing/python/ops/test_tilelang_ops_sunmmio_dma_copy.py::copy (line 274)
def copy(K, block_M, block_N, block_K, dtype="float32", accum_dtype="float32"):
    MyTensor = T.MeshTensor(
        (128, 128),
        sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
        device_mesh_config=(2, 2),
        hierarchical_dims=(4, 32, 128),
        hierarchical_groups=((0, 2), (2, 3)),
        hierarchical_strides=(32, 1, 4096),
    )

    @T.prim_func
    def main(C: MyTensor):
        # Initialize Kernel Context
        with T.Kernel(T.ceildiv(128, block_N), T.ceildiv(128, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.asram")
            B_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.wsram")
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype, scope="shared.rsram")
            D_shared = T.alloc_shared((block_M, block_N), accum_dtype, scope="shared.rsram")

            T.annotate_layout({C_shared: make_blockwise_zz_layout(C_shared)})

            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                # DRAM -> RSRAM
                T.copy(C[by * block_M, ko * block_K], C_shared)
                # DRAM -> WSRAM
                T.copy(C[by * block_M, ko * block_K], B_shared)
                # DRAM <- RSRAM
                T.copy(C_shared, C[by * block_M, ko * block_K])
                # DRAM -> ASRAM
                T.copy(C[by * block_M, ko * block_K], A_shared)
                # RSRAM -> ASRAM
                T.copy(C_shared[8:24, 16:48], A_shared[24:40, 8:40])
                # RSRAM -> WSRAM
                T.copy(C_shared[8:32, 48:56], B_shared[40:64, 0:8])
                # RSRAM <-> RSRAM
                T.copy(C_shared, D_shared)

    return tvm.IRModule({"main": main})
