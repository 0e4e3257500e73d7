"""Kernels a newcomer wrote from README.md, docs/tdist.md and docs/tilelang_mesh.md
alone (no source read), each checked against the newcomer's own NumPy model: four
multi-chip `T.dist` kernels, two SUNMMIO-style bfloat16 kernels with a `T.comm` op,
and the mistakes a newcomer makes (a race, deadlocks, wrong arguments), whose errors
must name the op and say what went wrong."""

import ml_dtypes
import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T

from meshtensor.tilelang import (DistDeadlockError, DistRaceError, analyze_dist_communication,
                                 compile_mesh_kernel)
from meshtensor.tilelang import tilelang_mesh as tm

pytestmark = pytest.mark.slow

BF16 = ml_dtypes.bfloat16
L = 8                      # elements per core in the T.dist kernels


def _bf16_tensor(a):
    return torch.from_numpy(np.asarray(a, np.float32)).bfloat16()


# --- T.dist: a ring all-reduce from puts and one automatic signal ---------------------

def _ring_allreduce(W):
    tm.enable(mesh=(2, 2))
    with tm.world(W):
        @T.prim_func
        def ring_allreduce(A: T.Tensor((4, L), "float32"), B: T.Tensor((4, L), "float32"),
                           rank_id: T.dist.RankId):
            with T.Kernel(4, threads=1) as bx:
                mine = T.alloc_shared((L,), "float32")
                recv = T.alloc_shared((W - 1, L), "float32")   # one slot per step: no reuse
                acc = T.alloc_shared((L,), "float32")
                s = T.dist.signal()
                T.copy(A[bx, 0:L], mine)
                T.copy(A[bx, 0:L], acc)
                nxt = (rank_id + 1) % T.dist.world_size()
                for step in T.serial(W - 1):
                    # pass on what arrived last step (my own vector first)
                    if step == 0:
                        T.dist.put(mine, recv[0, 0:L], nxt, signal=s, submit=True)
                    else:
                        T.dist.put(recv[step - 1, 0:L], recv[step, 0:L], nxt,
                                   signal=s, submit=True)
                    T.dist.wait_signal(s)
                    for i in T.serial(L):
                        acc[i] = acc[i] + recv[step, i]
                T.dist.wait()
                T.copy(acc, B[bx, 0:L])
    return compile_mesh_kernel(ring_allreduce, check_races=True)


@pytest.mark.parametrize("W", [3, 4])
def test_ring_allreduce_from_puts_equals_the_sum_on_every_rank(W):
    kernel = _ring_allreduce(W)
    rng = np.random.default_rng(W)
    a = [rng.integers(-8, 9, (4, L)).astype(np.float32) for _ in range(W)]  # exact sums
    per_rank = [[torch.from_numpy(x.copy()), torch.zeros(4, L)] for x in a]
    kernel.run_ranks(per_rank)
    want = np.sum(a, axis=0)
    for r in range(W):
        assert not np.array_equal(a[r], want)       # data really moved
        np.testing.assert_array_equal(per_rank[r][1].numpy(), want, err_msg=f"rank {r}")


def test_ring_allreduce_traffic_is_three_messages_per_link():
    W = 4
    traffic = analyze_dist_communication(_ring_allreduce(W))
    # every core sends W - 1 vectors of L float32 to its peer on the next chip
    want = {(r, (r + 1) % W, c): [(W - 1) * L * 4, W - 1] for r in range(W)
            for c in range(4)}
    assert {k: list(v) for k, v in traffic.chip.items()} == want
    assert (traffic.chip_bytes, traffic.chip_messages) == (W * 4 * 96, W * 4 * 3)
    # the documented default link: 25 GB/s and 1 us a message
    assert traffic.time()["chip"] == pytest.approx(96 / 25e9 + 3 * 1e-6)


# --- T.dist: all_reduce against the ring, in float32, in rank order -----------------

