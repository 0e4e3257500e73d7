"""The kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/test_dist_collective_alltoall.py @ 592789f11476130f3627458aea2945e1f7949944
(its all_to_all kernels and their shape helpers, the rejected ones included), verbatim.
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


def _is_row_domain(domain):
    return domain == "row" or domain == T.dist.CollectiveDomain.ROW


def _alltoall_shape(world_size, domain):
    if _is_row_domain(domain):
        return world_size, T.mesh_nrows(), 4, 8
    return world_size, 4, 8


@tilelang.jit(target="sunmmio")
def alltoall_kernel_factory(
    domain=T.dist.CollectiveDomain.RANK,
    signal_kind=None,
    group=None,
    world_size: int = 1,
):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            shape = _alltoall_shape(world_size, domain)
            src = T.alloc_shared(shape, T.bfloat16)
            dst = T.alloc_shared(shape, T.bfloat16)
            signal = T.dist.signal(kind=signal_kind)
            T.dist.all_to_all(src, dst, signal=signal, domain=domain, group=group)
            T.dist.wait_signal(signal, dst=dst)

    return main


@tilelang.jit(target="sunmmio")
def invalid_alltoall_rank_extent_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((world_size + 1, 4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size + 1, 4, 8), T.bfloat16)
            signal = T.dist.signal()
            T.dist.all_to_all(src, dst, signal=signal)

    return main


@tilelang.jit(target="sunmmio")
def invalid_alltoall_row_extent_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((world_size, 3, 4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, 3, 4, 8), T.bfloat16)
            signal = T.dist.signal()
            T.dist.all_to_all(src, dst, signal=signal, domain="row")

    return main


@tilelang.jit(target="sunmmio")
def mismatched_alltoall_shape_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, 4, 7), T.bfloat16)
            signal = T.dist.signal()
            T.dist.all_to_all(src, dst, signal=signal)

    return main


@tilelang.jit(target="sunmmio")
def mismatched_alltoall_dtype_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, 4, 8), T.float32)
            signal = T.dist.signal()
            T.dist.all_to_all(src, dst, signal=signal)

    return main


@tilelang.jit(target="sunmmio")
def overlapping_alltoall_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            storage = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            signal = T.dist.signal()
            T.dist.all_to_all(storage, storage, signal=signal)

    return main


@tilelang.jit(target="sunmmio")
def alltoall_scope_combinations_kernel_factory(world_size: int = 1):
    placement = T.placement.replicated()

    @T.prim_func
    def main(
        A: T.MeshTensor((world_size, 32, 32), placement, T.bfloat16),  # type: ignore
        B: T.MeshTensor((world_size, 32, 32), placement, T.bfloat16),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            src = T.alloc_shared((world_size, 32, 32), T.bfloat16)
            dst = T.alloc_shared((world_size, 32, 32), T.bfloat16)
            signal0 = T.dist.signal()
            signal1 = T.dist.signal()
            signal2 = T.dist.signal()
            signal3 = T.dist.signal()
            T.dist.all_to_all(src, dst, signal=signal0)
            T.dist.wait_signal(signal0, dst=dst)
            T.dist.all_to_all(src, B, signal=signal1)
            T.dist.wait_signal(signal1, dst=B)
            T.dist.all_to_all(A, dst, signal=signal2)
            T.dist.wait_signal(signal2, dst=dst)
            T.dist.all_to_all(A, B, signal=signal3)
            T.dist.wait_signal(signal3, dst=B)

    return main
