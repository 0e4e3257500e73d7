"""The kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/test_dist_pipeline_admission.py @ 6642f434d4f981ae9579635b7add8ceb4e8197ae
(its three kernels, the rejected ones included), verbatim. Import lines: ``tilelang``
is the corpus harness's stand-in (its ``jit(target=...)`` factories with
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
def pipeline_dist_kernel_factory(op="put", stages=2, nested="none", world_size: int = 1):
    @T.macro
    def operation(src, dst, gathered, exchange_dst, counts, deltas, signal, signals, completed, rank_id):
        if op == "put":
            T.dist.put(src, dst, (rank_id + 1) % world_size, signal=signal, submit=True)
        if op == "routed_put":
            T.dist.routed_put(src, dst, routes=[[0, (rank_id + 1) % world_size, 1]], signal=signal, submit=True)
        if op == "put_signal":
            T.dist.put_signal(signal, (rank_id + 1) % world_size, submit=True)
        if op == "barrier":
            T.dist.barrier(signal=signal)
        if op == "wait_signal":
            T.dist.wait_signal(signal)
        if op == "wait_all":
            T.dist.wait_all(signals)
        if op == "wait_delta":
            T.dist.wait_signal(signals[0], expected_delta=1)
        if op == "wait_signals":
            T.dist.wait_signals(signals, expected_deltas=deltas)
        if op == "completion":
            local_completion = T.dist.completion(signals, expected_deltas=deltas)
            T.dist.wait_all(local_completion)
        if op == "wait_any":
            index = T.dist.wait_any(completed)
            dst[index] = 0
        if op == "has_pending":
            while T.dist.has_pending(completed):
                T.dist.wait_any(completed)
        if op == "wait_completion":
            T.dist.wait_all(completed)
        if op == "all_gather":
            ready = T.dist.all_gather(src, gathered, signals=signals, submit=True)
            T.dist.wait_all(ready)
        if op == "all_to_allv":
            ready = T.dist.all_to_allv(gathered, exchange_dst, send_counts=counts, recv_counts=counts, signals=signals, submit=True)
            T.dist.wait_all(ready)

    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            gathered = T.alloc_shared((world_size, 32), T.bfloat16)
            exchange_dst = T.alloc_shared((world_size, 32), T.bfloat16)
            counts = T.alloc_shared((world_size,), T.int32)
            deltas = T.alloc_shared((world_size,), T.uint32)
            signal = T.dist.signal()
            signals = T.dist.signals(
                world_size,
                expect="manual" if op in ("wait_delta", "wait_signals", "completion") else None,
            )
            completion_signals = T.dist.signals(world_size, expect="manual")
            completed = T.dist.completion(completion_signals, expected_deltas=deltas)
            step = T.alloc_var(T.int32, init=0)
            for _ in T.Pipelined(4, num_stages=stages):
                if nested == "serial":
                    for _ in T.serial(2):
                        operation(src, dst, gathered, exchange_dst, counts, deltas, signal, signals, completed, rank_id)
                elif nested == "disabled_pipeline":
                    for _ in T.Pipelined(2, num_stages=0):
                        operation(src, dst, gathered, exchange_dst, counts, deltas, signal, signals, completed, rank_id)
                elif nested == "while":
                    while step < 2:
                        operation(src, dst, gathered, exchange_dst, counts, deltas, signal, signals, completed, rank_id)
                        step += 1
                else:
                    operation(src, dst, gathered, exchange_dst, counts, deltas, signal, signals, completed, rank_id)

    return main


@tilelang.jit(target="sunmmio")
def pipeline_queue_only_kernel_factory(op="wait", stages=2, world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            for _ in T.Pipelined(4, num_stages=stages):
                if op == "wait":
                    T.dist.wait()
                else:
                    T.dist.submit()

    return main


@tilelang.jit(target="sunmmio")
def local_pipeline_after_dist_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(
        output: T.MeshTensor((128,), T.placement.replicated(), T.bfloat16),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            stage = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            T.dist.put(src, dst, (rank_id + 1) % world_size, signal=signal, submit=True)
            T.dist.wait_signal(signal)
            for chunk in T.Pipelined(4, num_stages=2):
                T.copy(dst, stage)
                T.copy(stage, output[chunk * 32 : (chunk + 1) * 32])
            T.dist.wait()

    return main
