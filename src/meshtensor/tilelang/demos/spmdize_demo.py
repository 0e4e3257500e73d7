"""``meshtensor demo --spmdize``: a global-view GEMM kernel, the communication
:func:`~meshtensor.tilelang.transform.spmdize.spmdize` chose for each of its copies, and both
kernels compiled, run and compared bit for bit."""

from __future__ import annotations

import time

import numpy as np

from ..logs import quiet_tilelang
from .printer import Printer

GLOBAL_VIEW = ("summa", "cannon", "local")


def kernel_text(func) -> str:
    """The kernel's TVMScript without the (long) ``mesh_tensor_info`` attribute line."""
    return "\n".join(line for line in func.script().splitlines()
                     if "T.func_attr" not in line and line.strip())


def _time(kernel, args, repeat: int) -> float:
    times = []
    for _ in range(max(repeat, 1)):
        t0 = time.perf_counter()
        kernel(*args)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(size: int = 512, algorithm: str = "summa", repeat: int = 3, target: str = "c",
         show_kernel: bool = False, width: int = 80) -> int:
    """Spmdize the global-view ``algorithm`` (``summa``, ``cannon`` or ``local``; a
    ``*_comm`` name means its global-view twin) on a 4x4 mesh, print one line per copy
    (and the input kernel's TIR with ``show_kernel``, ``demo --spmdize --tir``), compile
    and run both on CPU and compare them bit for bit.

    Returns 0 when the outputs are equal and the output touches only its own shards.
    Output fits ``width`` columns.
    """
    import torch

    out = Printer(width)

    from ..ir.comm_op import find_comm_ops
    from ..kernels.gemm import build_gemm
    from ..engine import compile_mesh_kernel
    from ..analysis.traffic import analyze_mesh_communication
    from ..analysis.verify import verify_mesh_tensors
    from ..transform.spmdize import plan_mesh_copies, spmdize

    base = algorithm[:-len("_comm")] if algorithm.endswith("_comm") else algorithm
    if base not in GLOBAL_VIEW:
        raise ValueError(f"demo --spmdize: algorithm {algorithm!r} has no global-view kernel; "
                         f"choose one of {list(GLOBAL_VIEW)}")
    if target != "c":
        raise ValueError(f"demo --spmdize: runs on CPU (target 'c'), got target {target!r}")
    M = N = K = size
    out.say(f"meshtensor demo --spmdize: the global-view {base} GEMM C = A @ B, {M}x{N}x{K} "
          f"float32, on a 4x4 mesh of cores, made explicit-communication by "
          f"SpmdizeMeshCopies")
    func = build_gemm(base, M, N, K)
    if show_kernel:
        out.say("\ninput kernel (every core reads the tiles it needs, wherever they live):")
        out.block(kernel_text(func))
    else:
        out.say("(every core of the input kernel reads the tiles it needs, wherever they "
                "live; --tir prints its TIR)")
    out.say("\ncommunication chosen per copy:")
    for plan in plan_mesh_copies(func):
        out.say(f"  copy {plan.index}: {plan}", indent="    ")
    t0 = time.perf_counter()
    spmd = spmdize(func)
    t_pass = time.perf_counter() - t0
    ops = find_comm_ops(spmd)
    out.say(f"\noutput kernel: {len(ops)} comm statements "
          f"({', '.join(o.op for o in ops) or 'none'}), spmdize took {t_pass * 1e3:.0f} ms")
    before, after = verify_mesh_tensors(func, owner_only=True), \
        verify_mesh_tensors(spmd, owner_only=True)
    out.say(f"VerifyMeshTensors(owner_only=True): input {len(before)} issue(s) "
          f"(cores read other cores' shards), output "
          f"{'ok' if not after else '; '.join(i.message for i in after)}")
    rb, ra = analyze_mesh_communication(func), analyze_mesh_communication(spmd)
    extra = ra.remote_bytes - rb.remote_bytes
    out.say(f"bytes between cores: input reads {rb.remote_bytes} remote bytes, output "
          f"receives {ra.remote_bytes} through comm ops" +
          (f" (+{extra}: comm ops move whole staging tiles, zero padding at the tensor's "
           f"edges included, and a shift moves every core's held tile, also back to its "
           f"owner)" if extra > 0 else ""))
    with quiet_tilelang():
        t0 = time.perf_counter()
        k_in = compile_mesh_kernel(func)
        t1 = time.perf_counter()
        k_out = compile_mesh_kernel(spmd)
        t2 = time.perf_counter()
    out.say(f"\ncompiled: input {t1 - t0:.1f} s, output {t2 - t1:.1f} s")
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    c_in, c_out = torch.zeros((M, N)), torch.zeros((M, N))
    k_in(ta, tb, c_in)
    k_out(ta, tb, c_out)
    same = torch.equal(c_in, c_out)
    err = float(np.abs(c_out.numpy() - a @ b).max())
    out.say(f"result: output {'equals' if same else 'DIFFERS FROM'} the input kernel bit for "
          f"bit; max abs error vs NumPy {err:.2e}")
    s_in, s_out = _time(k_in, (ta, tb, c_in), repeat), _time(k_out, (ta, tb, c_out), repeat)
    flops = 2.0 * M * N * K
    out.say(f"time: input {s_in * 1e3:.2f} ms ({flops / s_in / 1e9:.3g} GFLOP/s), output "
          f"{s_out * 1e3:.2f} ms ({flops / s_out / 1e9:.3g} GFLOP/s), median of {repeat}")
    return 0 if same and not after else 1
