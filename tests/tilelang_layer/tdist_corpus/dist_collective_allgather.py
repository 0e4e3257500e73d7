"""The kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/test_dist_collective_allgather.py @ 592789f11476130f3627458aea2945e1f7949944
(its all_gather kernels, the rejected ones included), verbatim. Import lines:
``tilelang`` is the corpus harness's stand-in (its ``jit(target=...)`` factories with
``get_tir(..., world_size=W)``); ``T`` is TileLang's language after ``tm.enable``.
"""
import importlib.util
import pathlib
import sys

import tilelang.language as T

_h = sys.modules.get("tdist_corpus_harness")
if _h is None:  # loaded on its own
    _spec = importlib.util.spec_from_file_location(
        "tdist_corpus_harness", pathlib.Path(__file__).parent / "harness.py")
    _h = importlib.util.module_from_spec(_spec)
    sys.modules["tdist_corpus_harness"] = _h
    _spec.loader.exec_module(_h)
tilelang = _h.upstream_tilelang


def _dst_shape(world_size, axis):
    if axis is None:
        return world_size, 4, 8
    if axis == 0:
        return world_size * 4, 8
    return 4, world_size * 8


@tilelang.jit(target="sunmmio")
def allgather_kernel_factory(axis=None, signal_kind=None, group=None, world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((4, 8), T.bfloat16)
            dst = T.alloc_shared(_dst_shape(world_size, axis), T.bfloat16)
            signal = T.dist.signal(kind=signal_kind)
            T.dist.all_gather(src, dst, signal=signal, axis=axis, group=group)
            T.dist.wait_signal(signal, dst=dst)

    return main


@tilelang.jit(target="sunmmio")
def invalid_allgather_shape_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, 4, 7), T.bfloat16)
            signal = T.dist.signal()
            T.dist.all_gather(src, dst, signal=signal)

    return main


@tilelang.jit(target="sunmmio")
def mismatched_allgather_dtype_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, 4, 8), T.float32)
            signal = T.dist.signal()
            T.dist.all_gather(src, dst, signal=signal)

    return main


@tilelang.jit(target="sunmmio")
def overlapping_allgather_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            storage = T.alloc_shared((world_size * 4, 8), T.bfloat16)
            signal = T.dist.signal()
            T.dist.all_gather(storage[0:4, 0:8], storage, signal=signal, axis=0)

    return main


@tilelang.jit(target="sunmmio")
def allgather_scope_combinations_kernel_factory(world_size: int = 1):
    placement = T.placement.replicated()

    @T.prim_func
    def main(
        A: T.MeshTensor((32, 32), placement, T.bfloat16),  # type: ignore
        B: T.MeshTensor((world_size, 32, 32), placement, T.bfloat16),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            src = T.alloc_shared((32, 32), T.bfloat16)
            dst = T.alloc_shared((world_size, 32, 32), T.bfloat16)
            signal0 = T.dist.signal()
            signal1 = T.dist.signal()
            signal2 = T.dist.signal()
            signal3 = T.dist.signal()
            T.dist.all_gather(src, dst, signal=signal0)
            T.dist.wait_signal(signal0, dst=dst)
            T.dist.all_gather(src, B, signal=signal1)
            T.dist.wait_signal(signal1, dst=B)
            T.dist.all_gather(A, dst, signal=signal2)
            T.dist.wait_signal(signal2, dst=dst)
            T.dist.all_gather(A, B, signal=signal3)
            T.dist.wait_signal(signal3, dst=B)

    return main


@tilelang.jit(target="sunmmio")
def repeated_allgather_signal_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32, 32), T.bfloat16)
            dst = T.alloc_shared((world_size, 32, 32), T.bfloat16)
            signal = T.dist.signal()
            T.dist.all_gather(src, dst, signal=signal)
            T.dist.wait_signal(signal, dst=dst)
            T.dist.all_gather(src, dst, signal=signal)
            T.dist.wait_signal(signal, dst=dst)

    return main


@tilelang.jit(target="sunmmio")
def allgather_signal_group_member_kernel_factory(
    signal_kind=None,
    world_size: int = 1,
):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            signals = T.dist.signals(1, kind=signal_kind)
            T.dist.all_gather(src, dst, signal=signals[0])
            T.dist.wait_signal(signals[0], dst=dst)

    return main
