"""What the chip leaves undefined is an error: the upstream compiler's refusals (static,
from LowerDist), deadlocks (reported at once, naming every blocked rank, core, signal,
expected and current value), races (refused where the code shows them, else by the
checked run) and misuse the run finds (ValueErrors naming the op)."""

import time

import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T

from meshtensor.tilelang import compile_mesh_kernel
from meshtensor.tilelang import tilelang_mesh as tm
from meshtensor.tilelang.runtime.dist_rank import DistDeadlockError, DistRaceError
from meshtensor.tilelang.transform.lower_dist import lower_dist

N = 4


def kernel(mode, world=4, mesh=(2, 2)):
    """A kernel for ``world`` ranks on ``mesh`` doing what ``mode`` names."""
    tm.enable(mesh=mesh)
    C = mesh[0] * mesh[1]
    W = world
    with tm.world(world):
        @T.prim_func
        def k(A: T.Tensor((C, N), "float32"), B: T.Tensor((C, N), "float32"),
              rank_id: T.dist.RankId):
            with T.Kernel(C, threads=1) as bx:
                src = T.alloc_shared((N,), "float32")
                dst = T.alloc_shared((N,), "float32")
                s = T.dist.signal()
                nxt = (rank_id + 1) % W
                if mode == "cross_row_in_loop":
                    for i in T.serial(2):
                        T.dist.put(src, dst, nxt, dst_row=1 - bx // 2, signal=s, submit=True)
                if mode == "cross_row_row_condition":
                    if bx // 2 == 0:
                        T.dist.put(src, dst, nxt, dst_row=1, signal=s, submit=True)
                if mode == "routed_in_loop":
                    for i in T.serial(2):
                        T.dist.routed_put(src, dst, [[0, 1, 1]], signal=s, submit=True)
                if mode == "duplicate_route":
                    T.dist.routed_put(src, dst, [[0, 1, 1], [0, 1, 1]], signal=s, submit=True)
                if mode == "buffer_condition":
                    if src[0] > 0:
                        T.dist.put(src, dst, nxt, signal=s, submit=True)
                    T.dist.wait_signal(s)
                if mode == "nonuniform_loop":
                    for i in T.serial(rank_id):
                        T.dist.put(src, dst, nxt, signal=s, submit=True)
                if mode == "loop_inside_condition":
                    if rank_id == 0:
                        for i in T.serial(2):
                            T.dist.put(src, dst, 1, signal=s, submit=True)
                if mode == "over_capacity":
                    t0 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
                    t1 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
                    t2 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
                    t3 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
                    t4 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
                    t5 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
                    t6 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
                    t7 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
                    t8 = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_INC)
                    T.dist.put(src, dst, nxt, signal=t0, submit=True)
                    T.dist.put(src, dst, nxt, signal=t1, submit=True)
                    T.dist.put(src, dst, nxt, signal=t2, submit=True)
                    T.dist.put(src, dst, nxt, signal=t3, submit=True)
                    T.dist.put(src, dst, nxt, signal=t4, submit=True)
                    T.dist.put(src, dst, nxt, signal=t5, submit=True)
                    T.dist.put(src, dst, nxt, signal=t6, submit=True)
                    T.dist.put(src, dst, nxt, signal=t7, submit=True)
                    T.dist.put(src, dst, nxt, signal=t8, submit=True)
                if mode == "signal_in_branch":
                    if rank_id == 0:
                        t = T.dist.signal()
                        T.dist.put(src, dst, nxt, signal=t, submit=True)
                if mode == "wsram_payload":
                    w = T.alloc_shared((N,), "float32", scope="shared.wsram")
                    T.dist.put(w, dst, nxt, signal=s, submit=True)
                if mode in ("row_condition_peer_put", "col_condition_peer_put"):
                    if (bx // 2 if mode.startswith("row") else bx % 2) == 0:
                        T.dist.put(src, dst, nxt, signal=s, submit=True)
                if mode == "all_reduce_in_loop":
                    for i in T.serial(1):
                        T.dist.all_reduce(src, dst, "sum", signal=s)
                if mode == "all_reduce_in_loop_own_signal":  # (its signal is made here)
                    for i in T.serial(2):
                        T.dist.all_reduce(src, dst, "sum")
                if mode in ("gather_twice", "gather_in_loop", "gather_and_put",
                            "gather_member_loop", "gather_rank_member"):
                    gat = T.alloc_shared((W, N), "float32")
                    ml = T.dist.signals(2)
                    if mode == "gather_twice":
                        T.dist.all_gather(src, gat, signal=s, submit=True)
                        T.dist.all_gather(src, gat, signal=s, submit=True)
                    if mode == "gather_in_loop":
                        for i in T.serial(2):
                            T.dist.all_gather(src, gat, signal=s, submit=True)
                    if mode == "gather_and_put":
                        T.dist.all_gather(src, gat, signal=s, submit=True)
                        T.dist.put(src, dst, nxt, signal=s, submit=True)
                    if mode == "gather_member_loop":  # a member per iteration: accepted
                        for i in T.serial(2):
                            T.dist.all_gather(src, gat, signal=ml[i], submit=True)
                            T.dist.wait_signal(ml[i])
                    if mode == "gather_rank_member":
                        T.dist.all_gather(src, gat, signal=ml[rank_id % 2], submit=True)
                if mode == "scope_mismatch":
                    t = T.dist.signal(kind=T.dist.SignalKind.DRAM_FLAGREG_INC)
                    T.dist.put(src, dst, nxt, signal=t, submit=True)
                if mode == "mixed_scopes":
                    T.dist.put(src, dst, nxt, signal=s, submit=True)
                    T.dist.put(src, B[bx, 0:N], nxt, signal=s, submit=True)
                if mode == "manual_plain_wait":
                    sl = T.dist.signals(1, expect="manual")
                    T.dist.put(src, dst, nxt, signal=sl[0], submit=True)
                    T.dist.wait_signal(sl[0])
                if mode == "pipelined":
                    for i in T.Pipelined(2, num_stages=2):
                        T.dist.put(src, dst, nxt, signal=s, submit=True)
                if mode == "pipelined_wait_any":  # a value op, not a statement
                    cl = T.dist.signals(2, expect="manual")
                    deltas = T.alloc_shared((2,), "uint32")
                    done = T.dist.completion(cl, expected_deltas=deltas)
                    for i in T.Pipelined(2, num_stages=2):
                        got = T.dist.wait_any(done)
                        dst[got] = 0
                if mode == "write_source_before_wait":
                    T.dist.put(src, dst, nxt, signal=s, submit=True)
                    T.copy(A[bx, 0:N], src)
                    T.dist.wait_signal(s)
                if mode == "read_destination_before_wait":
                    T.dist.put(src, dst, nxt, signal=s, submit=True)
                    T.copy(dst, B[bx, 0:N])
                    T.dist.wait_signal(s)
                if mode == "barrier":
                    T.dist.barrier()
                if mode == "hoist":
                    if rank_id == 0:
                        T.dist.put(src, dst, 1, signal=s, submit=True)
                    T.dist.wait_signal(s)
                if mode == "deadlock":
                    ml = T.dist.signals(1, expect="manual")
                    T.dist.wait_signal(ml[0], expected_delta=1)
                    T.dist.put(src, dst, nxt, signal=ml[0], submit=True)
                if mode == "half_barrier":
                    if rank_id == 0:
                        T.dist.barrier()
                if mode == "read_in_loop":
                    T.dist.put(src, dst, nxt, signal=s, submit=True)
                    for j in T.serial(N):  # a loop: not a tile op the compile-time check reads
                        B[bx, j] = dst[j]
                    T.dist.wait_signal(s)
                if mode == "write_source_in_loop":
                    T.copy(A[bx, 0:N], src)
                    T.dist.put(src, dst, nxt, signal=s, submit=True)
                    for j in T.serial(N):
                        src[j] = T.float32(0)
                    T.dist.wait_signal(s)
                if mode == "write_destination":
                    T.dist.put(src, dst, nxt, signal=s, submit=True)
                    for j in T.serial(N):
                        dst[j] = T.float32(0)
                    T.dist.wait_signal(s)
                    T.copy(dst, B[bx, 0:N])
                if mode == "unsubmitted":
                    T.dist.put(src, dst, nxt, signal=s)
                if mode == "nonempty_queue":
                    T.dist.put(src, dst, nxt, signal=s)
                    T.dist.put(src, dst, nxt, signal=s, submit=True)
                if mode == "rank_out_of_range":
                    T.dist.put(src, dst, rank_id + W, signal=s, submit=True)
                if mode == "value_two_senders":
                    t = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_VALUE)
                    T.dist.put(src, dst, 0, signal=t, submit=True)
                if mode in ("not_drained", "wait_any_order"):
                    sl = T.dist.signals(W)
                    gat = T.alloc_shared((W, N), "float32")
                    c = T.dist.all_gather(src, gat, signals=sl, submit=True)
                    if mode == "not_drained":
                        T.dist.wait_any(c)
                        c2 = T.dist.all_gather(src, gat, signals=sl, submit=True)
                        T.dist.wait_all(c2)
                    else:
                        kk = T.alloc_var("int32")
                        kk = 0
                        while T.dist.has_pending(c):
                            i = T.dist.wait_any(c)
                            B[bx, kk] = T.float32(i)
                            kk = kk + 1
    return k


