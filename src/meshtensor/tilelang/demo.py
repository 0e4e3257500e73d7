"""``meshtensor demo``: SUMMA GEMM on a 4x4 mesh of cores, compiled, run and explained."""

from __future__ import annotations

import os
import time

import numpy as np

from ..sharding import Sharding
from .frontend import read_mesh_tensor_info
from .gemm import compile_gemm, run_gemm
from .passes import analyze_mesh_communication, verify_mesh_tensors


def block_map(entries: dict, mesh) -> str:
    """Which block of A, B and C sits on which core, drawn as the mesh grid."""
    lines = []
    for name, e in entries.items():
        s: Sharding = e.sharding
        starts, stops = s.regions(e.global_shape)
        lines.append(f"{name} {e.global_shape} sharding {e.sharding.spec()} ({s}), tile "
                     f"{e.tile_shape}:")
        for x in range(mesh.shape[0]):
            cells = []
            for y in range(mesh.shape[1]):
                d = mesh.linear_index((x, y))
                cells.append("[" + ",".join(f"{a}:{b}" for a, b in zip(starts[d], stops[d])) + "]")
            w = max(len(c) for c in cells)
            lines.append("   " + " ".join(c.ljust(w) for c in cells))
    return "\n".join(lines)


def main(size: int = 512, target: str = "c", algorithm: str = "summa", repeat: int = 3) -> int:
    """Compile, verify and time the GEMM; print layouts, traffic and GFLOP/s."""
    if target == "cuda":
        import torch
        if not torch.cuda.is_available():
            print("meshtensor demo: --target cuda needs a CUDA GPU; none is visible")
            return 2
    M = N = K = size
    print(f"meshtensor demo: {algorithm.upper()} GEMM C = A @ B, {M}x{N}x{K} float32, "
          f"one program per core of a 4x4 mesh, target {target!r}")
    t0 = time.perf_counter()
    kernel = compile_gemm(algorithm, M, N, K, mesh=4, target=target)
    print(f"compiled in {time.perf_counter() - t0:.1f} s")
    info = read_mesh_tensor_info(kernel)
    mesh = next(iter(info.values())).mesh
    print("\nlayout (global rows:cols of each core's block; core (x, y), x down, y across)")
    print(block_map(info, mesh))
    issues = verify_mesh_tensors(kernel)
    print(f"\nVerifyMeshTensors: {'ok, every copy moves whole blocks of one core' if not issues else issues}")
    report = analyze_mesh_communication(kernel)
    print("\nAnalyzeMeshCommunication: bytes per core (reads of A and B, writes of C)")
    print(report.table())
    if target == "c":
        import torch
        torch.set_num_threads(1)  # the C backend runs the 16 programs on one thread
    run = run_gemm(algorithm, M, N, K, mesh=4, target=target, repeat=repeat, kernel=kernel)
    ok = run.max_abs_error <= 1e-3 * max(1.0, np.sqrt(K))
    print(f"\nresult vs NumPy: max abs error {run.max_abs_error:.2e} "
          f"({'ok' if ok else 'WRONG'})")
    print(f"time {run.seconds * 1e3:.1f} ms, {run.gflops:.1f} GFLOP/s "
          f"(pid {os.getpid()}, median of {repeat})")
    return 0 if ok and not issues else 1
