"""Races on global memory are refused (issue 26, replacing decision 43's "the last core
wins"): two cores that touch one element of a kernel parameter, one of them writing,
with no comm op that orders them. Statically where the accesses can be evaluated;
with ``check_races=True`` as the kernel runs otherwise."""
import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402

from meshtensor.tilelang import compile_mesh_kernel, mesh_comm  # noqa: E402
from meshtensor.tilelang.analysis.races import find_races  # noqa: E402

MC = mesh_comm({"x": 4})


def race_of(kernel):
    r = find_races(kernel).race
    return None if r is None else r.message("check")


def test_two_cores_writing_one_element_is_a_race():
    @T.prim_func
    def k(Y: T.Tensor((1,), "int32")):
        with T.Kernel(4, threads=1) as bx:
            Y[0] = bx
    assert race_of(k) == (
        "check: a race on 'Y' element [0]: core (0,) writes it in `Y[0] = bx` and core "
        "(1,) writes it in `Y[0] = bx`, with no comm op between them that orders the two "
        "cores; on the chip the result depends on timing. Give each core its own "
        "elements, or order them with a comm op (e.g. a barrier) between the accesses")
    with pytest.raises(ValueError, match=r"compile_mesh_kernel: a race on 'Y' element \[0\]"):
        compile_mesh_kernel(k)


def write_then_read(ordered: bool):
    if ordered:
        @T.prim_func
        def k(X: T.Tensor((4,), "int32"), Y: T.Tensor((4,), "int32")):
            with T.Kernel(4, threads=1) as bx:
                Y[bx] = bx * 10
                MC.barrier()
                X[bx] = Y[(bx + 1) % 4]
    else:
        @T.prim_func
        def k(X: T.Tensor((4,), "int32"), Y: T.Tensor((4,), "int32")):
            with T.Kernel(4, threads=1) as bx:
                Y[bx] = bx * 10
                X[bx] = Y[(bx + 1) % 4]
    return k


def test_a_read_of_another_cores_write_in_one_superstep_is_a_race():
    assert race_of(write_then_read(False)).startswith(
        "check: a race on 'Y' element [0]: core (0,) writes it in `Y[bx] = bx * 10` and core "
        "(3,) reads it in `X[bx] = Y[(bx + 1) % 4]`")


@pytest.mark.slow
def test_a_barrier_orders_the_write_before_the_read():
    k = write_then_read(True)
    assert race_of(k) is None
    x, y = torch.zeros(4, dtype=torch.int32), torch.zeros(4, dtype=torch.int32)
    compile_mesh_kernel(k)(x, y)
    assert x.tolist() == [10, 20, 30, 0]


def test_a_barrier_over_one_axis_orders_only_its_groups():
    mc = mesh_comm({"row": 2, "col": 2})

    def kernel(axes):
        @T.prim_func
        def k(Y: T.Tensor((4,), "int32"), Z: T.Tensor((4,), "int32")):
            with T.Kernel(2, 2, threads=1) as (r, c):
                Y[r * 2 + c] = r
                mc.barrier(axes)
                Z[r * 2 + c] = Y[r * 2 + (c + 1) % 2]  # the other core of my row
        return k

    assert race_of(kernel(["col"])) is None  # a row's cores wait for each other
    assert "core (0, 1) reads it" in race_of(kernel(["row"]))  # a column's do not


def test_an_exchange_orders_what_its_receivers_read():
    """A shift's receiver knows its sender finished what came before; nobody else does."""
    def kernel(read):
        @T.prim_func
        def k(Y: T.Tensor((4,), "int32"), Z: T.Tensor((4,), "int32")):
            with T.Kernel(4, threads=1) as bx:
                S = T.alloc_shared((1,), "int32", scope="shared")
                Y[bx] = bx
                MC.shift(S, S, ["x"], "x", 1, rotate=True)
                Z[bx] = Y[read(bx)]
        return k

    assert race_of(kernel(lambda b: (b + 3) % 4)) is None  # my sender's element
    assert "reads it" in race_of(kernel(lambda b: (b + 1) % 4))  # my receiver's


def test_overlapping_copies_into_a_global_tensor_are_a_race():
    @T.prim_func
    def k(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32")):
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_shared((4, 4), "float32", scope="shared")
            T.copy(A[0:4, 0:4], S)
            T.copy(S, B[(bx // 2) * 4:(bx // 2) * 4 + 4, 0:4])
    assert race_of(k).startswith("check: a race on 'B' element [0, 0]: core (0,) writes it "
                                 "in `T.copy(S[0, 0], B[bx // 2 * 4, 0])` and core (1,) "
                                 "writes it")


def data_indexed():
    @T.prim_func
    def k(Ix: T.Tensor((4,), "int32"), Y: T.Tensor((4,), "int32")):
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_shared((1,), "int32", scope="shared")
            S[0] = bx
            MC.shift(S, S, ["x"], "x", 1, rotate=True)
            Y[Ix[bx]] = S[0]
    return k


def test_an_index_read_from_memory_is_left_to_the_checked_run():
    check = find_races(data_indexed())
    assert check.race is None and check.unchecked == ("Y[Ix[bx]] = S[0]",)


@pytest.mark.slow
def test_the_checked_run_reports_a_race_the_static_check_cannot_see():
    k = data_indexed()
    y = torch.zeros(4, dtype=torch.int32)
    compile_mesh_kernel(k)(torch.tensor([0, 1, 2, 2], dtype=torch.int32), y)  # not checked
    checked = compile_mesh_kernel(k, check_races=True)
    y = torch.zeros(4, dtype=torch.int32)
    checked(torch.tensor([1, 2, 3, 0], dtype=torch.int32), y)  # no race: same values
    assert y.tolist() == [2, 3, 0, 1]
    with pytest.raises(ValueError, match=r"compile_mesh_kernel \(check_races=True\): a race on "
                                         r"'Y' element \[2\]: core \(2,\) writes it in "
                                         r"`Y\[Ix\[bx\]\] = S\[0\]` and core \(3,\) writes it"):
        checked(torch.tensor([0, 1, 2, 2], dtype=torch.int32), torch.zeros(4, dtype=torch.int32))


@pytest.mark.slow
def test_the_checked_run_of_a_kernel_without_comm_ops():
    @T.prim_func
    def k(I: T.Tensor((4,), "int32"), Y: T.Tensor((4,), "int32")):
        with T.Kernel(4, threads=1) as bx:
            Y[I[bx]] = Y[I[bx]] + bx
    checked = compile_mesh_kernel(k, check_races=True)
    y = torch.zeros(4, dtype=torch.int32)
    checked(torch.tensor([3, 2, 1, 0], dtype=torch.int32), y)
    assert y.tolist() == [3, 2, 1, 0]
    with pytest.raises(ValueError, match=r"core \(0,\) writes it .* core \(1,\) reads it"):
        checked(torch.tensor([0, 0, 1, 2], dtype=torch.int32), torch.zeros(4, dtype=torch.int32))
