"""The TileLang front end: lowering to T.copy / T.ceildiv, metadata, errors."""
import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang  # noqa: E402
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402
import tvm  # noqa: E402
from tvm import tirx  # noqa: E402

from meshtensor import Mesh, Sharding  # noqa: E402
from meshtensor.tilelang import (find_copies, get_target_mesh_shape,  # noqa: E402
                                 mesh_tensor_functions, read_mesh_tensor_info)
from meshtensor.tilelang.ir.evaluate import eval_np as eval_expr  # noqa: E402


def helpers(mesh_shape=None):
    f = mesh_tensor_functions(mesh_shape) if mesh_shape is not None else mesh_tensor_functions()
    return (f["annotate_mesh_tensor_info"], f["get_tile_shape"], f["mesh_tensor_copy"],
            f["init_mesh_tensor_info"])


def copy_table(func, env):
    """(src name, src starts, extents, dst name, dst starts) with loop vars bound."""
    rows = []
    for c in find_copies(func):
        loops = {l.loop_var.name: l.loop_var for l in c.loops}
        bind = {loops[k]: v for k, v in env.items() if k in loops}
        rows.append((c.src.buffer.name, tuple(eval_expr(s, bind) for s in c.src.starts),
                     tuple(eval_expr(e, bind) for e in c.src.extents), c.dst.buffer.name,
                     tuple(eval_expr(s, bind) for s in c.dst.starts)))
    return rows


# -- structural equality with a hand-written kernel --------------------------------------
def test_blocked_copy_lowers_to_plain_t_copy():
    annotate, tile, mcopy, init = helpers()

    @T.prim_func
    def kernel(A: T.Tensor((64, 48), "float32"), B: T.Tensor((64, 48), "float32")):
        annotate({A: init({"x": 0, "y": 1}, (16, 12)), B: init({"x": 0, "y": 1}, (16, 12))})
        with T.Kernel(4, 4, threads=1) as (bx, by):
            S = T.alloc_shared(tile(A), "float32")
            mcopy(A, S, src_coord=(bx, by))
            mcopy(S, B, dst_coord=(bx, by))

    got = kernel

    @T.prim_func
    def kernel(A: T.Tensor((64, 48), "float32"), B: T.Tensor((64, 48), "float32")):
        with T.Kernel(4, 4, threads=1) as (bx, by):
            S = T.alloc_shared((16, 12), "float32")
            T.copy(A[bx * 16:bx * 16 + 16, by * 12:by * 12 + 12], S)
            T.copy(S, B[bx * 16:bx * 16 + 16, by * 12:by * 12 + 12])

    tvm.ir.assert_structural_equal(got.without_attr("mesh_tensor_info"), kernel)


# -- copy regions and tile shapes for each kind of layout -------------------------------------
CASES = [
    # sharding, global shape, block, expected tile, coord -> expected src start
    ({"x": 0, "y": 1}, (64, 48), (16, 12), (16, 12), (2, 3), (32, 36)),
    ({"x": None, "y": 1}, (64, 48), (8, 12), (64, 12), (5, 1), (40, 12)),   # replicated on x
    ({"y": 1}, (64, 48), (8, 12), (64, 12), (5, 1), (40, 12)),              # missing axis = replicated
    ({"x": 0, "y": 0}, (64, 48), (4, 48), (4, 48), (7, 0), (28, 0)),        # doubly split
    ({"x": 1, "y": 0}, (64, 48), (16, 12), (16, 12), (1, 2), (16, 24)),     # swapped
    ({"x": 0, "y": 1}, (10, 13), (3, 4), (3, 4), (3, 3), (9, 12)),          # uneven: edge block
    ((0, 1), (64, 48), (16, 12), (16, 12), (1, 1), (16, 12)),               # tuple form
]


@pytest.mark.parametrize("sharding,shape,block,tile_want,coord,start", CASES,
                         ids=["split", "repl-x", "missing-x", "double", "swap", "uneven", "tuple"])
def test_copy_regions_and_tile_shape(sharding, shape, block, tile_want, coord, start):
    annotate, tile, mcopy, init = helpers()
    seen = {}

    @T.prim_func
    def kernel(A: T.Tensor(shape, "float32"), B: T.Tensor(shape, "float32")):
        annotate({A: init(sharding, block)})
        with T.Kernel(4, 4, threads=1) as (bx, by):
            seen["tile"] = tile(A)
            S = T.alloc_shared(block, "float32")
            mcopy(A, S, src_coord=(bx, by))
            T.copy(S, B[0, 0])

    assert seen["tile"] == tile_want
    assert copy_table(kernel, {"bx": coord[0], "by": coord[1]})[0] == \
        ("A", start, block, "S", (0, 0))
    e = read_mesh_tensor_info(kernel)["A"]
    assert e.tile_shape == tile_want and e.block_shape == block
    assert e.sharding == Sharding.from_seed(Mesh({"x": 4, "y": 4}), sharding)