@pytest.mark.parametrize("mode, text", [
    ("cross_row_in_loop", "Cross-row T.dist.put inside loops is not supported"),
    ("cross_row_row_condition", "Cross-row T.dist.put is guarded by a row-dependent condition"),
    ("routed_in_loop", "T.dist.routed_put inside loops is not supported"),
    ("duplicate_route", "duplicate static route at entry 1"),
    ("buffer_condition", "Cannot infer automatic T.dist expectation from a sender-local "
                         "condition"),
    ("nonuniform_loop", "expect='auto' cannot prove matching send/receive loop iterations"),
    ("loop_inside_condition", "Rank/column-conditioned T.dist peer operations inside loops"),
    ("over_capacity", "sram_flagreg_inc signal capacity exceeded: needs 1 at base 8, maximum "
                      "is 8 per scope"),
    ("scope_mismatch", "explicitly requests dram_flagreg_inc but its destination scope is "
                       "shared.rsram"),
    ("mixed_scopes", "inconsistent destination scopes: sram and dram"),
    ("manual_plain_wait", "uses expect='manual' with wait_signal/wait_all but provides no "
                          "expected delta"),
    ("pipelined", r"not supported inside T.Pipelined\(num_stages > 0\)"),
    ("pipelined_wait_any", r"T.dist.wait_any: T.dist operations are not supported inside "
                           r"T.Pipelined\(num_stages > 0\)"),
    # the upstream compiler's own rules (decision 88)
    ("signal_in_branch", "signals must be declared outside loops and conditionals"),
    ("wsram_payload", "source 'w' must use shared.rsram or global/DRAM, got 'shared.wsram'"),
    ("row_condition_peer_put", "differs between the rows of a column"),
    ("all_reduce_in_loop", "all_reduce inside For/While"),
    ("all_reduce_in_loop_own_signal", "all_reduce inside For/While"),
    ("gather_twice", r"dedicated to one collective .*T.dist.all_gather \(dist op #\d+\) "
                     r"updates it too"),
    ("gather_in_loop", "dedicated to one collective .* takes the same signal in more "
                       "than one iteration"),
    ("gather_and_put", r"dedicated to one collective .* T.dist.put \(dist op #\d+\) "
                       r"updates it too"),
    ("gather_rank_member", "cannot be proven different in every invocation"),
    ("write_source_before_wait", r"writes src\[0:4\], the put's source src\[0:4\], "
                                 r"before T.dist.wait\(\)"),
    ("read_destination_before_wait", r"reads dst\[0:4\], which overlaps the put's "
                                     r"destination dst\[0:4\] \(every rank receives one\), "
                                     r"before the wait that covers its arrival"),
])
def test_static_refusals(mode, text):
    with pytest.raises(ValueError, match=text):
        lower_dist(kernel(mode))


