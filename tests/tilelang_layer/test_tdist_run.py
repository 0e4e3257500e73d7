"""T.dist kernels run exactly: every op and signal kind against NumPy, on worlds of 1-4
ranks and meshes 1x1, 1x2, 2x2 and 2x3, each run checked (the early and the late
delivery give the same bits)."""

import itertools

import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T

from meshtensor.tilelang import compile_mesh_kernel
from meshtensor.tilelang import tilelang_mesh as tm

pytestmark = pytest.mark.slow
N = 4
MESHES = [(1, 1), (1, 2), (2, 2), (2, 3)]
COMBOS = [(w, m) for w in (2, 3, 4) for m in MESHES]


def inputs(world, mesh, seed=0):
    rng = np.random.default_rng(seed)
    C = mesh[0] * mesh[1]
    return [rng.integers(-50, 50, (C, N)).astype(np.float32) for _ in range(world)]


def run(kernel, A, out_shape, extra=(), check=True):
    per = [[torch.from_numpy(a.copy()), torch.zeros(*out_shape)] +
           [torch.from_numpy(e[r].copy()) for e in extra] for r, a in enumerate(A)]
    kernel.run_ranks(per, check_races=check)
    return [p[1].numpy() for p in per]


# -- one kernel that uses every collective, on every world and mesh ------------------------------
def every_op(W, mesh):
    NR, NC = mesh
    C = NR * NC
    tm.enable(mesh=mesh)
    K = 5 * N + W * N + W * N + 1
    with tm.world(W):
        @T.prim_func
        def k(A: T.Tensor((C, N), "float32"), B: T.Tensor((C, K), "float32"),
              rank_id: T.dist.RankId):
            with T.Kernel(C, threads=1) as bx:
                src = T.alloc_shared((N,), "float32")
                dst = T.alloc_shared((N,), "float32")
                red = T.alloc_shared((N,), "float32")
                gat = T.alloc_shared((W, N), "float32")
                a2a_s = T.alloc_shared((W, N), "float32")
                a2a_d = T.alloc_shared((W, N), "float32")
                s_put = T.dist.signal()
                s_gat = T.dist.signal()
                s_red = T.dist.signal()
                s_a2a = T.dist.signal()
                s_sig = T.dist.signal()
                T.copy(A[bx, 0:N], src)
                # a ring put
                T.dist.put(src, dst, (rank_id + 1) % W, signal=s_put, submit=True)
                T.dist.wait_signal(s_put)
                T.copy(dst, B[bx, 0:N])
                # all_gather and all_reduce
                T.dist.all_gather(src, gat, signal=s_gat, submit=True)
                T.dist.all_reduce(src, red, "sum", signal=s_red)
                T.dist.wait_signal(s_gat)
                for q, j in T.grid(W, N):
                    B[bx, N + q * N + j] = gat[q, j]
                T.copy(red, B[bx, N + W * N:2 * N + W * N])
                # all_to_all over ranks
                for q, j in T.grid(W, N):
                    a2a_s[q, j] = src[j] * 10 + q
                T.dist.all_to_all(a2a_s, a2a_d, signal=s_a2a, submit=True)
                T.dist.wait_signal(s_a2a)
                for q, j in T.grid(W, N):
                    B[bx, 2 * N + W * N + q * N + j] = a2a_d[q, j]
                # a bare signal, then a barrier
                T.dist.put_signal(s_sig, (rank_id + W - 1) % W, submit=True)
                T.dist.wait_signal(s_sig)
                T.dist.barrier()
                B[bx, K - 1] = T.float32(rank_id + 1)
    return k, K


def every_op_reference(A, W):
    outs = []
    for r in range(W):
        ring = A[(r - 1) % W]
        gat = np.concatenate([A[q] for q in range(W)], axis=1)
        red = np.zeros_like(A[0])
        for q in range(W):
            red = red + A[q]
        a2a = np.concatenate([A[p] * 10 + r for p in range(W)], axis=1)
        pad = np.zeros((A[0].shape[0], 3 * N), np.float32)
        outs.append(np.concatenate([ring, gat, red, a2a, pad[:, :0],
                                    np.full((A[0].shape[0], 1), r + 1, np.float32)], axis=1))
    return outs


