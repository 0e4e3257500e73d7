"""T.dist kernels with one rank per process (torch.distributed, gloo): the same bits as
the in-process run, deadlocks reported to every rank at once, a failing rank's error
first."""

import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T

from meshtensor.dist import run_kernel
from meshtensor.tilelang import compile_mesh_kernel
from meshtensor.tilelang import tilelang_mesh as tm
from meshtensor.tilelang.runtime.dist_rank import DistDeadlockError

pytestmark = pytest.mark.slow
N = 4


def kernel(W, mesh, mode="ok"):
    NR, NC = mesh
    C = NR * NC
    tm.enable(mesh=mesh)
    with tm.world(W):
        @T.prim_func
        def k(A: T.Tensor((C, N), "float32"), B: T.Tensor((C, 3 * W * N), "float32"),
              rank_id: T.dist.RankId):
            with T.Kernel(C, threads=1) as bx:
                src = T.alloc_shared((N,), "float32")
                gat = T.alloc_shared((W, N), "float32")
                red = T.alloc_shared((N,), "float32")
                a2s = T.alloc_shared((W, N), "float32")
                a2d = T.alloc_shared((W, N), "float32")
                s = T.dist.signal()
                t = T.dist.signal()
                u = T.dist.signal()
                v = T.dist.signal()  # (a collective's signal serves it alone)
                if mode == "deadlock":
                    ml = T.dist.signals(1, expect="manual")
                    T.dist.wait_signal(ml[0], expected_delta=1)
                for j in T.serial(N):  # each rank's own data, every result replicated
                    src[j] = A[bx, j] * T.float32(rank_id + 1)
                if mode == "bad_rank":
                    T.dist.put(src, red, rank_id * 2, signal=v, submit=True)
                T.dist.all_gather(src, gat, signal=s, submit=True)
                T.dist.wait_signal(s)
                T.dist.all_reduce(src, red, "sum", signal=t)
                for q, j in T.grid(W, N):
                    a2s[q, j] = src[j] * 10 + T.float32(rank_id)
                T.dist.all_to_all(a2s, a2d, signal=u, submit=True)
                T.dist.wait_signal(u)
                T.dist.barrier()
                for q, j in T.grid(W, N):
                    B[bx, q * N + j] = gat[q, j]
                    B[bx, W * N + q * N + j] = a2d[q, j]
                    B[bx, 2 * W * N + q * N + j] = red[j]
    return compile_mesh_kernel(k)


@pytest.mark.parametrize("W, mesh", [(3, (2, 2)), (2, (1, 2)), (4, (1, 1))])
def test_processes_give_the_in_process_bits(W, mesh):
    k = kernel(W, mesh)
    C = mesh[0] * mesh[1]
    rng = np.random.default_rng(0)
    a = torch.from_numpy(rng.integers(-99, 99, (C, N)).astype(np.float32))
    b_in, b_mp = torch.zeros(C, 3 * W * N), torch.zeros(C, 3 * W * N)
    k(a, b_in)
    run_kernel(k, a, b_mp)
    assert torch.equal(b_in, b_mp)
    src = [a.numpy() * np.float32(r + 1) for r in range(W)]
    red = np.zeros_like(src[0])
    for x in src:
        red = red + x
    b = b_in.numpy()
    for q in range(W):
        assert np.array_equal(b[:, q * N:(q + 1) * N], src[q])
        assert np.array_equal(b[:, W * N + q * N:W * N + (q + 1) * N],
                              src[q] * np.float32(10) + np.float32(q))
        assert np.array_equal(b[:, 2 * W * N + q * N:2 * W * N + (q + 1) * N], red)


def test_a_replicated_result_travels_back_bit_for_bit():
    W, mesh = 3, (2, 2)
    k = kernel(W, mesh)
    rng = np.random.default_rng(1)
    a = torch.from_numpy(rng.standard_normal((4, N)).astype(np.float32))
    # a kernel whose output every rank writes alike: all_reduce of a replicated input
    tm.enable(mesh=mesh)
    with tm.world(W):
        @T.prim_func
        def same(A: T.Tensor((4, N), "float32"), B: T.Tensor((4, N), "float32"),
                 rank_id: T.dist.RankId):
            with T.Kernel(4, threads=1) as bx:
                src = T.alloc_shared((N,), "float32")
                red = T.alloc_shared((N,), "float32")
                s = T.dist.signal()
                for j in T.serial(N):
                    src[j] = A[bx, j] * T.float32(rank_id + 1) / T.float32(3)
                T.dist.all_reduce(src, red, "sum", signal=s)
                T.copy(red, B[bx, 0:N])
    ks = compile_mesh_kernel(same)
    b1, b2 = torch.zeros(4, N), torch.zeros(4, N)
    ks(a, b1)
    run_kernel(ks, a, b2)
    assert torch.equal(b1, b2) and b1.abs().sum() > 0


