"""Kernels of the older fork's tests and examples that use T.comm or T.MeshTensor,
verbatim (each function names its source file; all at wanghz18/Tilelang-Mesh commit
cf1114396fadf4e751239cb02436e143c8bdcb9a, branch pipeline_rebase). A kernel the fork
wrote inside a test function is copied as that inner function (renamed after its test).
Import lines: the fork's, with ``tm.enable`` providing SUNMMIO's names and
``tvm`` from ``tilelang`` (its TVM names ``tvm.tirx``).
"""
import tilelang.language as T
from tilelang import tvm as tvm
from tilelang.carver.arch import driver
from tilelang.layout import make_zz_layout


# testing/python/target/test_sunmmio_codegen_skeleton.py::func_comm_kernel
def func_comm_kernel(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float32"):
    mesh_device_config = (4, 4)

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(x=1, y=0), mesh_device_config, dtype),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(x=1, y=0), mesh_device_config, dtype),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(x=1, y=0), mesh_device_config, accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (
            bx,
            by,
        ):
            A_shared = T.alloc_shared((block_M, block_K), dtype=dtype)
            A_remote_1 = T.alloc_shared((block_M, block_K), dtype=dtype)
            A_remote_2 = T.alloc_shared((block_M, block_K), dtype=dtype)
            A_remote_3 = T.alloc_shared((block_M, block_K), dtype=dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype=dtype)
            B_remote_1 = T.alloc_shared((block_K, block_N), dtype=dtype)
            B_remote_2 = T.alloc_shared((block_K, block_N), dtype=dtype)
            B_remote_3 = T.alloc_shared((block_K, block_N), dtype=dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype=accum_dtype)
            C_allgather_1 = T.alloc_shared((16, block_M, block_N), dtype=accum_dtype)
            C_allgather_2 = T.alloc_shared((4, block_M, block_N), dtype=accum_dtype)
            C_allgather_3 = T.alloc_shared((4, block_M, block_N), dtype=accum_dtype)

            T.clear(A_shared)
            T.clear(B_shared)
            T.clear(C_shared)
            T.comm.broadcast(A_shared, A_remote_1, (0, 0), direction="all")
            T.comm.broadcast(A_shared, A_remote_2, (0, 0), direction="h")
            T.comm.broadcast(A_shared, A_remote_3, (0, 0), direction="v")
            T.comm.put(B_shared, B_remote_1, (1, 2), (2, 3))
            T.comm.put(B_shared, B_remote_2, (1, 2), (1, 3))
            T.comm.put(B_shared, B_remote_3, (1, 2), (3, 2))
            T.comm.all_gather(C_shared, C_allgather_1, direction="all")
            T.comm.all_gather(C_shared, C_allgather_2, direction="h")
            T.comm.all_gather(C_shared, C_allgather_3, direction="v")

    return main


