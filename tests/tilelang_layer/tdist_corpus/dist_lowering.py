"""The kernel of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/test_lowering.py @ 6642f434d4f981ae9579635b7add8ceb4e8197ae
(its one kernel, a T.comm.broadcast without T.dist, which its test defines inside
itself: here in a function of the test's name that returns it instead of lowering it),
verbatim. Import lines: ``T`` is TileLang's language after ``tm.enable``.
"""
import tilelang.language as T


def test_lowering_captures_passes_and_extracts_device_kernel():
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
