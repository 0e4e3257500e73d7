"""``meshtensor demo``: a distributed-memory SUMMA GEMM on a 4x4 mesh of cores (cores
exchange tiles through comm ops), compiled, checked, run and explained."""

from __future__ import annotations

import time

import numpy as np

from ...sharding import Sharding
from ...text import pack
from ..ir.metadata import read_mesh_tensor_info
from ..logs import quiet_tilelang
from ..analysis.traffic import (DEFAULT_HOP_LATENCY, DEFAULT_LINK_BANDWIDTH,
                                analyze_mesh_communication)
from ..analysis.verify import verify_mesh_tensors
from .printer import Printer

MESH_SIDE = 4


def block_map(entries: dict, mesh, width: int = 80) -> str:
    """Which block of each tensor sits on which core, drawn as the mesh grid (rows are
    mesh axis 0, columns axis 1; every column of cells has one width); where the grid
    is wider than ``width``, each mesh row's cells are listed on lines of their own."""
    lines = []
    for name, e in entries.items():
        s: Sharding = e.sharding
        starts, stops = s.regions(e.global_shape)
        lines += pack([f"{name} {e.global_shape}", f"sharding {e.sharding.spec()} ({s}),",
                       f"tile {e.tile_shape}:"], width, indent="   ")
        cells = [["[" + ", ".join(f"{a}:{b}" for a, b in zip(starts[d], stops[d])) + "]"
                  for d in (mesh.linear_index((x, y)) for y in range(mesh.shape[1]))]
                 for x in range(mesh.shape[0])]
        widths = [max(len(row[y]) for row in cells) for y in range(mesh.shape[1])]
        grid = ["   " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
                for row in cells]
        if max(map(len, grid)) <= width:
            lines += grid
            continue
        for x, row in enumerate(cells):
            lines += pack(row, width, first=f"   x={x}: ", indent="        ", sep="  ")
    return "\n".join(lines)


def _rate(flops: float, seconds: float) -> str:
    """Time and rate with enough digits to be non-zero for tiny sizes."""
    t = f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"
    g = flops / seconds / 1e9 if seconds > 0 else float("inf")
    return f"{t}, {g:.3g} GFLOP/s"


HOPS_NOTE = ("'N hop' columns: the core's bytes exchanged with other cores (reads and writes "
             "of their shards, tiles it receives by comm ops) whose route crosses N links "
             "(XY routing: along x first, then y; no wraparound links).")


def main(size: int = 512, target: str = "c", algorithm: str = "summa_comm", repeat: int = 3,
         width: int = 80) -> int:
    """Compile, verify and time the GEMM; print layouts, traffic, link loads and GFLOP/s
    within ``width`` columns."""
    out = Printer(width)
    if target == "cuda":
        import torch
        if not torch.cuda.is_available():
            out.say("meshtensor demo: --target cuda needs a CUDA GPU; none is visible")
            return 2
    from ..kernels.gemm import compile_gemm, run_gemm
    M = N = K = size
    comm = algorithm.endswith("_comm")
    out.say(f"meshtensor demo: {algorithm} GEMM C = A @ B, {M}x{N}x{K} float32, one program "
          f"per core of a {MESH_SIDE}x{MESH_SIDE} mesh, target {target!r}")
    if comm:
        out.say("every core loads only its own tiles of A and B from global memory, receives "
              "what it needs from other cores through comm ops, and writes only its own "
              "tile of C")
    t0 = time.perf_counter()
    with quiet_tilelang():
        # the *_comm kernels compile through compile_mesh_kernel (LowerMeshComm)
        kernel = compile_gemm(algorithm, M, N, K, mesh=MESH_SIDE, target=target)
    out.say(f"compiled in {time.perf_counter() - t0:.1f} s")
    info = read_mesh_tensor_info(kernel)
    mesh = next(iter(info.values())).mesh
    out.say("\nlayout (global rows:cols of each core's block; core (x, y), x down, y across)")
    out.block(block_map(info, mesh, width))
    issues = verify_mesh_tensors(kernel, owner_only=comm)
    what = ("ok, every core touches only its own shards of A, B and C" if comm else
            "ok, every copy moves whole blocks of one core")
    out.say(f"\nVerifyMeshTensors(owner_only={comm}): "
          f"{what if not issues else '; '.join(i.message for i in issues)}")
    report = analyze_mesh_communication(kernel)
    out.say("\nAnalyzeMeshCommunication: bytes per core. 'local' = its own shards of A, B, C in "
          "global memory; 'remote' = other cores' shards"
          + ("; 'comm' = tiles received from / sent to other cores by comm ops" if comm else ""))
    out.say(HOPS_NOTE)
    out.block(report.table(width=width))
    out.say(f"\nsupersteps (one execution of one {'comm op' if comm else 'copy'} by all cores): "
          f"bytes between cores, transfers, bytes on the busiest directed link, estimated NoC "
          f"time (assumed {DEFAULT_LINK_BANDWIDTH / 1e9:g} GB/s per link, "
          f"{DEFAULT_HOP_LATENCY * 1e9:g} ns per hop: not measured)")
    out.block(report.superstep_table(width=width))
    if target == "c":
        import torch
        torch.set_num_threads(1)  # the C backend runs the 16 programs on one thread
    run = run_gemm(algorithm, M, N, K, mesh=MESH_SIDE, target=target, repeat=repeat, kernel=kernel)
    ok = run.max_abs_error <= 1e-3 * max(1.0, np.sqrt(K))
    out.say(f"\nresult vs NumPy: max abs error {run.max_abs_error:.2e} "
          f"({'ok' if ok else 'WRONG'})")
    runs = f"{repeat} run{'s' if repeat != 1 else ''}"
    out.say(f"time {_rate(2.0 * M * N * K, run.seconds)} (median of {runs} on the simulated "
          f"mesh: one CPU thread runs the 16 programs)")
    return 0 if ok and not issues else 1
