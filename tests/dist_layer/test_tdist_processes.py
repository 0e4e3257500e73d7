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
                if mode == "deadlock":
                    ml = T.dist.signals(1, expect="manual")
                    T.dist.wait_signal(ml[0], expected_delta=1)
                for j in T.serial(N):  # each rank's own data, every result replicated
                    src[j] = A[bx, j] * T.float32(rank_id + 1)
                if mode == "bad_rank":
                    T.dist.put(src, red, rank_id * 2, signal=u, submit=True)
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
