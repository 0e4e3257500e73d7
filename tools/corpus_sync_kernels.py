"""Run the corpus's three sync kernels once, outside the test suite, and check them.

The older fork's ``func_sync_kernel`` (testing/python/target/test_sunmmio_codegen_
skeleton.py) and ``kernel_sync`` (testing/python/compile_pipeline/test_sync.py), and the
current upstream's ``kernel_sync`` (testing/python/sunmmio/pipeline/test_sync.py) multiply
hard-coded 1024x1024 float16 buffers on every core (a 1024^3 T.gemm per block): no size
parameter makes them smaller, and one run takes minutes here, so they are not corpus
cases of the suite (docs/tilelang_mesh.md, "The corpus"). This runs each as the corpus
would (``tm.enable(mesh=(4, 4))``, import lines changed only, on-chip buffers observed)
and checks what the kernel defines: on row 0, after rounds of a row broadcast from
core (0, 0) and an increment, D_shared = E_shared = zeros but [0, 0] (10 where each
core runs one tile step, 50 for the upstream's, which walks 16). The rest
(the T.gemm's C_shared, never cleared, read from A_shared and B_shared, never written;
D_shared elsewhere) has no defined value.

    python tools/corpus_sync_kernels.py [KERNEL ...]   (default: all three)

Prints compile and run seconds and one line per kernel; exits 1 if a check fails.
"""
from __future__ import annotations

import argparse
import importlib.util
import pathlib
import sys
import time

import numpy as np

CORPUS = pathlib.Path(__file__).resolve().parents[1] / "tests" / "tilelang_layer" / "corpus"
#: kernel -> (corpus module, factory, its arguments, the caller's tensor shapes, the
#: value row 0's D_shared[0, 0] and E_shared[0, 0] end with)
KERNELS = {
    # the test's own arguments (256^3, 64^3 tiles: a 4x4 grid)
    "skeleton": ("fork_skeleton_sync", "func_sync_kernel", (256, 256, 256, 64, 64, 64),
                 {n: (256, 256) for n in "ABC"}, 10),
    # the test's is (16384,) * 3 + (1024,) * 3: 16384^2 float16 tensors the kernel never
    # reads; these keep its T.Persistent tile domain (4x4 per core) and launch T.Kernel(16)
    "compile_pipeline": ("fork_cp_sync", "kernel_sync", (4096, 4096, 4096, 256, 256, 256),
                         {n: (4096, 4096) for n in "ABC"}, 10),
    # the current upstream's (pipeline/test_sync.py): the same body under T.Kernel(),
    # the test's (16384,) * 3 + (1024,) * 3 shrunk the same way (4x4 tiles per core).
    # Each core walks all 16 tile steps (the fork's T.Persistent gives each core one):
    # D_shared is cleared on the 12 steps with bx <= 2, then the 4 steps of bx = 3 add
    # their 10 rounds to it: 10 + 4 * 10
    "upstream_pipeline": ("upstream_sync", "kernel_sync", (4096, 4096, 4096, 256, 256, 256),
                          {n: (4096, 4096) for n in "ABC"}, 50),
}


def _harness():
    spec = importlib.util.spec_from_file_location("tm_corpus_harness", CORPUS / "harness.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def run(name: str) -> bool:
    """Compile and run kernel ``name`` once; True when row 0's D and E are as defined."""
    from meshtensor.tilelang import compile_mesh_kernel
    from meshtensor.tilelang import tilelang_mesh as tm

    harness = _harness()
    module, factory, args, shapes, last = KERNELS[name]
    tm.enable(mesh=(4, 4))
    func = harness.observe(getattr(harness.load(module), factory)(*args),
                           ["D_shared", "E_shared"])
    t0 = time.perf_counter()
    kernel = compile_mesh_kernel(func, compile_flags=["-O1"])
    t1 = time.perf_counter()
    inp = harness.make_inputs(func, shapes, np.random.default_rng(0))
    t2 = time.perf_counter()
    kernel(*inp.tensors)
    t3 = time.perf_counter()
    want = np.zeros((1024, 1024), np.float32)
    want[0, 0] = last
    got = {(b, core): harness.as_np(inp.obs[b])[core]
           for b in ("D_shared", "E_shared") for core in range(4)}
    ok = all(np.array_equal(g, want) for g in got.values())
    print(f"{name}: {factory}{args}: compiled in {t1 - t0:.0f} s, ran in {t3 - t2:.0f} s; "
          f"row 0's D_shared and E_shared {'as defined' if ok else 'DIFFER'}")
    if not ok:
        for (b, core), g in got.items():
            print(f"  {b} core (0, {core}): [0, 0] = {g[0, 0]} (want {last}), "
                  f"{int(np.count_nonzero(g != want))} cells differ")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="*", metavar="KERNEL",
                        help=f"any of {list(KERNELS)} (default: all)")
    names = parser.parse_args(argv).kernels or list(KERNELS)
    unknown = [k for k in names if k not in KERNELS]
    if unknown:
        parser.error(f"unknown kernel {unknown[0]!r}; choose from {list(KERNELS)}")
    ok = [run(k) for k in names]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
