"""The kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/test_dist_completion.py @ 27830dcbcaff2df5bcf8c043f92afc9950f72dd1
(its five kernels), verbatim. Import lines:
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
def manual_completion_kernel_factory(signal_kind, world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            expected_deltas = T.alloc_shared((2,), T.uint32)
            signals = T.dist.signals(
                2,
                kind=signal_kind,
                expect="manual",
            )
            completion = T.dist.completion(
                signals,
                expected_deltas=expected_deltas,
            )
            while T.dist.has_pending(completion):
                member = T.dist.wait_any(completion)
                expected_deltas[member] = 0

    return main


@tilelang.jit(target="sunmmio")
def auto_completion_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signals = T.dist.signals(2)
            T.dist.put(
                src,
                dst,
                dst_rank=(rank_id + 1) % world_size,
                signal=signals[0],
                submit=True,
            )
            completion = T.dist.completion(signals)
            T.dist.wait_all(completion)

    return main


@tilelang.jit(target="sunmmio")
def auto_completion_after_loop_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signals = T.dist.signals(2)
            for iteration in T.serial(2):
                if iteration == 0:
                    T.dist.put(
                        src,
                        dst,
                        (rank_id + 1) % world_size,
                        signal=signals[0],
                    )
                    T.dist.submit()
            completion = T.dist.completion(signals)
            T.dist.wait_all(completion)

    return main


@tilelang.jit(target="sunmmio")
def repeated_manual_completion_kernel_factory(drain_first=False, observe_first=False, world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            expected_deltas = T.alloc_shared((2,), T.uint32)
            signals = T.dist.signals(2, kind=T.dist.SignalKind.SRAM_FLAGREG_VALUE, expect="manual")
            first = T.dist.completion(signals, expected_deltas=expected_deltas)
            if observe_first:  # noqa: SIM102 - Keep static selection separate from the device condition.
                if T.dist.has_pending(first):
                    T.dist.wait_any(first)
            if drain_first:
                T.dist.wait_all(first)
            second = T.dist.completion(signals, expected_deltas=expected_deltas)
            T.dist.wait_all(second)

    return main


@tilelang.jit(target="sunmmio")
def loop_manual_completion_kernel_factory(drain_each=False, observe_each=False, world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            expected_deltas = T.alloc_shared((2,), T.uint32)
            signals = T.dist.signals(2, kind=T.dist.SignalKind.SRAM_FLAGREG_VALUE, expect="manual")
            for _ in T.serial(2):
                completion = T.dist.completion(signals, expected_deltas=expected_deltas)
                if observe_each:  # noqa: SIM102 - Keep static selection separate from the device condition.
                    if T.dist.has_pending(completion):
                        T.dist.wait_any(completion)
                if drain_each:
                    T.dist.wait_all(completion)

    return main
