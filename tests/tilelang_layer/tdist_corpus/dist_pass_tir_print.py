"""The kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/test_dist_pass_tir_print.py @ 0f76f2d1d89865ebc5beaf382ed393bae749c742
(its twelve kernels, whose tests print the TIR around the dist passes), verbatim.
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
            T.dist.wait_signal(signal, dst=dst)

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
            T.dist.wait_all(signals, dst=dst)
            T.dist.wait()

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
            T.dist.wait_signal(signal, dst=B)
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
            T.dist.wait_all(signals, dst=dst)

    return main


@tilelang.jit(target="sunmmio")
def collective_all_gather_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            signal = T.dist.signal()
            T.dist.all_gather(src, dst, signal=signal)
            T.dist.wait_signal(signal, dst=dst)

    return main


@tilelang.jit(target="sunmmio")
def collective_all_to_all_rank_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            signal = T.dist.signal()
            T.dist.all_to_all(src, dst, signal=signal)
            T.dist.wait_signal(signal, dst=dst)

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
            )
            T.dist.wait_signal(signal, dst=dst)

    return main


@tilelang.jit(target="sunmmio")
def collective_all_reduce_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((4, 8), T.bfloat16)
            dst = T.alloc_shared((4, 8), T.bfloat16)
            T.dist.all_reduce(src, dst, "sum")

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
            )
            while T.dist.has_pending(completion):
                source = T.dist.wait_any(completion)
                T.evaluate(dst[source, 0, 0])

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
            )
            T.dist.wait_signal(signal, dst=dst)

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
