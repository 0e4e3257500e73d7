"""The kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/test_dist_row_routing.py @ 6642f434d4f981ae9579635b7add8ceb4e8197ae
(its 22 module-level kernels, the rejected ones included; not the kernel a test
function defines inside itself), verbatim. They are written for a 4x4 mesh (rows 0-3,
core 5). Import lines: ``tilelang`` is the corpus harness's stand-in (its
``jit(target=...)`` factories with ``get_tir(..., world_size=W)``); ``T`` is
TileLang's language after ``tm.enable``.
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
def row_shift_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            current_row = core_id // T.mesh_ncols()
            target_row = (current_row + 1) % T.mesh_nrows()
            T.dist.put(
                src,
                dst,
                dst_rank=(rank_id + 1) % world_size,
                dst_row=target_row,
                signal=signal,
            )
            T.dist.submit()
            T.dist.wait_signal(signal)
            T.dist.wait()

    return main


@tilelang.jit(target="sunmmio")
def explicit_peer_row_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            current_row = core_id // T.mesh_ncols()
            T.dist.put(
                src,
                dst,
                dst_rank=(rank_id + 1) % world_size,
                dst_row=current_row,
                signal=signal,
            )
            T.dist.submit()
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def dynamic_row_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            route = T.alloc_shared((1,), T.int32)
            signal = T.dist.signal()
            T.dist.put(
                src,
                dst,
                dst_rank=(rank_id + 1) % world_size,
                dst_row=route[0],
                signal=signal,
            )
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def fixed_destination_row_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((1, 32), T.bfloat16)
            dst = T.alloc_shared((4, 32), T.bfloat16)
            signal = T.dist.signal()
            current_row = core_id // T.mesh_ncols()
            T.dist.put(
                src,
                dst[current_row : current_row + 1, :],
                dst_rank=(rank_id + 1) % world_size,
                dst_row=0,
                signal=signal,
            )
            T.dist.submit()
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def invalid_static_row_kernel_factory(dst_row: int, world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            T.dist.put(
                src,
                dst,
                dst_rank=(rank_id + 1) % world_size,
                dst_row=dst_row,
                signal=signal,
            )
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def cross_row_loop_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            current_row = core_id // T.mesh_ncols()
            for _step in T.serial(2):
                T.dist.put(
                    src,
                    dst,
                    dst_rank=(rank_id + 1) % world_size,
                    dst_row=(current_row + 1) % T.mesh_nrows(),
                    signal=signal,
                )
                T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def cross_row_while_kernel_factory(explicit_routes=False, world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signals = T.dist.signals(1, expect="manual")
            step = T.alloc_var(T.int32, init=0)
            while step < 2:
                if explicit_routes:
                    T.dist.routed_put(
                        src,
                        dst,
                        routes=[[0, (rank_id + 1) % world_size, 1]],
                        signal=signals[0],
                        submit=True,
                    )
                else:
                    T.dist.put(
                        src,
                        dst,
                        dst_rank=(rank_id + 1) % world_size,
                        dst_row=(core_id // T.mesh_ncols() + 1) % T.mesh_nrows(),
                        signal=signals[0],
                        submit=True,
                    )
                T.dist.wait_signal(signals[0], expected_delta=1)
                step += 1

    return main


@tilelang.jit(target="sunmmio")
def public_routed_put_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            T.dist.routed_put(
                src,
                dst,
                routes=[[1, (rank_id + 1) % world_size, 2]],
                signal=signal,
            )
            T.dist.submit()
            T.dist.wait_signal(signal)
            T.dist.wait()

    return main


@tilelang.jit(target="sunmmio")
def dynamic_offset_put_kernel_factory(cross_row=False, world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((world_size * 32,), T.bfloat16)
            dst = T.alloc_shared((world_size * 32,), T.bfloat16)
            signal = T.dist.signal()
            offset = rank_id * 32
            current_row = core_id // T.mesh_ncols()
            T.dist.put(
                src[offset : offset + 32],
                dst[offset : offset + 32],
                dst_rank=(rank_id + 1) % world_size,
                dst_row=(current_row + 1) % T.mesh_nrows() if cross_row else current_row,
                signal=signal,
                submit=True,
            )
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def rank_guarded_routed_put_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            if rank_id == 0:
                T.dist.routed_put(
                    src,
                    dst,
                    routes=[[1, 1, 2]],
                    signal=signal,
                )
                T.dist.submit()
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def rank_guarded_peer_put_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            if rank_id == 0:
                T.dist.put(src, dst, dst_rank=1, signal=signal)
                T.dist.submit()
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def column_guarded_routed_put_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            if core_id % T.mesh_ncols() == 1:
                T.dist.routed_put(
                    src,
                    dst,
                    routes=[[1, (rank_id + 1) % world_size, 2]],
                    signal=signal,
                )
                T.dist.submit()
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def cid_guarded_put_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            if core_id == 5:
                T.dist.put(
                    src,
                    dst,
                    dst_rank=(rank_id + 1) % world_size,
                    signal=signal,
                )
                T.dist.submit()

    return main


@tilelang.jit(target="sunmmio")
def row_guarded_routed_put_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            if core_id // T.mesh_ncols() == 1:
                T.dist.routed_put(
                    src,
                    dst,
                    routes=[[1, (rank_id + 1) % world_size, 2]],
                    signal=signal,
                )
                T.dist.submit()

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
def dram_to_rsram_cross_row_kernel_factory(world_size: int = 1):
    placement = T.placement.full_shard(0, 1)

    @T.prim_func
    def main(
        A: T.MeshTensor((32, 32), placement, T.bfloat16),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            local_M, local_N = A.local_shape
            dst = T.alloc_shared((local_M, local_N), T.bfloat16)
            signal = T.dist.signal()
            T.dist.routed_put(
                A,
                dst,
                routes=[[0, (rank_id + 1) % world_size, 1]],
                signal=signal,
            )
            T.dist.submit()
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def explicit_source_rank_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            T.dist.routed_put(
                src,
                dst,
                routes=[[0, 2, 1]],
                signal=signal,
                src_rank=1,
            )
            T.dist.submit()
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def local_peer_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            T.dist.put(src, dst, dst_rank=rank_id, signal=signal)
            T.dist.submit()
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def local_cross_row_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            current_row = core_id // T.mesh_ncols()
            T.dist.put(
                src,
                dst,
                dst_rank=rank_id,
                dst_row=(current_row + 1) % T.mesh_nrows(),
                signal=signal,
            )
            T.dist.submit()
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def local_dram_cross_row_kernel_factory(world_size: int = 1):
    placement = T.placement.full_shard(0, 1)

    @T.prim_func
    def main(
        A: T.MeshTensor((32, 32), placement, T.bfloat16),  # type: ignore
        B: T.MeshTensor((32, 32), placement, T.bfloat16),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel() as core_id:
            signal = T.dist.signal()
            current_row = core_id // T.mesh_ncols()
            T.dist.put(
                A,
                B,
                dst_rank=rank_id,
                dst_row=(current_row + 1) % T.mesh_nrows(),
                signal=signal,
            )
            T.dist.submit()
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def multiple_routed_put_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((64,), T.bfloat16)
            dst = T.alloc_shared((128,), T.bfloat16)
            signals = T.dist.signals(2)
            peer_rank = (rank_id + 1) % world_size

            T.dist.routed_put(
                src[8:40],
                dst[16:48],
                routes=[[0, peer_rank, 1]],
                signal=signals[0],
            )
            T.dist.routed_put(
                src[32:64],
                dst[80:112],
                routes=[[2, peer_rank, 3]],
                signal=signals[1],
            )
            T.dist.submit()
            T.dist.wait_all(signals)
            T.dist.wait()

    return main


@tilelang.jit(target="sunmmio")
def invalid_route_kernel_factory(routes, world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            T.dist.routed_put(src, dst, routes=routes, signal=signal)

    return main
