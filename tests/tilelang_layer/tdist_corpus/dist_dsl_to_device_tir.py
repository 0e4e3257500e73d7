"""The kernel of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/test_dsl_to_device_tir.py @ 1e58c224a9abb5ef04139995da803bf8806475a5
(its one kernel, a T.comm.broadcast without T.dist, which its test defines inside
itself: here in a function of the test's name that returns it instead of lowering it),
verbatim. Import lines: ``T`` is TileLang's language after ``tm.enable``.
"""
import tilelang.language as T


def test_simple_broadcast_dsl_lowers_to_sunmmio_device_kernel_tir():
    @T.prim_func
    def main(
        A: T.Tensor((32, 32), T.bfloat16),
        B: T.Tensor((32, 32), T.bfloat16),
    ):
        with T.Kernel():
            src = T.alloc_shared((32, 32), T.bfloat16, scope="shared.rsram")
            dst = T.alloc_shared((32, 32), T.bfloat16, scope="shared.rsram")

            T.copy(A, src)
            T.comm.broadcast(src, dst, (0, 0), direction="h")
            T.copy(dst, B)

    return main
