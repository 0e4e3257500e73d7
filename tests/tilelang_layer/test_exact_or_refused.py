"""The kernel layer's contract, case by case: every kernel it accepts runs exactly as its
per-core program means, anything else is a ValueError naming the statement. Each test
here is a case that was once silently wrong or crashed (issue: "exact or refused")."""
import logging

import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402

from meshtensor import Mesh, MeshArray, Sharding  # noqa: E402
from meshtensor import collectives as C  # noqa: E402
from meshtensor.tilelang import (analyze_mesh_communication, check_collective_rule,  # noqa: E402
                                 compile_mesh_kernel, find_comm_ops, lower_mesh_comm,
                                 mesh_comm, mesh_tensor_functions, read_mesh_tensor_info,
                                 verify_mesh_tensors)

CHECK_FLAGS = ["-O0"]  # values, not speed (see test_comm.py)
pytestmark = pytest.mark.slow


def run(kernel, *arrays, **kw):
    """Compile and run on NumPy arrays (copied to torch); return them as NumPy."""
    k = compile_mesh_kernel(kernel, compile_flags=CHECK_FLAGS, **kw)
    ts = [torch.from_numpy(np.array(a, copy=True)) for a in arrays]  # inputs stay as given
    k(*ts)
    return [t.numpy() for t in ts]


# -- axis names in the order the user wrote them -------------------------------------------
def gather_over_col(launch_1d: bool):
    mc = mesh_comm({"r": 2, "c": 4})  # not alphabetical: a sorted dict would read 4 x 2

    if launch_1d:
        @T.prim_func
        def k(X: T.Tensor((8, 3), "float32"), Y: T.Tensor((8, 12), "float32")):
            with T.Kernel(8, threads=1) as core:
                S = T.alloc_local((3,), "float32")
                D = T.alloc_local((12,), "float32")
                T.copy(X[core, 0:3], S)
                mc.all_gather(S, D, ["c"], gather_axis=0)
                T.copy(D, Y[core, 0:12])
    else:
        @T.prim_func
        def k(X: T.Tensor((8, 3), "float32"), Y: T.Tensor((8, 12), "float32")):
            with T.Kernel(2, 4, threads=1) as (r, c):
                S = T.alloc_local((3,), "float32")
                D = T.alloc_local((12,), "float32")
                T.copy(X[r * 4 + c, 0:3], S)
                mc.all_gather(S, D, ["c"], gather_axis=0)
                T.copy(D, Y[r * 4 + c, 0:12])
    return k


@pytest.mark.parametrize("launch_1d", [True, False], ids=["1d-launch", "2d-launch"])
def test_axis_order_survives_in_values_and_traffic(launch_1d):
    k = gather_over_col(launch_1d)
    [op] = find_comm_ops(k)
    assert op.mesh == Mesh({"r": 2, "c": 4}) and op.mesh_axes == (1,)
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    _, y = run(k, x, np.zeros((8, 12), np.float32))
    want = C.all_gather(MeshArray.from_locals(Mesh({"r": 2, "c": 4}), list(x)), ["c"], 0)
    assert all(np.array_equal(y[d], want.local(d)) for d in range(8))
    # 8 cores receive 3 foreign pieces of 12 bytes each
    assert analyze_mesh_communication(k).comm_bytes == 8 * 3 * 12 == 288


