"""``meshtensor demo --tilelang-mesh``: the GEMM of Tilelang-Mesh's examples (written for
the SUNMMIO chip), run unchanged on a 4x4 mesh emulated on the CPU, checked against
NumPy, with the traffic the chip would carry."""

from __future__ import annotations

import statistics
import time

import numpy as np

from ..analysis.traffic import (DEFAULT_HOP_LATENCY, DEFAULT_LINK_BANDWIDTH,
                                analyze_mesh_communication)
from ..engine import compile_mesh_kernel
from ..ir.comm_op import DISPLAY, find_comm_ops
from ..kernels.tilelang_mesh_gemm import matmul
from ..language import tilelang_mesh as tm
from ..logs import quiet_tilelang
from ...text import plural
from .printer import Printer

MESH = (4, 4)
_WORD = {(1,): "h", (0,): "v", (0, 1): "all"}


def traffic_lines(kernel) -> list[str]:
    """Per comm statement: executions, transfers and bytes per execution; then totals
    (lines of at most 80 columns)."""
    report = analyze_mesh_communication(kernel)
    ops = find_comm_ops(kernel)
    lines = [f"{'#':>2s} {'statement':<46s} {'execs':>6s} {'xfers':>6s} {'bytes/exec':>11s}"]
    for o in ops:
        steps = [s for s in report.supersteps if s.statement.startswith(f"comm {o.index}:")]
        execs = len({s.execution for s in steps})
        first = [s for s in steps if s.execution == 0]
        what = (f"{DISPLAY.get(o.op, o.op)} {o.src.buffer.name} -> {o.dst.buffer.name} "
                f"{_WORD.get(tuple(o.mesh_axes), '')}")
        lines.append(f"{o.index:>2d} {what:<46.46s} {execs:>6d} "
                     f"{sum(s.flows for s in first):>6d} {sum(s.nbytes for s in first):>11d}")
    lines.append(f"total: {plural(len(report.supersteps), 'superstep')}, {report.comm_bytes} "
                 f"bytes between "
                 f"cores, busiest link {report.max_link_bytes()} bytes,")
    lines.append(f"NoC estimate {report.noc_time() * 1e6:.1f} us (assumed "
                 f"{DEFAULT_LINK_BANDWIDTH / 1e9:g} GB/s per link, "
                 f"{DEFAULT_HOP_LATENCY * 1e9:g} ns per hop; not measured)")
    return lines


def main(size: int = 512, repeat: int = 3, width: int = 80, dtype: str = "bfloat16") -> int:
    """Compile, run and check the fork's GEMM on a 4x4 mesh, in the fork's default
    ``bfloat16`` operands (``dtype``) with a ``float32`` accumulator; print its traffic
    within ``width`` columns."""
    import torch

    out = Printer(width)

    mesh = tm.enable(mesh=MESH)
    n = MESH[0]
    M = N = K = size
    shard = -(-size // n)
    bm = min(32, shard)
    bk = min(16, shard)
    out.say("meshtensor demo --tilelang-mesh: the GEMM of Tilelang-Mesh's examples, as is,")
    out.say(f"on a {mesh} mesh: C = A @ B, {M}x{N}x{K}, {dtype} A and B, float32 C,")
    out.say(f"all T.MeshTensor with MeshShardingPolicy(y=0, x=1) ({shard}x{shard} shards),")
    out.say(f"{bm}x{bm} tiles of C, k steps of {bk} in T.Pipelined, each an all_gather of")
    out.say("A's tiles along the row and of B's down the column, then T.gemm into a")
    out.say("core-private float32 accumulator")
    func = matmul(M, N, K, bm, bm, bk, num_stages=2, dtype=dtype)
    t0 = time.perf_counter()
    with quiet_tilelang():
        kernel = compile_mesh_kernel(func)
    out.say(f"compiled in {time.perf_counter() - t0:.1f} s (PrepareTilelangMesh, "
          f"LowerMeshComm, TileLang's C backend)")
    rng = np.random.default_rng(0)
    # integer values: every product and sum exact in float32 (and every input exact in
    # bfloat16), so the check is bit for bit
    a = rng.integers(-4, 5, (M, K)).astype(np.float32)
    b = rng.integers(-4, 5, (K, N)).astype(np.float32)
    want = a @ b
    ta = torch.from_numpy(a).to(getattr(torch, dtype))
    tb = torch.from_numpy(b).to(getattr(torch, dtype))
    times = []
    for _ in range(max(1, repeat)):
        c = torch.zeros(M, N)
        t0 = time.perf_counter()
        kernel(ta, tb, c)
        times.append(time.perf_counter() - t0)
    ok = np.array_equal(c.numpy(), want)
    out.say(f"result {'equals' if ok else 'DIFFERS FROM'} NumPy (integer-valued data: exact)")
    out.say(f"{statistics.median(times) * 1e3:.1f} ms per call (median of {len(times)}; one CPU "
          f"thread runs the {mesh.size} cores)")
    out.say("\ntraffic on the chip (analyze_mesh_communication; a gather along a row or "
          "column")
    out.say("is one multicast per core, one transfer per receiver):")
    out.block(traffic_lines(kernel))
    return 0 if ok else 1