def test_a_put_under_a_column_condition_is_accepted():
    # (on a 2x2 mesh, bx % 2 is the column: the same on every row)
    func, prog = lower_dist(kernel("col_condition_peer_put"))
    assert prog.world == 4


def test_a_collective_at_a_member_per_iteration_is_accepted():
    lower_dist(kernel("gather_member_loop"))


def test_world_size_one_refuses_communication():
    with pytest.raises(ValueError, match="world_size=1 disables Rank communication"):
        lower_dist(kernel("barrier", world=1))


def test_auto_expectation_before_the_outermost_condition():
    """The upstream hoists a conditional send's expected-arrival update before the
    outermost ``if`` holding it, so ranks that skip the branch still count arrivals."""
    func, prog = lower_dist(kernel("hoist"))
    text = func.script()
    expect = [st for st in prog.sites if st.op == "expect"]
    assert len(expect) == 1
    # the marker's store comes before the `if rank_id == 0`
    assert text.index(f"T.Cast(\"int64\", {expect[0].index})") < text.index("if rank_id == 0")


# -- runs ---------------------------------------------------------------------------------------------
def run(mode, world=4, mesh=(2, 2), check=True):
    k = compile_mesh_kernel(kernel(mode, world, mesh))
    C = mesh[0] * mesh[1]
    per = [[torch.arange(C * N, dtype=torch.float32).reshape(C, N) + 100 * r,
            torch.zeros(C, N)] for r in range(world)]
    k.run_ranks(per, check_races=check)
    return [p[1] for p in per]


