"""The kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/test_dist_collective_allreduce.py @ 27830dcbcaff2df5bcf8c043f92afc9950f72dd1
(its all_reduce kernels, the rejected ones included), verbatim. Import lines:
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


@tilelang.jit(target="sunmmio")
def allreduce_kernel_factory(reduce_type="sum", group=None, signal_kind=None, expect_mode=None, compute_loops=False, world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((4, 8), T.bfloat16)
            dst = T.alloc_shared((4, 8), T.bfloat16)
            signal = T.dist.signal(kind=signal_kind, expect=expect_mode)
            if compute_loops:
                for i in T.serial(4):
                    src[i, 0] = 0
            T.dist.all_reduce(src, dst, reduce_type, signal=signal, group=group)
            if compute_loops:
                for i in T.serial(4):
                    dst[i, 0] += 1

    return main


@tilelang.jit(target="sunmmio")
def repeated_allreduce_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((4, 8), T.float32)
            dst = T.alloc_shared((4, 8), T.float32)
            sum_signal = T.dist.signal()
            max_signal = T.dist.signal()
            T.dist.all_reduce(src, dst, "sum", signal=sum_signal)
            T.dist.all_reduce(src, dst, "max", signal=max_signal)

    return main


@tilelang.jit(target="sunmmio")
def loop_allreduce_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((4, 8), T.bfloat16)
            dst = T.alloc_shared((4, 8), T.bfloat16)
            signal = T.dist.signal()
            for _ in T.serial(3):
                T.dist.all_reduce(src, dst, signal=signal)
                src[0, 0] = dst[0, 0]

    return main


@tilelang.jit(target="sunmmio")
def allreduce_loop_boundary_kernel_factory(
    loop_kind="serial",
    iterations=2,
    distinct_members=False,
    world_size: int = 1,
):
    @T.prim_func
    def main(rank_id: T.dist.RankId, rounds: T.int32):
        with T.Kernel() as core_id:
            src = T.alloc_shared((4, 8), T.bfloat16)
            dst = T.alloc_shared((4, 8), T.bfloat16)
            signals = T.dist.signals(2, kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
            step = T.alloc_var(T.int32, init=0)
            if loop_kind == "serial":
                for i in T.serial(iterations):
                    T.dist.all_reduce(src, dst, signal=signals[i] if distinct_members else signals[0])
            elif loop_kind == "unroll":
                for i in T.unroll(iterations):
                    T.dist.all_reduce(src, dst, signal=signals[i] if distinct_members else signals[0])
            elif loop_kind == "dynamic":
                for _ in T.serial(rounds):
                    T.dist.all_reduce(src, dst, signal=signals[0])
            elif loop_kind == "nested":
                for _ in T.serial(iterations):
                    if core_id % T.mesh_ncols() == 0:
                        while step < iterations:
                            T.dist.all_reduce(src, dst, signal=signals[0])
                            step += 1
            else:
                while step < iterations:
                    T.dist.all_reduce(src, dst, signal=signals[0])
                    step += 1

    return main


@tilelang.jit(target="sunmmio")
def mismatched_allreduce_shape_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((4, 8), T.bfloat16)
            dst = T.alloc_shared((4, 7), T.bfloat16)
            signal = T.dist.signal()
            T.dist.all_reduce(src, dst, signal=signal)

    return main


@tilelang.jit(target="sunmmio")
def mismatched_allreduce_dtype_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((4, 8), T.bfloat16)
            dst = T.alloc_shared((4, 8), T.float32)
            signal = T.dist.signal()
            T.dist.all_reduce(src, dst, signal=signal)

    return main


@tilelang.jit(target="sunmmio")
def overlapping_allreduce_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            data = T.alloc_shared((4, 8), T.bfloat16)
            signal = T.dist.signal()
            T.dist.all_reduce(data, data, signal=signal)

    return main


@tilelang.jit(target="sunmmio")
def global_allreduce_source_kernel_factory(world_size: int = 1):
    placement = T.placement.replicated()

    @T.prim_func
    def main(
        src: T.MeshTensor((4, 8), placement, T.bfloat16),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            dst = T.alloc_shared((4, 8), T.bfloat16)
            signal = T.dist.signal()
            T.dist.all_reduce(src, dst, signal=signal)

    return main