def _all_reduce(W):
    tm.enable(mesh=(2, 2))
    with tm.world(W):
        @T.prim_func
        def reduce_sum(A: T.Tensor((4, L), "float32"), B: T.Tensor((4, L), "float32"),
                       rank_id: T.dist.RankId):
            with T.Kernel(4, threads=1) as bx:
                src = T.alloc_shared((L,), "float32")
                dst = T.alloc_shared((L,), "float32")
                T.copy(A[bx, 0:L], src)
                T.dist.all_reduce(src, dst, "sum", signal=T.dist.signal())
                T.copy(dst, B[bx, 0:L])
    return compile_mesh_kernel(reduce_sum, check_races=True)


def test_all_reduce_sums_in_rank_order_bit_for_bit():
    W = 4
    kernel = _all_reduce(W)
    rng = np.random.default_rng(6)
    a = [rng.standard_normal((4, L)).astype(np.float32) for _ in range(W)]
    per_rank = [[torch.from_numpy(x.copy()), torch.zeros(4, L)] for x in a]
    kernel.run_ranks(per_rank)
    want = ((a[0] + a[1]) + a[2]) + a[3]
    assert not np.array_equal(want, ((a[3] + a[2]) + a[1]) + a[0])   # order shows
    for r in range(W):
        np.testing.assert_array_equal(per_rank[r][1].numpy(), want, err_msg=f"rank {r}")


# --- T.dist: a 2-rank exchange in two halves, manual expectations ---------------------