@pytest.mark.slow
def test_deadlock_names_every_blocked_rank_within_a_second():
    k = compile_mesh_kernel(kernel("deadlock", 3, (1, 2)))
    per = [[torch.zeros(2, N), torch.zeros(2, N)] for r in range(3)]
    t = time.perf_counter()
    with pytest.raises(DistDeadlockError) as e:
        k.run_ranks(per)
    assert time.perf_counter() - t < 1.0
    text = " ".join(str(e.value).split())  # (the report wraps at 80 columns)
    assert "deadlock: every rank is blocked" in text
    for r in range(3):  # every core of every rank (each runs its own program)
        for c in ((0, 0), (0, 1)):
            assert (f"rank {r} core {c} waits in T.dist.wait_signal (dist op #2) for "
                    f"T.dist.signals #1 (dist op #1)[0] expected 1, current 0") in text


@pytest.mark.slow
def test_deadlock_with_finished_ranks():
    with pytest.raises(DistDeadlockError, match="rank 1 has finished") as e:
        run("half_barrier", world=2, mesh=(1, 1), check=False)
    assert "rank 0 core (0, 0) waits in T.dist.barrier" in str(e.value)
    assert "expected 1, current 0" in str(e.value)


@pytest.mark.slow
def test_read_before_the_covering_wait_is_refused_by_the_checked_run():
    with pytest.raises(DistRaceError, match="the result depends on the order of arrivals"):
        run("read_in_loop")
    run("read_in_loop", check=False)  # unchecked: one order's answer


@pytest.mark.slow
def test_source_written_before_wait_is_refused_by_the_checked_run():
    with pytest.raises(DistRaceError, match="its source was written before the send completed"):
        run("write_source_in_loop")


@pytest.mark.slow
def test_destination_written_before_arrival_is_refused_by_the_checked_run():
    with pytest.raises(DistRaceError, match="wrote the put's destination dst"):
        run("write_destination")


