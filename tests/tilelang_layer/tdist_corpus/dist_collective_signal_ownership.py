"""The kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/test_dist_collective_signal_ownership.py @ 6642f434d4f981ae9579635b7add8ceb4e8197ae
(its one kernel, in every variant its tests build), verbatim. Import lines:
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
def collective_signal_kernel_factory(
    op="all_gather",
    scenario="repeat",
    extra="put",
    extra_first=False,
    member=False,
    kind=None,
    world_size: int = 1,
):
    @T.macro
    def launch(src, dst, gathered, send_counts, recv_counts, signal):
        if op == "all_gather":
            T.dist.all_gather(src, gathered, signal=signal, submit=True)
        elif op == "all_to_all":
            T.dist.all_to_all(src, dst, signal=signal, submit=True)
        elif op == "all_reduce":
            T.dist.all_reduce(src, dst, signal=signal)
        else:
            T.dist.all_to_allv(src, dst, send_counts=send_counts, recv_counts=recv_counts, signal=signal, submit=True)

    @T.macro
    def other_write(src, dst, rank_id, signal):
        if extra == "put":
            T.dist.put(src, dst, (rank_id + 1) % world_size, signal=signal, submit=True)
        elif extra == "routed_put":
            T.dist.routed_put(src, dst, routes=[[0, (rank_id + 1) % world_size, 0]], signal=signal, submit=True)
        elif extra == "rank_routed_put":
            T.dist.routed_put(src, dst, src_rank=0, routes=[[0, (rank_id + 1) % world_size, 0]], signal=signal, submit=True)
        elif extra == "put_signal":
            T.dist.put_signal(signal, (rank_id + 1) % world_size, submit=True)
        elif extra == "barrier_arrive":
            T.dist.barrier_arrive(signal, submit=True)
        else:
            T.dist.barrier(signal=signal)

    @T.prim_func
    def main(rank_id: T.dist.RankId, rounds: T.int32):
        with T.Kernel():
            src = T.alloc_shared((world_size, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, 8), T.bfloat16)
            gathered = T.alloc_shared((world_size, world_size, 8), T.bfloat16)
            send_counts = T.alloc_shared((world_size,), T.int32)
            recv_counts = T.alloc_shared((world_size,), T.int32)
            signal = T.dist.signal(kind=kind)
            second = T.dist.signal(kind=kind)
            signals = T.dist.signals(world_size, kind=kind)
            iteration = T.alloc_var(T.int32, init=0)
            if scenario == "serial":
                for _ in T.serial(2):
                    launch(src, dst, gathered, send_counts, recv_counts, signals[0] if member else signal)
                    T.dist.wait_signal(signals[0] if member else signal)
            elif scenario == "unroll":
                for _ in T.unroll(2):
                    launch(src, dst, gathered, send_counts, recv_counts, signals[0] if member else signal)
                    T.dist.wait_signal(signals[0] if member else signal)
            elif scenario == "while":
                while iteration < 2:
                    launch(src, dst, gathered, send_counts, recv_counts, signals[0] if member else signal)
                    T.dist.wait_signal(signals[0] if member else signal)
                    iteration += 1
            elif scenario == "dynamic_for":
                for _ in T.serial(rounds):
                    launch(src, dst, gathered, send_counts, recv_counts, signal)
                    T.dist.wait_signal(signal)
            elif scenario == "unknown_member":
                launch(src, dst, gathered, send_counts, recv_counts, signals[rank_id])
                T.dist.wait_signal(signals[rank_id])
            else:
                if scenario == "mixed" and extra_first:
                    other_write(src, dst, rank_id, signals[0] if member else signal)
                if scenario == "group_overlap" and extra_first:
                    first = T.dist.all_gather(src, gathered, signals=signals, submit=True)
                    T.dist.wait_all(first)
                launch(src, dst, gathered, send_counts, recv_counts, signals[0] if member else signal)
                T.dist.wait_signal(signals[0] if member else signal)
                if scenario == "repeat":
                    launch(src, dst, gathered, send_counts, recv_counts, signals[0] if member else signal)
                elif scenario == "independent":
                    launch(src, dst, gathered, send_counts, recv_counts, signals[1] if member else second)
                    T.dist.wait_signal(signals[1] if member else second)
                elif scenario == "mixed" and not extra_first:
                    other_write(src, dst, rank_id, signals[0] if member else signal)
                elif scenario == "group_overlap" and not extra_first:
                    last = T.dist.all_gather(src, gathered, signals=signals, submit=True)
                    T.dist.wait_all(last)
                T.dist.wait_signal(signals[0] if member else signal)

    return main
