"""The kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/test_dist_manual_expect.py @ 27830dcbcaff2df5bcf8c043f92afc9950f72dd1
(its six module-level kernels; the four defined inside its test functions are
not ported), verbatim. Import lines:
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
def routed_expect_mode_kernel_factory(
    expect_mode="manual",
    group_member=False,
    dst_row=0,
    signal_kind=None,
    repeat=False,
    world_size: int = 1,
):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            if group_member:
                signals = T.dist.signals(2, kind=signal_kind, expect=expect_mode)
            else:
                signal = T.dist.signal(kind=signal_kind, expect=expect_mode)
            T.dist.routed_put(
                src,
                dst,
                routes=[[0, (rank_id + 1) % world_size, dst_row]],
                signal=signals[1] if group_member else signal,
                submit=True,
            )
            if repeat:
                T.dist.routed_put(
                    src,
                    dst,
                    routes=[[0, (rank_id + 1) % world_size, dst_row]],
                    signal=signals[1] if group_member else signal,
                    submit=True,
                )
            if expect_mode == "manual":
                if core_id // T.mesh_ncols() == dst_row:
                    T.dist.wait_signal(
                        signals[1] if group_member else signal,
                        expected_delta=2 if repeat else 1,
                    )
            else:
                T.dist.wait_signal(signals[1] if group_member else signal)

    return main


@tilelang.jit(target="sunmmio")
def manual_sender_signals_kernel_factory(
    expect_mode="manual",
    cross_row=False,
    world_size: int = 1,
):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            send_counts = T.alloc_shared((world_size,), T.int32)
            expected_deltas = T.alloc_shared((world_size,), T.uint32)
            sender_signals = T.dist.signals(
                world_size,
                kind=T.dist.SignalKind.SRAM_FLAGREG_VALUE,
                expect=expect_mode,
            )
            peer_rank = (rank_id + 1) % world_size
            current_row = core_id // T.mesh_ncols()
            dst_row = (current_row + 1) % T.mesh_nrows() if cross_row else current_row

            if send_counts[peer_rank] > 0:
                T.dist.put(
                    src,
                    dst,
                    dst_rank=peer_rank,
                    dst_row=dst_row,
                    signal=sender_signals[rank_id],
                )
            T.dist.submit()
            T.dist.wait_signals(
                sender_signals,
                expected_deltas=expected_deltas,
            )
            T.dist.wait()

    return main


@tilelang.jit(target="sunmmio")
def manual_signal_wave_kernel_factory(
    total_signals=20,
    wave_size=8,
    world_size: int = 1,
):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            expected_deltas = T.alloc_shared((total_signals,), T.uint32)
            signals = T.dist.signals(
                total_signals,
                kind=T.dist.SignalKind.SRAM_FLAGREG_VALUE,
                expect="manual",
            )
            peer_rank = (rank_id + 1) % world_size

            for wave in T.serial(T.ceildiv(total_signals, wave_size)):
                for lane in T.serial(wave_size):
                    index = wave * wave_size + lane
                    if index < total_signals:
                        T.dist.put(
                            src,
                            dst,
                            dst_rank=peer_rank,
                            signal=signals[index],
                        )
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
                T.dist.wait_signals(
                    signals,
                    expected_deltas=expected_deltas,
                )
                T.dist.wait()

    return main


@tilelang.jit(target="sunmmio")
def manual_destination_loop_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            expected_deltas = T.alloc_shared((world_size,), T.uint32)
            sender_signals = T.dist.signals(
                world_size,
                kind=T.dist.SignalKind.SRAM_FLAGREG_VALUE,
                expect="manual",
            )

            for peer_rank in T.serial(world_size):
                if peer_rank != rank_id:
                    T.dist.put(
                        src,
                        dst,
                        dst_rank=peer_rank,
                        signal=sender_signals[rank_id],
                    )
            T.dist.submit()
            for source_rank in T.serial(world_size):
                expected_deltas[source_rank] = T.if_then_else(
                    source_rank != rank_id,
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
def manual_dynamic_member_wait_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            expected_deltas = T.alloc_shared((7,), T.uint32)
            signals = T.dist.signals(
                7,
                kind=T.dist.SignalKind.SRAM_FLAGREG_VALUE,
                expect="manual",
            )
            peer_rank = (rank_id + 1) % world_size

            for expert in T.serial(7):
                T.dist.put(
                    src,
                    dst,
                    dst_rank=peer_rank,
                    signal=signals[expert],
                )
                T.dist.submit()
                T.dist.wait_signal(
                    signals[expert],
                    expected_delta=expected_deltas[expert],
                )

    return main


@tilelang.jit(target="sunmmio")
def protocol_dynamic_member_kernel_factory(
    expect_mode=None,
    world_size: int = 1,
):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            send_counts = T.alloc_shared((world_size,), T.int32)
            recv_counts = T.alloc_shared((world_size,), T.int32)
            signals = T.dist.signals(
                2,
                kind=T.dist.SignalKind.SRAM_FLAGREG_INC,
                expect=expect_mode,
            )

            for expert in T.serial(2):
                T.dist.all_to_allv(
                    src,
                    dst,
                    send_counts=send_counts,
                    recv_counts=recv_counts,
                    signal=signals[expert],
                    submit=True,
                )
                T.dist.wait_signal(signals[expert])

    return main
