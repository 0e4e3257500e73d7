"""Helpers cost nothing: a kernel written with mesh_tensor_functions lowers to the same
TIR, and compiles in the same time, as the same kernel written by hand.

    python benchmarks/bench_frontend.py [--quick]

Baseline: the hand-written kernel, built and compiled in the same run. Prints whether
the two are structurally equal (after dropping the metadata attribute) and the ratios
of the median build (parse) and compile times. ``--quick`` builds and compiles each
once, TileLang's cache on (a test runs it, so a broken benchmark fails the suite).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _timing import timeit  # noqa: E402

import tilelang  # noqa: E402
import tilelang.language as T  # noqa: E402
import tvm  # noqa: E402

from meshtensor.tilelang import mesh_tensor_functions, quiet_tilelang  # noqa: E402

M, N, K = 256, 256, 256
FLAGS = ["-O3", "-march=native"]


def with_helpers():
    f = mesh_tensor_functions({"x": 4, "y": 4})
    annotate, tile = f["annotate_mesh_tensor_info"], f["get_tile_shape"]
    mcopy, init = f["mesh_tensor_copy"], f["init_mesh_tensor_info"]

    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"),
             C: T.Tensor((M, N), "float32")):
        annotate({A: init({"x": 0}, (M // 4, K)), B: init({"y": 1}, (K, N // 4)),
                  C: init({"x": 0, "y": 1}, (M // 4, N // 4))})
        with T.Kernel(4, 4, threads=1) as (bx, by):
            As = T.alloc_shared(tile(A), "float32")
            Bs = T.alloc_shared(tile(B), "float32", scope="shared")
            Cl = T.alloc_local(tile(C), "float32")
            T.clear(Cl)
            mcopy(A, As, src_coord=(bx, 0))
            mcopy(B, Bs, src_coord=(0, by))
            T.gemm(As, Bs, Cl)
            mcopy(Cl, C, dst_coord=(bx, by))

    return gemm


def by_hand():
    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(4, 4, threads=1) as (bx, by):
            As = T.alloc_shared((M // 4, K), "float32")
            Bs = T.alloc_shared((K, N // 4), "float32", scope="shared")
            Cl = T.alloc_local((M // 4, N // 4), "float32")
            T.clear(Cl)
            T.copy(A[bx * (M // 4):bx * (M // 4) + M // 4, 0:K], As)
            T.copy(B[0:K, by * (N // 4):by * (N // 4) + N // 4], Bs)
            T.gemm(As, Bs, Cl)
            T.copy(Cl, C[bx * (M // 4):bx * (M // 4) + M // 4, by * (N // 4):by * (N // 4) + N // 4])

    return gemm


def main(quick: bool = False) -> None:
    h, b = with_helpers(), by_hand()
    equal = tvm.ir.structural_equal(h.without_attr("mesh_tensor_info"), b)
    print(f"same TIR (structural_equal, metadata attribute dropped): {equal}")
    repeat = 1 if quick else 7
    tb_h, tb_b = timeit(with_helpers, repeat=repeat), timeit(by_hand, repeat=repeat)
    print(f"build  helpers {tb_h * 1e3:7.1f} ms   by hand {tb_b * 1e3:7.1f} ms   ratio {tb_h / tb_b:.2f}")
    # Disable tilelang's kernel cache so both really compile.
    if not quick:  # --quick only checks the benchmark runs: cached compiles will do
        tilelang.disable_cache()
    with quiet_tilelang():
        repeat = 1 if quick else 3
        warmup = 0 if quick else 1
        tc_h = timeit(lambda: tilelang.compile(with_helpers(), target="c", compile_flags=FLAGS),
                      repeat=repeat, warmup=warmup)
        tc_b = timeit(lambda: tilelang.compile(by_hand(), target="c", compile_flags=FLAGS),
                      repeat=repeat, warmup=warmup)
    print(f"compile helpers {tc_h:6.2f} s   by hand {tc_b:6.2f} s   ratio {tc_h / tc_b:.2f}")
    if not equal:
        raise SystemExit("TIR differs")


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one build and compile each")
    main(ap.parse_args().quick)
