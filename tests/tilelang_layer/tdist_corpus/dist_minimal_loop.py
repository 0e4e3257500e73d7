"""The kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/test_dist_minimal_loop.py @ fad2e7ede6207e7be491f4e5e53ea266fc5bb71d
(its seven kernels, the rejected ones included; not the test's own non-dist kernel),
verbatim. Import lines: ``tilelang`` is the corpus harness's stand-in (its
``jit(target=...)`` factories with ``get_tir(..., world_size=W)``); ``T`` is TileLang's
language after ``tm.enable``.
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
def minimal_put_kernel_factory(M, N, world_size: int = 1):
    placement = T.placement.full_shard(0, 1)

    @T.prim_func
    def main(
        A: T.MeshTensor((M, N), placement, T.bfloat16),  # type: ignore
        B: T.MeshTensor((M, N), placement, T.bfloat16),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            local_M, local_N = A.local_shape
            src = T.alloc_shared((local_M, local_N), T.bfloat16)
            dst = T.alloc_shared((local_M, local_N), T.bfloat16)
            signal = T.dist.signal()

            T.copy(A, src)
            peer_rank = (rank_id + 1) % world_size
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal)
            T.dist.wait_signal(signal, dst=dst)
            T.dist.wait()
            T.copy(dst, B)

    return main


@tilelang.jit(target="sunmmio")
def too_many_signals_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal_0 = T.dist.signal()
            signal_1 = T.dist.signal()
            signal_2 = T.dist.signal()
            signal_3 = T.dist.signal()
            signal_4 = T.dist.signal()
            signal_5 = T.dist.signal()
            signal_6 = T.dist.signal()
            signal_7 = T.dist.signal()
            signal_8 = T.dist.signal()
            peer_rank = (rank_id + 1) % world_size
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_0)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_1)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_2)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_3)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_4)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_5)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_6)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_7)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_8)

    return main


@tilelang.jit(target="sunmmio")
def explicit_memory_signal_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal(kind=T.dist.SignalKind.SRAM_MEMORY)
            peer_rank = (rank_id + 1) % world_size
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal)
            T.dist.wait_signal(signal, dst=dst)

    return main


@tilelang.jit(target="sunmmio")
def reused_signal_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32, 32), T.bfloat16)
            dst = T.alloc_shared((32, 32), T.bfloat16)
            signal = T.dist.signal()
            peer_rank = (rank_id + 1) % world_size
            for _step in T.serial(2):
                T.dist.put(src, dst, dst_rank=peer_rank, signal=signal)
                T.dist.wait_signal(signal, dst=dst)
            T.dist.wait()

    return main


@tilelang.jit(target="sunmmio")
def invalid_payload_scope_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32, 32), T.bfloat16, scope="shared.asram")
            dst = T.alloc_shared((32, 32), T.bfloat16, scope="shared.asram")
            signal = T.dist.signal()
            peer_rank = (rank_id + 1) % T.dist.world_size()
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal)
            T.dist.wait_signal(signal, dst=dst)
            T.dist.wait()

    return main


@tilelang.jit(target="sunmmio")
def signal_in_loop_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            for _step in T.serial(2):
                T.dist.signal()

    return main


@tilelang.jit(target="sunmmio")
def two_puts_two_waits_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32, 32), T.bfloat16)
            dst = T.alloc_shared((32, 32), T.bfloat16)
            signal = T.dist.signal()
            peer_rank = (rank_id + 1) % world_size
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal)
            T.dist.wait_signal(signal, dst=dst)
            T.dist.wait_signal(signal, dst=dst)
            T.dist.wait()

    return main