@pytest.mark.slow
@pytest.mark.parametrize("senders", [1, 2])
def test_puts_landing_on_one_destination_are_not_a_race(senders):
    """Several puts carrying data into one place (each wave of the upstream's
    manual_signal_wave kernel, or two ranks sending the same tile): the late run lands
    them one after the other, and an earlier one's data is no local write."""
    W = 3
    tm.enable(mesh=(1, 2))
    with tm.world(W):
        @T.prim_func
        def k(A: T.Tensor((2, N), "float32"), B: T.Tensor((2, N), "float32"),
              rank_id: T.dist.RankId):
            with T.Kernel(2, threads=1) as bx:
                src = T.alloc_shared((N,), "float32")
                dst = T.alloc_shared((N,), "float32")
                s = T.dist.signal()
                T.copy(A[bx, 0:N], src)
                for i in T.serial(senders):  # to the next rank (and the one after)
                    T.dist.put(src, dst, (rank_id + 1 + i) % W, signal=s)
                    T.dist.put(src, dst, (rank_id + 1 + i) % W, signal=s)
                T.dist.submit()
                T.dist.wait_signal(s)
                T.copy(dst, B[bx, 0:N])
    a = torch.arange(2 * N, dtype=torch.float32).reshape(2, N)  # the same on every rank
    b = torch.zeros(2, N)
    compile_mesh_kernel(k, check_races=True)(a, b)
    assert torch.equal(b, a)


@pytest.mark.slow
@pytest.mark.parametrize("mode, text", [
    ("unsubmitted", "queued send\\(s\\) were never submitted"),
    ("nonempty_queue", "submit=True requires an empty send queue, but 1 send"),
    ("rank_out_of_range", "dst_rank [4-7] is outside \\[0, 4\\)"),
    ("value_two_senders", "allows one sender per receiving core, but rank 0 core .* receives "
                          "from rank [1-3] core .* and rank [1-3] core"),
])
def test_misuse_found_by_the_run(mode, text):
    with pytest.raises(ValueError, match=text):
        run(mode, check=False)


@pytest.mark.slow
def test_completion_not_drained_before_the_next():
    with pytest.raises(ValueError, match="previous completion must be drained before "
                                         "creating another completion"):
        run("not_drained", world=3, mesh=(1, 1), check=False)


@pytest.mark.slow
def test_wait_any_order_that_reaches_the_result_is_refused():
    with pytest.raises(DistRaceError, match="order T.dist.wait_any returns the members in"):
        run("wait_any_order", world=4, mesh=(1, 2))


# -- the cores of a chip run their own programs ------------------------------------------------
def independent_cores():
    """Rank 0's core 1 waits for rank 1's core 1, rank 1's core 0 for rank 0's core 0,
    which sends only after a second wait: on the chip every core runs on (a wait blocks
    its own core only). Run in lockstep (every core of a rank reaching a wait before any
    passes it), rank 0 would hold its core 0 at the second wait until its core 1 passes
    the first, which needs rank 1's core 1, held behind its core 0: a deadlock the chip
    does not have."""
    tm.enable(mesh=(1, 2))
    with tm.world(2):
        @T.prim_func
        def k(A: T.Tensor((2, N), "float32"), B: T.Tensor((2, N), "float32"),
              rank_id: T.dist.RankId):
            with T.Kernel(2, threads=1) as bx:
                src = T.alloc_shared((N,), "float32")
                dst = T.alloc_shared((N,), "float32")
                s = T.dist.signals(1, expect="manual")
                t = T.dist.signals(1, expect="manual")
                v = T.dist.signals(1, expect="manual")
                T.copy(A[bx, 0:N], src)
                if rank_id == 0:
                    T.dist.wait_signal(s[0], expected_delta=T.if_then_else(bx == 1, 1, 0))
                    T.dist.wait_signal(v[0], expected_delta=0)
                    T.dist.put(src, dst, 1, signal=t[0], submit=True)
                    T.dist.wait_signal(s[0], expected_delta=T.if_then_else(bx == 0, 1, 0))
                else:
                    T.dist.wait_signal(t[0], expected_delta=T.if_then_else(bx == 0, 1, 0))
                    T.dist.put(src, dst, 0, signal=s[0], submit=True)
                    T.dist.wait_signal(t[0], expected_delta=T.if_then_else(bx == 1, 1, 0))
                T.dist.wait()
                T.copy(dst, B[bx, 0:N])
    return k