def test_offsets_are_expressions_of_loop_coordinates():
    annotate, tile, mcopy, init = helpers()

    @T.prim_func
    def kernel(A: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 64), "float32")):
        annotate({A: init({"x": 0}, (16, 8)), C: init({"x": 0, "y": 1}, (16, 16))})
        with T.Kernel(4, 4, threads=1) as (bx, by):
            S = T.alloc_shared((16, 8), "float32")
            for k in T.serial(8):
                mcopy(A, S, src_coord=(bx, k))
            mcopy(S, C[0:16, 0:8], src_coord=None)

    c = find_copies(kernel)[0]
    bx, by, k = (l.loop_var for l in c.loops)
    tvm.ir.assert_structural_equal(c.src.starts[0], bx * 16)
    tvm.ir.assert_structural_equal(c.src.starts[1], k * 8)
    assert [int(e) for e in c.src.extents] == [16, 8]
    assert find_copies(kernel)[1].dst.buffer.name == "C"


def test_symbolic_shapes_keep_ceildiv():
    annotate, tile, mcopy, init = helpers()
    m = T.dynamic("m")
    seen = {}

    @T.prim_func
    def kernel(A: T.Tensor((m, 32), "float32"), B: T.Tensor((m, 32), "float32")):
        annotate({A: init({"x": 0}, (8, 32))})
        with T.Kernel(4, threads=1) as (bx,):
            seen["tile"] = tile(A)
            S = T.alloc_shared((8, 32), "float32")
            mcopy(A, S, src_coord=(bx, 0))
            T.copy(S, B[bx * 8, 0])

    t0, t1 = seen["tile"]
    tvm.ir.assert_structural_equal(t0, T.ceildiv(m, 4))
    assert t1 == 32
    e = read_mesh_tensor_info(kernel)["A"]
    assert e.static_shape() is None


def test_three_axis_mesh_and_targets():
    annotate, tile, mcopy, init = helpers({"a": 2, "b": 3, "c": 2})
    seen = {}

    @T.prim_func
    def kernel(A: T.Tensor((12, 12, 4), "float32")):
        annotate({A: init({"a": 0, "b": 1, "c": 1}, (6, 2, 4), program_id=(1, 2, 0))})
        with T.Kernel(1, threads=1) as (bx,):
            seen["tile"] = tile(A)

    assert seen["tile"] == (6, 2, 4)
    e = read_mesh_tensor_info(kernel)["A"]
    assert e.program_id == (1, 2, 0) and e.sharding.spec() == [["a"], ["b", "c"]]
    assert get_target_mesh_shape("a4e") == {"x": 4, "y": 4}
    assert get_target_mesh_shape("a4e-lite") == {"x": 2, "y": 4}
    assert mesh_tensor_functions("a4e-lite")  # target names are accepted
    with pytest.raises(ValueError, match="unknown target 'b5'"):
        get_target_mesh_shape("b5")


def test_factories_have_separate_state():
    a1, t1, _, i1 = helpers()
    a2, t2, _, _ = helpers()

    @T.prim_func
    def kernel(A: T.Tensor((8, 8), "float32")):
        a1({A: i1({"x": 0}, (2, 8))})
        with T.Kernel(1, threads=1) as (bx,):
            with pytest.raises(ValueError, match="buffer 'A' has no mesh_tensor_info"):
                t2(A)
            assert t1(A) == (2, 8)