# -- lets whose value depends on the core -------------------------------------------------
def test_core_dependent_let_keeps_the_value_it_read_before_a_write():
    mc = mesh_comm({"x": 4})

    @T.prim_func
    def k(X: T.Tensor((4,), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_local((1,), "float32")
            R = T.alloc_local((1,), "float32")
            v = X[bx]
            X[bx] = 0.0
            S[0] = v
            mc.shift(S, R, ["x"], "x", 1, rotate=True)
            Y[bx] = R[0] + v
    x = np.array([1, 2, 3, 4], np.float32)
    xo, y = run(k, x, np.zeros(4, np.float32))
    assert y.tolist() == (np.roll(x, 1) + x).tolist() and xo.tolist() == [0, 0, 0, 0]


def test_core_independent_let_after_the_last_comm_op_keeps_a_per_core_let_in_scope():
    """After the last comm op, a per-core let (``v``) and then a let every core shares
    (``w``): the code after them is one segment (found by the fuzzer: the shared let
    split it, and the C code used ``v`` outside its scope)."""
    mc = mesh_comm({"x": 4})

    @T.prim_func
    def k(X: T.Tensor((4,), "float32"), G: T.Tensor((1,), "float32"),
          Y: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_local((1,), "float32")
            R = T.alloc_local((1,), "float32")
            S[0] = X[bx]
            mc.shift(S, R, ["x"], "x", 1, rotate=True)
            v = X[bx]
            X[bx] = 0.0
            w = G[0]
            Y[bx] = v + w + R[0]
    x = np.array([1, 2, 3, 4], np.float32)
    xo, _, y = run(k, x, np.array([10], np.float32), np.zeros(4, np.float32))
    assert y.tolist() == (x + 10 + np.roll(x, 1)).tolist() and xo.tolist() == [0, 0, 0, 0]


# -- comm ops called from a plain Python helper ---------------------------------------------
def test_comm_op_in_a_plain_helper_is_emitted():
    mc = mesh_comm({"x": 4})

    def rotate(S, R):  # not a T.macro, and it returns nothing
        mc.shift(S, R, ["x"], "x", 1, rotate=True)

    @T.prim_func
    def k(X: T.Tensor((4,), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_local((1,), "float32")
            R = T.alloc_local((1,), "float32")
            S[0] = X[bx]
            rotate(S, R)
            Y[bx] = R[0]
    assert [o.op for o in find_comm_ops(k)] == ["shift"]
    x = np.array([1, 2, 3, 4], np.float32)
    assert run(k, x, np.zeros(4, np.float32))[1].tolist() == np.roll(x, 1).tolist()


# -- the prefetch pattern: a root that is in range under the condition that guards it -------
def test_prefetch_root_is_checked_under_its_uniform_condition():
    mc = mesh_comm({"row": 2, "col": 4})

    @T.prim_func
    def k(X: T.Tensor((8,), "float32"), Y: T.Tensor((8,), "float32")):
        with T.Kernel(2, 4, threads=1) as (r, c):
            S = T.alloc_local((1,), "float32")
            D = T.alloc_local((1,), "float32")
            E = T.alloc_local((1,), "float32")
            S[0] = X[r * 4 + c]
            E[0] = 0.0
            mc.broadcast(S, D, ["col"], root=[0])
            for k in T.serial(4):
                E[0] = E[0] + D[0]
                if k + 1 < 4:
                    mc.broadcast(S, D, ["col"], root=[k + 1])  # the next step's tile
            Y[r * 4 + c] = E[0]
    x = np.arange(1, 9, dtype=np.float32)
    y = run(k, x, np.zeros(8, np.float32))[1]
    assert y.tolist() == np.repeat(x.reshape(2, 4).sum(axis=1), 4).tolist()


def prefetch_out_of_range():
    mc = mesh_comm({"row": 2, "col": 4})

    @T.prim_func
    def k():
        with T.Kernel(2, 4, threads=1) as (r, c):
            S = T.alloc_local((1,), "float32")
            for k in T.serial(4):
                if k < 4:  # always true: k + 1 reaches 4
                    mc.broadcast(S, S, ["col"], root=[k + 1])
    return k


# -- exchanges whose regions cannot be range-checked are refused ------------------------------
def unchecked(kind: str):
    mc = mesh_comm({"x": 2})
    if kind == "while":
        @T.prim_func
        def k(G: T.Tensor((1,), "int32")):
            with T.Kernel(2, threads=1) as bx:
                S = T.alloc_local((8,), "float32")
                D = T.alloc_local((2,), "float32")
                while G[0] < 1:  # uniform: global memory, not the core
                    for s in T.serial(8):
                        mc.shift(S[s:s + 2], D, ["x"], "x", 1, rotate=True)
    elif kind == "if-global":
        @T.prim_func
        def k(G: T.Tensor((1,), "int32")):
            with T.Kernel(2, threads=1) as bx:
                S = T.alloc_local((8,), "float32")
                D = T.alloc_local((2,), "float32")
                for s in T.serial(8):
                    if G[0] > 0:
                        mc.shift(S[s:s + 2], D, ["x"], "x", 1, rotate=True)
    elif kind == "serial-global":
        @T.prim_func
        def k(N: T.Tensor((1,), "int32")):
            with T.Kernel(2, threads=1) as bx:
                S = T.alloc_local((8,), "float32")
                D = T.alloc_local((2,), "float32")
                for s in T.serial(N[0]):
                    mc.shift(S[s * 2:s * 2 + 2], D, ["x"], "x", 1, rotate=True)
    else:  # start read from a global scalar
        @T.prim_func
        def k(G: T.Tensor((1,), "int32")):
            with T.Kernel(2, threads=1) as bx:
                S = T.alloc_local((8,), "float32")
                D = T.alloc_local((2,), "float32")
                mc.shift(S[G[0]:G[0] + 2], D, ["x"], "x", 1, rotate=True)
    return k


@pytest.mark.parametrize("kind,match", [
    ("while", r"mesh_comm.shift \(comm op #0\): src region of 'S' runs outside dim 0 of size "
              r"8: start s cannot be shown to stay in range: its bounds are \[0, 7\]"),
    ("if-global", r"mesh_comm.shift \(comm op #0\): src region of 'S' runs outside dim 0 of "
                  r"size 8: start s cannot be shown to stay in range: its bounds are \[0, 7\]"),
    ("serial-global", r"mesh_comm.shift \(comm op #0\): src region of 'S' runs outside dim 0 "
                      r"of size 8: start s \* 2 cannot be shown to stay in range"),
    ("global-start", r"mesh_comm.shift \(comm op #0\): src region of 'S' runs outside dim 0 "
                     r"of size 8: start G\[0\] cannot be shown to stay in range"),
    ("prefetch-range", r"mesh_comm.broadcast \(comm op #0\): root coordinate k \+ 1 takes "
                       r"values in \[1, 4\], out of range \[0, 4\) on mesh axis 'col'"),
], ids=["while", "if-global", "serial-global", "global-start", "prefetch-range"])
def test_exchange_that_cannot_be_range_checked_is_refused(kind, match):
    k = prefetch_out_of_range() if kind == "prefetch-range" else unchecked(kind)
    with pytest.raises(ValueError, match=match):
        lower_mesh_comm(k)
    with pytest.raises(ValueError, match=match):
        check_collective_rule(k)


def test_region_at_the_exact_edge_is_accepted_and_one_past_is_refused():
    mc = mesh_comm({"x": 2})

    def kernel(count):
        @T.prim_func
        def k(X: T.Tensor((2, 8), "float32"), Y: T.Tensor((2, 8), "float32")):
            with T.Kernel(2, threads=1) as bx:
                S = T.alloc_local((8,), "float32")
                D = T.alloc_local((8,), "float32")
                T.copy(X[bx, 0:8], S)
                T.copy(X[bx, 0:8], D)
                for s in T.serial(count):  # the last region is [count, count + 2)
                    mc.shift(S[s + 1:s + 3], D[s + 1:s + 3], ["x"], "x", 1, rotate=True)
                T.copy(D, Y[bx, 0:8])
        return k

    with pytest.raises(ValueError, match=r"src region of 'S' runs outside dim 0 of size 8: "
                                         r"start s \+ 1 takes values in \[1, 7\] with extent 2"):
        lower_mesh_comm(kernel(7))  # ends at 9
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    y = run(kernel(6), x, np.zeros((2, 8), np.float32))[1]  # ends at 8
    want = x.copy()
    want[:, 1:8] = x[::-1, 1:8]  # each shift moves the other core's window into D
    assert np.array_equal(y, want)


def test_negative_region_start_is_refused():
    mc = mesh_comm({"x": 2})

    @T.prim_func
    def k():
        with T.Kernel(2, threads=1) as bx:
            S = T.alloc_local((8,), "float32")
            D = T.alloc_local((2,), "float32")
            for s in T.serial(4):
                mc.shift(S[s * 2 - 1:s * 2 + 1], D, ["x"], "x", 1, rotate=True)
    with pytest.raises(ValueError, match=r"start s \* 2 - 1 takes values in \[-1, 5\]"):
        lower_mesh_comm(k)


# -- loops: T.Pipelined runs as the serial loop it means; T.Parallel is refused -------------
def test_pipelined_loop_around_comm_ops_is_exact():
    mc = mesh_comm({"row": 2, "col": 2})

    @T.prim_func
    def k(X: T.Tensor((4,), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(2, 2, threads=1) as (r, c):
            S = T.alloc_local((1,), "float32")
            D = T.alloc_local((1,), "float32")
            E = T.alloc_local((1,), "float32")
            S[0] = X[r * 2 + c]
            E[0] = 0.0
            for k in T.Pipelined(2, num_stages=2):
                mc.broadcast(S, D, ["row"], root=[k])
                E[0] = E[0] * 10.0 + D[0]
            Y[r * 2 + c] = E[0]
    # the lowered loop is a plain serial loop: no stages left for TileLang's pipeliner
    from tvm import tirx
    loops = []
    tirx.stmt_functor.post_order_visit(lower_mesh_comm(k).body, lambda n: loops.append(n)
                                       if isinstance(n, tirx.For) and n.loop_var.name == "k"
                                       else None)
    assert [(int(lp.kind), dict(lp.annotations)) for lp in loops] == [(0, {})]
    x = np.array([1, 2, 3, 4], np.float32)
    y = run(k, x, np.zeros(4, np.float32))[1]
    assert y.tolist() == [13, 24, 13, 24]  # column c: x[c] then x[2 + c]


def test_comm_op_in_a_parallel_loop_is_refused():
    mc = mesh_comm({"x": 4})

    @T.prim_func
    def k():
        with T.Kernel(4, threads=1) as bx:
            R = T.alloc_local((1,), "float32")
            for i in T.Parallel(2):
                mc.shift(R, R, ["x"], "x", 1, rotate=True)
    with pytest.raises(ValueError, match=r"mesh_comm.shift \(comm op #0\) is inside a parallel "
                                         r"loop 'i'"):
        lower_mesh_comm(k)


# -- fragments: per-core buffers like any other (see also test_memory_model.py) ------------
def test_fragment_in_a_comm_op_runs():
    mc = mesh_comm({"x": 4})

    @T.prim_func
    def k(X: T.Tensor((4, 4), "float32"), Y: T.Tensor((4, 4), "float32")):
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_fragment((4,), "float32")
            R = T.alloc_fragment((4,), "float32")
            for i in T.Parallel(4):
                S[i] = X[bx, i]
            mc.shift(S, R, ["x"], "x", 1, rotate=True)
            T.copy(R, Y[bx, 0:4])
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    assert np.array_equal(run(k, x, np.zeros((4, 4), np.float32))[1], np.roll(x, 1, axis=0))


def test_fragment_living_across_a_comm_op_keeps_its_value():
    mc = mesh_comm({"x": 4})

    @T.prim_func
    def k(X: T.Tensor((4,), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_fragment((1,), "float32")
            R = T.alloc_local((1,), "float32")
            S[0] = X[bx]
            R[0] = X[bx] * 10
            mc.shift(R, R, ["x"], "x", 1, rotate=True)
            Y[bx] = S[0] + R[0]
    x = np.array([1, 2, 3, 4], np.float32)
    assert run(k, x, np.zeros(4, np.float32))[1].tolist() == (x + 10 * np.roll(x, 1)).tolist()


# -- compile_mesh_kernel's arguments and dtypes --------------------------------------------
def test_out_idx_counts_the_kernels_own_parameters():
    mc = mesh_comm({"x": 4})

    @T.prim_func
    def k(X: T.Tensor((4,), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_local((1,), "float32")
            S[0] = X[bx]
            mc.shift(S, S, ["x"], "x", 1, rotate=True)
            Y[bx] = S[0]
    kern = compile_mesh_kernel(k, compile_flags=CHECK_FLAGS, out_idx=[-1])
    y = kern(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert y.tolist() == [4.0, 1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match=r"out_idx \[2\]: each index must be an int in "
                                         r"\[-2, 2\)"):
        compile_mesh_kernel(k, out_idx=[2])


@pytest.mark.parametrize("dtype,size", [("bfloat16", 2), ("float8_e4m3fn", 1), ("int8", 1)])
def test_analyses_count_every_dtype(dtype, size):
    mc = mesh_comm({"x": 4})
    fns = mesh_tensor_functions({"x": 4})

    @T.prim_func
    def k(X: T.Tensor((4, 8), dtype)):
        fns["annotate_mesh_tensor_info"]({X: fns["init_mesh_tensor_info"]({"x": 0}, (1, 8))})
        with T.Kernel(4, threads=1) as bx:
            R = T.alloc_local((8,), dtype)
            D = T.alloc_local((8,), dtype)
            fns["mesh_tensor_copy"](X, R, src_coord=(bx, 0))
            mc.shift(R, D, ["x"], "x", 1, rotate=True)
    r = analyze_mesh_communication(k)
    assert r.comm_bytes == 4 * 8 * size and r.local_bytes == 4 * 8 * size
    assert verify_mesh_tensors(k, owner_only=True) == []


# -- block predicates ------------------------------------------------------------------------
def test_analyses_honour_block_predicates():
    from tvm import tirx

    from meshtensor.tilelang.ir.launch import Launch
    fns = mesh_tensor_functions({"x": 4})

    @T.prim_func
    def k(A: T.Tensor((4, 4), "float32")):
        fns["annotate_mesh_tensor_info"]({A: fns["init_mesh_tensor_info"]({"x": 0}, (1, 4))})
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_local((4,), "float32")
            fns["mesh_tensor_copy"](A, S, src_coord=((bx + 1) % 4, 0))  # the next row

    bx = Launch.of(k, Mesh({"x": 4}), "test").vars[0]

    def guard(n):  # wrap the copy in a block predicated on bx < 2
        if isinstance(n.value, tirx.Call) and getattr(n.value.op, "name", "") == \
                "tl.tileop.copy":
            return tirx.SBlockRealize([], bx < 2, tirx.SBlock([], [], [], "guard", n))
        return None

    g = k.with_body(tirx.stmt_functor.ir_transform(k.body, None, guard, ["tirx.Evaluate"]))
    assert analyze_mesh_communication(k).remote_bytes == 4 * 16
    assert analyze_mesh_communication(g).remote_bytes == 2 * 16  # cores 0 and 1 only
    [issue] = verify_mesh_tensors(g, owner_only=True)
    assert issue.count == 2


# -- barrier groups ----------------------------------------------------------------------------
def test_barrier_keeps_its_groups_and_ends_a_superstep():
    mc = mesh_comm({"row": 2, "col": 2})

    @T.prim_func
    def k(X: T.Tensor((4,), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(2, 2, threads=1) as (r, c):
            S = T.alloc_local((1,), "float32")
            S[0] = X[r * 2 + c]
            mc.barrier(["col"])
            Y[r * 2 + c] = S[0] + 1.0
    [op] = find_comm_ops(k)
    assert op.op == "barrier" and op.mesh_axes == (1,)
    r = analyze_mesh_communication(k)
    assert r.comm_ops == ("comm 0: barrier",) and r.comm_bytes == 0
    x = np.arange(4, dtype=np.float32)
    assert run(k, x, np.zeros(4, np.float32))[1].tolist() == (x + 1).tolist()


# -- the whole Sharding survives the attribute --------------------------------------------------
def test_explicit_offsets_survive_and_place_reads_exactly():
    mesh = Mesh({"x": 2})
    fns = mesh_tensor_functions(mesh)
    uneven = Sharding(mesh, [["x"]], sharded_dims_offsets=[0, 2, 8])  # core 1 owns rows 2:8

    @T.prim_func
    def k(A: T.Tensor((8, 4), "float32")):
        fns["annotate_mesh_tensor_info"]({A: fns["init_mesh_tensor_info"](uneven, (2, 4))})
        with T.Kernel(2, threads=1) as bx:
            S = T.alloc_local((2, 4), "float32")
            fns["mesh_tensor_copy"](A, S, src_coord=(bx, 0))  # rows 2bx:2bx+2
    assert read_mesh_tensor_info(k)["A"].sharding == uneven
    # core 1 reads rows 2:4, its own; core 0 rows 0:2, its own: no issue
    assert verify_mesh_tensors(k, owner_only=True) == []

    @T.prim_func
    def k2(A: T.Tensor((8, 4), "float32")):
        fns["annotate_mesh_tensor_info"]({A: fns["init_mesh_tensor_info"](uneven, (2, 4))})
        with T.Kernel(2, threads=1) as bx:
            S = T.alloc_local((2, 4), "float32")
            fns["mesh_tensor_copy"](A, S, src_coord=(2 * bx + 1, 0))  # rows 2:4 and 6:8
    issues = verify_mesh_tensors(k2, owner_only=True)
    assert [(i.kind, i.program, i.cores) for i in issues] == [("remote", (0,), ((1,),))]


def test_halo_reads_inside_the_window_are_own_data():
    mesh = Mesh({"x": 2})
    fns = mesh_tensor_functions(mesh)

    def kernel(sharding):
        @T.prim_func
        def k(A: T.Tensor((8,), "float32")):
            fns["annotate_mesh_tensor_info"]({A: fns["init_mesh_tensor_info"](sharding, (1,))})
            with T.Kernel(2, threads=1) as bx:
                S = T.alloc_local((2,), "float32")
                T.copy(A[3:5], S)  # core 0 owns row 3, core 1 row 4
        return k

    halo = Sharding(mesh, [["x"]], halo_sizes=[1, 1])
    with_halo, without = kernel(halo), kernel(Sharding(mesh, [["x"]]))
    assert read_mesh_tensor_info(with_halo)["A"].sharding == halo
    # each core's window (core plus one row each side) holds both rows
    assert verify_mesh_tensors(with_halo, owner_only=True) == []
    assert analyze_mesh_communication(with_halo).remote_bytes == 0
    assert [i.kind for i in verify_mesh_tensors(without, owner_only=True)] == [
        "crosses_cores", "remote"]
    assert analyze_mesh_communication(without).remote_bytes == 2 * 4


def test_partial_sharding_is_refused_at_annotation():
    mesh = Mesh({"x": 2})
    fns = mesh_tensor_functions(mesh)
    with pytest.raises(ValueError, match=r"annotate_mesh_tensor_info: buffer 'A': sharding .* "
                                         r"is partial over \{'x': 'sum'\}"):
        @T.prim_func
        def k(A: T.Tensor((8,), "float32")):
            fns["annotate_mesh_tensor_info"]({A: fns["init_mesh_tensor_info"](
                Sharding(mesh, [], partial={"x": "sum"}), (1,))})
            with T.Kernel(2, threads=1) as bx:
                T.evaluate(0)


# -- our errors come without TileLang's dump of the generated source ------------------------------
def test_comm_op_mistake_is_not_preceded_by_a_source_dump(caplog):
    mc = mesh_comm({"x": 4})
    with caplog.at_level(logging.DEBUG, logger="tilelang"), \
            pytest.raises(ValueError, match=r"mesh_comm.shift: dst 'R' has extents \(2,\)"):
        @T.prim_func
        def k():
            with T.Kernel(4, threads=1) as bx:
                S = T.alloc_local((1,), "float32")
                R = T.alloc_local((2,), "float32")
                mc.shift(S, R, ["x"], "x", 1, rotate=True)
    assert not [r for r in caplog.records if "Failed to build prim_func" in r.getMessage()]


def test_stock_tilelang_compile_names_the_op_and_compile_mesh_kernel():
    import tilelang
    mc = mesh_comm({"x": 4})

    @T.prim_func
    def k(X: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_local((1,), "float32")
            S[0] = X[bx]
            mc.shift(S, S, ["x"], "x", 1, rotate=True)
            X[bx] = S[0]
    with pytest.raises(ValueError, match=r"tilelang.compile: the kernel holds comm ops "
                                         r"\(mesh_comm.shift \(comm op #0\) first, 1 in all\).*"
                                         r"meshtensor.tilelang.compile_mesh_kernel"):
        tilelang.compile(k, target="c")


def test_large_per_core_buffer_copied_whole_across_an_exchange():
    """33,600 elements per core, copied in and out by vectorised T.copy: TVM's
    StorageRewrite once retyped the per-core pointer as one vector of that many lanes
    and failed ("scalable vector")."""
    mc = mesh_comm({"x": 2})

    @T.prim_func
    def k(X: T.Tensor((2, 700, 48), "float32"), Y: T.Tensor((2, 700, 48), "float32")):
        with T.Kernel(2, threads=1) as bx:
            S = T.alloc_shared((700, 48), "float32")
            T.copy(X[bx, 0:700, 0:48], S)
            mc.shift(S, S, ["x"], "x", 1, rotate=True)
            T.copy(S, Y[bx, 0:700, 0:48])
    x = np.random.default_rng(0).standard_normal((2, 700, 48)).astype(np.float32)
    y = run(k, x, np.zeros_like(x))[1]
    assert np.array_equal(y, x[::-1])


def test_copy_tilelang_cannot_vectorize_runs_with_serial_loops(capfd):
    """A 2-element T.copy from global memory at a core-dependent offset: TileLang 0.1.15
    vectorizes it into a gather its C vector type cannot build, and the C compiler
    fails (stock tilelang.compile too; found by the fuzzer). compile_mesh_kernel
    compiles it again with its loops serial: it runs exactly, and the first attempt's
    compiler error is not shown."""
    @T.prim_func
    def k(X: T.Tensor((6, 5, 3), "int32"), Y: T.Tensor((6, 5, 3), "int32")):
        with T.Kernel(2, 3, threads=1) as (b0, b1):
            S = T.alloc_local((5, 3), "int32")
            T.clear(S)
            T.copy(X[b0 * 3 + b1, 0:1, (b0 + b1) % 2:(b0 + b1) % 2 + 2], S[3:4, 1:3])
            for i, j in T.grid(5, 3):
                Y[b0 * 3 + b1, i, j] = S[i, j]
    capfd.readouterr()
    x = np.arange(90, dtype=np.int32).reshape(6, 5, 3)
    y = run(k, x, np.zeros_like(x))[1]
    assert "error" not in capfd.readouterr().err
    want = np.zeros_like(x)
    for b0 in range(2):
        for b1 in range(3):
            s = (b0 + b1) % 2
            want[b0 * 3 + b1, 3, 1:3] = x[b0 * 3 + b1, 0, s:s + 2]
    np.testing.assert_array_equal(y, want)

