"""Kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang) tests that use T.comm or
T.MeshTensor, verbatim; each names its source file and the commit it was read at. A
kernel written inside a test function is copied as that inner function (renamed after
its test). Import lines: ``target`` (the tests' ``@target("Sunmmio")``) comes from the
corpus harness; ``MeshReplicationType`` from ``T`` (the upstream imports it from
``tilelang.language.mesh_tensor``); ``tm.enable`` provides SUNMMIO's names.
"""
import importlib.util
import pathlib
import sys

import tilelang.language as T
from tilelang.carver.arch import driver
from tilelang.layout import make_row_major, make_zz_layout  # noqa: F401

_h = sys.modules.get("tm_corpus_harness")
if _h is None:  # loaded on its own
    _spec = importlib.util.spec_from_file_location(
        "tm_corpus_harness", pathlib.Path(__file__).parent / "harness.py")
    _h = importlib.util.module_from_spec(_spec)
    sys.modules["tm_corpus_harness"] = _h
    _spec.loader.exec_module(_h)
target = _h.target
MeshReplicationType = T.MeshReplicationType


# SUNMMIO/Tilelang testing/python/sunmmio/codegen/test_summa_opt_validate.py
# @ 3cb93397d5ee8059583abfc4a986c1d9e974b369 ::summa_matmul
@target("Sunmmio")
def summa_matmul_opt_validate(
    M=128,
    N=128,
    K=128,
    block_M=32,
    block_N=32,
    block_K=32,
    dtype="float16",
    accum_dtype="float32",
):
    shard_policy = T.MeshShardingPolicy(y=0, x=1)
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config

    A_shape = (M, K)
    B_shape = (K, N)
    C_shape = (M, N)
    A_layout = make_zz_layout(A_shape, [0, 1], (32, 32))
    B_layout = make_zz_layout(B_shape, [0, 1], (32, 32))
    C_layout = make_zz_layout(C_shape, [0, 1], (32, 32))

    @T.prim_func
    def kernel(
        A: T.MeshTensor(A_shape, shard_policy, device_mesh_config, dtype, layout=A_layout),  # type: ignore
        B: T.MeshTensor(B_shape, shard_policy, device_mesh_config, dtype, layout=B_layout),  # type: ignore
        C: T.MeshTensor(C_shape, shard_policy, device_mesh_config, accum_dtype, layout=C_layout),  # type: ignore
    ):
        with T.Kernel() as _cid:
            sharded_M, _ = A.local_shape
            _, sharded_N = B.local_shape
            core_row = _cid // ncols
            core_col = _cid % ncols

            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_shared((block_M, block_N), accum_dtype)

            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.clear(C_local)
                    K_steps = T.ceildiv(K, block_K)

                    for k_tile in range(K_steps):
                        a_src_col = k_tile % ncols
                        b_src_row = k_tile % nrows
                        a_local_k = (k_tile // ncols) * block_K
                        b_local_k = (k_tile // nrows) * block_K

                        T.comm.broadcast(
                            A[
                                bx * block_M : bx * block_M + block_M,
                                a_local_k : a_local_k + block_K,
                            ],
                            A_shared,
                            (core_row, a_src_col),
                            direction="h",
                        )
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


# SUNMMIO/Tilelang testing/python/compile_pipeline/test_summa.py
# @ 48cff264a13b66ecb4c90ac108bcc0196ee1a38e ::summa_matmul
def summa_matmul_pipeline(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float32"):
    """
    SUMMA (Scalable Universal Matrix Multiplication Algorithm)
    for a 4x4 mesh.

    Grid size: (N/block_N, M/block_M) = (4, 4)
    """

    @T.prim_func
    def kernel(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), accum_dtype),
    ):
        # Assume the current is a 4x4 processor grid (Mesh)
        # Each core is responsible for outputting a 32x32 block of matrix C
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (
            bx,
            by,
        ):
            # Allocate local SRAM cache
            # A_shared is placed in ASRAM (usually used for A matrix cache)
            # B_shared is placed in WSRAM (usually used for B matrix cache)
            A_shared = T.alloc_shared((block_M, block_K), dtype, scope="shared.asram")
            B_shared = T.alloc_shared((block_K, block_N), dtype, scope="shared.wsram")

            # Local accumulator, placed in RSRAM
            C_local = T.alloc_shared((block_M, block_N), accum_dtype, scope="shared.rsram")
            T.clear(C_local)

            # Number of iterations in K dimension (for 128/32 = 4 steps)
            K_steps = T.ceildiv(K, block_K)

            # Core loop of SUMMA algorithm
            for k_tile in range(K_steps):
                # --- Step 1: Broadcast row block of matrix A ---
                # Broadcast directly from DRAM to asram of each core
                # Source core coordinate is (by, k_tile), which is responsible for reading from DRAM and broadcasting to all cores in the same row
                T.comm.broadcast(
                    A[
                        by * block_M : by * block_M + block_M,
                        k_tile * block_K : k_tile * block_K + block_K,
                    ],
                    A_shared,
                    (by, k_tile),
                    direction="h",
                )

                # --- Step 2: Broadcast column block of matrix B ---
                # Broadcast directly from DRAM to wsram of each core
                # Source core coordinate is (k_tile, bx), which is responsible for reading from DRAM and broadcasting to all cores in the same column
                T.comm.broadcast(
                    B[
                        k_tile * block_K : k_tile * block_K + block_K,
                        bx * block_N : bx * block_N + block_N,
                    ],
                    B_shared,
                    (k_tile, bx),
                    direction="v",
                )

                # --- Step 3: Local computation ---
                # Each core performs local GEMM using broadcasted A_shared and B_shared
                T.gemm(A_shared, B_shared, C_local)

            # After the loop ends, write local computation result back to DRAM
            T.copy(C_local, C[by * block_M, bx * block_N])

    return kernel


# SUNMMIO/Tilelang testing/python/transform/sunmmio_mesh_kernel_new_syntax_reference.py
# @ 3b5993cb7578aebc91f9469200b5b0de9c4b660b ::mesh_matmul_new
@target("Sunmmio")
def mesh_matmul_new(
    M,
    N,
    K,
    block_M=128,
    block_N=128,
    block_K=32,
    num_stages=2,
    dtype="bfloat16",
    accum_dtype="float",
):
    # 1) Sharding policy
    # GEMM matrices are the easiest case:
    # - row mesh dimension shards tensor dim 0
    # - col mesh dimension shards tensor dim 1
    # Use the same effective partitioning as the executable strict test:
    # A is row-sharded on M and replicated across mesh rows for K traversal,
    # B is col-sharded on N and replicated across mesh cols for K traversal,
    # C is sharded on both output axes.
    a_policy = T.MeshShardingPolicy(y=0, replicate=MeshReplicationType.ROW)
    b_policy = T.MeshShardingPolicy(x=1, replicate=MeshReplicationType.COLUMN)
    c_policy = T.MeshShardingPolicy(y=0, x=1)

    # 2) Layout
    # For GEMM, the compute-critical dimensions are exactly the matrix axes.
    # So we block both dimensions with a 32x32 ZZ layout.
    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        # 3) MeshTensor declaration
        # New-style intent:
        #   T.MeshTensor(shape, shard_policy, dtype, layout=...)
        # This says:
        # - logical global shape is `(M, K)`
        # - sharding is controlled by `shard_policy`
        # - layout is explicit
        A: T.MeshTensor((M, K), a_policy, (4, 4), dtype, layout=A_layout),
        B: T.MeshTensor((K, N), b_policy, (4, 4), dtype, layout=B_layout),
        C: T.MeshTensor((M, N), c_policy, (4, 4), accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as _cid:
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape

            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.clear(C_shared)
                    for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=num_stages):
                        T.copy(
                            A[
                                bx * block_M : (bx + 1) * block_M,
                                k * block_K : (k + 1) * block_K,
                            ],
                            A_shared,
                        )
                        T.copy(
                            B[
                                k * block_K : (k + 1) * block_K,
                                by * block_N : (by + 1) * block_N,
                            ],
                            B_shared,
                        )
                        T.gemm(A_shared, B_shared, C_shared)
                    T.copy(C_shared, C[bx * block_M, by * block_N])

    return main


# SUNMMIO/Tilelang testing/python/language/test_tilelang_language_comm.py
# @ 38dd2c6dfbe3f186be1e7db897489d5525c6bdaf ::test_comm_buffer_like_region_python_api
def comm_buffer_like_region_python_api():
    @T.prim_func
    def main(A: T.Tensor((128, 128), "float32")):
        with T.Kernel(1, threads=128):
            A_shared = T.alloc_shared([128, 128], "float32", scope="shared.rsram")
            B_shared = T.alloc_shared([128, 128], "float32", scope="shared.rsram")
            C_shared = T.alloc_shared([4, 64, 64], "float32", scope="shared.rsram")
            Out_shared = T.alloc_shared([128], "float32", scope="shared.rsram")
            T.copy(A, A_shared)

            T.comm.broadcast(A_shared[8:72, 16:80], B_shared[24:88, 32:96], (0, 0), direction="h")
            T.comm.put(A_shared[0:64, 0:64], B_shared[32:96, 32:96], (0, 0), (0, 1))
            T.comm.all_gather(A_shared[8:72, 16:80], C_shared[0:4, 0:64, 0:64], direction="h")
            T.comm.all_reduce(A_shared[8:72, 16:80], Out_shared[32:96], "sum", "h", dim=1)

    return main
