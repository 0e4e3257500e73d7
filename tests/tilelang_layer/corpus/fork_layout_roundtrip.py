"""The older fork's layout-transform round-trip codegen kernel, verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/target/test_sunmmio_codegen_layout_transform_opt_validate.py`` at commit 52fed911f7a4ae50d979e0d584066452c9826aaf (branch dev/codegen, the fork's newest). Each kernel factory below is
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


# testing/python/target/test_sunmmio_codegen_layout_transform_opt_validate.py::layout_transform_roundtrip_kernel (line 23)
@target("Sunmmio")
def layout_transform_roundtrip_kernel(
    m=128,
    n=128,
    dtype=T.float16,
):
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols

    shard_policy = T.MeshShardingPolicy(replicate=MeshReplicationType.ALL)
    dram_layout = make_zz_layout((m, n), axes=[0, 1], block_shape=(32, 32))
    rsram_layout = make_row_major((m, n))

    @T.prim_func
    def main(
        A: T.MeshTensor((m, n), shard_policy, device_mesh_config, dtype, layout=dram_layout),  # type: ignore
        B: T.MeshTensor((m, n), shard_policy, device_mesh_config, dtype, layout=dram_layout),  # type: ignore
    ):
        with T.Kernel(ncores, threads=128) as _cid:
            A_rsram = T.alloc_shared((m, n), dtype, scope="shared.rsram")
            T.annotate_layout({A_rsram: rsram_layout})

            T.copy(A, A_rsram)
            T.copy(A_rsram, B)

    return main
