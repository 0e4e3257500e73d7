"""Kernels of the older fork's comm tests, verbatim.

Source: wanghz18/Tilelang-Mesh, testing/python/language/test_tilelang_language_comm.py at
commit cf1114396fadf4e751239cb02436e143c8bdcb9a (branch pipeline_rebase). Each test
function's ``@T.prim_func`` is unchanged; it is wrapped in a factory whose defaults are
the test's parameters (the test around it checks the fork's lowered IR). Imports: the
fork's ``import tilelang.language as T`` (names from ``tm.enable``).
"""
import tilelang.language as T


# kernel of test_comm_python_api (line 25); the test's parameters as defaults
def comm_python_api(M=1024, N=1024, block_M=128, block_N=128, dtype='float16', accum_dtype='float'):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared([block_M, block_N], dtype, scope="shared.rsram")
            B_shared = T.alloc_shared([block_M, block_N], dtype, scope="shared.rsram")
            C_shared = T.alloc_shared([16, block_M, block_N], dtype, scope="shared.rsram")
            R0_shared = T.alloc_shared([16 * block_M, block_N], dtype, scope="shared.rsram")
            R1_shared = T.alloc_shared([block_M, 16 * block_N], dtype, scope="shared.rsram")
            T.copy(A[by * block_M, bx * block_N], A_shared)

            T.comm.broadcast(A_shared, B_shared, (1, 2), direction="all")
            T.comm.put(A_shared, B_shared, (1, 2), (2, 3))
            T.comm.all_gather(A_shared, C_shared, direction="all")
            T.comm.all_gather(A_shared, R0_shared, direction="all", axis=0)
            T.comm.all_gather(A_shared, R1_shared, direction="all", axis=-1)

    return main


# kernel of test_comm_broadcast_lower (line 60); the test's parameters as defaults
def comm_broadcast_lower(M=1024, N=1024, block_M=128, block_N=128, dtype='float16', accum_dtype='float'):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared([block_M, block_N], dtype, scope="shared.rsram")
            B_shared = T.alloc_shared([block_M, block_N], dtype, scope="shared.rsram")
            T.copy(A[by * block_M, bx * block_N], A_shared)

            T.comm.broadcast(A_shared, B_shared, (1, 2), direction="all")

    return main


# kernel of test_comm_put_lower (line 131); the test's parameters as defaults
def comm_put_lower(M=1024, N=1024, block_M=128, block_N=128, dtype='float16', accum_dtype='float'):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared([block_M, block_N], dtype, scope="shared.rsram")
            B_shared = T.alloc_shared([block_M, block_N], dtype, scope="shared.rsram")
            T.copy(A[by * block_M, bx * block_N], A_shared)

            T.comm.put(A_shared, B_shared, (1, 2), (2, 3))

    return main


# kernel of test_comm_all_gather_lower (line 191); the test's parameters as defaults
def comm_all_gather_lower(M=1024, N=1024, block_M=128, block_N=128, dtype='float16', accum_dtype='float'):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared([block_M, block_N], dtype, scope="shared.rsram")
            C_shared = T.alloc_shared([16, block_M, block_N], dtype, scope="shared.rsram")
            T.copy(A[by * block_M, bx * block_N], A_shared)

            T.comm.all_gather(A_shared, C_shared, direction="all")

    return main


# kernel of test_comm_all_gather_axis0_all_lower (line 251); the test's parameters as defaults
def comm_all_gather_axis0_all_lower(M=1024, N=1024, block_M=128, block_N=128, dtype='float16'):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared([block_M, block_N], dtype, scope="shared.rsram")
            # 4x4 mesh -> 16 cores gathered along axis=0: [16 * block_M, block_N]
            R_shared = T.alloc_shared([16 * block_M, block_N], dtype, scope="shared.rsram")
            T.copy(A[by * block_M, bx * block_N], A_shared)

            T.comm.all_gather(A_shared, R_shared, direction="all", axis=0)

    return main


# kernel of test_comm_all_gather_axis_last_horizontal_lower (line 296); the test's parameters as defaults
def comm_all_gather_axis_last_horizontal_lower(M=1024, N=1024, block_M=128, block_N=128, dtype='float16'):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared([block_M, block_N], dtype, scope="shared.rsram")
            # Horizontal allgather (K = mesh_ncol = 4) along last axis: [block_M, 4 * block_N]
            R_shared = T.alloc_shared([block_M, 4 * block_N], dtype, scope="shared.rsram")
            T.copy(A[by * block_M, bx * block_N], A_shared)

            T.comm.all_gather(A_shared, R_shared, direction="horizontal", axis=-1)

    return main


# kernel of test_comm_all_gather_axis_last_all_lower (line 357); the test's parameters as defaults
def comm_all_gather_axis_last_all_lower(M=1024, N=1024, block_M=128, block_N=128, dtype='float16'):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared([block_M, block_N], dtype, scope="shared.rsram")
            # All direction (K = 16) gathered along last axis: [block_M, 16 * block_N]
            R_shared = T.alloc_shared([block_M, 16 * block_N], dtype, scope="shared.rsram")
            T.copy(A[by * block_M, bx * block_N], A_shared)

            T.comm.all_gather(A_shared, R_shared, direction="all", axis=-1)

    return main


