"""The kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/test_dist_signal_planning.py @ 6642f434d4f981ae9579635b7add8ceb4e8197ae
(its eleven module-level kernels, the rejected ones included, and the test function
that defines a kernel inside itself), verbatim. Import lines: ``tilelang`` is the
corpus harness's stand-in (its ``jit(target=...)`` factories with
``get_tir(..., world_size=W)``); ``T`` is TileLang's language after ``tm.enable``;
``pytest`` is the harness's stand-in whose ``raises`` lets the error through, so that
the corpus test checks it.
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
pytest = _h.upstream_pytest


@tilelang.jit(target="sunmmio")
def mixed_scope_signal_kernel_factory(M, N, world_size: int = 1):
    placement = T.placement.full_shard(0, 1)

    @T.prim_func
    def main(
        B: T.MeshTensor((M, N), placement, T.bfloat16),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            local_M, local_N = B.local_shape
            src = T.alloc_shared((local_M, local_N), T.bfloat16)
            sram_dst = T.alloc_shared((local_M, local_N), T.bfloat16)
            signal = T.dist.signal()
            peer_rank = (rank_id + 1) % world_size
            T.dist.put(src, sram_dst, dst_rank=peer_rank, signal=signal)
            T.dist.put(src, B, dst_rank=peer_rank, signal=signal)
            T.dist.submit()
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def explicit_sram_signal_on_dram_kernel_factory(M, N, world_size: int = 1):
    placement = T.placement.full_shard(0, 1)

    @T.prim_func
    def main(
        B: T.MeshTensor((M, N), placement, T.bfloat16),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            local_M, local_N = B.local_shape
            src = T.alloc_shared((local_M, local_N), T.bfloat16)
            signal = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
            peer_rank = (rank_id + 1) % world_size
            T.dist.put(src, B, dst_rank=peer_rank, signal=signal)
            T.dist.submit()
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def too_many_explicit_sram_inc_flagregs_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal_0 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
            signal_1 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
            signal_2 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
            signal_3 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
            signal_4 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
            signal_5 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
            signal_6 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
            signal_7 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
            signal_8 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
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
            T.dist.submit()

    return main


@tilelang.jit(target="sunmmio")
def signal_list_kernel_factory(signal_kind=None, world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src0 = T.alloc_shared((32,), T.bfloat16)
            src1 = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((64,), T.bfloat16)
            signal_list = T.dist.signals(2, kind=signal_kind)
            peer_rank = (rank_id + 1) % world_size

            T.dist.put(src0, dst[0:32], dst_rank=peer_rank, signal=signal_list[0])
            T.dist.put(src1, dst[32:64], dst_rank=peer_rank, signal=signal_list[1])
            T.dist.submit()
            T.dist.wait_all(signal_list)
            T.dist.wait()

    return main


@tilelang.jit(target="sunmmio")
def mixed_scope_signal_list_kernel_factory(world_size: int = 1):
    placement = T.placement.replicated()

    @T.prim_func
    def main(
        B: T.MeshTensor((32,), placement, T.bfloat16),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal_list = T.dist.signals(2)
            peer_rank = (rank_id + 1) % world_size
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_list[0])
            T.dist.put(src, B, dst_rank=peer_rank, signal=signal_list[1])
            T.dist.submit()
            T.dist.wait()

    return main


@tilelang.jit(target="sunmmio")
def multiple_sender_one_signal_kernel_factory(signal_kind=None, world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal(kind=signal_kind)
            T.dist.put(src, dst, dst_rank=0, signal=signal)
            T.dist.submit()
            T.dist.wait_signal(signal)

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
            T.dist.submit()

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
            T.dist.submit()
            T.dist.wait_signal(signal)
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
def all_signal_kinds_kernel_factory(M, N, world_size: int = 1):
    placement = T.placement.full_shard(0, 1)

    @T.prim_func
    def main(
        B: T.MeshTensor((M, N), placement, T.bfloat16),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            local_M, local_N = B.local_shape
            src = T.alloc_shared((local_M, local_N), T.bfloat16)
            sram_dst = T.alloc_shared((local_M, local_N), T.bfloat16)
            sram_inc = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
            dram_inc = T.dist.signal(kind=T.dist.SignalKind.DRAM_FLAGREG_INC)
            sram_value = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_VALUE)
            dram_value = T.dist.signal(kind=T.dist.SignalKind.DRAM_FLAGREG_VALUE)
            sram_memory = T.dist.signal(kind=T.dist.SignalKind.SRAM_MEMORY)
            dram_memory = T.dist.signal(kind=T.dist.SignalKind.DRAM_MEMORY)
            peer_rank = (rank_id + 1) % world_size

            T.dist.put(src, sram_dst, dst_rank=peer_rank, signal=sram_inc)
            T.dist.put(src, B, dst_rank=peer_rank, signal=dram_inc)
            T.dist.put(src, sram_dst, dst_rank=peer_rank, signal=sram_value)
            T.dist.put(src, B, dst_rank=peer_rank, signal=dram_value)
            T.dist.put(src, sram_dst, dst_rank=peer_rank, signal=sram_memory)
            T.dist.put(src, B, dst_rank=peer_rank, signal=dram_memory)
            T.dist.submit()

    return main


@tilelang.jit(target="sunmmio")
def generation_cost_planning_kernel_factory(world_size: int = 1):
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
            if rank_id == 0:
                T.dist.put(src, dst, dst_rank=1, signal=signal_0)
                T.dist.put(src, dst, dst_rank=2, signal=signal_0)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_1)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_2)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_3)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_4)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_5)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_6)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_7)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=signal_8)
            T.dist.submit()

    return main


def test_signal_list_rejects_out_of_range_static_index():
    with pytest.raises(IndexError, match="index out of range"):

        @tilelang.jit(target="sunmmio")
        def invalid_kernel_factory(world_size: int = 1):
            @T.prim_func
            def main(rank_id: T.dist.RankId):
                with T.Kernel():
                    signal_list = T.dist.signals(2)
                    T.evaluate(signal_list[2])

            return main

        invalid_kernel_factory.get_tir(world_size=4)