@pytest.mark.parametrize("W, mesh", COMBOS, ids=[f"W{w}-{m[0]}x{m[1]}" for w, m in COMBOS])
def test_every_collective_on_every_world_and_mesh(W, mesh):
    kernel, K = every_op(W, mesh)
    k = compile_mesh_kernel(kernel)
    A = inputs(W, mesh)
    got = run(k, A, (mesh[0] * mesh[1], K))
    want = every_op_reference(A, W)
    for r in range(W):
        assert np.array_equal(got[r][:, :2 * N + W * N], want[r][:, :2 * N + W * N]), r
        assert np.array_equal(got[r][:, 2 * N + W * N:2 * N + 2 * W * N],
                              want[r][:, 2 * N + W * N:2 * N + 2 * W * N]), r
        assert (got[r][:, -1] == r + 1).all()


def test_world_size_one_runs_rank_code_and_refuses_communication():
    tm.enable(mesh=(1, 2))
    with tm.world(1):
        @T.prim_func
        def local(A: T.Tensor((2, N), "float32"), rank_id: T.dist.RankId):
            with T.Kernel(2, threads=1) as bx:
                for j in T.serial(N):
                    A[bx, j] = A[bx, j] + T.float32(rank_id + T.dist.world_size())

        @T.prim_func
        def comm(A: T.Tensor((2, N), "float32"), rank_id: T.dist.RankId):
            with T.Kernel(2, threads=1) as bx:
                T.dist.barrier()
    k = compile_mesh_kernel(local)
    a = torch.ones(2, N)
    k(a)
    assert torch.equal(a, torch.full((2, N), 2.0))
    with pytest.raises(ValueError, match="world_size=1 disables Rank communication"):
        compile_mesh_kernel(comm)


# -- every signal kind -----------------------------------------------------------------------------
KINDS = list(T.dist.SignalKind) if hasattr(T, "dist") else []


@pytest.mark.parametrize("kind", ["sram_flagreg_inc", "dram_flagreg_inc", "sram_flagreg_value",
                                  "dram_flagreg_value", "sram_memory", "dram_memory"])
def test_every_signal_kind_carries_a_ring_of_puts(kind):
    W, mesh = 3, (1, 2)
    tm.enable(mesh=mesh)
    C = 2
    sk = T.dist.SignalKind(kind)
    dram = kind.startswith("dram")
    with tm.world(W):
        @T.prim_func
        def k(A: T.Tensor((C, N), "float32"), B: T.Tensor((C, 3 * N), "float32"),
              D: T.Tensor((C, 3 * N), "float32"), rank_id: T.dist.RankId):
            with T.Kernel(C, threads=1) as bx:
                src = T.alloc_shared((N,), "float32")
                dst = T.alloc_shared((3, N), "float32")
                s = T.dist.signal(kind=sk)
                T.copy(A[bx, 0:N], src)
                for it in T.serial(3):  # three rounds on one signal: generations 1, 2, 3
                    for j in T.serial(N):
                        src[j] = src[j] + T.float32(it)
                    if dram:
                        T.dist.put(src, D[bx, it * N:(it + 1) * N], (rank_id + 1) % W,
                                   signal=s, submit=True)
                    else:
                        T.dist.put(src, dst[it, 0:N], (rank_id + 1) % W, signal=s,
                                   submit=True)
                    T.dist.wait()
                    T.dist.wait_signal(s)
                if not dram:
                    for i, j in T.grid(3, N):
                        B[bx, i * N + j] = dst[i, j]
    kern = compile_mesh_kernel(k)
    A = inputs(W, mesh, 1)
    per = [[torch.from_numpy(a.copy()), torch.zeros(C, 3 * N), torch.zeros(C, 3 * N)]
           for a in A]
    kern.run_ranks(per, check_races=True)
    for r in range(W):
        p = A[(r - 1) % W]
        want = np.concatenate([p + 0, p + 1, p + 3], axis=1)
        got = per[r][2 if dram else 1].numpy()
        assert np.array_equal(got, want), (kind, r)


