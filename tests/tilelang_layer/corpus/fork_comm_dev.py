"""The older fork's newest comm tests (regions, dynamic cores), verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/language/test_tilelang_language_comm.py`` at commit 52fed911f7a4ae50d979e0d584066452c9826aaf (branch dev/codegen, the fork's newest). Each kernel factory below is
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


# testing/python/language/test_tilelang_language_comm.py::test_comm_buffer_like_region_python_api (line 112)
def test_comm_buffer_like_region_python_api():
    @T.prim_func
    def main(A: T.Tensor((128, 128), "float32")):
        with T.Kernel(1, threads=128):
            A_shared = T.alloc_shared([128, 128], "float32", scope="shared.rsram")
            B_shared = T.alloc_shared([128, 128], "float32", scope="shared.rsram")
            C_shared = T.alloc_shared([4, 64, 64], "float32", scope="shared.rsram")
            Out_shared = T.alloc_shared([128], "float32", scope="shared.rsram")
            T.copy(A, A_shared)

            T.comm.broadcast(A_shared[8:72, 16:80], B_shared[24:88, 32:96], (0, 0), direction="h")
            T.comm.put(A_shared[0:64, 0:64], B_shared[32:96, 32:96], (0, 0), (0, 1))
            T.comm.all_gather(A_shared[8:72, 16:80], C_shared[0:4, 0:64, 0:64], direction="h")
            T.comm.all_reduce(A_shared[8:72, 16:80], Out_shared[32:96], "sum", "h", dim=1)
    return main


# testing/python/language/test_tilelang_language_comm.py::test_comm_dynamic_core_python_api (line 136)
def test_comm_dynamic_core_python_api():
    @T.prim_func
    def main(A: T.Tensor((128, 128), "float32")):
        with T.Kernel(16, threads=128) as bx:
            A_shared = T.alloc_shared([128, 128], "float32", scope="shared.rsram")
            B_shared = T.alloc_shared([128, 128], "float32", scope="shared.rsram")
            T.copy(A, A_shared)

            T.comm.broadcast(A_shared, B_shared, bx, direction="h")
            T.comm.put(A_shared, B_shared, bx, (bx + 1) % 16)
    return main


# testing/python/language/test_tilelang_language_comm.py::test_comm_dynamic_core_lower (line 156)
def test_comm_dynamic_core_lower():
    @T.prim_func
    def main(A: T.Tensor((128, 128), "float32")):
        with T.Kernel(16, threads=128) as bx:
            A_shared = T.alloc_shared([128, 128], "float32", scope="shared.rsram")
            B_shared = T.alloc_shared([128, 128], "float32", scope="shared.rsram")
            T.copy(A, A_shared)

            T.comm.broadcast(A_shared, B_shared, bx, direction="all")
            T.comm.put(A_shared, B_shared, bx, (bx + 1) % 16)
    return main
