"""The kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/show_dist_tir.py @ 6642f434d4f981ae9579635b7add8ceb4e8197ae
(its twenty positive examples, one per feature of T.dist), verbatim. Import lines:
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
def rsram_cross_row_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            current_row = core_id // T.mesh_ncols()
            dst_row = (current_row + 1) % T.mesh_nrows()
            T.dist.put(
                src,
                dst,
                dst_rank=(rank_id + 1) % world_size,
                dst_row=dst_row,
                signal=signal,
            )
            T.dist.submit()
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def signal_list_wait_all_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src0 = T.alloc_shared((32,), T.bfloat16)
            src1 = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((64,), T.bfloat16)
            signals = T.dist.signals(2)
            peer_rank = (rank_id + 1) % world_size

            T.dist.put(src0, dst[0:32], dst_rank=peer_rank, signal=signals[0])
            T.dist.put(src1, dst[32:64], dst_rank=peer_rank, signal=signals[1])
            T.dist.submit()
            # wait_signals
            T.dist.wait_all(signals)
            # T.dist.wait()

    return main


@tilelang.jit(target="sunmmio")
def dram_cross_row_kernel_factory(world_size: int = 1):
    placement = T.placement.full_shard(0, 1)

    @T.prim_func
    def main(
        A: T.MeshTensor((32, 32), placement, T.bfloat16),  # type: ignore
        B: T.MeshTensor((32, 32), placement, T.bfloat16),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            signal = T.dist.signal()
            T.dist.routed_put(
                A,
                B,
                routes=[[0, (rank_id + 1) % world_size, 1]],
                signal=signal,
            )
            T.dist.submit()
            T.dist.wait_signal(signal)
            T.dist.wait()

    return main


@tilelang.jit(target="sunmmio")
def local_rank_routes_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signals = T.dist.signals(2)
            current_row = core_id // T.mesh_ncols()

            T.dist.put(src, dst, dst_rank=rank_id, signal=signals[0])
            T.dist.put(
                src,
                dst,
                dst_rank=rank_id,
                dst_row=(current_row + 1) % T.mesh_nrows(),
                signal=signals[1],
            )
            T.dist.wait_all(signals)

    return main


@tilelang.jit(target="sunmmio")
def signal_kind_generation_kernel_factory(world_size: int = 1):
    placement = T.dist.placement.replicated()

    @T.prim_func
    def main(
        B: T.MeshTensor((32,), T.placement.replicated(), T.bfloat16, rank_placement=placement),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            sram_inc = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
            sram_value = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_VALUE)
            sram_memory = T.dist.signal(kind=T.dist.SignalKind.SRAM_MEMORY)
            dram_inc = T.dist.signal(kind=T.dist.SignalKind.DRAM_FLAGREG_INC)
            dram_value = T.dist.signal(kind=T.dist.SignalKind.DRAM_FLAGREG_VALUE)
            dram_memory = T.dist.signal(kind=T.dist.SignalKind.DRAM_MEMORY)
            peer_rank = (rank_id + 1) % world_size

            T.dist.put(src, dst, dst_rank=peer_rank, signal=sram_inc)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=sram_value)
            T.dist.put(src, dst, dst_rank=peer_rank, signal=sram_memory)
            T.dist.put(src, B, dst_rank=peer_rank, signal=dram_inc)
            T.dist.put(src, B, dst_rank=peer_rank, signal=dram_value)
            T.dist.put(src, B, dst_rank=peer_rank, signal=dram_memory)
            T.dist.submit()
            T.dist.wait_signal(sram_inc)
            T.dist.wait_signal(sram_value)
            T.dist.wait_signal(sram_memory)
            T.dist.wait_signal(dram_inc)
            T.dist.wait_signal(dram_value)
            T.dist.wait_signal(dram_memory)

    return main


@tilelang.jit(target="sunmmio")
def p2p_scope_matrix_kernel_factory(world_size: int = 1):
    rank_placement = T.dist.placement.replicated()
    placement = T.placement.replicated()

    @T.prim_func
    def main(
        A: T.MeshTensor((64,), placement, T.bfloat16, rank_placement=rank_placement),  # type: ignore
        B: T.MeshTensor((64,), placement, T.bfloat16, rank_placement=rank_placement),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            shared_src = T.alloc_shared((32,), T.bfloat16)
            shared_dst0 = T.alloc_shared((32,), T.bfloat16)
            shared_dst1 = T.alloc_shared((32,), T.bfloat16)
            sram_signals = T.dist.signals(2)
            dram_signals = T.dist.signals(2)
            peer_rank = (rank_id + 1) % world_size

            T.dist.put(shared_src, shared_dst0, dst_rank=peer_rank, signal=sram_signals[0])
            T.dist.put(A[0:32], shared_dst1, dst_rank=peer_rank, signal=sram_signals[1])
            T.dist.put(shared_src, B[0:32], dst_rank=peer_rank, signal=dram_signals[0])
            T.dist.put(A[32:64], B[32:64], dst_rank=peer_rank, signal=dram_signals[1])
            T.dist.submit()
            T.dist.wait_all(sram_signals)
            T.dist.wait_all(dram_signals)

    return main


@tilelang.jit(target="sunmmio")
def rank_guarded_routed_put_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            T.dist.routed_put(
                src,
                dst,
                routes=[[0, (rank_id + 1) % world_size, 1]],
                signal=signal,
                src_rank=1,
            )
            T.dist.submit()
            T.dist.wait_signal(signal)
            T.dist.wait()

    return main


@tilelang.jit(target="sunmmio")
def signal_only_sync_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            notify = T.dist.signal()
            arrival = T.dist.signal()
            T.dist.put_signal(notify, (rank_id + 1) % world_size, submit=True)
            T.dist.wait_signal(notify)
            T.dist.barrier_arrive(arrival, submit=True)
            T.dist.wait_signal(arrival)

    return main


@tilelang.jit(target="sunmmio")
def manual_sender_wait_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            send_counts = T.alloc_shared((world_size,), T.int32)
            recv_counts = T.alloc_shared((world_size,), T.int32)
            expected_deltas = T.alloc_shared((world_size,), T.uint32)
            sender_signals = T.dist.signals(
                world_size,
                kind=T.dist.SignalKind.SRAM_FLAGREG_VALUE,
                expect="manual",
            )

            for peer_rank in T.serial(world_size):
                if T.And(peer_rank != rank_id, send_counts[peer_rank] > 0):
                    T.dist.put(
                        src,
                        dst,
                        dst_rank=peer_rank,
                        signal=sender_signals[rank_id],
                    )
            T.dist.submit()
            for source_rank in T.serial(world_size):
                expected_deltas[source_rank] = T.if_then_else(
                    T.And(source_rank != rank_id, recv_counts[source_rank] > 0),
                    1,
                    0,
                )
            T.dist.wait_signals(
                sender_signals,
                expected_deltas=expected_deltas,
            )
            T.dist.wait()

    return main


@tilelang.jit(target="sunmmio")
def manual_signal_wave_kernel_factory(world_size: int = 1):
    total_signals = 20
    wave_size = 8

    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            expected_deltas = T.alloc_shared((total_signals,), T.uint32)
            signals = T.dist.signals(
                total_signals,
                kind=T.dist.SignalKind.SRAM_FLAGREG_VALUE,
                expect=T.dist.ExpectMode.MANUAL,
            )
            peer_rank = (rank_id + 1) % world_size

            for wave in T.serial(T.ceildiv(total_signals, wave_size)):
                for lane in T.serial(wave_size):
                    index = wave * wave_size + lane
                    if index < total_signals:
                        T.dist.put(src, dst, dst_rank=peer_rank, signal=signals[index])
                T.dist.submit()
                for member in T.serial(total_signals):
                    expected_deltas[member] = T.if_then_else(
                        T.And(
                            wave * wave_size <= member,
                            member < T.min((wave + 1) * wave_size, total_signals),
                        ),
                        1,
                        0,
                    )
                T.dist.wait_signals(signals, expected_deltas=expected_deltas)
                T.dist.wait()

    return main


@tilelang.jit(target="sunmmio")
def collective_all_gather_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((4, 8), T.bfloat16)
            dst_new_axis = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            dst_axis0 = T.alloc_shared((world_size * 4, 8), T.bfloat16)
            dst_last_axis = T.alloc_shared((4, world_size * 8), T.bfloat16)
            signals = T.dist.signals(3)
            T.dist.all_gather(src, dst_new_axis, signal=signals[0])
            T.dist.all_gather(src, dst_axis0, signal=signals[1], axis=0)
            T.dist.all_gather(src, dst_last_axis, signal=signals[2], axis=-1)
            T.dist.submit()
            T.dist.wait_all(signals)

    return main


@tilelang.jit(target="sunmmio")
def collective_all_gather_wait_any_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            signals = T.dist.signals(
                world_size,
                kind=T.dist.SignalKind.SRAM_FLAGREG_VALUE,
            )
            completion = T.dist.all_gather(
                src,
                dst,
                signals=signals,
                submit=True,
            )
            while T.dist.has_pending(completion):
                source_rank = T.dist.wait_any(completion)
                dst[source_rank, 0, 0] = dst[source_rank, 0, 0]

    return main


@tilelang.jit(target="sunmmio")
def collective_all_to_all_rank_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            signal = T.dist.signal()
            T.dist.all_to_all(src, dst, signal=signal, submit=True)
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def collective_all_to_all_row_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            shape = (world_size, T.mesh_nrows(), 4, 8)
            src = T.alloc_shared(shape, T.bfloat16)
            dst = T.alloc_shared(shape, T.bfloat16)
            signal = T.dist.signal()
            T.dist.all_to_all(
                src,
                dst,
                signal=signal,
                domain=T.dist.CollectiveDomain.ROW,
                submit=True,
            )
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def collective_all_reduce_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((4, 8), T.bfloat16)
            dst = T.alloc_shared((4, 8), T.bfloat16)
            signal = T.dist.signal()
            T.dist.all_reduce(src, dst, "sum", signal=signal)

    return main


@tilelang.jit(target="sunmmio")
def collective_all_to_allv_rank_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            send_counts = T.alloc_shared((world_size,), T.int32)
            recv_counts = T.alloc_shared((world_size,), T.int32)
            signals = T.dist.signals(world_size)
            completion = T.dist.all_to_allv(
                src,
                dst,
                send_counts=send_counts,
                recv_counts=recv_counts,
                signals=signals,
                submit=True,
            )
            while T.dist.has_pending(completion):
                source = T.dist.wait_any(completion)
                T.evaluate(dst[source, 0, 0])

    return main


@tilelang.jit(target="sunmmio")
def collective_all_to_allv_wait_all_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            send_counts = T.alloc_shared((world_size,), T.int32)
            recv_counts = T.alloc_shared((world_size,), T.int32)
            signals = T.dist.signals(world_size)
            completion = T.dist.all_to_allv(
                src,
                dst,
                send_counts=send_counts,
                recv_counts=recv_counts,
                signals=signals,
                submit=True,
            )
            T.dist.wait_all(completion)

    return main


@tilelang.jit(target="sunmmio")
def collective_all_to_allv_single_signal_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            send_counts = T.alloc_shared((world_size,), T.int32)
            recv_counts = T.alloc_shared((world_size,), T.int32)
            signal = T.dist.signal()
            T.dist.all_to_allv(
                src,
                dst,
                send_counts=send_counts,
                recv_counts=recv_counts,
                signal=signal,
                submit=True,
            )
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def collective_all_to_allv_row_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            rows = T.mesh_nrows()
            src = T.alloc_shared((world_size, rows, 4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, rows, 4, 8), T.bfloat16)
            send_counts = T.alloc_shared((world_size, rows), T.int32)
            recv_counts = T.alloc_shared((world_size, rows), T.int32)
            signals = T.dist.signals(world_size * rows)
            completion = T.dist.all_to_allv(
                src,
                dst,
                send_counts=send_counts,
                recv_counts=recv_counts,
                signals=signals,
                domain=T.dist.CollectiveDomain.ROW,
                submit=True,
            )
            while T.dist.has_pending(completion):
                source = T.dist.wait_any(completion)
                T.evaluate(dst[source // rows, source % rows, 0, 0])

    return main


@tilelang.jit(target="sunmmio")
def dist_barrier_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            T.dist.barrier()

    return main