def test_deadlock_reported_to_every_process_within_a_second():
    k = kernel(3, (1, 2), "deadlock")
    with pytest.raises(DistDeadlockError) as e:
        run_kernel(k, torch.zeros(2, N), torch.zeros(2, 9 * N))
    text = str(e.value)
    for r in range(3):
        assert f"rank {r} core (0, 0) waits in T.dist.wait_signal" in text
    assert e.value.reported_at - e.value.detected_at < 1.0


def test_a_failing_rank_ends_the_job_with_its_error_first():
    k = kernel(3, (1, 1), "bad_rank")
    with pytest.raises(ValueError, match=r"^rank 2: T.dist.put \(dist op #\d+\) on rank 2 core "
                                         r"\(0, 0\): dst_rank 4 is outside \[0, 3\)"):
        run_kernel(k, torch.zeros(1, N), torch.zeros(1, 9 * N))



def test_each_core_runs_its_own_program_across_processes():
    """A kernel whose cores must run on independently (in lockstep it deadlocks: see
    test_tdist_checks.independent_cores) gives the in-process bits."""
    tm.enable(mesh=(1, 2))
    with tm.world(2):
        @T.prim_func
        def k(A: T.Tensor((2, N), "float32"), B: T.Tensor((2, 2, N), "float32"),
              rank_id: T.dist.RankId):
            with T.Kernel(2, threads=1) as bx:
                src = T.alloc_shared((N,), "float32")
                dst = T.alloc_shared((N,), "float32")
                gat = T.alloc_shared((2, N), "float32")
                s = T.dist.signals(1, expect="manual")
                t = T.dist.signals(1, expect="manual")
                v = T.dist.signals(1, expect="manual")
                g = T.dist.signal()
                for j in T.serial(N):
                    src[j] = A[bx, j] + T.float32(100 * rank_id)
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
                T.dist.all_gather(dst, gat, signal=g, submit=True)
                T.dist.wait_signal(g)
                T.copy(gat, B[bx, 0:2, 0:N])
    kern = compile_mesh_kernel(k)
    a = torch.arange(2 * N, dtype=torch.float32).reshape(2, N)
    b1, b2 = torch.zeros(2, 2, N), torch.zeros(2, 2, N)
    kern(a, b1)
    run_kernel(kern, a, b2)
    assert torch.equal(b1, b2)
    assert torch.equal(b1[:, 0], a + 100) and torch.equal(b1[:, 1], a)  # swapped


@pytest.mark.parametrize("W", [2, 4])
def test_a_tensor_split_over_ranks_one_rank_per_process(W):
    """17 rows over W ranks (4: 5, 4, 4, 4): each process gets its rank's part and
    writes it back; the bits of the in-process run."""
    from meshtensor.tilelang.language.dist import rank_extents
    D = 17
    tm.enable(mesh=(2, 2))
    with tm.world(W):
        rp = T.dist.placement.shard(0)

        @T.prim_func
        def k(A: T.MeshTensor((D, N), T.placement.row_shard(0), T.float32, rank_placement=rp),
              B: T.MeshTensor((D, N), T.placement.row_shard(0), T.float32, rank_placement=rp),
              rank_id: T.dist.RankId):
            with T.Kernel() as cid:
                lm, ln = A.local_shape
                s = T.alloc_shared((lm, ln), T.float32)
                t = T.alloc_shared((lm, ln), T.float32)
                g = T.dist.signal()
                T.copy(A, s)
                T.dist.put(s, t, (rank_id + 1) % W, signal=g, submit=True)  # the ring
                T.dist.wait_signal(g)
                for i, j in T.grid(lm, ln):
                    t[i, j] = t[i, j] + s[i, j] * 2 + T.float32(rank_id)
                T.copy(t, B)
    kern = compile_mesh_kernel(k)
    a = torch.from_numpy(np.random.default_rng(W).integers(-9, 9, (D, N)).astype(np.float32))
    b1, b2 = torch.zeros(D, N), torch.zeros(D, N)
    kern(a, b1)
    run_kernel(kern, a, b2)
    assert torch.equal(b1, b2)
    parts = rank_extents(D, W)
    assert [hi - lo for lo, hi in parts] == ([5, 4, 4, 4] if W == 4 else [9, 8])
    for r, (lo, hi) in enumerate(parts):  # slot by slot: the previous rank's rows
        plo, phi = parts[(r - 1) % W]
        n = hi - lo
        prev = torch.zeros(n, N)
        # each core's slot row i of the previous rank lands on row i of this rank's slot
        for (x0, x1), (y0, y1) in zip(rank_extents(n, 2), rank_extents(phi - plo, 2)):
            m = min(x1 - x0, y1 - y0)
            prev[x0:x0 + m] = a[plo + y0:plo + y0 + m]
        assert torch.equal(b1[lo:hi], prev + a[lo:hi] * 2 + r)
