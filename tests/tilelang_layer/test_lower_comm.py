"""LowerMeshComm: the lowered TIR (before/after), pass-through without comm ops, the
collective rule and root checks, and the superstep semantics on CPU."""
import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang  # noqa: E402
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402
import tvm  # noqa: E402
from tvm.script import tirx as TS  # noqa: E402

from meshtensor.tilelang import (LowerMeshComm, MeshKernel, compile_mesh_kernel,  # noqa: E402
                                 find_comm_ops, mesh_comm, read_mesh_tensor_info)
from meshtensor.tilelang.ir.comm_op import is_comm_call  # noqa: E402
from meshtensor.tilelang.ir.scope import find_calls  # noqa: E402
from meshtensor.tilelang.engine import CPU_FLAGS
from meshtensor.tilelang.kernels.gemm import build_gemm  # noqa: E402
from meshtensor.tilelang import check_collective_rule, lower_mesh_comm  # noqa: E402

LAUNCH_IDX = tvm.ir.Op.get("tl.launch_thread_idx")


def lower(func):
    return LowerMeshComm()(tvm.IRModule({"main": func}))["main"]


# -- before / after -------------------------------------------------------------------------
def test_lower_shift_before_after():
    mc = mesh_comm({"x": 2})

    @T.prim_func
    def k(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(2, threads=1) as bx:
            S = T.alloc_local((2,), "float32")
            for i in T.serial(2):
                S[i] = A[bx * 2 + i]
            mc.shift(S, S, ["x"], "x", 1, rotate=True)
            for i in T.serial(2):
                B[bx * 2 + i] = S[i]

    got = lower(k)

    # One launch of one block; each segment loops over the cores and sees core c's slice
    # of the promoted S (a view at offset 2c); the shift (src and dst share S) goes
    # through a staging array.
    @TS.prim_func
    def k(A_handle: TS.handle, B_handle: TS.handle):
        A = TS.match_buffer(A_handle, (4,), strides=(1,))
        B = TS.match_buffer(B_handle, (4,), strides=(1,))
        for bx in TS.thread_binding(1, thread="blockIdx.x"):
            tx: TS.int32 = TS.call_intrin("int32", LAUNCH_IDX, 0)
            ty: TS.int32 = TS.call_intrin("int32", LAUNCH_IDX, 1)
            tz: TS.int32 = TS.call_intrin("int32", LAUNCH_IDX, 2)
            with TS.sblock("tilelang_root"):
                TS.reads()
                TS.writes()
                TS.sblock_attr({"tl.launch_threads": [TS.int32(1), TS.int32(1), TS.int32(1)]})
                S_all_mem: TS.handle = TS.call_extern("handle", "malloc", TS.uint64(16))
                S_all: TS.handle("float32", "global") = S_all_mem
                stage_mem: TS.handle = TS.call_extern("handle", "malloc", TS.uint64(16))
                stage_ptr: TS.handle("uint8", "global") = stage_mem
                S_all_1 = TS.decl_buffer((4,), data=S_all)
                for core_x in range(2):
                    S = TS.decl_buffer((2,), data=S_all, elem_offset=core_x * 2)
                    for i in range(2):
                        S[i] = A[core_x * 2 + i]
                with TS.attr("shift", "meshtensor_comm_op", 0):  # which comm op this was
                    stage: TS.handle("float32", "global") = stage_ptr
                    stage_1 = TS.decl_buffer((4,), data=stage)
                    for src_x, i0 in TS.grid(2, 2):
                        stage_1[src_x * 2 + i0] = S_all_1[src_x * 2 + i0]
                    for dst_x, i0 in TS.grid(2, 2):
                        S_all_1[dst_x * 2 + i0] = stage_1[(dst_x + 1) % 2 * 2 + i0]
                for core_x in range(2):
                    S = TS.decl_buffer((2,), data=S_all, elem_offset=core_x * 2)
                    for i in range(2):
                        B[core_x * 2 + i] = S[i]
                TS.call_extern("void", "free", S_all_mem)
                TS.call_extern("void", "free", stage_mem)

    tvm.ir.assert_structural_equal(got, k)


def test_lowered_gemm_has_no_comm_calls_and_is_well_formed():
    src = build_gemm("summa_comm", 50, 37, 19)
    assert [o.op for o in find_comm_ops(src)] == ["broadcast", "broadcast"]
    low = lower(src)
    assert find_calls(low, is_comm_call) == []
    assert tvm.tirx.analysis.verify_well_formed(low)
    assert "malloc" in low.script()


def test_kernel_without_comm_ops_passes_through_unchanged():
    func = build_gemm("summa", 64, 64, 64)
    out = lower(func)
    assert out.same_as(func)
    tvm.ir.assert_structural_equal(out, func)


@pytest.mark.slow
def test_kernel_without_comm_ops_compiles_as_before():
    func = build_gemm("local", 20, 20, 20)
    mk = compile_mesh_kernel(func)
    plain = tilelang.compile(func, target="c", compile_flags=CPU_FLAGS)
    assert isinstance(mk, MeshKernel) and mk.prim_func.same_as(func) and mk.lowered.same_as(func)
    assert mk.get_kernel_source() == plain.get_kernel_source()


# -- the collective rule and roots ------------------------------------------------------------
def kernel_with(body_kind: str):
    mc = mesh_comm({"x": 2, "y": 2})
    if body_kind == "if-core":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                if bx == 0:
                    mc.broadcast(S, S, ["y"], root=[0])
    elif body_kind == "loop-core":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                for s in T.serial(by + 1):
                    mc.all_reduce(S, S, ["x"])
    elif body_kind == "loop-let-core":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                m = bx * 2 + 1
                for s in T.serial(m):
                    mc.shift(S, S, ["x"], "x", 1)
    elif body_kind == "root-range":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                for s in T.serial(3):
                    mc.broadcast(S, S, ["y"], root=[s])
    elif body_kind == "root-core":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                mc.broadcast(S, S, ["y"], root=[bx])
    elif body_kind == "grid":
        @T.prim_func
        def k():
            with T.Kernel(4, threads=1) as bx:
                S = T.alloc_local((4,), "float32")
                mesh_comm({"x": 2, "y": 3}).barrier()
    elif body_kind == "loop-data":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                for s in T.serial(T.cast(S[0], "int32")):
                    mc.shift(S, S, ["x"], "x", 1)
    elif body_kind == "if-data":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                if S[0] > 0:
                    mc.all_reduce(S, S, ["x"])
    elif body_kind == "let-data-loop":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                m = T.cast(S[0], "int32")
                for s in T.serial(m):
                    mc.shift(S, S, ["x"], "x", 1)
    elif body_kind == "let-data-across":
        @T.prim_func
        def k(Y: T.Tensor((4,), "float32")):
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                v = S[0] + 1
                mc.shift(S, S, ["x"], "x", 1, rotate=True)
                Y[bx * 2 + by] = v
    elif body_kind == "break-uniform":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                for s in T.serial(3):
                    if s == 1:
                        T.loop_break()
                    mc.shift(S, S, ["x"], "x", 1, rotate=True)
    elif body_kind == "return":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                if bx == 1:
                    T.evaluate(tvm.tirx.ret(0))
                mc.shift(S, S, ["x"], "x", 1, rotate=True)
    elif body_kind == "break-inner":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                for s in T.serial(3):
                    for i in T.serial(4):
                        if i == bx:
                            T.loop_break()
                        S[i] = S[i] + 1
                    mc.shift(S, S, ["x"], "x", 1, rotate=True)
    elif body_kind == "region-range":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((8,), "float32")
                D = T.alloc_local((4,), "float32")
                for s in T.serial(4):
                    mc.shift(S[s * 2:s * 2 + 4], D, ["x"], "x", 1)
    elif body_kind == "region-in-range":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((8,), "float32")
                D = T.alloc_local((2,), "float32")
                for s in T.serial(3):
                    mc.shift(S[s * 2:s * 2 + 2], D, ["x"], "x", 1)
    elif body_kind == "root-let":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                D = T.alloc_local((4,), "float32")
                for s in T.serial(4):
                    r = s % 2
                    mc.broadcast(S, D, ["y"], root=[r])
    elif body_kind == "root-let-range":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                D = T.alloc_local((4,), "float32")
                for s in T.serial(2):
                    r = s + 1
                    mc.broadcast(S, D, ["y"], root=[r])
    elif body_kind == "region-data":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((8,), "float32")
                D = T.alloc_local((2,), "float32")
                I = T.alloc_local((1,), "int32")  # noqa: E741
                I[0] = bx * 2
                mc.shift(S[I[0]:I[0] + 2], D, ["x"], "x", 1, rotate=True)
    elif body_kind == "if-uniform":
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                for s in T.serial(2):
                    if s > 0:
                        mc.broadcast(S, S, ["y"], root=[s])
    return k


@pytest.mark.parametrize("kind,match", [
    ("if-core", r"mesh_comm.broadcast \(comm op #0\) is under `if bx == 0`, a condition that "
                r"depends on the core"),
    ("loop-core", r"mesh_comm.all_reduce \(comm op #0\) is inside loop 's' whose bounds depend "
                  r"on the core"),
    ("loop-let-core", r"mesh_comm.shift \(comm op #0\) is inside loop 's' whose bounds depend "
                      r"on the core"),
    ("root-range", r"mesh_comm.broadcast \(comm op #0\): root coordinate s takes values in "
                   r"\[0, 2\], out of range \[0, 2\) on mesh axis 'y'"),
    ("root-core", r"mesh_comm.broadcast \(comm op #0\): root bx depends on the core"),
    ("grid", r"LowerMeshComm: the launch grid .* does not match the mesh"),
    # per-core data (a per-core buffer's value) is as core-dependent as the core id
    ("loop-data", r"mesh_comm.shift \(comm op #0\) is inside loop 's' whose bounds depend "
                  r"on the core \(0, extent T.Cast\(\"int32\", S\[0\]\)\)"),
    ("if-data", r"mesh_comm.all_reduce \(comm op #0\) is under `if S\[0\] > .*`, a "
                r"condition that depends on the core"),
    # a let read from memory becomes a per-core variable: as core-dependent as S[0]
    ("let-data-loop", r"mesh_comm.shift \(comm op #0\) is inside loop 's' whose bounds depend "
                      r"on the core \(0, extent m_var\[0\]\)"),
    # control flow that would leave the core loop a segment runs in, not the kernel's loop
    ("break-uniform", r"mesh_comm.shift \(comm op #0\) is inside loop 's' left by a "
                      r"T.loop_break\(\) in the code between comm ops"),
    ("return", r"a `return` in a kernel with comm ops \(first: mesh_comm.shift, comm op #0\)"),
    ("root-let-range", r"mesh_comm.broadcast \(comm op #0\): root coordinate r takes values "
                       r"in \[1, 2\], out of range \[0, 2\) on mesh axis 'y'"),
    # a loop-dependent region start out of range would write into another core's slice
    ("region-range", r"mesh_comm.shift \(comm op #0\): src region of 'S' runs outside dim 0 "
                     r"of size 8: start s \* 2 takes values in \[0, 6\] with extent 4"),
    # a start held in a per-core buffer: the exchange would read one core's value for all
    ("region-data", r"mesh_comm.shift \(comm op #0\): the start I\S*\[0\] of the src region of "
                    r"'S' \(dim 0\) reads a per-core buffer"),
], ids=["if-core", "loop-core", "loop-let-core", "root-range", "root-core", "launch-grid",
        "loop-data", "if-data", "let-data-loop", "break-uniform", "return",
        "root-let-range", "region-range", "region-data"])
def test_lowering_refuses(kind, match):
    k = kernel_with(kind)
    with pytest.raises(ValueError, match=match):
        lower_mesh_comm(k)
    with pytest.raises(ValueError, match=match):
        check_collective_rule(k)


def accepted(kind: str):
    """Kernels the lowering accepts, each with I/O and its NumPy model on 2x2
    (X: one row of 8 values per core, Y: what the core ends with)."""
    mc = mesh_comm({"x": 2, "y": 2})
    x = np.arange(1, 33, dtype=np.float32).reshape(4, 8)
    if kind == "if-uniform":
        @T.prim_func
        def k(X: T.Tensor((4, 8), "float32"), Y: T.Tensor((4, 8), "float32")):
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((8,), "float32")
                T.copy(X[bx * 2 + by, 0:8], S)
                for s in T.serial(2):
                    if s > 0:
                        mc.broadcast(S, S, ["y"], root=[s])
                T.copy(S, Y[bx * 2 + by, 0:8])
        want = x[[1, 1, 3, 3]]  # core (i, j) ends with core (i, 1)'s row
    elif kind == "root-let":
        @T.prim_func
        def k(X: T.Tensor((4, 8), "float32"), Y: T.Tensor((4, 8), "float32")):
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((8,), "float32")
                D = T.alloc_local((8,), "float32")
                E = T.alloc_local((8,), "float32")
                T.copy(X[bx * 2 + by, 0:8], S)
                T.clear(E)
                for s in T.serial(4):
                    r = s % 2
                    mc.broadcast(S, D, ["y"], root=[r])
                    for i in T.serial(8):
                        E[i] = E[i] + D[i]
                T.copy(E, Y[bx * 2 + by, 0:8])
        rows = 2 * (x[[0, 0, 2, 2]] + x[[1, 1, 3, 3]])
        want = rows
    elif kind == "region-in-range":
        @T.prim_func
        def k(X: T.Tensor((4, 8), "float32"), Y: T.Tensor((4, 8), "float32")):
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((8,), "float32")
                D = T.alloc_local((2,), "float32")
                E = T.alloc_local((8,), "float32")
                T.copy(X[bx * 2 + by, 0:8], S)
                T.clear(E)
                D[0] = 0.0
                D[1] = 0.0
                for s in T.serial(3):
                    mc.shift(S[s * 2:s * 2 + 2], D, ["x"], "x", 1)  # no rotate: x = 0 keeps D
                    E[s * 2] = D[0]
                    E[s * 2 + 1] = D[1]
                T.copy(E, Y[bx * 2 + by, 0:8])
        want = np.zeros((4, 8), np.float32)
        want[2:, :6] = x[:2, :6]  # row x = 1 gets x = 0's windows; x = 0 keeps zeros
    else:  # break-inner
        @T.prim_func
        def k(X: T.Tensor((4, 8), "float32"), Y: T.Tensor((4, 8), "float32")):
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((8,), "float32")
                T.copy(X[bx * 2 + by, 0:8], S)
                for s in T.serial(3):
                    for i in T.serial(4):
                        if i == bx + 1:
                            T.loop_break()
                        S[i] = S[i] + 1
                    mc.shift(S, S, ["x"], "x", 1, rotate=True)
                T.copy(S, Y[bx * 2 + by, 0:8])
        held = x.copy()
        for _ in range(3):
            for core in range(4):
                held[core, :core // 2 + 1] += 1
            held = held[[2, 3, 0, 1]]  # x receives from x - 1 (mod 2)
        want = held
    return k, x, want


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["if-uniform", "root-let", "region-in-range"])
def test_accepted_kernels_compute_their_per_core_programs(kind):
    k, x, want = accepted(kind)
    assert find_calls(lower_mesh_comm(k), is_comm_call) == []
    y = torch.zeros(want.shape)
    compile_mesh_kernel(k, compile_flags=["-O0"])(torch.from_numpy(x.copy()), y)
    assert np.array_equal(y.numpy(), want)


def test_break_of_a_loop_inside_the_segment_is_kept():
    k, _, _ = accepted("break-inner")
    low = lower_mesh_comm(k)
    assert len(find_calls(low, lambda c: getattr(c.op, "name", "") == "tl.loop_break")) == 1
    # TileLang 0.1.15's C backend has no loop_break: refused by name, not a codegen crash
    with pytest.raises(ValueError, match=r"compile_mesh_kernel: T.loop_break\(\) cannot be "
                                         r"compiled for target 'c'"):
        compile_mesh_kernel(k)


# -- supersteps on CPU ---------------------------------------------------------------------
@pytest.mark.slow
def test_state_of_one_segment_survives_across_supersteps():
    """A buffer used by a single segment inside a loop with comm ops (copied in and out
    of its core's slice) keeps each core's value from one iteration to the next."""
    mc = mesh_comm({"x": 2, "y": 2})

    @T.prim_func
    def k(X: T.Tensor((4,), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=1) as bx:
            cnt = T.alloc_local((1,), "float32")
            for s in T.serial(3):
                mc.barrier()
                if s == 0:
                    cnt[0] = T.float32(0)
                cnt[0] = cnt[0] + X[bx] * (s + 1)
                Y[bx] = cnt[0]

    kern = compile_mesh_kernel(k)
    x = np.arange(1, 5, dtype=np.float32)
    y = torch.zeros(4)
    kern(torch.from_numpy(x), y)
    assert y.tolist() == (6 * x).tolist()
    assert read_mesh_tensor_info(kern) == {}


def _two_segment_kernels():
    """W is used on both sides of a shift: ``scratch`` overwrites it in each segment
    before reading it, ``carried`` reads the first segment's value in the second."""
    mc = mesh_comm({"x": 2})

    @T.prim_func
    def scratch(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(2, threads=1) as bx:
            S = T.alloc_local((2,), "float32")
            R = T.alloc_local((2,), "float32")
            W = T.alloc_local((2,), "float32")
            for i in T.serial(2):
                W[i] = A[bx * 2 + i] * 2
            for i in T.serial(2):
                S[i] = W[i]
            mc.shift(S, R, ["x"], "x", 1, rotate=True)
            for i in T.serial(2):
                W[i] = R[i] + 1
            for i in T.serial(2):
                B[bx * 2 + i] = W[i]

    @T.prim_func
    def carried(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(2, threads=1) as bx:
            S = T.alloc_local((2,), "float32")
            R = T.alloc_local((2,), "float32")
            W = T.alloc_local((2,), "float32")
            for i in T.serial(2):
                W[i] = A[bx * 2 + i] * 2
            for i in T.serial(2):
                S[i] = W[i]
            mc.shift(S, R, ["x"], "x", 1, rotate=True)
            for i in T.serial(2):
                B[bx * 2 + i] = W[i] + R[i]

    return scratch, carried


def test_large_scratch_overwritten_in_every_segment_stays_off_the_stack():
    mc = mesh_comm({"x": 2})

    @T.prim_func
    def k(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(2, threads=1) as bx:
            S = T.alloc_local((2,), "float32")
            R = T.alloc_local((2,), "float32")
            W = T.alloc_local((4096,), "float32")  # 16 KiB: above small_private_bytes
            for i in T.serial(4096):
                W[i] = A[bx * 2 + i % 2]
            for i in T.serial(2):
                S[i] = W[i]
            mc.shift(S, R, ["x"], "x", 1, rotate=True)
            for i in T.serial(4096):
                W[i] = R[i % 2]
            for i in T.serial(2):
                B[bx * 2 + i] = W[i]

    assert "W_all" in lower(k).script()


def test_scratch_overwritten_in_every_segment_is_not_promoted():
    # (Cannon's accumulator, used after each of two alternating shifts, stays in
    # registers this way)
    scratch, carried = _two_segment_kernels()
    assert "W_all" not in lower(scratch).script() and "S_all" in lower(scratch).script()
    assert "W_all" in lower(carried).script()


@pytest.mark.slow
def test_scratch_and_carried_buffers_compute_the_same_on_cpu():
    scratch, carried = _two_segment_kernels()
    a = torch.arange(4, dtype=torch.float32)
    got = {}
    for name, f in (("scratch", scratch), ("carried", carried)):
        b = torch.zeros(4)
        compile_mesh_kernel(f)(a, b)
        got[name] = b.tolist()
    # W = 2A per core; R = the other core's W; scratch: R + 1; carried: W + R
    assert got == {"scratch": [5.0, 7.0, 1.0, 3.0], "carried": [4.0, 8.0, 4.0, 8.0]}


@pytest.mark.slow
def test_malloc_and_argument_workspaces_agree():
    """The standalone pass (malloc inside the kernel, same signature) and
    compile_mesh_kernel (one reused workspace argument) compute the same."""
    mc = mesh_comm({"x": 2, "y": 2})

    @T.prim_func
    def k(X: T.Tensor((4, 3), "float32"), Y: T.Tensor((4, 3), "float32")):
        with T.Kernel(2, 2, threads=1) as (bx, by):
            S = T.alloc_local((3,), "float32")
            D = T.alloc_local((3,), "float32")
            T.copy(X[bx * 2 + by, 0:3], S)
            mc.all_reduce(S, D, ["x"], "prod")
            mc.shift(D, D, ["y"], "y", 1, rotate=True)
            T.copy(D, Y[bx * 2 + by, 0:3])

    low = lower(k)
    assert [p.name for p in low.params] == [p.name for p in k.params]
    plain = tilelang.compile(low, target="c", compile_flags=CPU_FLAGS)
    mk = compile_mesh_kernel(k)
    assert len(mk.lowered.params) == len(k.params) + 1
    assert mk.workspace.numel() == int(mk.lowered.attrs["mesh_workspace_bytes"])
    x = np.random.default_rng(0).uniform(0.5, 2, (4, 3)).astype(np.float32)
    y1, y2 = torch.zeros(4, 3), torch.zeros(4, 3)
    plain(torch.from_numpy(x), y1)
    mk(torch.from_numpy(x), y2)
    col = x.reshape(2, 2, 3).prod(axis=0, dtype=np.float32)  # all_reduce over x: per column
    want = np.stack([col[1], col[0]] * 2)  # then each core takes its row neighbour's
    assert np.array_equal(y1.numpy(), want) and np.array_equal(y2.numpy(), want)



# -- TVM C code generator hazards ------------------------------------------------------------
def test_select_min_max_before_after():
    """min/max of loaded values become selects (TVM's C code generator bound a min's
    operand to a variable and reused it after a store to the same element); min/max of
    index arithmetic stay, and so do those whose operand holds a call or another
    min/max/select."""
    from meshtensor.tilelang.transform.select_min_max import select_min_max

    @T.prim_func
    def before(Y: T.Tensor((4,), "float32"), I: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            Y[0] = T.min(Y[1], Y[2])
            I[0] = T.max(I[1], 3) + T.min(bx, 2)
            Y[3] = T.max(T.exp(Y[0]), Y[1])
            Y[2] = T.max(T.min(Y[1], T.float32(2)), T.float32(-2))

    @T.prim_func
    def expected(Y: T.Tensor((4,), "float32"), I: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            Y[0] = T.Select(Y[1] < Y[2], Y[1], Y[2])
            I[0] = T.Select(I[1] > 3, I[1], 3) + T.min(bx, 2)
            Y[3] = T.max(T.exp(Y[0]), Y[1])
            # only the innermost of a nest (nested selects made TVM's simplifier
            # exponential: a fuzzed kernel's compile did not end)
            Y[2] = T.max(T.Select(Y[1] < T.float32(2), Y[1], T.float32(2)), T.float32(-2))

    tvm.ir.assert_structural_equal(select_min_max(before).body, expected.body)


def test_select_min_max_keeps_a_long_chain_linear():
    """A chain of 12 maxes: the inner ones (small operands) become selects, the outer
    ones keep max, so the kernel stays within a few times its size."""
    from meshtensor.tilelang.transform.select_min_max import select_min_max

    @T.prim_func
    def k(X: T.Tensor((16,), "float32"), Y: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            Y[0] = T.max(T.max(T.max(T.max(T.max(T.max(T.max(T.max(T.max(T.max(T.max(
                X[0], X[1]), X[2]), X[3]), X[4]), X[5]), X[6]), X[7]), X[8]), X[9]), X[10]),
                X[11])

    text = select_min_max(k).script()
    assert "T.Select" in text and "T.max" in text
    assert len(text) < 4 * len(k.script())


@pytest.mark.slow
def test_min_of_an_element_written_just_before_reads_the_new_value():
    @T.prim_func
    def k(X: T.Tensor((4, 6), "float32"), Y: T.Tensor((4, 6), "float32")):
        with T.Kernel(4, threads=1) as bx:
            Y[bx, 4] = 2.0 + T.min(T.float32(0), Y[bx, 4])
            Y[bx, 4] = T.max(X[bx, 3], Y[bx, 4]) + T.min(X[bx, 3], Y[bx, 4])
    x = torch.tensor([[1.0, -3.0, 0.0, 2.0, 2.0, 0.0], [1.0, -3.0, -2.0, 2.0, 0.0, 0.0],
                      [3.0, -1.0, 3.0, -2.0, -3.0, -1.0], [1.0, 2.0, -1.0, -3.0, 2.0, 2.0]])
    y = x.clone()
    compile_mesh_kernel(k)(x, y)
    first = 2.0 + torch.clamp(x[:, 4], max=0.0)
    want = torch.maximum(x[:, 3], first) + torch.minimum(x[:, 3], first)
    assert y[:, 4].tolist() == want.tolist()


def test_the_pipeline_is_written_once_and_spmdize_is_a_stage():
    from meshtensor.tilelang.engine import mesh_pipeline
    from meshtensor.tilelang.pass_config import MeshPassConfig
    names = [s.name for s in mesh_pipeline()]
    assert names == ["PrepareTilelangMesh", "WrapNarrowingCasts", "CheckRaces",
                     "VerifyMeshTensors", "LowerMeshComm", "RegionReductions", "SelectMinMax",
                     "OneDynamicShared",
                     "CMathCalls",
                     "ProtectFoldedIndices"]
    assert [s.name for s in mesh_pipeline(MeshPassConfig(spmdize=True))][0] == "SpmdizeMeshCopies"
    assert "SelectMinMax" not in [s.name for s in mesh_pipeline(target="cuda")]
    with pytest.raises(ValueError, match=r"MeshPassConfig: small_private_bytes must be an int "
                                         r">= 0, got -1"):
        MeshPassConfig(small_private_bytes=-1)


@pytest.mark.slow
def test_compile_mesh_kernel_spmdizes_a_global_view_kernel():
    """``spmdize=True``: the global-view SUMMA runs as the comm kernel spmdize makes."""
    f = build_gemm("summa", 32, 32, 32)
    k = compile_mesh_kernel(f, spmdize=True, compile_flags=["-O0"])
    assert [o.op for o in find_comm_ops(k.lowered)] == [] and "broadcast" in str(k.lowered)
    a, b = torch.randn(32, 32), torch.randn(32, 32)
    c = torch.zeros(32, 32)
    k(a, b, c)
    torch.testing.assert_close(c, a @ b)


@pytest.mark.slow
@pytest.mark.parametrize("n", [32768, 32800])
def test_a_buffer_of_32768_or_more_elements_per_core_compiles_and_runs(n):
    """Each core's copy of a promoted buffer of ``n >= 32768`` elements lies ``n`` or
    more elements from the next; a scalar load at ``core * stride`` stopped TileLang's
    StorageRewrite ("Can't fetch the lanes of a scalable vector"): the staging of a
    one-element permute, a one-element permute between cores and a scalar read of
    the buffer in a superstep. Now they read through a pointer to the core's copy."""
    mc = mesh_comm({"x": 2, "y": 2})

    @T.prim_func
    def k(A: T.Tensor((4, n), "float32"), B: T.Tensor((4, n), "float32"),
          C: T.Tensor((4, 2), "float32")):
        with T.Kernel(2, 2, threads=1) as (bx, by):
            S = T.alloc_shared((n,), "float32")
            mc.permute(S[0:1], S[0:1], [])            # pins S, stages one element
            T.copy(A[bx * 2 + by, 0:n], S)
            mc.permute(S[n - 1:n], S[0:1], [(0, 3)])  # core 3's S[0] = core 0's S[-1]
            T.copy(S, B[bx * 2 + by, 0:n])
            C[bx * 2 + by, 0] = S[0] + S[n - 1]      # scalar reads of the core's copy
            C[bx * 2 + by, 1] = S[7]

    a = torch.randn(4, n)
    b, c = torch.zeros(4, n), torch.zeros(4, 2)
    compile_mesh_kernel(k, compile_flags=["-O0"])(a, b, c)
    want = a.clone()
    want[3, 0] = a[0, n - 1]
    assert torch.equal(b, want)
    assert torch.equal(c[:, 0], want[:, 0] + want[:, n - 1])
    assert torch.equal(c[:, 1], want[:, 7])


@pytest.mark.slow
def test_every_collective_on_buffers_of_32768_elements_per_core():
    """The exchanges of each collective read cores' copies 32768 elements apart
    through their pointers (one-element regions: scalar loads), checked run on."""
    n = 32768
    mc = mesh_comm({"x": 2, "y": 2})

    @T.prim_func
    def k(A: T.Tensor((4, n), "float32"), C: T.Tensor((4, 15), "float32")):
        with T.Kernel(2, 2, threads=1) as (bx, by):
            S = T.alloc_shared((n,), "float32")
            R = T.alloc_shared((n,), "float32")
            B1 = T.alloc_shared((n,), "float32")
            S2 = T.alloc_shared((n,), "float32")
            G = T.alloc_shared((n,), "float32")
            X = T.alloc_shared((n,), "float32")
            T.copy(A[bx * 2 + by, 0:n], S)
            mc.all_reduce(S[0:2], R[0:2], ["x", "y"], "max")
            mc.broadcast(S[0:1], B1[0:1], ["x"], [1])
            mc.shift(S[0:1], S2[0:1], ["y"], "y", 1, rotate=True)
            mc.all_gather(S[0:1], G[0:4], ["x", "y"], 0)
            mc.reduce_scatter(S[0:4], X[0:2], ["y"], 0)
            mc.all_to_all(S[4:8], X[4:8], ["x", "y"], 0, 0)
            mc.shift(S[0:1], S[5:6], ["x"], "x", 1)   # in place: staged
            for j in T.serial(2):
                C[bx * 2 + by, j] = R[j]
            C[bx * 2 + by, 2] = B1[0]
            C[bx * 2 + by, 3] = S2[0]
            for j in T.serial(4):
                C[bx * 2 + by, 4 + j] = G[j]
            for j in T.serial(2):
                C[bx * 2 + by, 8 + j] = X[j]
            for j in T.serial(4):
                C[bx * 2 + by, 10 + j] = X[4 + j]
            C[bx * 2 + by, 14] = S[5]

    a, c = torch.randn(4, n), torch.zeros(4, 15)
    compile_mesh_kernel(k, check_races=True, compile_flags=["-O0"])(a, c)
    a = a.numpy()
    want = np.zeros((4, 15), np.float32)
    for d in range(4):
        x, y = divmod(d, 2)
        want[d, 0:2] = a[:, 0:2].max(0)
        want[d, 2] = a[2 + y, 0]
        want[d, 3] = a[x * 2 + (y - 1) % 2, 0]
        want[d, 4:8] = a[:, 0]
        want[d, 8:10] = (a[x * 2, 0:4] + a[x * 2 + 1, 0:4])[2 * y:2 * y + 2]
        want[d, 10:14] = a[:, 4 + d]
        want[d, 14] = a[y, 0] if x == 1 else a[d, 5]
    np.testing.assert_array_equal(c.numpy(), want)
