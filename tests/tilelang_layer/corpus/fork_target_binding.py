"""The older fork's target-binding test kernel, verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/utils/test_target.py`` at commit 52fed911f7a4ae50d979e0d584066452c9826aaf (branch dev/codegen, the fork's newest). Each kernel factory below is
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


# testing/python/utils/test_target.py::test_sunmmio_target_binding (line 23)
def test_sunmmio_target_binding():
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    print("Device mesh config:", device_mesh_config)

    def example_tensor_annot(shape):
        MyTensor = T.MeshTensor(shape, T.MeshShardingPolicy(y=0, x=1), device_mesh_config, dtype="float32")

        @T.prim_func
        def kernel(A: MyTensor):
            pass

        return kernel

    func = example_tensor_annot(
        (
            1024,
            1024,
        )
    )
    return func