# -- point to point ------------------------------------------------------------------------------------
@pytest.mark.parametrize("W, mesh", [(2, (2, 2)), (3, (2, 3)), (4, (2, 2))])
def test_routed_and_cross_row_puts(W, mesh):
    NR, NC = mesh
    C = NR * NC
    tm.enable(mesh=mesh)
    with tm.world(W):
        @T.prim_func
        def k(A: T.Tensor((C, N), "float32"), B: T.Tensor((C, 2 * N), "float32"),
              rank_id: T.dist.RankId):
            with T.Kernel(C, threads=1) as bx:
                src = T.alloc_shared((N,), "float32")
                d1 = T.alloc_shared((N,), "float32")
                d2 = T.alloc_shared((N,), "float32")
                s = T.dist.signal()
                t = T.dist.signal()
                T.clear(d1)
                T.dist.barrier()
                T.copy(A[bx, 0:N], src)
                # row 0 of every column sends to the last row of the next rank
                T.dist.routed_put(src, d1, [[0, (rank_id + 1) % W, NR - 1]], signal=s,
                                  submit=True)
                # every core sends to the next row of the next rank
                T.dist.put(src, d2, (rank_id + 1) % W, dst_row=(bx // NC + 1) % NR,
                           signal=t, submit=True)
                T.dist.wait_signal(s)
                T.dist.wait_signal(t)
                T.copy(d1, B[bx, 0:N])
                T.copy(d2, B[bx, N:2 * N])
    kern = compile_mesh_kernel(k)
    A = inputs(W, mesh, 2)
    got = run(kern, A, (C, 2 * N))
    for r in range(W):
        p = A[(r - 1) % W]
        for c in range(C):
            row, col = divmod(c, NC)
            want1 = p[col] if row == NR - 1 else np.zeros(N, np.float32)
            assert np.array_equal(got[r][c, :N], want1), (r, c)
            assert np.array_equal(got[r][c, N:], p[((row - 1) % NR) * NC + col]), (r, c)


def test_puts_in_a_loop_to_every_other_rank():
    """dst_rank depends on the loop variable; the auto expectation counts every
    iteration's arrivals."""
    W, mesh = 4, (1, 2)
    tm.enable(mesh=mesh)
    with tm.world(W):
        @T.prim_func
        def k(A: T.Tensor((2, N), "float32"), B: T.Tensor((2, W * N), "float32"),
              rank_id: T.dist.RankId):
            with T.Kernel(2, threads=1) as bx:
                src = T.alloc_shared((N,), "float32")
                dst = T.alloc_shared((W, N), "float32")
                s = T.dist.signal()
                T.copy(A[bx, 0:N], src)
                T.copy(src, dst[rank_id, 0:N])
                for i in T.serial(W - 1):
                    T.dist.put(src, dst[rank_id, 0:N], (rank_id + i + 1) % W, signal=s)
                T.dist.submit()
                T.dist.wait_signal(s)
                for q, j in T.grid(W, N):
                    B[bx, q * N + j] = dst[q, j]
    kern = compile_mesh_kernel(k)
    A = inputs(W, mesh, 3)
    got = run(kern, A, (2, W * N))
    for r in range(W):
        assert np.array_equal(got[r], np.concatenate(A, axis=1))


# -- collectives in more forms ---------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_all_gather_axes(axis):
    W, mesh = 3, (2, 2)
    tm.enable(mesh=mesh)
    shape = {None: (W, N), 0: (W * N,), -1: (W * N,)}[axis]
    with tm.world(W):
        @T.prim_func
        def k(A: T.Tensor((4, N), "float32"), B: T.Tensor((4, W * N), "float32"),
              rank_id: T.dist.RankId):
            with T.Kernel(4, threads=1) as bx:
                src = T.alloc_shared((N,), "float32")
                dst = T.alloc_shared(shape, "float32")
                s = T.dist.signal()
                T.copy(A[bx, 0:N], src)
                T.dist.all_gather(src, dst, signal=s, axis=axis, submit=True)
                T.dist.wait_signal(s)
                if axis is None:
                    for q, j in T.grid(W, N):
                        B[bx, q * N + j] = dst[q, j]
                else:
                    T.copy(dst, B[bx, 0:W * N])
    got = run(compile_mesh_kernel(k), inputs(W, mesh, 4), (4, W * N))
    A = inputs(W, mesh, 4)
    for r in range(W):
        assert np.array_equal(got[r], np.concatenate(A, axis=1))


def test_all_gather_completion_drained_by_wait_any():
    W, mesh = 4, (1, 2)
    tm.enable(mesh=mesh)
    with tm.world(W):
        @T.prim_func
        def k(A: T.Tensor((2, N), "float32"), B: T.Tensor((2, W * N + W), "float32"),
              rank_id: T.dist.RankId):
            with T.Kernel(2, threads=1) as bx:
                src = T.alloc_shared((N,), "float32")
                dst = T.alloc_shared((W, N), "float32")
                sl = T.dist.signals(W)
                T.copy(A[bx, 0:N], src)
                c = T.dist.all_gather(src, dst, signals=sl, submit=True)
                while T.dist.has_pending(c):
                    i = T.dist.wait_any(c)
                    for j in T.serial(N):
                        B[bx, i * N + j] = dst[i, j]
                    B[bx, W * N + i] = B[bx, W * N + i] + T.float32(1)
                for j in T.serial(N):
                    B[bx, rank_id * N + j] = dst[rank_id, j]
    A = inputs(W, mesh, 5)
    got = run(compile_mesh_kernel(k), A, (2, W * N + W))
    for r in range(W):
        assert np.array_equal(got[r][:, :W * N], np.concatenate(A, axis=1))
        assert np.array_equal(got[r][:, W * N:], np.array([[float(q != r) for q in range(W)]] * 2))


@pytest.mark.parametrize("kind, dtype", [("sum", "float32"), ("max", "float32"),
                                         ("min", "float32"), ("sum", "int32"),
                                         ("max", "int32")])
def test_all_reduce_in_rank_order(kind, dtype):
    W, mesh = 4, (2, 2)
    tm.enable(mesh=mesh)
    with tm.world(W):
        @T.prim_func
        def k(A: T.Tensor((4, N), dtype), B: T.Tensor((4, N), dtype), rank_id: T.dist.RankId):
            with T.Kernel(4, threads=1) as bx:
                src = T.alloc_shared((N,), dtype)
                dst = T.alloc_shared((N,), dtype)
                s = T.dist.signal()
                T.copy(A[bx, 0:N], src)
                T.dist.all_reduce(src, dst, kind, signal=s)
                T.copy(dst, B[bx, 0:N])
    rng = np.random.default_rng(6)
    if dtype == "float32":  # values whose sum depends on the order: rank order it is
        A = [(rng.standard_normal((4, N)) * 10.0 ** rng.integers(-6, 6, (4, N))).astype(np.float32)
             for _ in range(W)]
    else:
        A = [rng.integers(-1000, 1000, (4, N)).astype(np.int32) for _ in range(W)]
    per = [[torch.from_numpy(a.copy()), torch.zeros(4, N, dtype=getattr(torch, dtype))]
           for a in A]
    compile_mesh_kernel(k).run_ranks(per, check_races=True)
    if kind == "sum":
        want = np.zeros_like(A[0])
        for a in A:
            want = (want + a).astype(A[0].dtype)
    else:
        want = (np.max if kind == "max" else np.min)(np.stack(A), axis=0)
    for r in range(W):
        assert np.array_equal(per[r][1].numpy(), want)


@pytest.mark.parametrize("domain", ["rank", "row"])
def test_all_to_all_domains(domain):
    W, mesh = 3, (2, 3)
    NR, NC = mesh
    C = NR * NC
    tm.enable(mesh=mesh)
    lead = (W,) if domain == "rank" else (W, NR)
    L = int(np.prod(lead))
    with tm.world(W):
        @T.prim_func
        def k(A: T.Tensor((C, N), "float32"), B: T.Tensor((C, L * N), "float32"),
              rank_id: T.dist.RankId):
            with T.Kernel(C, threads=1) as bx:
                src = T.alloc_shared(lead + (N,), "float32")
                dst = T.alloc_shared(lead + (N,), "float32")
                s = T.dist.signal()
                if domain == "rank":
                    for q, j in T.grid(W, N):
                        src[q, j] = A[bx, j] * 10 + q
                else:
                    for q, r1, j in T.grid(W, NR, N):
                        src[q, r1, j] = A[bx, j] * 10 + q * 3 + r1
                T.dist.all_to_all(src, dst, signal=s, domain=domain, submit=True)
                T.dist.wait_signal(s)
                if domain == "rank":
                    for q, j in T.grid(W, N):
                        B[bx, q * N + j] = dst[q, j]
                else:
                    for q, r1, j in T.grid(W, NR, N):
                        B[bx, (q * NR + r1) * N + j] = dst[q, r1, j]
    A = inputs(W, mesh, 7)
    got = run(compile_mesh_kernel(k), A, (C, L * N))
    for r, c, p in itertools.product(range(W), range(C), range(W)):
        row, col = divmod(c, NC)
        if domain == "rank":
            assert np.array_equal(got[r][c, p * N:(p + 1) * N], A[p][c] * 10 + r)
        else:
            for r1 in range(NR):
                e = (p * NR + r1) * N
                assert np.array_equal(got[r][c, e:e + N],
                                      A[p][r1 * NC + col] * 10 + r * 3 + row)


@pytest.mark.parametrize("mode", ["signal", "signals"])
def test_all_to_allv(mode):
    W, mesh = 4, (1, 2)
    C = 2
    tm.enable(mesh=mesh)
    with tm.world(W):
        @T.prim_func
        def k(A: T.Tensor((C, N), "float32"), B: T.Tensor((C, W * N), "float32"),
              rank_id: T.dist.RankId):
            with T.Kernel(C, threads=1) as bx:
                src = T.alloc_shared((W, N), "float32")
                dst = T.alloc_shared((W, N), "float32")
                sc = T.alloc_shared((W,), "int32")
                rc = T.alloc_shared((W,), "int32")
                for q, j in T.grid(W, N):
                    src[q, j] = A[bx, j] * 10 + q
                    dst[q, j] = T.float32(-1)
                for q in T.serial(W):
                    sc[q] = T.if_then_else((rank_id + q) % 2 == 0, 1, 0)
                    rc[q] = T.if_then_else((rank_id + q) % 2 == 0, 1, 0)
                T.dist.barrier()
                if mode == "signal":
                    s = T.dist.signal()
                    T.dist.all_to_allv(src, dst, send_counts=sc, recv_counts=rc, signal=s,
                                       submit=True)
                    T.dist.wait_signal(s)
                else:
                    sl = T.dist.signals(W)
                    c = T.dist.all_to_allv(src, dst, send_counts=sc, recv_counts=rc,
                                           signals=sl, submit=True)
                    T.dist.wait_all(c)
                for q, j in T.grid(W, N):
                    B[bx, q * N + j] = dst[q, j]
    A = inputs(W, mesh, 8)
    got = run(compile_mesh_kernel(k), A, (C, W * N))
    for r, p in itertools.product(range(W), range(W)):
        want = A[p] * 10 + r if (r + p) % 2 == 0 else -np.ones((C, N), np.float32)
        assert np.array_equal(got[r][:, p * N:(p + 1) * N], want), (r, p)


def test_manual_expectations():
    W, mesh = 3, (1, 2)
    tm.enable(mesh=mesh)
    with tm.world(W):
        @T.prim_func
        def k(A: T.Tensor((2, N), "float32"), B: T.Tensor((2, 2 * N), "float32"),
              rank_id: T.dist.RankId):
            with T.Kernel(2, threads=1) as bx:
                src = T.alloc_shared((N,), "float32")
                d0 = T.alloc_shared((N,), "float32")
                d1 = T.alloc_shared((N,), "float32")
                deltas = T.alloc_shared((2,), "int32")
                sl = T.dist.signals(2, expect="manual")
                ml = T.dist.signals(2, kind=T.dist.SignalKind.SRAM_FLAGREG_VALUE,
                                    expect="manual")
                T.copy(A[bx, 0:N], src)
                T.dist.put(src, d0, (rank_id + 1) % W, signal=sl[1], submit=True)
                deltas[0] = 0
                deltas[1] = 1
                T.dist.wait_signals(sl, expected_deltas=deltas)
                T.dist.put(d0, d1, (rank_id + 1) % W, signal=ml[0], submit=True)
                deltas[0] = 1
                deltas[1] = 0
                c = T.dist.completion(ml, expected_deltas=deltas)
                while T.dist.has_pending(c):
                    i = T.dist.wait_any(c)
                    B[bx, 2 * N - 1] = T.float32(i + 10)
                T.copy(d0, B[bx, 0:N])
                for j in T.serial(N - 1):
                    B[bx, N + j] = d1[j]
    A = inputs(W, mesh, 9)
    got = run(compile_mesh_kernel(k), A, (2, 2 * N))
    for r in range(W):
        assert np.array_equal(got[r][:, :N], A[(r - 1) % W])
        assert np.array_equal(got[r][:, N:2 * N - 1], A[(r - 2) % W][:, :N - 1])
        assert (got[r][:, 2 * N - 1] == 10).all()


def test_bench_tdist_quick(capsys, monkeypatch):
    """benchmarks/bench_tdist.py --quick runs, checks its result against NumPy and
    prints the ratio."""
    import pathlib
    import runpy
    import sys
    bench = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "bench_tdist.py"
    monkeypatch.setattr(sys, "argv", [str(bench), "--quick"])
    runpy.run_path(str(bench), run_name="__main__")
    out = capsys.readouterr().out
    assert "ring all_gather: 4 ranks x 2x2 cores, 0.0625 MiB per core" in out
    assert "ratio T.dist / numpy:" in out


def test_chip_to_chip_traffic_and_time():
    """A cross-row put per core, then a barrier: 16 puts of 32 B between chips (each
    with a one-hop leg on its chip to the egress core), 48 bare barrier signals."""
    from meshtensor import get_machine
    from meshtensor.tilelang import analyze_dist_communication
    W, mesh = 4, (2, 2)
    tm.enable(mesh=mesh)
    with tm.world(W):
        @T.prim_func
        def k(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4, 8), "float32"),
              rank_id: T.dist.RankId):
            with T.Kernel(4, threads=1) as bx:
                src = T.alloc_shared((8,), "float32")
                dst = T.alloc_shared((8,), "float32")
                s = T.dist.signal()
                T.copy(A[bx, 0:8], src)
                T.dist.put(src, dst, (rank_id + 1) % W, dst_row=(bx // 2 + 1) % 2, signal=s,
                           submit=True)
                T.dist.wait_signal(s)
                T.dist.barrier()
                T.copy(dst, B[bx, 0:8])
    t = analyze_dist_communication(compile_mesh_kernel(k))
    assert t.chip_bytes == 16 * 32 and t.chip_messages == 16 + 48
    assert t.onchip_bytes == 16 * 32 and t.onchip_byte_hops == 16 * 32
    # core (0, 0)'s put leaves by core (1, 0) and core (1, 0)'s by core (0, 0): every
    # link to the next rank carries one put and one barrier signal, the others a signal
    for (s, d, c), got in t.chip.items():
        assert got == ((32, 2) if d == (s + 1) % W else (0, 1)), (s, d, c)
    assert t.rank_bytes()[0] == (128, 128)
    m = get_machine("generic").replace(chip_link_bandwidth=32e9, chip_link_latency=1e-6)
    est = t.time(m)
    assert est["chip"] == pytest.approx(32 / 32e9 + 2e-6)
    assert "rank 0 -> 1 core (1, 0)" in t.table()


# -- meshtensor demo --tdist -----------------------------------------------------------------------
@pytest.mark.parametrize("width", [None, 60])
def test_demo_tdist_runs_checks_and_fits_its_width(width, capsys, monkeypatch):
    from meshtensor.cli import main
    monkeypatch.delenv("COLUMNS", raising=False)
    argv = ["demo", "--tdist", "--size", "64", "--repeat", "1"]
    assert main(argv + (["--width", str(width)] if width else [])) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert flat.count("equals NumPy's sum") == 2 and "DIFFERS" not in out
    assert "deadlock: every rank is blocked" in flat and "expected 2, current 1" in flat
    assert max(map(len, out.splitlines())) <= (width or 80)


def test_demo_tdist_refuses_other_modes(capsys):
    from meshtensor.cli import main
    assert main(["demo", "--tdist", "--spmdize"]) == 2
    assert "--tdist takes no other mode" in capsys.readouterr().err


def test_a_ranks_part_is_split_over_its_cores_as_the_kernel_splits_a_tensor():
    """A rank-sharded T.MeshTensor: each rank's balanced part (17 rows on 4 ranks: 5, 4,
    4, 4) is split over the cores again, balanced, into the kernel's slots."""
    from meshtensor import Mesh, Sharding
    from meshtensor.tilelang.ir.mesh_param import MeshParam
    from meshtensor.tilelang.runtime.dist_kernel import _rank_param
    mesh = Mesh({"row": 2, "col": 2})
    p = MeshParam("A", (17, 3), Sharding(mesh, [["row"], ["col"]],
                                         sharded_dims_offsets=[0, 9, 17, 0, 2, 3]), "float32")
    q = _rank_param(p, torch.zeros(5, 3))
    assert q.global_shape == (5, 3) and q.sharding.sharded_dims_offsets == (0, 3, 5, 0, 2, 3)
    assert _rank_param(p, torch.zeros(17, 3)) is p
    ceil = MeshParam("A", (17, 3), Sharding(mesh, [["row"], ["col"]]), "float32")
    assert _rank_param(ceil, torch.zeros(4, 3)).sharding == ceil.sharding


def test_an_on_chip_buffer_of_32768_elements_per_core():
    """A T.dist op's on-chip buffer lives in LowerMeshComm's workspace, one copy per
    core 32768 elements apart (TileLang's StorageRewrite stopped such a kernel: see
    test_lower_comm's 32768-element tests)."""
    W, M = 2, 32768
    tm.enable(mesh=(2, 2))
    with tm.world(W):
        @T.prim_func
        def k(A: T.Tensor((4, M), "float32"), B: T.Tensor((4, M), "float32"),
              rank_id: T.dist.RankId):
            with T.Kernel(4, threads=1) as bx:
                src = T.alloc_shared((M,), "float32")
                dst = T.alloc_shared((M,), "float32")
                s = T.dist.signal()
                T.copy(A[bx, 0:M], src)
                T.dist.put(src, dst, (rank_id + 1) % W, signal=s, submit=True)
                T.dist.wait_signal(s)
                T.copy(dst, B[bx, 0:M])
    A = [np.random.default_rng(r).standard_normal((4, M)).astype(np.float32)
         for r in range(W)]
    out = run(compile_mesh_kernel(k, compile_flags=["-O0"]), A, (4, M))
    for r in range(W):
        assert np.array_equal(out[r], A[(r - 1) % W])


# -- tensors split over ranks --------------------------------------------------------------------
def rank_sharded(W, D=17, mesh=(2, 2)):
    """``A`` and ``B`` split over the ranks along dim 0 (balanced), each rank's part
    over the mesh rows (balanced): ``B = 2 A + rank``; ``C[core]`` is the sum over the
    ranks of the rows core ``core`` holds (an all_reduce of its valid extent)."""
    tm.enable(mesh=mesh)
    C = mesh[0] * mesh[1]
    with tm.world(W):
        rp = T.dist.placement.shard(0)

        @T.prim_func
        def k(A: T.MeshTensor((D, N), T.placement.row_shard(0), T.float32, rank_placement=rp),
              B: T.MeshTensor((D, N), T.placement.row_shard(0), T.float32, rank_placement=rp),
              Cnt: T.Tensor((C, N), "float32"), rank_id: T.dist.RankId):
            with T.Kernel() as cid:
                lm, ln = A.local_shape
                s = T.alloc_shared((lm, ln), T.float32)
                T.copy(A, s)
                for i, j in T.grid(lm, ln):
                    s[i, j] = s[i, j] * 2 + T.float32(rank_id)
                T.copy(s, B)
                vm, vn = A.get_local_extent(cid, rank_id=rank_id)
                cnt = T.alloc_shared((N,), T.float32)
                tot = T.alloc_shared((N,), T.float32)
                for j in T.serial(N):
                    cnt[j] = T.float32(vm)
                if W > 1:
                    sig = T.dist.signal()
                    T.dist.all_reduce(cnt, tot, "sum", signal=sig)
                    T.copy(tot, Cnt[cid, 0:N])
                else:
                    T.copy(cnt, Cnt[cid, 0:N])
    return compile_mesh_kernel(k, check_races=True)


def rank_sharded_reference(a, W, D=17, mesh=(2, 2)):
    from meshtensor.tilelang.language.dist import rank_extents
    b = a.copy()
    cnt = np.zeros((mesh[0] * mesh[1], N), np.float32)
    for r, (lo, hi) in enumerate(rank_extents(D, W)):
        b[lo:hi] = a[lo:hi] * 2 + r
        rows = rank_extents(hi - lo, mesh[0])  # the rank's part over the mesh rows
        for c in range(mesh[0] * mesh[1]):
            x, y = rows[c // mesh[1]]
            cnt[c] += y - x
    return b, cnt


@pytest.mark.parametrize("W", [1, 2, 3, 4])
def test_a_tensor_split_over_ranks_runs_exactly(W):
    """17 rows over W ranks (4: 5, 4, 4, 4), each rank's part over the cores."""
    from meshtensor.tilelang.language.dist import rank_extents
    if W == 4:
        assert [hi - lo for lo, hi in rank_extents(17, 4)] == [5, 4, 4, 4]
    k = rank_sharded(W)
    a = np.random.default_rng(W).integers(-50, 50, (17, N)).astype(np.float32)
    b, cnt = torch.zeros(17, N), torch.zeros(4, N)
    k(torch.from_numpy(a), b, cnt)
    want_b, want_cnt = rank_sharded_reference(a, W)
    assert np.array_equal(b.numpy(), want_b) and np.array_equal(cnt.numpy(), want_cnt)


@pytest.mark.parametrize("D", [1, 3, 6])
def test_ranks_and_cores_whose_part_is_empty(D):
    """Fewer rows than ranks times mesh rows: some ranks or cores hold nothing."""
    k = rank_sharded(4, D)
    a = np.arange(D * N, dtype=np.float32).reshape(D, N)
    b, cnt = torch.zeros(D, N), torch.zeros(4, N)
    k(torch.from_numpy(a), b, cnt)
    want_b, want_cnt = rank_sharded_reference(a, 4, D)
    assert np.array_equal(b.numpy(), want_b) and np.array_equal(cnt.numpy(), want_cnt)


def test_rank_shape_and_extents_of_a_tensor_split_over_ranks():
    tm.enable(mesh=(2, 2))
    with tm.world(4):
        t = tm.MeshTensor((17, 32), T.placement.row_shard(0), (2, 2), T.bfloat16,
                          rank_placement=T.dist.placement.shard(0))
    assert t.rank_shape == (5, 32) and t.local_shape == (3, 32)
    assert [t.get_rank_extent(r)[0] for r in range(4)] == [5, 4, 4, 4]
    assert [t.get_local_extent(c, rank_id=0)[0] for c in range(4)] == [3, 3, 2, 2]
    assert t.get_local_extent(3, rank_id=3)[0] == 2
    with pytest.raises(ValueError, match="rank_id is required"):
        t.get_local_extent(0)
    with pytest.raises(ValueError, match=r"rank 4 out of range \[0, 4\)"):
        t.get_rank_extent(4)
    plain = tm.MeshTensor((17, 32), T.placement.row_shard(0), (2, 2), T.bfloat16)
    assert plain.rank_shape == (17, 32) and plain.get_rank_extent(2) == (17, 32)