# -- bad input: ValueError naming the buffer and the key or dim -----------------------------------
BAD = [
    (lambda i: {"block_shape": (4, 4), "sharding": {"x": 0}}, "buffer 'A': missing key 'program_id'"),
    (lambda i: {"program_id": 0, "sharding": {"x": 0}}, "buffer 'A': missing key 'block_shape'"),
    (lambda i: {"program_id": 0, "block_shape": (4, 4)}, "buffer 'A': missing key 'sharding'"),
    (lambda i: i({"x": 0}, (4,)), r"buffer 'A': block_shape \(4,\) must have one entry per buffer dim \(2\)"),
    (lambda i: i({"x": 0}, (4, 0)), r"buffer 'A': block_shape\[1\] must be a positive int, got 0"),
    (lambda i: {**i({"x": 0}, (4, 4)), "sharding": {"x": 2}},
     r"buffer 'A': .*mesh axis 'x' maps to tensor dim 2, out of range \[0, 2\) for ndim=2"),
    (lambda i: {**i({"x": 0}, (4, 4)), "sharding": {"q": 0}}, "buffer 'A': sharding names unknown mesh axis 'q'"),
    (lambda i: i({"x": 0}, (3, 4)),
     r"buffer 'A': dim 0: tile 4 \(size 16 over 4 shards\) is not a multiple of block 3"),
    (lambda i: {**i({"x": 0}, (4, 4)), "program_id": 16}, r"buffer 'A': program_id 16 out of range \[0, 16\)"),
    (lambda i: {**i({"x": 0}, (4, 4)), "program_id": (0, 4)},
     r"buffer 'A': program_id coordinate 4 on mesh axis 'y' out of range \[0, 4\)"),
    (lambda i: {**i({"x": 0}, (4, 4)), "order": "zigzag"}, r"buffer 'A': order 'zigzag' is not one of"),
]


@pytest.mark.parametrize("make,msg", BAD, ids=[m.split(":")[-1][:30] for _, m in BAD])
def test_annotate_errors(make, msg):
    annotate, tile, mcopy, init = helpers()
    with pytest.raises(ValueError, match=msg):
        @T.prim_func
        def kernel(A: T.Tensor((16, 16), "float32")):
            annotate({A: make(init)})
            with T.Kernel(1, threads=1) as (bx,):
                pass


def test_bad_mesh_shape_and_init():
    with pytest.raises(ValueError, match="mesh axis 'x' has size 0"):
        mesh_tensor_functions({"x": 0, "y": 4})
    with pytest.raises(ValueError, match="mesh_shape must be a non-empty dict"):
        mesh_tensor_functions({})
    with pytest.raises(ValueError, match="mesh axis names must be non-empty strings"):
        mesh_tensor_functions({1: 4})
    _, _, _, init = helpers()
    with pytest.raises(ValueError, match="init_mesh_tensor_info: sharding names unknown mesh axis 'z'"):
        init({"z": 0}, (4, 4))
    with pytest.raises(ValueError, match="tuple form needs one entry per mesh axis"):
        init((0,), (4, 4))


COPY_BAD = [
    ("coord_len", r"mesh_tensor_copy: src 'A': src_coord \(0,\) has 1 entries, the buffer has rank 2"),
    ("outside", r"mesh_tensor_copy: src 'A': block 4 of dim 0 starts at 16, outside the dim of size 16"),
    ("negative", r"mesh_tensor_copy: src 'A': src_coord\[1\] = -1 is negative"),
    ("no_info", r"mesh_tensor_copy: dst 'B': dst_coord given but the buffer has no mesh_tensor_info"),
    ("extent", r"mesh_tensor_copy: src extent \(4, 4\) and dst extent \(2, 4\) differ"),
    ("past", r"mesh_tensor_copy: dst 'S': copy of extent 4 from index 2 runs past dim 0 of size 4"),
    ("region_coord", r"mesh_tensor_copy: src_coord selects a block of a whole buffer, but src is a BufferRegion"),
]


@pytest.mark.parametrize("case,msg", COPY_BAD, ids=[c for c, _ in COPY_BAD])
def test_copy_errors(case, msg):
    annotate, tile, mcopy, init = helpers()
    with pytest.raises(ValueError, match=msg):
        @T.prim_func
        def kernel(A: T.Tensor((16, 16), "float32"), B: T.Tensor((16, 16), "float32")):
            annotate({A: init({"x": 0, "y": 1}, (4, 4))})
            with T.Kernel(1, threads=1) as (bx,):
                S = T.alloc_shared((4, 4), "float32")
                S2 = T.alloc_shared((2, 4), "float32", scope="shared")
                if case == "coord_len":
                    mcopy(A, S, src_coord=(0,))
                elif case == "outside":
                    mcopy(A, S, src_coord=(4, 0))
                elif case == "negative":
                    mcopy(A, S, src_coord=(0, -1))
                elif case == "no_info":
                    mcopy(S, B, dst_coord=(0, 0))
                elif case == "extent":
                    mcopy(A, S2, src_coord=(0, 0))
                elif case == "past":
                    mcopy(A, S[2, 0], src_coord=(0, 0))
                elif case == "region_coord":
                    mcopy(A[0:4, 0:4], S, src_coord=(0, 0))


