"""The kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang)
testing/python/sunmmio/inter_rank/test_dist_expect_control_flow.py @ 27830dcbcaff2df5bcf8c043f92afc9950f72dd1
(its nine kernels, the rejected ones included), verbatim. Import lines: ``tilelang`` is
the corpus harness's stand-in (its ``jit(target=...)`` factories with
``get_tir(..., world_size=W)``); ``T`` is TileLang's language after ``tm.enable``;
``tvm`` is tilelang's, whose ``tir`` 0.1.15 names ``tirx``.
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
def branch_exchange_kernel_factory(
    sender_rank=0,
    send_count=1,
    resource="single",
    world_size: int = 1,
):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            signals = T.dist.signals(2)
            if rank_id == 0:
                if sender_rank == 0:
                    T.dist.put(src, dst, 1, signal=signal if resource == "single" else signals[1], submit=True)
                    if send_count == 2:
                        T.dist.put(src, dst, 1, signal=signal if resource == "single" else signals[1], submit=True)
                else:
                    if resource == "all":
                        T.dist.wait_all(signals)
                    else:
                        T.dist.wait_signal(signal if resource == "single" else signals[1])
            else:
                if sender_rank == 1:
                    T.dist.put(src, dst, 0, signal=signal if resource == "single" else signals[1], submit=True)
                    if send_count == 2:
                        T.dist.put(src, dst, 0, signal=signal if resource == "single" else signals[1], submit=True)
                else:
                    if resource == "all":
                        T.dist.wait_all(signals)
                    else:
                        T.dist.wait_signal(signal if resource == "single" else signals[1])

    return main


@tilelang.jit(target="sunmmio")
def independent_phase_kernel_factory(group_members=False, world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            data_ready = T.dist.signal()
            round_barrier = T.dist.signal()
            signals = T.dist.signals(2)
            for step in T.serial(2):
                T.dist.put(src, dst, (rank_id + 1) % world_size, signal=signals[0] if group_members else data_ready, submit=True)
                if step == 0:
                    T.dist.wait_signal(signals[0] if group_members else data_ready)
                else:
                    T.dist.wait_signal(signals[0] if group_members else data_ready)
                    # Use local data and retain the compute-only loop in the else branch.
                    for i in T.serial(32):
                        src[i] = dst[i]
                    if group_members:
                        T.dist.put(src, dst, (rank_id + 1) % world_size, signal=signals[1], submit=True)
                        T.dist.wait_signal(signals[1])
                    else:
                        T.dist.barrier(signal=round_barrier)

    return main


@tilelang.jit(target="sunmmio")
def unsafe_phase_kernel_factory(
    pattern="reuse",
    send_in_else=True,
    world_size: int = 1,
):
    @T.prim_func
    def main(rank_id: T.dist.RankId, choice: T.int32):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            signals = T.dist.signals(2)
            if pattern == "runtime_condition":
                condition = choice != 0
            else:
                condition = (core_id % T.mesh_ncols() == 0) != send_in_else
            if condition:
                if not send_in_else:
                    T.dist.wait_signal(signal)
                    T.dist.put(src, dst, (rank_id + 1) % world_size, signal=signal, submit=True)
                else:
                    T.copy(src, dst)
            else:
                if send_in_else:
                    if pattern == "completion":
                        completed = T.dist.completion(signals)
                        T.dist.wait_all(completed)
                    elif pattern == "nested":
                        if rank_id == 0:
                            T.dist.wait_signal(signal)
                    elif pattern == "early_return":
                        if rank_id == 0:
                            T.evaluate(tvm.tir.ret(1))
                    elif pattern == "group_all":
                        T.dist.wait_all(signals)
                    elif pattern == "group_member":
                        T.dist.wait_signal(signals[1])
                    elif pattern != "runtime_condition":
                        if pattern == "reuse":
                            T.dist.put(src, dst, (rank_id + 1) % world_size, signal=signal, submit=True)
                        T.dist.wait_signal(signal)
                    T.dist.put(
                        src,
                        dst,
                        (rank_id + 1) % world_size,
                        signal=signals[1] if pattern in ("group_all", "group_member", "completion") else signal,
                        submit=True,
                    )
                    if pattern == "reuse":
                        T.dist.wait_signal(signal)
                else:
                    T.copy(src, dst)

    return main


@tilelang.jit(target="sunmmio")
def sender_local_condition_kernel_factory(
    structure="if",
    op="put",
    manual=False,
    world_size: int = 1,
):
    @T.macro
    def send(src, dst, signal, signals, rank_id):
        if op == "put_signal":
            T.dist.put_signal(signal, (rank_id + 1) % world_size)
        else:
            T.dist.put(src, dst, (rank_id + 1) % world_size, signal=signals[0] if manual else signal)

    @T.prim_func
    def main(rank_id: T.dist.RankId, enabled: T.int32, recv_count: T.int32):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            signals = T.dist.signals(1, expect="manual" if manual else None)
            if structure == "if":
                if enabled > 0:
                    send(src, dst, signal, signals, rank_id)
            elif structure == "if_else":
                if enabled > 0:
                    send(src, dst, signal, signals, rank_id)
                else:
                    T.copy(src, dst)
            elif structure == "nested":
                if core_id % T.mesh_ncols() == 0:  # noqa: SIM102 - Exercise nested device branches.
                    if enabled > 0:
                        send(src, dst, signal, signals, rank_id)
            else:
                if core_id % T.mesh_ncols() == 0:
                    if enabled > 0:
                        send(src, dst, signal, signals, rank_id)
                    else:
                        T.copy(src, dst)
            T.dist.submit()
            if manual:
                T.dist.wait_signal(signals[0], expected_delta=recv_count)
            else:
                T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def conditional_two_phase_signal_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            if core_id % T.mesh_ncols() == 0:
                T.dist.put(
                    src,
                    dst,
                    (rank_id + 1) % world_size,
                    signal=signal,
                    submit=True,
                )
                T.dist.wait_signal(signal)
                T.dist.put(
                    src,
                    dst,
                    (rank_id + 1) % world_size,
                    signal=signal,
                    submit=True,
                )
                T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def conditional_while_put_kernel_factory(iterations: int, world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            step = T.alloc_var(T.int32, init=0)
            if core_id % T.mesh_ncols() == 0:
                while step < iterations:
                    T.dist.put(
                        src,
                        dst,
                        (rank_id + 1) % world_size,
                        signal=signal,
                        submit=True,
                    )
                    step += 1
            T.dist.wait_signal(signal)

    return main


@tilelang.jit(target="sunmmio")
def nested_conditional_wait_kernel_factory(world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId):
        with T.Kernel() as core_id:
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal()
            if core_id % T.mesh_ncols() == 0:
                T.dist.put(src, dst, (rank_id + 1) % world_size, signal=signal)
                T.dist.submit()
                if rank_id == 0:
                    T.dist.wait_signal(signal)
                T.dist.put(src, dst, (rank_id + 1) % world_size, signal=signal)
                T.dist.submit()

    return main


@tilelang.jit(target="sunmmio")
def loop_expect_kernel_factory(
    bound="rank",
    form="for",
    expect_mode=None,
    group_member=False,
    signal_only=False,
    world_size: int = 1,
):
    @T.prim_func
    def main(rank_id: T.dist.RankId, rounds: T.int32, recv_count: T.int32):
        with T.Kernel():
            src = T.alloc_shared((32,), T.bfloat16)
            dst = T.alloc_shared((32,), T.bfloat16)
            signal = T.dist.signal(expect=expect_mode)
            signals = T.dist.signals(2, expect=expect_mode)
            local_count = T.alloc_var(T.int32, init=rounds)
            step = T.alloc_var(T.int32, init=0)
            if bound == "rank":
                limit = rank_id + 1
            elif bound == "param":
                limit = rounds
            elif bound == "buffer":
                limit = local_count
            else:
                limit = 2

            if form == "while":
                while step < limit:
                    T.dist.put(src, dst, (rank_id + 1) % world_size, signal=signals[0] if group_member else signal, submit=True)
                    step += 1
            elif form == "nested":
                for outer in T.serial(limit):
                    for _ in T.serial(outer + 1):
                        T.dist.put(src, dst, (rank_id + 1) % world_size, signal=signals[0] if group_member else signal, submit=True)
            else:
                for _ in T.serial(limit):
                    if form == "exit":  # noqa: SIM102 - Keep static selection separate from the device condition.
                        if rank_id == 0:
                            T.evaluate(tvm.tir.ret(1))
                    if signal_only:
                        T.dist.put_signal(signal, (rank_id + 1) % world_size, submit=True)
                    else:
                        T.dist.put(src, dst, (rank_id + 1) % world_size, signal=signals[0] if group_member else signal, submit=True)

            if expect_mode == "manual":
                T.dist.wait_signal(signals[0] if group_member else signal, expected_delta=recv_count)
            else:
                T.dist.wait_signal(signals[0] if group_member else signal)

    return main


@tilelang.jit(target="sunmmio")
def collective_loop_kernel_factory(variable_counts=False, world_size: int = 1):
    @T.prim_func
    def main(rank_id: T.dist.RankId, rounds: T.int32):
        with T.Kernel():
            src = T.alloc_shared((world_size, 8), T.bfloat16)
            dst = T.alloc_shared((world_size, world_size, 8), T.bfloat16)
            variable_dst = T.alloc_shared((world_size, 8), T.bfloat16)
            send_counts = T.alloc_shared((world_size,), T.int32)
            recv_counts = T.alloc_shared((world_size,), T.int32)
            signals = T.dist.signals(world_size)
            for _ in T.serial(rounds):
                if variable_counts:
                    completion = T.dist.all_to_allv(
                        src,
                        variable_dst,
                        send_counts=send_counts,
                        recv_counts=recv_counts,
                        signals=signals,
                        submit=True,
                    )
                else:
                    completion = T.dist.all_gather(src, dst, signals=signals, submit=True)
                T.dist.wait_all(completion)

    return main
