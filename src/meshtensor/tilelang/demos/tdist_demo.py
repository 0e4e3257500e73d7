"""``meshtensor demo --tdist``: an all-reduce over 4 chips of 2x2 cores written with
``T.dist`` puts (a ring: reduce-scatter, then all-gather), beside the same sum by
``T.dist.all_reduce``; both run in process and checked against NumPy, with the
chip-to-chip traffic each makes and the deadlock report of a broken variant."""

from __future__ import annotations

import statistics
import time

import numpy as np

from ..engine import compile_mesh_kernel
from ..language import tilelang_mesh as tm
from ..logs import quiet_tilelang
from ..runtime.dist_rank import DistDeadlockError
from ..runtime.dist_traffic import analyze_dist_communication
from .printer import Printer

WORLD = 4
MESH = (2, 2)


def kernels(W: int, mesh: tuple[int, int], B: int, broken: bool = False) -> tuple:
    """The ring all-reduce and the collective one, as ``T.prim_func`` s: every core
    holds ``W * B`` floats (``A``) and ends with their sum over the ranks (``Out``).
    ``broken``: each all-gather step waits for two arrivals (one comes)."""
    import tilelang.language as T

    C = mesh[0] * mesh[1]
    N = W * B
    want_back = 2 if broken else 1  # one put arrives per all-gather step
    tm.enable(mesh=mesh)
    with tm.world(W):
        @T.prim_func
        def ring(A: T.Tensor((C, N), "float32"), Out: T.Tensor((C, N), "float32"),
                 rank_id: T.dist.RankId):
            with T.Kernel(C, threads=1) as bx:
                acc = T.alloc_shared((N,), "float32")
                recv = T.alloc_shared((W - 1, B), "float32")  # one per step: no reuse
                got = T.dist.signal()
                back = T.dist.signals(1, expect="manual")
                T.copy(A[bx, 0:N], acc)
                # reduce-scatter: step s sends chunk (r - s) % W to the next chip and
                # adds the chunk the previous chip sent into chunk (r - 1 - s) % W
                for s in T.serial(W - 1):
                    c = (rank_id + W - s) % W
                    T.dist.put(acc[c * B:(c + 1) * B], recv[s, 0:B], (rank_id + 1) % W,
                               signal=got, submit=True)
                    T.dist.wait_signal(got)
                    d = (rank_id + 2 * W - 1 - s) % W
                    for j in T.serial(B):
                        acc[d * B + j] = acc[d * B + j] + recv[s, j]
                # all-gather: chunk (r + 1 - s) % W, complete here, goes to the next chip
                for s in T.serial(W - 1):
                    c = (rank_id + 1 + W - s) % W
                    T.dist.put(acc[c * B:(c + 1) * B], acc[c * B:(c + 1) * B],
                               (rank_id + 1) % W, signal=back[0], submit=True)
                    T.dist.wait_signal(back[0], expected_delta=want_back)
                T.copy(acc, Out[bx, 0:N])

        @T.prim_func
        def collective(A: T.Tensor((C, N), "float32"), Out: T.Tensor((C, N), "float32"),
                       rank_id: T.dist.RankId):
            with T.Kernel(C, threads=1) as bx:
                src = T.alloc_shared((N,), "float32")
                dst = T.alloc_shared((N,), "float32")
                s = T.dist.signal()
                T.copy(A[bx, 0:N], src)
                T.dist.all_reduce(src, dst, "sum", signal=s)
                T.copy(dst, Out[bx, 0:N])
    return ring, collective


def _traffic_lines(name: str, kernel) -> list[str]:
    t = analyze_dist_communication(kernel)
    est = t.time()
    sent = t.rank_bytes()
    return [f"{name:<14s} {t.chip_bytes:>10d} {t.chip_messages:>9d} {sent[0][0]:>12d} "
            f"{est['chip'] * 1e6:>10.2f}"]


def main(size: int = 256, repeat: int = 3, width: int = 80) -> int:
    """Compile, run and check both all-reduces (``size`` floats per core, rounded up to
    a multiple of the world); print their traffic within ``width`` columns."""
    import torch

    out = Printer(width)
    W, (NR, NC) = WORLD, MESH
    C = NR * NC
    B = max(1, -(-size // W))
    N = W * B
    out.say(f"meshtensor demo --tdist: {W} chips of {NR}x{NC} cores; every core holds "
            f"{N} float32 and needs their sum over the chips. Two T.dist kernels:")
    out.say("ring: a ring of T.dist.put (reduce-scatter, then all-gather: 2 x "
            f"{W - 1} steps of {B} floats to the next chip, each waited for by "
            "T.dist.wait_signal);", indent="  ")
    out.say("collective: T.dist.all_reduce(src, dst, 'sum') (the ranks' values added "
            "in rank order).", indent="  ")
    ring, coll = kernels(W, MESH, B)
    t0 = time.perf_counter()
    with quiet_tilelang():
        k_ring = compile_mesh_kernel(ring)
        k_coll = compile_mesh_kernel(coll)
    out.say(f"compiled both in {time.perf_counter() - t0:.1f} s (LowerDist, LowerMeshComm, "
            "TileLang's C back end; one binary per kernel serves every rank)")
    rng = np.random.default_rng(0)
    A = [rng.integers(-8, 9, (C, N)).astype(np.float32) for _ in range(W)]  # exact sums
    want = np.sum(np.stack(A), axis=0)
    ok = True
    out.say("")
    for name, k in (("ring", k_ring), ("collective", k_coll)):
        times = []
        for i in range(max(1, repeat)):
            per = [[torch.from_numpy(a.copy()), torch.zeros(C, N)] for a in A]
            t0 = time.perf_counter()
            k.run_ranks(per, check_races=(i == 0))  # the first run is checked
            times.append(time.perf_counter() - t0)
        good = all(np.array_equal(p[1].numpy(), want) for p in per)
        ok &= good
        out.say(f"{name}: every rank's result {'equals' if good else 'DIFFERS FROM'} "
                f"NumPy's sum; {statistics.median(times) * 1e3:.1f} ms per call (median "
                f"of {len(times)}, the first checked for races: both delivery orders "
                f"agree)")
    out.say("\nchip-to-chip traffic (analyze_dist_communication; chip time: the busiest "
            "link at the assumed 25 GB/s and 1 us per message, not measured):")
    out.block([f"{'kernel':<14s} {'bytes':>10s} {'messages':>9s} {'rank 0 sent':>12s} "
               f"{'chip us':>10s}"] + _traffic_lines("ring", k_ring) +
              _traffic_lines("collective", k_coll))
    out.say(f"the ring moves half the bytes of the collective ({2 * (W - 1)}/{W} of "
            f"each chip's data against {W - 1}) but all on the link to the next chip, in "
            f"{2 * (W - 1)} messages; the collective spreads its puts over the {W - 1} "
            "links to the other chips (the model has a link between every pair of "
            "chips), one message each")
    out.say("\na broken ring (each all-gather step waits for two puts; one comes) is "
            "reported, not hung:")
    broken, _ = kernels(W, MESH, B, broken=True)
    with quiet_tilelang():
        k_bad = compile_mesh_kernel(broken)
    per = [[torch.from_numpy(a.copy()), torch.zeros(C, N)] for a in A]
    try:
        k_bad.run_ranks(per)
    except DistDeadlockError as e:
        out.block(str(e).splitlines())
    else:
        out.say("NO DEADLOCK REPORTED")
        ok = False
    return 0 if ok else 1