# testing/python/target/test_sunmmio_codegen_skeleton.py::func_sync_kernel
def func_sync_kernel(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    @T.prim_func
    def kernel(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((M, K), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=1) as (
            bx,
            by,
        ):
            A_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.asram")
            B_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.wsram")
            C_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.rsram")
            D_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.rsram")
            E_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.rsram")

            T.gemm(A_shared, B_shared, C_shared)
            if by <= 2:
                T.copy(C_shared, D_shared)

            if bx <= 2:
                T.clear(D_shared)

            for i in range(5):
                C_shared[i, 0] = C_shared[i, 0] + 1.0

            for _i in range(10):
                T.comm.broadcast(D_shared, E_shared, (0, 0), direction="h")
                E_shared[0, 0] = E_shared[0, 0] + 1.0
                T.comm.broadcast(E_shared, D_shared, (0, 0), direction="h")

    return kernel


# testing/python/transform/test_tilelang_transform_inject_sunmmio_sync.py::broadcast_kernel
def broadcast_kernel(M, N, block_M, block_N, dtype="float16"):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (
            bx,
            by,
        ):
            A_shared = T.alloc_shared((block_M, block_N), dtype)
            B_shared = T.alloc_shared((block_M, block_N), dtype)

            # Load A
            T.copy(A[by * block_M, bx * block_N], A_shared)

            # Broadcast A to B
            T.comm.broadcast(A_shared, B_shared, (0, 0), direction="h")

            # Store B
            T.copy(B_shared, B[by * block_M, bx * block_N])

    return main


# testing/python/transform/test_tilelang_transform_inject_sunmmio_sync.py::test_inject_sunmmio_sync_if
def inject_sync_if_kernel(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            D_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            # Load A and B
            T.copy(A[by * block_M, 0], A_shared)
            T.copy(B[0, bx * block_N], B_shared)

            # GEMM
            T.gemm(A_shared, B_shared, C_shared)

            if by == 0:
                T.comm.broadcast(C_shared, D_shared, (0, 0), direction="h")

            # Store C
            C_shared[0, 0] = C_shared[0, 0] + 1

    return main


# testing/python/transform/test_tilelang_transform_inject_sunmmio_sync.py::test_inject_sunmmio_sync_loop
def inject_sync_loop_kernel(M, N, block_M, block_N, accum_dtype="float32"):
    @T.prim_func
    def main(
        C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            D_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            T.copy(C[by * block_M, bx * block_N], D_shared)

            for _i in range(10):
                T.comm.broadcast(C_shared, D_shared, (0, 0), direction="h")
                T.comm.broadcast(D_shared, C_shared, (0, 0), direction="h")

    return main


# testing/python/transform/test_tilelang_transform_legalize_sunmmio_datapath.py::gemm_broadcast_from_dram
def gemm_broadcast_from_dram(M, N, K, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    """Build a GEMM kernel where A is loaded via broadcast from DRAM.

    A is broadcast from DRAM to A_shared, which is used as the left operand
    of T.gemm. InferSramScope should assign A_shared to shared.asram,
    triggering DRAM->ASRAM legalization for the broadcast.
    """

    @T.prim_func
    def main(
        A: T.Tensor((block_M, block_K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.clear(C_shared)
            T.comm.broadcast(A, A_shared, (0, 0), direction="h")
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared)

            T.copy(C_shared, C[by * block_M, bx * block_N])

    return tvm.IRModule({"main": main})


# testing/python/transform/test_tilelang_transform_legalize_sunmmio_datapath.py::gemm_put_from_dram
def gemm_put_from_dram(M, N, K, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    """Build a GEMM kernel where A is loaded via put from DRAM.

    A is put from DRAM (core 0,0) to A_shared (core 1,1), and A_shared is used
    as the left operand of T.gemm. InferSramScope should assign A_shared to
    shared.asram, triggering DRAM->ASRAM legalization for the put.
    """

    @T.prim_func
    def main(
        A: T.Tensor((block_M, block_K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.clear(C_shared)
            T.comm.put(A, A_shared, (0, 0), (1, 1))
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared)

            T.copy(C_shared, C[by * block_M, bx * block_N])

    return tvm.IRModule({"main": main})


# testing/python/transform/test_tilelang_transform_legalize_sunmmio_datapath.py::allgather_dram_to_asram
def allgather_dram_to_asram(block_M, block_K, dtype=T.float16):
    """Build a kernel where all_gather goes from DRAM to an explicitly ASRAM-scoped buffer.

    The recv buffer is allocated with explicit scope="shared.asram" to bypass
    InferSramScope (which wouldn't naturally assign a 3D buffer to ASRAM).
    This directly tests the legalize pass on the all_gather DRAM->ASRAM path.

    For horizontal all_gather with 4 cols: send [block_M, block_K] -> recv [4, block_M, block_K].
    """

    @T.prim_func
    def main(
        A: T.Tensor((block_M, block_K), dtype),
    ):
        with T.Kernel(1, 1, threads=128) as (bx, by):
            A_gathered = T.alloc_shared([4, block_M, block_K], dtype, scope="shared.asram")
            T.comm.all_gather(A, A_gathered, direction="h")

    return tvm.IRModule({"main": main})


# examples/gemm/sunmmio_example_gemm.py::matmul_persistent
def matmul_persistent(M, N, K, block_M, block_N, block_K, num_stages, dtype=T.bfloat16, accum_dtype=T.float32):
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), device_mesh_config, dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), device_mesh_config, dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), device_mesh_config, accum_dtype, layout=C_layout),
    ):
        with T.Kernel(ncores) as (_cid):
            sharded_M, sharded_K = A.shape
            _, sharded_N = B.shape

            A_shared = T.alloc_shared((block_M, block_K), dtype)
            A_shared_dist = T.alloc_shared((block_M, block_K * ncols), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            B_shared_dist = T.alloc_shared((block_K * nrows, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            # Each core iterates its own sharded tile grid with plain nested
            # loops. The MeshTensor sharding already distributes A/B/C across
            # the core mesh, so no persistent core-distribution loop is used.
            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.clear(C_shared)
                    for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=num_stages):
                        # Stage each A/B tile into a shared buffer, then
                        # all-gather it across the core row / column.
                        # all_gather needs a Buffer source (not an indexed
                        # element) and an explicit concat axis.
                        T.copy(A[bx * block_M, k * block_K], A_shared)
                        T.comm.all_gather(A_shared, A_shared_dist, direction="horizontal", axis=-1)
                        T.copy(B[k * block_K, by * block_N], B_shared)
                        T.comm.all_gather(B_shared, B_shared_dist, direction="vertical", axis=0)
                        T.gemm(A_shared_dist, B_shared_dist, C_shared)

                    T.copy(C_shared, C[bx * block_M, by * block_N])

    return main
