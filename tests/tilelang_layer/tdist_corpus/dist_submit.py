"""The kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/test_dist_submit.py @ 27830dcbcaff2df5bcf8c043f92afc9950f72dd1
(its ten kernels), verbatim. Import lines: ``tilelang`` is the corpus harness's
stand-in (its ``jit(target=...)`` factories with ``get_tir(..., world_size=W)``); ``T``
is TileLang's language after ``tm.enable``; ``tvm`` is tilelang's, whose ``tir`` 0.1.15 names
``tirx``.
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
tvm = _h.upstream_tvm


@tilelang.jit(target="sunmmio")
def explicit_batch_kernel_factory(world_size: int = 1):
    placement = T.placement.replicated()

    @T.prim_func
    def main(
        A: T.MeshTensor((64,), placement, T.float32),  # type: ignore
        B: T.MeshTensor((64,), placement, T.float32),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            signals = T.dist.signals(2)
            peer = (rank_id + 1) % world_size
            T.dist.put(A[0:32], B[0:32], peer, signal=signals[0])
            T.dist.put(A[32:64], B[32:64], peer, signal=signals[1])
            T.dist.submit()
            T.dist.wait_all(signals)

    return main


@tilelang.jit(target="sunmmio")
def submit_sugar_kernel_factory(world_size: int = 1):
    placement = T.placement.replicated()

    @T.prim_func
    def main(
        A: T.MeshTensor((32,), placement, T.float32),  # type: ignore
        B: T.MeshTensor((32,), placement, T.float32),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            signal = T.dist.signal()
            T.dist.put(
                A,
                B,
                (rank_id + 1) % world_size,
                signal=signal,
                submit=True,
            )
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def collective_submit_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((4, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, 4, 8), T.bfloat16)
            signal = T.dist.signal()
            T.dist.all_gather(src, dst, signal=signal, submit=True)
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def barrier_arrive_submit_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            signal = T.dist.signal()
            T.dist.barrier_arrive(signal, submit=True)
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def missing_submit_kernel_factory(world_size: int = 1):
    placement = T.placement.replicated()

    @T.prim_func
    def main(
        A: T.MeshTensor((32,), placement, T.float32),  # type: ignore
        B: T.MeshTensor((32,), placement, T.float32),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            signal = T.dist.signal()
            T.dist.put(A, B, (rank_id + 1) % world_size, signal=signal)

    return main


@tilelang.jit(target="sunmmio")
def nonempty_sugar_kernel_factory(world_size: int = 1):
    placement = T.placement.replicated()

    @T.prim_func
    def main(
        A: T.MeshTensor((32,), placement, T.float32),  # type: ignore
        B: T.MeshTensor((32,), placement, T.float32),  # type: ignore
        rank_id: T.dist.RankId,
    ):
        with T.Kernel():
            signals = T.dist.signals(2)
            peer = (rank_id + 1) % world_size
            T.dist.put(A, B, peer, signal=signals[0])
            T.dist.put(A, B, peer, signal=signals[1], submit=True)

    return main


@tilelang.jit(target="sunmmio")
def local_empty_submit_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            T.dist.put(src, dst, rank_id, signal=signal)
            T.dist.submit()

    return main


@tilelang.jit(target="sunmmio")
def cross_iteration_submit_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            for _ in T.serial(2):
                T.dist.submit()
                T.dist.wait_signal(signal)
                T.dist.put(src, dst, (rank_id + 1) % world_size, signal=signal)
            T.dist.submit()
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def cross_iteration_while_submit_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signals = T.dist.signals(1, expect="manual")
            iteration = T.alloc_var(T.int32, init=0)
            while iteration < 2:
                T.dist.submit()
                T.dist.wait_signal(signals[0], expected_delta=T.if_then_else(iteration == 0, 0, 1))
                T.dist.put(src, dst, (rank_id + 1) % world_size, signal=signals[0])
                iteration += 1
            T.dist.submit()
            T.dist.wait_signal(signals[0], expected_delta=1)

    return main


@tilelang.jit(target="sunmmio")
def early_return_kernel_factory(control_flow="if", world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId, stop: T.int32):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            step = T.alloc_var(T.int32, init=0)
            T.dist.put(src, dst, (rank_id + 1) % world_size, signal=signal, submit=True)
            if control_flow == "for":
                for _ in T.serial(2):
                    if stop != 0:
                        T.evaluate(tvm.tir.ret(1))
            elif control_flow == "while":
                while step < 2:
                    if stop != 0:
                        T.evaluate(tvm.tir.ret(1))
                    step += 1
            else:
                if stop != 0:
                    T.evaluate(tvm.tir.ret(1))
            T.dist.wait()

    return main
