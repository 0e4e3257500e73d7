"""A `return` in a T.dist kernel ends that core's program (decision 191): the cores of a
rank run their own programs, so the others go on; sends left unsubmitted at the return
are refused as at the kernel's end."""

import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T
from tvm import tirx

from meshtensor.tilelang import compile_mesh_kernel
from meshtensor.tilelang import tilelang_mesh as tm

pytestmark = pytest.mark.slow
N = 4


def kernel(submit_first: bool, broadcast: bool = False):
    tm.enable(mesh=(1, 2))
    with tm.world(2):
        @T.prim_func
        def k(A: T.Tensor((2, N), "float32"), B: T.Tensor((2, N), "float32"),
              rank_id: T.dist.RankId, stop: T.int32):
            with T.Kernel(2, threads=1) as bx:
                src = T.alloc_shared((N,), "float32")
                dst = T.alloc_shared((N,), "float32")
                s = T.dist.signal()
                T.copy(A[bx, 0:N], src)
                T.dist.put(src, dst, (rank_id + 1) % 2, signal=s, submit=submit_first)
                if stop != 0 and bx == 1:
                    if not submit_first:
                        T.evaluate(tirx.ret(1))
                if not submit_first:
                    T.dist.submit()
                T.dist.wait_signal(s)
                if stop != 0 and bx == 1:
                    T.evaluate(tirx.ret(1))
                if broadcast:  # an on-chip comm op the returned core never reaches
                    T.comm.broadcast(dst, src, (0, 0), direction="h")
                T.copy(dst, B[bx, 0:N])
    return compile_mesh_kernel(k, check_races=True)


def test_a_return_ends_that_core_only():
    k = kernel(submit_first=True)
    A = [np.arange(2 * N, dtype=np.float32).reshape(2, N) + 100 * r for r in range(2)]
    per = [[torch.from_numpy(A[r].copy()), torch.full((2, N), -1.0), stop]
           for r, stop in enumerate((1, 0))]
    k.run_ranks(per)
    got = [p[1].numpy() for p in per]
    # rank 0's core 1 returned before writing B; every other core wrote its block
    np.testing.assert_array_equal(got[0][0], A[1][0])
    np.testing.assert_array_equal(got[0][1], np.full(N, -1.0))
    np.testing.assert_array_equal(got[1], A[0])


def test_a_return_before_submit_is_refused():
    k = kernel(submit_first=False)
    per = [[torch.zeros(2, N), torch.zeros(2, N), stop] for stop in (1, 0)]
    with pytest.raises(ValueError, match="never submitted"):
        k.run_ranks(per)


def test_a_core_that_returned_never_reaches_an_on_chip_comm_op():
    k = kernel(submit_first=True, broadcast=True)
    per = [[torch.zeros(2, N), torch.zeros(2, N), stop] for stop in (1, 0)]
    with pytest.raises(ValueError, match=r"deadlock(.|\n)*rank 0 core \(0, 1\) has finished"):
        k.run_ranks(per)