# -- the attribute survives tilelang.compile and the kernel runs -----------------------------------
@pytest.mark.slow
def test_func_attr_round_trips_through_compile_and_runs():
    annotate, tile, mcopy, init = helpers()
    M, N = 10, 13  # uneven: edge blocks run past the tensor and are guarded

    @T.prim_func
    def kernel(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        annotate({A: init({"x": 0, "y": 1}, (3, 4), program_id=None),
                  B: {**init({"x": 0, "y": 1}, (3, 4), program_id=5), "note": "output"}})
        with T.Kernel(4, 4, threads=1) as (bx, by):
            S = T.alloc_shared(tile(A), "float32")
            mcopy(A, S, src_coord=(bx, by))
            mcopy(S, B, dst_coord=(bx, by))

    ker = tilelang.compile(kernel, target="c", compile_flags=["-O3", "-march=native"])
    info = read_mesh_tensor_info(ker)
    assert set(info) == {"A", "B"}
    assert info["B"].program_id == 5 and info["B"].extra == {"note": "output"}
    assert info["A"].global_shape == (10, 13) and info["A"].tile_shape == (3, 4)
    assert info["A"].buffer.same_as(ker.prim_func.buffer_map[ker.prim_func.params[0]])
    assert read_mesh_tensor_info(kernel) == read_mesh_tensor_info(ker.prim_func)
    a = np.random.default_rng(0).random((M, N), dtype=np.float32)
    b = np.zeros_like(a)
    ker(torch.from_numpy(a), torch.from_numpy(b))
    np.testing.assert_array_equal(a, b)


def test_unannotated_function_reads_empty():
    @T.prim_func
    def kernel(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1) as (bx,):
            pass

    assert read_mesh_tensor_info(kernel) == {}
    with pytest.raises(TypeError, match="read_mesh_tensor_info: expected a PrimFunc, JITKernel, MeshKernel or IRModule, got str"):
        read_mesh_tensor_info("kernel")


@pytest.mark.slow
def test_program_id_as_tir_expression_round_trips():
    annotate, tile, mcopy, init = helpers()
    n = T.dynamic("n")

    @T.prim_func
    def kernel(A: T.Tensor((n, 16), "float32"), B: T.Tensor((n, 16), "float32")):
        annotate({A: init({"x": 0}, (4, 16), program_id=n % 16)})
        with T.Kernel(4, threads=1) as (bx,):
            S = T.alloc_shared((4, 16), "float32")
            mcopy(A, S, src_coord=(bx, 0))
            T.copy(S, B[bx * 4, 0])

    pid = read_mesh_tensor_info(kernel)["A"].program_id
    assert isinstance(pid, tirx.PrimExpr) and "n" in str(pid)
    ker = tilelang.compile(kernel, target="c")
    assert str(read_mesh_tensor_info(ker)["A"].program_id) == str(pid)


def test_sharding_object_out_of_mesh_order_keeps_its_axis_order():
    """A Sharding the seed dict can't say (dim split by y then x) is stored as given."""
    annotate, _, _, init = helpers({"x": 2, "y": 2})
    s = Sharding(Mesh({"x": 2, "y": 2}), [["y", "x"]])

    @T.prim_func
    def k(A: T.Tensor((8, 4), "float32")):
        annotate({A: init(s, (2, 4))})
        with T.Kernel(2, 2, threads=1) as (bx, by):
            T.evaluate(0)

    e = read_mesh_tensor_info(k)["A"]
    assert e.sharding == s
    assert e.sharding.local_region((8, 4), (1, 0))[0] == slice(2, 4)  # y outer: shard 1


def test_batched_block_may_be_split_past_the_mesh_rank():
    """{"x": 2} on a 1-D mesh splits dim 2 of a rank-3 block: the rank comes from the
    block (init) and the buffer (annotate), not from the mesh."""
    annotate, _, _, init = helpers({"x": 4})
    entry = init({"x": 2}, (1, 16, 4))

    @T.prim_func
    def k(A: T.Tensor((2, 16, 16), "float32")):
        annotate({A: entry})
        with T.Kernel(4, threads=1) as bx:
            T.evaluate(0)

    assert read_mesh_tensor_info(k)["A"].sharding.spec() == [[], [], ["x"]]
    with pytest.raises(ValueError, match="init_mesh_tensor_info: .*dim 3"):
        init({"x": 3}, (1, 16, 4))
