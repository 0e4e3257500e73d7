"""The current SUNMMIO/Tilelang codegen SUMMA (``testing/python/sunmmio/codegen/
test_summa_opt_validate.py``) at the version that passes ``transpose_B=True`` with a
square B tile, verbatim; import lines only differ (``target`` comes from the corpus
harness, ``tm.enable`` provides SUNMMIO's names).
"""
# flake8: noqa
import importlib.util
import pathlib
import sys

import tilelang.language as T
from tilelang.layout import make_zz_layout

_h = sys.modules.get("tm_corpus_harness")
if _h is None:  # loaded on its own
    _spec = importlib.util.spec_from_file_location(
        "tm_corpus_harness", pathlib.Path(__file__).parent / "harness.py")
    _h = importlib.util.module_from_spec(_spec)
    sys.modules["tm_corpus_harness"] = _h
    _spec.loader.exec_module(_h)
target = _h.target


# ---- testing/python/sunmmio/codegen/test_summa_opt_validate.py
# @ 60b0c120d27f3f23e5e917b0fa0c106fb1357c94

@target("Sunmmio")
def summa_matmul(
    M=128,
    N=128,
    K=128,
    block_M=32,
    block_N=32,
    block_K=32,
    dtype="bfloat16",
    accum_dtype="float32",
):
    shard_policy = T.placement.full_shard(0, 1)

    A_shape = (M, K)
    B_shape = (K, N)
    C_shape = (M, N)
    A_layout = make_zz_layout(A_shape, [0, 1], (32, 32))
    B_layout = make_zz_layout(B_shape, [0, 1], (32, 32))
    C_layout = make_zz_layout(C_shape, [0, 1], (32, 32))

    @T.prim_func
    def kernel(
        A: T.MeshTensor(A_shape, shard_policy, dtype, layout=A_layout),  # type: ignore
        B: T.MeshTensor(B_shape, shard_policy, dtype, layout=B_layout),  # type: ignore
        C: T.MeshTensor(C_shape, shard_policy, accum_dtype, layout=C_layout),  # type: ignore
    ):
        with T.Kernel() as _cid:
            sharded_M, _ = A.local_shape
            _, sharded_N = B.local_shape
            core_row = _cid // T.mesh_ncols()
            core_col = _cid % T.mesh_ncols()

            A_broadcast = T.alloc_shared((block_M, block_K), dtype, scope="shared.rsram")
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_shared((block_M, block_N), accum_dtype)

            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.clear(C_local)
                    K_steps = T.ceildiv(K, block_K)

                    for k_tile in range(K_steps):
                        a_src_col = k_tile % T.mesh_ncols()
                        b_src_row = k_tile % T.mesh_nrows()
                        a_local_k = (k_tile // T.mesh_ncols()) * block_K
                        b_local_k = (k_tile // T.mesh_nrows()) * block_K

                        T.comm.broadcast(
                            A[
                                bx * block_M : bx * block_M + block_M,
                                a_local_k : a_local_k + block_K,
                            ],
                            A_broadcast,
                            (core_row, a_src_col),
                            direction="h",
                        )
                        T.copy(A_broadcast, A_shared)
                        T.comm.broadcast(
                            B[
                                b_local_k : b_local_k + block_K,
                                by * block_N : by * block_N + block_N,
                            ],
                            B_shared,
                            (b_src_row, core_col),
                            direction="v",
                        )
                        # Sunmmio MMA consumes B in the transposed operand mode;
                        # algorithmically this is still the SUMMA B(k, j) panel.
                        T.gemm(A_shared, B_shared, C_local, transpose_B=True)

                    T.copy(C_local, C[bx * block_M, by * block_N])

    return kernel