@pytest.mark.slow
def test_a_core_waits_for_its_own_program_only():
    k = compile_mesh_kernel(independent_cores(), check_races=True)
    a = [torch.arange(2 * N, dtype=torch.float32).reshape(2, N) + 100 * r for r in range(2)]
    per = [[a[r].clone(), torch.zeros(2, N)] for r in range(2)]
    k.run_ranks(per)
    assert torch.equal(per[0][1], a[1]) and torch.equal(per[1][1], a[0])


@pytest.mark.slow
def test_waits_under_a_condition_on_the_core():
    """The upstream's conditional_two_phase_signal pattern: only the cores of column 0
    send and wait (twice); the others run past."""
    tm.enable(mesh=(2, 2))
    with tm.world(2):
        @T.prim_func
        def k(A: T.Tensor((4, N), "float32"), B: T.Tensor((4, N), "float32"),
              rank_id: T.dist.RankId):
            with T.Kernel(4, threads=1) as bx:
                src = T.alloc_shared((N,), "float32")
                dst = T.alloc_shared((N,), "float32")
                dst2 = T.alloc_shared((N,), "float32")
                s = T.dist.signal()
                T.copy(A[bx, 0:N], src)
                if bx % 2 == 0:
                    T.dist.put(src, dst, 1 - rank_id, signal=s, submit=True)
                    T.dist.wait_signal(s)
                    T.dist.wait()
                    for j in T.serial(N):
                        src[j] = dst[j] + T.float32(1)
                    T.dist.put(src, dst2, 1 - rank_id, signal=s, submit=True)
                    T.dist.wait_signal(s)
                    T.copy(dst2, B[bx, 0:N])
    a = torch.arange(4 * N, dtype=torch.float32).reshape(4, N)
    per = [[a + 100 * r, torch.zeros(4, N)] for r in range(2)]
    compile_mesh_kernel(k, check_races=True).run_ranks(per)
    for r in range(2):
        want = torch.zeros(4, N)
        want[0::2] = a[0::2] + 100 * r + 1  # there and back, plus one on the way
        assert torch.equal(per[r][1], want)


@pytest.mark.slow
def test_a_cross_row_put_meets_its_column_at_a_barrier_and_reports_it():
    """A row-domain all_to_all moves data between the rows of a column (the upstream's
    on-chip T.comm.put): the cores of the column meet at a barrier; a core that never
    comes is named in the deadlock report."""
    tm.enable(mesh=(2, 1))
    with tm.world(2):
        @T.prim_func
        def k(A: T.Tensor((2, N), "float32"), rank_id: T.dist.RankId):
            with T.Kernel(2, threads=1) as bx:
                src = T.alloc_shared((2, 2, N), "float32")
                dst = T.alloc_shared((2, 2, N), "float32")
                s = T.dist.signal()
                if bx == 0:
                    T.dist.all_to_all(src, dst, signal=s, domain="row", submit=True)
    with pytest.raises(DistDeadlockError) as e:
        compile_mesh_kernel(k)(torch.zeros(2, N))
    text = " ".join(str(e.value).split())  # (the report wraps at 80 columns)
    assert ("rank 0 core (0, 0) waits at the barrier of the on-chip leg of T.dist.all_to_all "
            "(dist op #1) (before) for core(s) (1, 0) of its chip") in text
    assert "rank 0 core (1, 0) has finished" in text