def _exchange():
    tm.enable(mesh=(1, 2))
    with tm.world(2):
        @T.prim_func
        def exchange(A: T.Tensor((2, L), "float32"), B: T.Tensor((2, L), "float32"),
                     rank_id: T.dist.RankId):
            with T.Kernel(2, threads=1) as bx:
                src = T.alloc_shared((L,), "float32")
                dst = T.alloc_shared((L,), "float32")
                # a manual put needs a SignalList member (a lone signal is refused)
                ss = T.dist.signals(1, expect="manual")
                T.copy(A[bx, 0:L], src)
                T.dist.put(src[0:L // 2], dst[0:L // 2], 1 - rank_id, signal=ss[0])
                T.dist.put(src[L // 2:L], dst[L // 2:L], 1 - rank_id, signal=ss[0])
                T.dist.submit()
                T.dist.wait_signal(ss[0], expected_delta=2)    # both halves
                T.dist.wait()
                for i in T.serial(L):
                    B[bx, i] = dst[i] * 2.0 + src[i]
    return compile_mesh_kernel(exchange, check_races=True)


def test_two_rank_exchange_with_manual_expectation():
    kernel = _exchange()
    rng = np.random.default_rng(1)
    a = [rng.standard_normal((2, L)).astype(np.float32) for _ in range(2)]
    per_rank = [[torch.from_numpy(x.copy()), torch.zeros(2, L)] for x in a]
    kernel.run_ranks(per_rank)
    for r in range(2):
        want = a[1 - r] * np.float32(2) + a[r]
        np.testing.assert_array_equal(per_rank[r][1].numpy(), want, err_msg=f"rank {r}")


# --- T.dist: all_gather of a rank-sharded MeshTensor, then local compute --------------

def _gather_then_weigh(W):
    tm.enable(mesh=(2, 2))
    with tm.world(W):
        @T.prim_func
        def gather_then_weigh(
                A: T.MeshTensor((W * 4, L), T.placement.mesh_as_line(0), "float32",
                                rank_placement=T.dist.placement.shard(0)),
                B: T.Tensor((4, L), "float32"),
                rank_id: T.dist.RankId):
            with T.Kernel() as cid:
                src = T.alloc_shared((L,), "float32")
                dst = T.alloc_shared((W, L), "float32")
                acc = T.alloc_shared((L,), "float32")
                s = T.dist.signal()
                T.copy(A[0, 0:L], src)                 # my core's one row
                T.dist.all_gather(src, dst, signal=s, submit=True)
                T.dist.wait_signal(s)
                T.dist.wait()
                for i in T.serial(L):
                    acc[i] = 0.0
                    for q in T.serial(W):
                        acc[i] = acc[i] + dst[q, i] * T.cast(q + 1, "float32")
                T.copy(acc, B[cid, 0:L])
    return compile_mesh_kernel(gather_then_weigh, check_races=True)


def test_all_gather_then_weighted_sum_called_with_global_tensors():
    W = 4
    kernel = _gather_then_weigh(W)
    rng = np.random.default_rng(2)
    a = rng.integers(-8, 9, (W * 4, L)).astype(np.float32)
    b = torch.zeros(4, L)
    kernel(torch.from_numpy(a), b)          # B: every rank's copy must agree
    # rank q holds rows 4q..4q+3 (balanced), its core c the row 4q + c
    parts = a.reshape(W, 4, L)
    want = sum(parts[q] * np.float32(q + 1) for q in range(W))
    np.testing.assert_array_equal(b.numpy(), want)


# --- T.dist: a SignalList completion drained by `while has_pending: wait_any` ---------

def _gather_any(W):
    tm.enable(mesh=(2, 2))
    with tm.world(W):
        @T.prim_func
        def gather_any(A: T.Tensor((4, L), "float32"), B: T.Tensor((4, L), "float32"),
                       N: T.Tensor((4, W), "int32"), rank_id: T.dist.RankId):
            with T.Kernel(4, threads=1) as bx:
                src = T.alloc_shared((L,), "float32")
                dst = T.alloc_shared((W, L), "float32")
                acc = T.alloc_shared((L,), "float32")
                seen = T.alloc_shared((W,), "int32")
                sl = T.dist.signals(W)
                T.copy(A[bx, 0:L], src)
                for q in T.serial(W):
                    seen[q] = 0
                for i in T.serial(L):
                    acc[i] = -1000.0
                c = T.dist.all_gather(src, dst, signals=sl, submit=True)
                while T.dist.has_pending(c):
                    m = T.dist.wait_any(c)
                    seen[m] = seen[m] + 1
                    for i in T.serial(L):
                        acc[i] = T.max(acc[i], dst[m, i])   # any order: same max
                T.dist.wait()
                T.copy(acc, B[bx, 0:L])
                T.copy(seen, N[bx, 0:W])
    return compile_mesh_kernel(gather_any, check_races=True)


def test_completion_drained_by_wait_any_visits_every_other_rank_once():
    W = 4
    kernel = _gather_any(W)
    rng = np.random.default_rng(3)
    a = [rng.integers(-8, 9, (4, L)).astype(np.float32) for _ in range(W)]
    per_rank = [[torch.from_numpy(x.copy()), torch.zeros(4, L),
                 torch.zeros(4, W, dtype=torch.int32)] for x in a]
    kernel.run_ranks(per_rank)
    for r in range(W):
        # my own slot is never pending: wait_any returns each other rank once
        want_seen = np.ones((4, W), np.int32)
        want_seen[:, r] = 0
        np.testing.assert_array_equal(per_rank[r][2].numpy(), want_seen)
        want = np.maximum.reduce([a[q] for q in range(W) if q != r])
        np.testing.assert_array_equal(per_rank[r][1].numpy(), want, err_msg=f"rank {r}")


# --- SUNMMIO style: bfloat16, T.Kernel(), T.MeshTensor, a T.comm op -------------------

M, N = 8, 16               # on 2x2 with full_shard(0, 1): (4, 8) per core


def _row_sums():
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def row_sums(A: T.MeshTensor((M, N), T.placement.full_shard(0, 1), "bfloat16"),
                 S: T.MeshTensor((M,), T.placement.row_shard(0), "bfloat16")):
        with T.Kernel() as cid:
            m, n = A.local_shape
            A_s = T.alloc_shared((m, n), "bfloat16")
            S_s = T.alloc_shared((m,), "bfloat16")
            T.copy(A[0:m, 0:n], A_s)
            # fold my columns, then my row's cores in col order
            T.comm.all_reduce(A_s, S_s, "sum", "h", dim=1)
            T.copy(S_s, S[0:m])
    return compile_mesh_kernel(row_sums)


def _bf16_fold(cols):
    acc = np.zeros(cols[0].shape, BF16)
    for c in cols:
        acc = (acc + c).astype(BF16)            # one rounding per addition
    return acc


def test_sunmmio_row_sums_by_all_reduce_in_bfloat16():
    kernel = _row_sums()
    a = np.random.default_rng(4).standard_normal((M, N)).astype(BF16)
    s = torch.zeros(M, dtype=torch.bfloat16)
    kernel(_bf16_tensor(a), s)
    per_col = [_bf16_fold([a[:, j] for j in range(c * 8, c * 8 + 8)]) for c in range(2)]
    want = _bf16_fold(per_col).astype(np.float32)
    # the per-operation rounding matters here: a float32 sum differs
    assert not np.array_equal(a.astype(np.float32).sum(1).astype(BF16), want)
    np.testing.assert_array_equal(s.float().numpy(), want)


def _gate_by_first_col():
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def gate(X: T.MeshTensor((M, N), T.placement.full_shard(0, 1), "bfloat16"),
             Y: T.MeshTensor((M, N), T.placement.full_shard(0, 1), "bfloat16")):
        with T.Kernel() as cid:
            m, n = X.local_shape
            row = cid // T.mesh_ncols()
            X_s = T.alloc_shared((m, n), "bfloat16")
            G_s = T.alloc_shared((m, n), "bfloat16")
            T.copy(X[0:m, 0:n], X_s)
            T.comm.broadcast(X_s, G_s, (row, 0), "h")    # col 0's block along my row
            for i, j in T.Parallel(m, n):
                X_s[i, j] = X_s[i, j] * G_s[i, j] + X_s[i, j]
            T.copy(X_s, Y[0:m, 0:n])
    return compile_mesh_kernel(gate)


def test_sunmmio_broadcast_along_rows_then_bfloat16_gate():
    kernel = _gate_by_first_col()
    x = np.random.default_rng(5).standard_normal((M, N)).astype(BF16)
    y = torch.zeros(M, N, dtype=torch.bfloat16)
    kernel(_bf16_tensor(x), y)
    g = np.concatenate([x[:, 0:8], x[:, 0:8]], axis=1)
    want = ((x * g).astype(BF16) + x).astype(BF16).astype(np.float32)
    fused = (x.astype(np.float32) * g.astype(np.float32) + x.astype(np.float32))
    assert not np.array_equal(fused.astype(BF16).astype(np.float32), want)
    np.testing.assert_array_equal(y.float().numpy(), want)


def test_sunmmio_2d_launch_puts_block_bx_by_on_row_by_col_bx():
    tm.enable(mesh=(2, 3))

    @T.prim_func
    def where(O: T.MeshTensor((2, 3), T.placement.full_shard(0, 1), "float32"),
              P: T.MeshTensor((2, 3), T.placement.full_shard(0, 1), "float32")):
        with T.Kernel(3, 2) as (bx, by):              # (ncols, nrows), as the docs say
            O[0, 0] = T.cast(by * 10 + bx, "float32")
            P[0, 0] = T.cast(T.comm.current_core(), "float32")
    o, p = torch.zeros(2, 3), torch.zeros(2, 3)
    compile_mesh_kernel(where)(o, p)
    row, col = np.mgrid[0:2, 0:3]
    np.testing.assert_array_equal(o.numpy(), row * 10 + col)
    np.testing.assert_array_equal(p.numpy(), row * 3 + col)


# --- Both layers: row sums over a chip's row (T.comm), then over the chips (T.dist) ----

def _row_sums_over_chips(W):
    tm.enable(mesh=(2, 2))
    with tm.world(W):
        @T.prim_func
        def row_sums2(A: T.MeshTensor((W * M, N), T.placement.full_shard(0, 1), "bfloat16",
                                      rank_placement=T.dist.placement.shard(0)),
                      S: T.MeshTensor((M,), T.placement.row_shard(0), "bfloat16"),
                      rank_id: T.dist.RankId):
            with T.Kernel() as cid:
                m, n = A.local_shape
                A_s = T.alloc_shared((m, n), "bfloat16")
                P_s = T.alloc_shared((m,), "bfloat16")
                Q_s = T.alloc_shared((m,), "bfloat16")
                T.copy(A[0:m, 0:n], A_s)
                T.comm.all_reduce(A_s, P_s, "sum", "h", dim=1)          # my chip's row
                T.dist.all_reduce(P_s, Q_s, "sum", signal=T.dist.signal())  # the chips
                T.copy(Q_s, S[0:m])
    return compile_mesh_kernel(row_sums2, check_races=True)


def test_row_sums_over_a_chip_row_then_over_chips_in_bfloat16():
    W = 2
    kernel = _row_sums_over_chips(W)
    a = np.random.default_rng(7).standard_normal((W * M, N)).astype(BF16)
    s = torch.zeros(M, dtype=torch.bfloat16)
    kernel(_bf16_tensor(a), s)         # rank r holds rows r*M..(r+1)*M (balanced)
    parts = a.reshape(W, M, N)
    per_rank = [_bf16_fold([_bf16_fold([parts[r][:, j] for j in range(c * 8, c * 8 + 8)])
                            for c in range(2)]) for r in range(W)]
    want = _bf16_fold(per_rank).astype(np.float32)
    assert not np.array_equal(parts.astype(np.float32).sum(axis=(0, 2)).astype(BF16)
                              .astype(np.float32), want)
    np.testing.assert_array_equal(s.float().numpy(), want)


# --- Newcomer mistakes ----------------------------------------------------------------

def _two_rank(body):
    """A 2-rank kernel on 1x2 cores with the mistake ``body`` in it."""
    tm.enable(mesh=(1, 2))
    with tm.world(2):
        if body == "race":
            @T.prim_func
            def k(A: T.Tensor((2, 4), "float32"), B: T.Tensor((2, 4), "float32"),
                  rank_id: T.dist.RankId):
                with T.Kernel(2, threads=1) as bx:
                    src = T.alloc_shared((4,), "float32")
                    dst = T.alloc_shared((4,), "float32")
                    s = T.dist.signal()
                    T.copy(A[bx, 0:4], src)
                    T.dist.put(src, dst, 1 - rank_id, signal=s, submit=True)
                    T.copy(B[bx, 0:4], src)     # reuses the source before wait()
                    T.dist.wait_signal(s)
                    T.dist.wait()
                    T.copy(dst, B[bx, 0:4])
        elif body == "count":
            @T.prim_func
            def k(A: T.Tensor((2, 4), "float32"), B: T.Tensor((2, 4), "float32"),
                  rank_id: T.dist.RankId):
                with T.Kernel(2, threads=1) as bx:
                    src = T.alloc_shared((4,), "float32")
                    dst = T.alloc_shared((4,), "float32")
                    ss = T.dist.signals(1, expect="manual")
                    T.copy(A[bx, 0:4], src)
                    T.dist.put(src, dst, 1 - rank_id, signal=ss[0], submit=True)
                    T.dist.wait_signal(ss[0], expected_delta=2)   # only one put comes
                    T.dist.wait()
                    T.copy(dst, B[bx, 0:4])
        elif body == "late_submit":
            @T.prim_func
            def k(A: T.Tensor((2, 4), "float32"), B: T.Tensor((2, 4), "float32"),
                  rank_id: T.dist.RankId):
                with T.Kernel(2, threads=1) as bx:
                    src = T.alloc_shared((4,), "float32")
                    dst = T.alloc_shared((4,), "float32")
                    s = T.dist.signal()
                    T.copy(A[bx, 0:4], src)
                    T.dist.put(src, dst, 1 - rank_id, signal=s)
                    T.dist.wait_signal(s)       # waits before its own put leaves
                    T.dist.submit()
                    T.dist.wait()
                    T.copy(dst, B[bx, 0:4])
        elif body == "rank_oob":
            @T.prim_func
            def k(A: T.Tensor((2, 4), "float32"), B: T.Tensor((2, 4), "float32"),
                  rank_id: T.dist.RankId):
                with T.Kernel(2, threads=1) as bx:
                    src = T.alloc_shared((4,), "float32")
                    dst = T.alloc_shared((4,), "float32")
                    s = T.dist.signal()
                    T.copy(A[bx, 0:4], src)
                    T.dist.put(src, dst, rank_id + 1, signal=s, submit=True)  # no % W
                    T.dist.wait_signal(s)
                    T.dist.wait()
                    T.copy(dst, B[bx, 0:4])
    return k


def _ring_reusing_one_buffer():
    """The ring all-reduce above with one receive buffer for every step: the next
    step's put may land before the receiver has added the last one."""
    W = 4
    tm.enable(mesh=(2, 2))
    with tm.world(W):
        @T.prim_func
        def ring_reuse(A: T.Tensor((4, L), "float32"), B: T.Tensor((4, L), "float32"),
                       rank_id: T.dist.RankId):
            with T.Kernel(4, threads=1) as bx:
                send = T.alloc_shared((L,), "float32")
                recv = T.alloc_shared((L,), "float32")
                acc = T.alloc_shared((L,), "float32")
                s = T.dist.signal()
                T.copy(A[bx, 0:L], send)
                T.copy(A[bx, 0:L], acc)
                for step in T.serial(W - 1):
                    T.dist.put(send, recv, (rank_id + 1) % W, signal=s, submit=True)
                    T.dist.wait_signal(s)
                    T.dist.wait()
                    for i in T.serial(L):
                        acc[i] = acc[i] + recv[i]
                        send[i] = recv[i]
                T.copy(acc, B[bx, 0:L])
    kernel = compile_mesh_kernel(ring_reuse, check_races=True)
    rng = np.random.default_rng(0)
    kernel.run_ranks([[torch.from_numpy(rng.integers(-8, 9, (4, L)).astype(np.float32)),
                       torch.zeros(4, L)] for _ in range(W)])


def _run_two_rank(body):
    kernel = compile_mesh_kernel(_two_rank(body))
    kernel.run_ranks([[torch.full((2, 4), float(r)), torch.zeros(2, 4)] for r in range(2)])


def _bad_direction():
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def k(X: T.MeshTensor((4, 8), T.placement.full_shard(0, 1), "bfloat16"),
          Y: T.MeshTensor((4, 8), T.placement.full_shard(0, 1), "bfloat16")):
        with T.Kernel() as cid:
            a = T.alloc_shared((2, 4), "bfloat16")
            b = T.alloc_shared((2, 4), "bfloat16")
            T.copy(X[0:2, 0:4], a)
            T.comm.broadcast(a, b, (cid // 2, 0), "row")   # means "h"
            T.copy(b, Y[0:2, 0:4])
    return compile_mesh_kernel(k)


def _split_group():
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def k(X: T.MeshTensor((4, 8), T.placement.full_shard(0, 1), "bfloat16"),
          Y: T.MeshTensor((4, 8), T.placement.full_shard(0, 1), "bfloat16")):
        with T.Kernel() as cid:
            a = T.alloc_shared((2, 4), "bfloat16")
            b = T.alloc_shared((2, 4), "bfloat16")
            T.copy(X[0:2, 0:4], a)
            if cid % 2 == 0:                  # only column 0 joins its row's broadcast
                T.comm.broadcast(a, b, (cid // 2, 0), "h")
            T.copy(b, Y[0:2, 0:4])
    return compile_mesh_kernel(k)


def _global_call_of_rank_dependent_output():
    """Each rank writes its id into a plain T.Tensor, then the kernel is called with
    the global tensor (docs/tdist.md: such a kernel is run with run_ranks)."""
    tm.enable(mesh=(1, 2))
    with tm.world(2):
        @T.prim_func
        def who(B: T.Tensor((2, 4), "float32"), rank_id: T.dist.RankId):
            with T.Kernel(2, threads=1) as bx:
                for i in T.serial(4):
                    B[bx, i] = T.cast(rank_id, "float32")
    compile_mesh_kernel(who)(torch.zeros(2, 4))


_MISTAKES = {
    "race": lambda: compile_mesh_kernel(_two_rank("race")),
    "count": lambda: _run_two_rank("count"),
    "late_submit": lambda: _run_two_rank("late_submit"),
    "rank_oob": lambda: _run_two_rank("rank_oob"),
    "direction": _bad_direction,
    "ring_reuse": _ring_reusing_one_buffer,
    "split_group": _split_group,
    "global_call": _global_call_of_rank_dependent_output,
}
_messages = {}


def _flat(e):
    """An error's message with its line breaks as spaces (messages are wrapped to 80
    columns)."""
    return " ".join(str(e).split())


def _error(name):
    """The exception a mistake raises (built once per process)."""
    if name not in _messages:
        with pytest.raises((ValueError, TypeError)) as info:
            _MISTAKES[name]()
        _messages[name] = info.value
    return _messages[name]


def test_race_reusing_a_put_source_before_wait_is_refused_at_compile():
    msg = _flat(_error("race"))
    assert "T.dist.put (dist op #1)" in msg
    assert "src[0:4]" in msg and "before T.dist.wait()" in msg and "race" in msg


def test_deadlock_from_a_manual_count_too_high_names_every_core():
    e = _error("count")
    assert isinstance(e, DistDeadlockError)
    msg = _flat(e)
    for r in range(2):
        for c in range(2):
            assert f"rank {r} core (0, {c}) waits in T.dist.wait_signal" in msg
    assert msg.count("expected 2, current 1") == 4


def test_deadlock_from_submitting_after_the_wait_is_reported():
    e = _error("late_submit")
    assert isinstance(e, DistDeadlockError)
    assert _flat(e).count("expected 1, current 0") == 4


def test_deadlock_from_submitting_after_the_wait_says_submit():
    assert "not submitted" in _flat(_error("late_submit"))


def test_race_reusing_one_receive_buffer_is_caught_by_the_checked_run():
    e = _error("ring_reuse")
    assert isinstance(e, DistRaceError)
    msg = _flat(e)
    assert "depends on the order of arrivals" in msg and "on rank 0" in msg
    assert "before the wait that covers its arrival" in msg


def test_race_report_names_the_tensor_as_written():
    assert "'B' element" in _flat(_error("ring_reuse"))


def test_comm_op_under_a_condition_splitting_its_group_is_refused():
    msg = _flat(_error("split_group"))
    assert "T.comm.broadcast (comm op #0)" in msg and "uniform over each group" in msg


# TileLang's IR names the block index bx whatever the kernel called it: the refusal
# says so beside the condition it quotes
def test_condition_names_the_block_index_as_the_ir_does():
    msg = _flat(_error("split_group"))
    assert "`if bx % 2 == 0`" in msg and "bx: the block index T.Kernel binds" in msg


def test_global_call_of_a_kernel_whose_ranks_disagree_is_refused():
    msg = _flat(_error("global_call"))
    assert "ranks 0 and 1 disagree" in msg and "(first at [0, 0]: 0.0 vs 1.0)" in msg


def test_global_call_refusal_names_b_and_run_ranks():
    msg = _flat(_error("global_call"))
    assert "'B'" in msg and "run_ranks" in msg


def test_wrong_dst_rank_names_the_put_and_the_range():
    msg = _flat(_error("rank_oob"))
    assert "T.dist.put (dist op #1)" in msg and "dst_rank 2 is outside [0, 2)" in msg


def test_wrong_direction_is_a_value_error():
    assert "row" in _flat(_error("direction"))


def test_wrong_direction_names_the_op_and_the_choices():
    msg = _flat(_error("direction"))
    assert "T.comm.broadcast" in msg and "horizontal" in msg


@pytest.mark.parametrize("name", ["race", "count", "late_submit", "ring_reuse",
                                  "split_group", "global_call", "rank_oob", "direction"])
def test_mistake_messages_fit_80_columns(name):
    lines = str(_error(name)).splitlines()
    assert max(len(line) for line in lines) <= 80, lines
