"""The older fork's T.MeshTensor test kernel, verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/language/test_tilelang_language_sunmmio_mesh_tensor.py`` at commit 52fed911f7a4ae50d979e0d584066452c9826aaf (branch dev/codegen, the fork's newest). Each kernel factory below is
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


# testing/python/language/test_tilelang_language_sunmmio_mesh_tensor.py::test_mesh_tensor_in_kernel (line 352)
def test_mesh_tensor_in_kernel():
    """MeshTensor with layout flows through kernel definition correctly."""
    policy = MeshShardingPolicy(y=0, x=1, replicate=MeshReplicationType.NONE)
    device_mesh = (2, 2)
    M, N, K = 128, 128, 128

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    A_tensor = T.MeshTensor((M, K), policy, device_mesh, "float16", layout=A_layout)
    B_tensor = T.MeshTensor((K, N), policy, device_mesh, "float16", layout=B_layout)
    C_tensor = T.MeshTensor((M, N), policy, device_mesh, "float32", layout=C_layout)

    @T.prim_func
    def kernel(A: A_tensor, B: B_tensor, C: C_tensor):
        sharded_M, sharded_K = A.shape
        _, sharded_N = B.shape
    return kernel
