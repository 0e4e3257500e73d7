"""The kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/test_dist_routing_memory_signal.py @ 27830dcbcaff2df5bcf8c043f92afc9950f72dd1
(its one kernel and the helper it calls, the rejected variants included), verbatim.
Import lines: ``tilelang`` is the corpus harness's stand-in (its ``jit(target=...)``
factories with ``get_tir(..., world_size=W)``); ``T`` is TileLang's language after
``tm.enable``.
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


def _enqueue_peer_signals(src, dst, peer, count):
    # Emit independent declarations during DSL construction, without a device loop or SignalList.
    for _ in range(count):
        signal = T.dist.signal()
        T.evaluate(T.dist.put(src, dst, peer, signal=signal))


@tilelang.jit(target="sunmmio")
def memory_route_kernel_factory(
    kind=T.dist.SignalKind.SRAM_MEMORY,
    dram=False,
    route="implicit",
    peer_signal_count=0,
    multi_sender=False,
    world_size: int = 1,
):
    @T.prim_func
    def main(
        output: T.MeshTensor((32,), T.placement.replicated(), T.bfloat16),  # type: ignore
        rank_id: T.dist.RankId,
        enabled: T.int32,
        recv_count: T.int32,
    ):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            active = T.alloc_shared((1,), T.int32)
            active[0] = enabled
            peer = 0 if multi_sender else (rank_id + 1) % world_size
            _enqueue_peer_signals(src, output if dram else dst, peer, peer_signal_count)
            if route in ("member", "active"):
                signals = T.dist.signals(2, kind=kind, expect="manual" if route == "active" else None)
            else:
                signal = T.dist.signal(kind=kind)
            target_row = (core_id // T.mesh_ncols() + 1) % T.mesh_nrows()
            if route == "explicit":
                T.dist.routed_put(src, output if dram else dst, routes=[[0, peer, 1]], signal=signal)
            elif route == "active":
                if active[0] > 0:
                    T.dist.put(src, output if dram else dst, peer, dst_row=target_row, signal=signals[1])
            else:
                T.dist.put(src, output if dram else dst, peer, dst_row=target_row, signal=signals[1] if route == "member" else signal)
            T.dist.submit()
            if route == "active":
                T.dist.wait_signal(signals[1], expected_delta=recv_count)
            else:
                T.dist.wait_signal(signals[1] if route == "member" else signal)

    return main
