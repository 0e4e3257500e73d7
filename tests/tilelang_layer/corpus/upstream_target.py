"""The current SUNMMIO/Tilelang's target test kernel, verbatim.

Source: SUNMMIO/Tilelang, ``testing/python/sunmmio/target/test_target.py`` at commit
749eff016c3d739f5bd2edb80bb636c554f60320. A test function that defines its kernel
inside itself is ported as that function's statements up to its kernel, returned (as
the corpus ports such tests); only import lines differ: ``tm.enable`` provides
SUNMMIO's names.
"""
# flake8: noqa
import tilelang.language as T


# testing/python/sunmmio/target/test_target.py::test_sunmmio_target_binding (line 31)
def test_sunmmio_target_binding():
    def example_tensor_annot(shape):
        MyTensor = T.MeshTensor(shape, T.MeshShardingPolicy(y=0, x=1), dtype="float32")

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
