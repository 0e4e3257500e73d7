"""Tilelang-Mesh's names on stock TileLang, without compiling: enable(), the sharding
policies and their Shardings, T.MeshTensor, the comm ops' records, every check the fork
makes (as ValueError), the lowering's refusals, and the traffic closed forms of
docs/tilelang_mesh.md against analyze_mesh_communication."""
import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from meshtensor import Mesh, Sharding  # noqa: E402
from meshtensor.cost import hops  # noqa: E402
from meshtensor.tilelang import (analyze_mesh_communication, comm_flows,  # noqa: E402
                                 compile_mesh_kernel, count_mesh_kernel, find_comm_ops,
                                 lower_mesh_comm, prepare_tilelang_mesh,
                                 verify_mesh_tensors)
from meshtensor.tilelang import tilelang_mesh as tm  # noqa: E402
from meshtensor.tilelang.ir.mesh_param import mesh_params  # noqa: E402

Policy, Rep = tm.MeshShardingPolicy, tm.MeshReplicationType


def lower(func):
    return lower_mesh_comm(prepare_tilelang_mesh(func).func, "argument")


# -- enable() ----------------------------------------------------------------------------------
def test_enable_is_idempotent_and_sets_the_mesh():
    m = tm.enable(mesh=(2, 4))
    first = (T.comm, T.MeshTensor, T.MeshShardingPolicy, T.MeshReplicationType)
    assert tm.enable(mesh=(2, 4)) == m == Mesh({"row": 2, "col": 4})
    assert (T.comm, T.MeshTensor, T.MeshShardingPolicy, T.MeshReplicationType) == first
    assert T.comm.get_target_mesh_shape() == {"nrow": 2, "ncol": 4}
    from tilelang.carver.arch import driver
    assert driver.get_sunmmio_device_mesh_config() == (2, 4)
    tm.enable(mesh=(4, 4))
    assert driver.get_sunmmio_device_mesh_config() == (4, 4) and T.comm is first[0]


def test_enable_leaves_names_tilelang_already_has(monkeypatch):
    mine = object()
    for name in tm.FORK_NAMES:
        monkeypatch.setattr(T, name, mine, raising=False)
    tm.enable(mesh=(2, 2))
    assert all(getattr(T, n) is mine for n in tm.FORK_NAMES)


def test_without_enable_the_kernel_says_to_call_it(monkeypatch):
    for name in tm.FORK_NAMES:
        monkeypatch.delattr(T, name, raising=False)
    with pytest.raises(AttributeError, match=r"T.comm comes from Tilelang-Mesh; .*"
                                             r"tm.enable\(mesh=\(nrows, ncols\)\)"):
        @T.prim_func
        def k():
            with T.Kernel(4) as cid:
                S = T.alloc_shared((4,), "float32")
                T.comm.broadcast(S, S, 0)
    with pytest.raises(AttributeError, match="has no attribute 'MeshTensor': T.MeshTensor"):
        T.MeshTensor  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'$"):
        T.no_such_name  # noqa: B018
    with pytest.raises(AttributeError, match="T.dma_load is a Tilelang-Mesh name that "
                                             "meshtensor does not emulate"):
        T.dma_load  # noqa: B018


def test_mesh_helpers_need_a_mesh(monkeypatch):
    monkeypatch.setattr(tm._STATE, "mesh", None)
    with pytest.raises(ValueError, match=r"call .*tm.enable\(mesh=\(nrows, ncols\)\)` first"):
        tm.comm.get_target_mesh_shape()


@pytest.mark.parametrize("mesh", [(0, 4), (2,), "4x4", (2, 2.5)], ids=str)
def test_enable_refuses_a_bad_mesh(mesh):
    with pytest.raises(ValueError, match="tilelang_mesh.enable"):
        tm.enable(mesh=mesh)


# -- policies and Shardings ------------------------------------------------------------------
# mesh 2 x 4 (row, col), global (5, 9): split_axes and the fork's shard shape
POLICY_TABLE = [
    ("x_and_y", Policy(y=0, x=1), [["row"], ["col"]], (3, 3)),
    ("y_and_x_swapped", Policy(y=1, x=0), [["col"], ["row"]], (2, 5)),
    ("x_only", Policy(x=1), [[], ["col"]], (5, 3)),
    ("y_only", Policy(y=0), [["row"]], (3, 9)),
    ("x_equals_y", Policy(x=0, y=0), [["row", "col"]], (1, 9)),
    ("cross_mesh_dim", Policy(cross_mesh_dim=1), [[], ["row", "col"]], (5, 2)),
    ("replicate_row", Policy(y=0, replicate=Rep.ROW), [["row"]], (3, 9)),
    ("replicate_column", Policy(x=1, replicate=Rep.COLUMN), [[], ["col"]], (5, 3)),
    ("replicate_all", Policy(replicate=Rep.ALL), [], (5, 9)),
    ("all_ignores_splits", Policy(x=1, y=0, replicate=Rep.ALL), [], (5, 9)),
    ("cross_ignores_row", Policy(cross_mesh_dim=0, replicate=Rep.ROW), [["row", "col"]], (1, 9)),
    ("nothing_set", Policy(), [], (5, 9)),
]
MESH24 = Mesh({"row": 2, "col": 4})


def _fork_shard_shape(p, shape, R, C):
    """The fork's own shard-shape rule, written independently (ceil divisions in its
    order)."""
    out = list(shape)
    if p.replicate is Rep.ALL:
        return tuple(out)
    if p.cross_mesh_dim is not None:
        out[p.cross_mesh_dim] = -(-out[p.cross_mesh_dim] // (R * C))
        return tuple(out)
    if p.x is not None:
        out[p.x] = -(-out[p.x] // C)
    if p.y is not None:
        out[p.y] = -(-out[p.y] // R)
    return tuple(out)


@pytest.mark.parametrize("name, policy, split, shard", POLICY_TABLE,
                         ids=[t[0] for t in POLICY_TABLE])
def test_each_policy_is_one_sharding(name, policy, split, shard):
    s = policy.to_sharding(MESH24, 2)
    assert s == Sharding(MESH24, split)
    assert s.tile_shape((5, 9)) == shard == _fork_shard_shape(policy, (5, 9), 2, 4)
    assert tm.MeshTensor((5, 9), policy, (2, 4)).shard_shape == shard
    back = Policy.from_sharding(s)
    assert back.to_sharding(MESH24, 2) == s  # and back, to the canonical policy


@pytest.mark.parametrize("sharding, want", [
    (Sharding(MESH24, [["row"], ["col"]]), "MeshShardingPolicy(x=1, y=0)"),
    (Sharding(MESH24, [["row", "col"]]), "MeshShardingPolicy(cross_mesh_dim=0)"),
    (Sharding(MESH24, [["row"]]), "MeshShardingPolicy(y=0, replicate=MeshReplicationType.ROW)"),
    (Sharding(MESH24, [[], ["col"]]),
     "MeshShardingPolicy(x=1, replicate=MeshReplicationType.COLUMN)"),
    (Sharding(MESH24, []), "MeshShardingPolicy(replicate=MeshReplicationType.ALL)"),
], ids=["full", "cross", "row", "column", "replicated"])
def test_from_sharding_gives_the_canonical_policy(sharding, want):
    assert repr(Policy.from_sharding(sharding)) == want


@pytest.mark.parametrize("sharding, match", [
    (Sharding(MESH24, [["col", "row"]]), "split by columns then rows"),
    (Sharding(MESH24, [["col"], ["row"]], halo_sizes=[1, 1, 0, 0]), "halos"),
    (Sharding(MESH24, [["row"]], partial={"col": "sum"}), "partial axes"),
    (Sharding(Mesh({"a": 8}), [["a"]]), "has 1 axes"),
], ids=["cols_then_rows", "halo", "partial", "1d_mesh"])
def test_from_sharding_refuses_what_no_policy_states(sharding, match):
    with pytest.raises(ValueError, match=match):
        Policy.from_sharding(sharding)


@pytest.mark.parametrize("make, exc, match", [
    (lambda: Policy(cross_mesh_dim=0, y=1), ValueError,
     "cross_mesh_dim is mutually exclusive with x/y splits"),
    (lambda: Policy(x=0, replicate=Rep.ROW).to_sharding(MESH24, 2), ValueError,
     "Cannot shard on x-axis when replicating on rows"),
    (lambda: Policy(y=0, replicate=Rep.COLUMN).to_sharding(MESH24, 2), ValueError,
     "Cannot shard on y-axis when replicating on columns"),
    (lambda: Policy(y=2).to_sharding(MESH24, 2), ValueError,
     "Invalid y-split dimension: 2, tensor rank is 2"),
    (lambda: Policy(x=-1).to_sharding(MESH24, 2), ValueError,
     "Invalid x-split dimension: -1, tensor rank is 2"),
    (lambda: Policy(cross_mesh_dim=3).to_sharding(MESH24, 2), ValueError,
     "Invalid cross_mesh_dim: 3, tensor rank is 2"),
    (lambda: Policy(replicate="ROW"), TypeError, "replicate must be a MeshReplicationType"),
    (lambda: Policy(replicate=7), ValueError, r"replicate 7 is not a MeshReplicationType value"),
    (lambda: Policy(x="1"), TypeError, "x must be an int dim or None"),
    (lambda: tm.MeshTensor((4, 4), {"x": 1}, (2, 2)), TypeError,
     "sharding_policy must be a T.MeshShardingPolicy"),
    (lambda: tm.MeshTensor((4, 4), Policy(x=1), (2, 0)), ValueError, "ncols must be a positive"),
    (lambda: tm.MeshTensor((T.dynamic("m") * T.dynamic("n"), 4), Policy(x=1), (2, 2)),
     ValueError, r"dim m \* n must be a non-negative int, a symbolic size"),
    (lambda: tm.MeshTensor((4, 4)), TypeError, "MeshTensor requires a placement"),
    (lambda: tm.MeshTensor((4, 4), Policy(x=1), sharding_policy=Policy(y=0)), TypeError,
     "Specify only one of placement or the legacy sharding_policy argument"),
    (lambda: tm.MeshTensor((4, 4), [T.placement.S(0)]), ValueError,
     "placements must contain exactly two mesh axes, got 1"),
    (lambda: tm.MeshTensor((4, 4), [T.placement.S(0), "x"]), TypeError,
     "col placement must be Shard or Replicate"),
    (lambda: tm.MeshTensor((4, 4), T.placement.full_shard(0, 2)), ValueError,
     "Invalid col shard dimension: 2, tensor rank is 2"),
    (lambda: T.placement.S(-1), ValueError, "Shard.dim must be a non-negative int"),
    (lambda: Policy([T.placement.S(0), T.placement.R()], y=1), ValueError,
     "placements cannot be combined with legacy sharding arguments"),
], ids=["cross_and_y", "row_with_x", "column_with_y", "y_range", "x_negative", "cross_range",
        "replicate_str", "replicate_int_range", "x_str", "policy_type", "mesh_config",
        "symbolic", "no_placement", "two_placements", "placement_length",
        "placement_type", "placement_range", "shard_negative", "placements_and_legacy"])
def test_policy_and_mesh_tensor_errors(make, exc, match):
    tm.enable(mesh=(2, 2))
    with pytest.raises(exc, match=match):
        make()


def test_mesh_tensor_records_layout_and_shard_shape():
    tm.enable(mesh=(2, 2))
    from tilelang.layout import make_zz_layout
    lay = make_zz_layout((8, 6), axes=[0, 1])

    @T.prim_func
    def k(A: T.MeshTensor((8, 6), T.MeshShardingPolicy(y=0, x=1), (2, 2), T.bfloat16,
                          layout=lay)):
        with T.Kernel(4) as cid:
            T.evaluate(0)

    p = mesh_params(k)[0]
    assert (p.name, p.global_shape, p.shard_shape, p.dtype) == ("A", (8, 6), (4, 3), "bfloat16")
    assert p.layout == "zz(shape=(8, 6), axes=(0, 1), block=(32, 32))"
    assert tuple(int(n) for n in k.buffer_map[k.params[0]].shape) == (4, 3)


# -- the comm ops: records and the fork's checks -----------------------------------------------
def test_ops_become_comm_op_records():
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def k():
        with T.Kernel(4) as cid:
            S = T.alloc_shared((2, 3), "float32")
            D = T.alloc_shared((2, 3), "float32", scope="shared.rsram")
            G = T.alloc_shared((2, 2, 3), "float32")
            O = T.alloc_shared((2,), "float32")
            T.comm.broadcast(S, D, (1, 0), direction="H", size=4)
            T.comm.put(S, D, T.comm.current_core(), (cid + 1) % 4)
            T.comm.all_gather(S, G, direction="v")
            T.comm.all_reduce(S, O, "AbsMax", "a", dim=1, clear=False)
            T.comm.barrier(group=[(0, 0), (1, 1)])
            T.comm.fence()

    ops = find_comm_ops(k)
    assert [o.name for o in ops] == [
        "T.comm.broadcast (comm op #0)", "T.comm.put (comm op #1)",
        "T.comm.all_gather (comm op #2)", "T.comm.all_reduce (comm op #3)",
        "mesh_comm.barrier (comm op #4)"]
    assert [o.mesh_axes for o in ops] == [(1,), (0, 1), (0,), (0, 1), (0, 1)]
    b, p, g, r, _ = ops
    assert [int(e) for e in b.params["src_core"]] == [1, 0] and b.params["size"] == 4
    assert str(p.params["src_core"][0]) == "bx" and p.params["size"] == 6
    assert (g.params["stacked"], g.params["size"]) == (True, 6)
    assert dict(r.params) == {"reduce_type": "absmax", "dim": 1, "clear": False}


def test_core_helpers():
    tm.enable(mesh=(2, 4))
    assert tm.comm.core_tuple_to_id((1, 2)) == 6 and tm.comm.CoreId((1, 3)) == 7
    assert tm.comm.CoreId(5) == 5 and tm.comm.core_id_to_tuple(6) == (1, 2)
    for bad, match in [((2, 0), r"core_id row 2 out of bounds for limit 2\."),
                       ((0, 4), r"core_id col 4 out of bounds for limit 4\.")]:
        with pytest.raises(ValueError, match=match):
            tm.comm.core_tuple_to_id(bad)
    with pytest.raises(ValueError, match=r"Core ID 8 out of bounds for mesh shape "
                                         r"\{'nrow': 2, 'ncol': 4\}"):
        tm.comm.CoreId(8)
    with pytest.raises(ValueError, match="core_id must be either a tuple"):
        tm.comm.CoreId("3")
    with pytest.raises(ValueError, match="core_id must be a tuple of"):
        tm.comm.core_tuple_to_id(3)
    with pytest.raises(ValueError, match="must be called inside T.Kernel"):
        tm.comm.current_core()


def _kernel_with(make_op, mesh=(2, 2), compat=None):
    """Build a kernel whose body is one op made by ``make_op(cid, bufs)``."""
    tm.enable(mesh=mesh, compat=compat)
    n = mesh[0] * mesh[1]

    @T.prim_func
    def k(X: T.MeshTensor((n, 2, 3), T.MeshShardingPolicy(cross_mesh_dim=0), mesh, "float32")):
        with T.Kernel(n) as cid:
            S = T.alloc_shared((2, 3), "float32")
            SI = T.alloc_shared((2, 3), "int32")
            D = T.alloc_shared((2, 3), "float32")
            D4 = T.alloc_shared((4, 3), "float32")
            G = T.alloc_shared((2, 2, 3), "float32")
            G3 = T.alloc_shared((2, 2, 2, 3), "float32")
            S3 = T.alloc_shared((2, 2, 3), "float32")
            O = T.alloc_shared((2,), "float32")
            OI = T.alloc_shared((2,), "int32")
            IDX = T.alloc_shared((1,), "int32")
            make_op(cid, dict(S=S, SI=SI, D=D, D4=D4, G=G, G3=G3, S3=S3, O=O, OI=OI, X=X,
                              IDX=IDX))

    return k


FORK_CHECKS = [
    # (id, op, exception, message): every fork assert, as ValueError with its text
    ("dtype", lambda c, b: T.comm.broadcast(b["S"], b["SI"], 0), ValueError,
     r"Source and destination buffer dtypes must match for broadcast\. Got float32 vs int32\."),
    ("put_dtype", lambda c, b: T.comm.put(b["SI"], b["D"], 0, 1), ValueError,
     r"dtypes must match for put\. Got int32 vs float32\."),
    ("gather_dtype", lambda c, b: T.comm.all_gather(b["SI"], b["G"], "h"), ValueError,
     r"dtypes must match for all_gather\."),
    ("reduce_dtype", lambda c, b: T.comm.all_reduce(b["SI"], b["O"], "sum", "h"), ValueError,
     r"dtypes must match for all_reduce\."),
    ("rank", lambda c, b: T.comm.broadcast(b["S"], b["G"], 0), ValueError,
     r"T.comm.broadcast rank mismatch: dst has non-1 extra leading dimension; src=\[2, 3\], "
     r"dst=\[2, 2, 3\]"),
    ("buffers_exact", lambda c, b: T.comm.broadcast(b["S"], b["D4"], 0), ValueError,
     r"extent mismatch: exact match is required for Buffer-to-Buffer operation"),
    ("src_larger", lambda c, b: T.comm.put(b["S"], b["D4"][0:1, 0:3], 0, 1), ValueError,
     r"mixed-region operation requires the same number of non-1 extents after squeezing"),
    ("src_extent_larger", lambda c, b: T.comm.put(b["D4"][0:4, 0:3], b["G"][0, 0:2, 0:3], 0, 1),
     ValueError, r"src extent is larger than dst extent at matched axis; src dim 0 extent=4"),
    ("two_loads", lambda c, b: T.comm.put(b["S"][0, 0], b["D"][0, 0], 0, 1), ValueError,
     r"cannot infer extents when both operands are BufferLoad values"),
    ("starts_outside", lambda c, b: T.comm.broadcast(b["S"], b["D4"][4:6, 0:3], 0), ValueError,
     r"T.comm.broadcast region starts outside buffer shape: D4\[dim=0\], min=4"),
    ("size_past_src", lambda c, b: T.comm.broadcast(b["S"], b["D"], 0, size=7), ValueError,
     r"size 7 exceeds source buffer size 6\."),
    ("size_past_send", lambda c, b: T.comm.all_gather(b["S"], b["G"], "h", size=9), ValueError,
     r"size 9 exceeds send buffer size 6\."),
    ("size_below", lambda c, b: T.comm.put(b["S"], b["D"], 0, 1, size=-2), ValueError,
     r"size must be an integer >= -1\."),
    ("recv_small", lambda c, b: T.comm.all_gather(b["S"], b["D4"], "h", axis=1), ValueError,
     r"T\.comm\.all_gather: receive buffer shape must be \[2, 6\] to hold gathered data "
     r"from 2 cores, but got "
     r"\[4, 3\]\."),
    ("recv_stacked", lambda c, b: T.comm.all_gather(b["S"], b["G"], "all"), ValueError,
     r"T\.comm\.all_gather: receive buffer shape must be \[4, 2, 3\]"),
    ("axis_range", lambda c, b: T.comm.all_gather(b["S"], b["G"], "h", axis=2), ValueError,
     r"axis 2 out of range for send buffer with 2 dimensions\."),
    ("axis_middle", lambda c, b: T.comm.all_gather(b["S3"], b["G3"], "h", axis=1), ValueError,
     r"Only axis=0 or axis=-1 \(last dim\) are currently supported, got axis=1 "
     r"\(normalized to 1\) for 3-D send buffer\."),
    ("src_offset", lambda c, b: T.comm.all_gather(b["S"], b["G"], "h", src_offset_byte=-4),
     ValueError, r"src_offset_byte must be a non-negative integer\."),
    ("out_shape", lambda c, b: T.comm.all_reduce(b["S"], b["O"], "sum", "h", dim=0), ValueError,
     r"T\.comm\.all_reduce: invalid reduce output shape, buffer shape is \[2, 3\], dim is 0, "
     r"output shape is "
     r"\[2\], expected shapes are \[3\] or \[1, 3\]"),
    ("dim_range", lambda c, b: T.comm.all_reduce(b["S"], b["O"], "sum", "h", dim=2), ValueError,
     r"T\.comm\.all_reduce: dim 2 out of bounds for buffer with 2 dimensions\."),
    ("dim_negative", lambda c, b: T.comm.all_reduce(b["S"], b["O"], "sum", "h", dim=-2),
     ValueError, r"T\.comm\.all_reduce: dim -2 out of bounds for buffer with 2 dimensions\."),
    ("direction", lambda c, b: T.comm.broadcast(b["S"], b["D"], 0, "diagonal"), ValueError,
     r"Invalid direction string: diagonal"),
    ("direction_type", lambda c, b: T.comm.all_gather(b["S"], b["G"], 1), TypeError,
     r"direction must be a string"),
    ("reduce_type", lambda c, b: T.comm.all_reduce(b["S"], b["O"], "Prod", "h"), ValueError,
     r"Reduction op must be one of \['sum', 'abssum', 'max', 'min', 'absmax', 'bitand', "
     r"'bitor', 'bitxor'\], but got prod\."),
    ("bit_on_float", lambda c, b: T.comm.all_reduce(b["S"], b["O"], "bitxor", "v"),
     ValueError, r"reduce type 'bitxor' needs an integer dtype, got float32"),
    ("clear", lambda c, b: T.comm.all_reduce(b["SI"], b["OI"], "sum", "h", clear=2),
     ValueError, r"clear must be a boolean value\."),
    ("core_linear", lambda c, b: T.comm.broadcast(b["S"], b["D"], 4), ValueError,
     r"src_core 4 out of bounds for limit 4\."),
    ("core_row", lambda c, b: T.comm.put(b["S"], b["D"], (2, 0), 1), ValueError,
     r"src_core row 2 out of bounds for limit 2\."),
    ("core_col", lambda c, b: T.comm.put(b["S"], b["D"], 0, (0, 5)), ValueError,
     r"dst_core col 5 out of bounds for limit 2\."),
    ("core_tuple", lambda c, b: T.comm.put(b["S"], b["D"], (0, 0, 0), 1), ValueError,
     r"src_core must be a linear core id or a tuple of \(row, col\)\."),
    ("core_bool", lambda c, b: T.comm.broadcast(b["S"], b["D"], True), TypeError,
     r"src_core must be an integer or TIR PrimExpr, got bool\."),
    ("put_itself", lambda c, b: T.comm.put(b["S"], b["D"], c, c), ValueError,
     r"T.comm.put requires src_core and dst_core to be different"),
    ("dst_global", lambda c, b: T.comm.broadcast(b["S"], b["X"], 0), ValueError,
     r"dst 'X' is a global-memory buffer"),
    ("clipped_then_too_small", lambda c, b: T.comm.broadcast(b["S"], b["D4"][3:5, 0:3], 0),
     ValueError, r"mixed-region operation requires the same number of non-1 extents after "
                 r"squeezing unit dimensions; src=\[2, 3\], dst=\[1, 3\]"),
]
#: the older fork's compact operand rule (compat="2025")
FORK_CHECKS_2025 = [
    ("rank", lambda c, b: T.comm.broadcast(b["S"], b["G"], 0), ValueError,
     r"must have the same number of dimensions for broadcast"),
    ("src_larger", lambda c, b: T.comm.put(b["S"], b["D4"][0:1, 0:3], 0, 1), ValueError,
     r"Source buffer size larger than destination buffer size: 6 vs 3"),
    ("load_not_region", lambda c, b: T.comm.broadcast(b["S"][0, 0], b["D"], 0), TypeError,
     r"src must be a per-core buffer or a region of one"),
]


@pytest.mark.parametrize("name, make, exc, match", FORK_CHECKS, ids=[t[0] for t in FORK_CHECKS])
def test_fork_checks_are_errors(name, make, exc, match):
    with pytest.raises(exc, match=match):
        _kernel_with(make)


@pytest.mark.parametrize("name, make, exc, match", FORK_CHECKS_2025,
                         ids=[t[0] for t in FORK_CHECKS_2025])
def test_the_2025_fork_checks_under_compat(name, make, exc, match):
    try:
        with pytest.raises(exc, match=match):
            _kernel_with(make, compat="2025")
    finally:
        tm.enable(mesh=(2, 2))


def test_upstream_operand_rules():
    """SUNMMIO's region rules: an element A[i, j] takes its extents from the other
    operand, unit dims are squeezed, the destination shrinks to the source, a slice past
    the buffer's edge is clipped with the upstream's warning."""
    def ops(c, b):
        T.comm.broadcast(b["S"][0, 0], b["D4"][0:2, 0:3], 0)          # load: (2, 3)
        T.comm.put(b["S"][0:1, 0:3], b["O"], 0, 1)                    # (1, 3) into (2,)?
    with pytest.raises(ValueError, match=r"src extent is larger than dst extent at matched "
                                         r"axis; src dim 1 extent=3, dst dim 0 extent=2"):
        _kernel_with(ops)

    def ok(c, b):
        T.comm.broadcast(b["S"][0, 0], b["D4"][0:2, 0:3], 0)
        T.comm.put(b["S"][0:1, 0:2], b["O"], 0, 1)
        T.comm.broadcast(b["S"][1, 0:3], b["D4"], 0)
        T.comm.all_gather(b["S"], b["G"][0, 0, 0], "h")

    k = _kernel_with(ok)
    bc, put, bc2, gat = find_comm_ops(k)
    assert bc.static_extents("src") == (2, 3) and bc.static_extents("dst") == (2, 3)
    assert put.static_extents("src") == (1, 2) and put.static_extents("dst") == (2,)
    assert bc2.static_extents("dst") == (1, 3) and put.params["size"] == 2
    assert gat.static_extents("dst") == (2, 2, 3)
    with pytest.warns(UserWarning, match=r"explicit BufferRegion exceeds buffer shape and will "
                                         r"be clipped: D4\[dim=0\], min=3, extent=2"):
        _kernel_with(lambda c, b: T.comm.broadcast(b["S"][0:1, 0:3], b["D4"][3:5, 0:3], 0))


LOWERING_REFUSALS = [
    ("two_senders_in_a_row", (2, 2), lambda c, b: T.comm.broadcast(b["S"], b["D"], c, "h"),
     r"T.comm.broadcast \(comm op #0\): cores \(0, 0\) and \(0, 1\) both broadcast to "
     r"\[\(0, 0\), \(0, 1\)\] in one execution; two different senders to one destination"),
    ("two_puts_to_one_core", (2, 2), lambda c, b: T.comm.put(b["S"], b["D"], c, (c + 1) % 2),
     r"core \(0, 0\) is the destination of puts from \[\(0, 1\), \(1, 1\)\]"),
    ("two_first_legs_to_one_core", (3, 3),
     lambda c, b: T.comm.put(b["S"], b["D"], T.if_then_else(c == 0, 2, 8),
                             T.if_then_else(c == 0, 3, 4)),
     r"core \(1, 2\) is the vertical-phase target of puts from \[\(0, 2\), \(2, 2\)\]"),
    ("core_out_of_range", (2, 2), lambda c, b: T.comm.put(b["S"], b["D"], c, c + 1),
     r"T.comm.put \(comm op #0\): dst_core 4 out of bounds for limit 4 \(on core \(1, 1\)\)"),
    ("tuple_core_out_of_range", (2, 2),
     lambda c, b: T.comm.broadcast(b["S"], b["D"], (c // 2, c), "v"),
     r"src_core col 2 out of bounds for limit 2"),
    ("put_to_itself_somewhere", (2, 2), lambda c, b: T.comm.put(b["S"], b["D"], c, c * 3 % 4),
     r"T.comm.put requires src_core and dst_core to be different: T.comm.put \(comm op #0\) "
     r"names core \(0, 0\) as both on core \(0, 0\)"),
    ("core_from_a_buffer", (2, 2), lambda c, b: T.comm.put(b["S"], b["D"], b["IDX"][0], 1),
     r"src_core \['IDX\[0\]'\] cannot be evaluated"),
]


@pytest.mark.parametrize("name, mesh, make, match", LOWERING_REFUSALS,
                         ids=[t[0] for t in LOWERING_REFUSALS])
def test_lowering_and_analysis_refuse_what_they_cannot_prove(name, mesh, make, match):
    """Exact or refused: cores are evaluated over the iteration space; a conflict, a
    core out of range or an expression that cannot be evaluated is a ValueError naming
    the statement, in LowerMeshComm and in the traffic analysis alike."""
    k = _kernel_with(make, mesh)
    with pytest.raises(ValueError, match=match):
        lower(k)
    with pytest.raises(ValueError, match=match):
        analyze_mesh_communication(k)


def test_a_comm_op_under_a_core_condition_is_refused():
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def k():
        with T.Kernel(4) as cid:
            S = T.alloc_shared((4,), "float32")
            D = T.alloc_shared((4,), "float32")
            if cid == 0:
                T.comm.broadcast(S, D, 0, "h")

    with pytest.raises(ValueError, match=r"T.comm.broadcast \(comm op #0\) is under `if bx == 0`"):
        lower(k)
    with pytest.raises(ValueError, match=r"T.comm.broadcast \(comm op #0\) runs between 0 and "
                                         r"1 times on different cores"):
        analyze_mesh_communication(k)


def test_mesh_tensor_source_must_stay_in_its_shard():
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def k(A: T.MeshTensor((8, 8), T.MeshShardingPolicy(y=0, x=1), (2, 2), "float32")):
        with T.Kernel(4) as cid:
            D = T.alloc_shared((2, 4), "float32")
            for s in T.serial(3):
                T.comm.broadcast(A[s * 2:s * 2 + 2, 0:4], D, 0, "all")

    with pytest.raises(ValueError, match=r"reads T.MeshTensor 'A' outside its shard of shape "
                                         r"\(4, 4\)"):
        prepare_tilelang_mesh(k)


def _gemm_from_laid_dram(layout_b, b_scope="shared"):
    """A 2x2 kernel copying T.MeshTensor B (DRAM layout ``layout_b``) into T.gemm's B
    operand ``B_s`` (scope ``b_scope``)."""
    from tilelang.layout import make_zn_layout, make_zz_layout
    lay = {"zn": make_zn_layout, "zz": make_zz_layout}[layout_b]((8, 8), [0, 1], (4, 4))
    pol = T.MeshShardingPolicy(y=0, x=1)

    @T.prim_func
    def k(A: T.MeshTensor((8, 8), pol, (2, 2), "float32"),
          B: T.MeshTensor((8, 8), pol, (2, 2), "float32", layout=lay),
          C: T.MeshTensor((8, 8), pol, (2, 2), "float32")):
        with T.Kernel(4) as cid:
            A_s = T.alloc_shared((4, 4), "float32")
            B_s = T.alloc_shared((4, 4), "float32", scope=b_scope)
            C_s = T.alloc_shared((4, 4), "float32")
            T.clear(C_s)
            T.copy(A[0, 0], A_s)
            T.copy(B[0, 0], B_s)
            T.gemm(A_s, B_s, C_s)
            T.copy(C_s, C[0, 0])
    return k


@pytest.mark.parametrize("layout_b, scope, refused", [
    ("zn", "shared", True), ("zn", "shared.wsram", True), ("zn", "shared.rsram", False),
    ("zz", "shared", False)])
def test_a_zn_dram_tensor_cannot_be_copied_into_wsram(layout_b, scope, refused):
    """SUNMMIO's DMA into WSRAM (T.gemm's B SRAM, where its scope inference puts an
    unscoped B) needs a ZZ-like DRAM layout: its compiler refuses a ZN tensor there."""
    tm.enable(mesh=(2, 2))
    k = _gemm_from_laid_dram(layout_b, scope)
    if refused:
        with pytest.raises(ValueError, match=r"T.copy\(B -> B_s\): B is kept in DRAM "
                                             r"in layout zn\(.*B_s, in WSRAM.*only from a "
                                             r"ZZ-like DRAM layout"):
            prepare_tilelang_mesh(k)
    else:
        prepare_tilelang_mesh(k)


def test_kernel_meshes_must_agree():
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def k(A: T.MeshTensor((8, 8), T.MeshShardingPolicy(y=0, x=1), (4, 4), "float32")):
        with T.Kernel(4) as cid:
            S = T.alloc_shared((4,), "float32")
            T.comm.broadcast(S, S, 0, "h")

    with pytest.raises(ValueError, match="name different meshes"):
        prepare_tilelang_mesh(k)


def test_raw_pointer_use_of_a_mesh_tensor_is_refused():
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def k(A: T.MeshTensor((8, 8), T.MeshShardingPolicy(y=0, x=1), (2, 2), "float32")):
        with T.Kernel(4) as cid:
            T.evaluate(T.call_extern("handle", "use", A.data))

    with pytest.raises(ValueError, match=r"T.MeshTensor parameters \['A'\] are used other than"):
        prepare_tilelang_mesh(k)


def test_out_idx_is_refused_with_mesh_tensors():
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def k(A: T.MeshTensor((8, 8), T.MeshShardingPolicy(y=0, x=1), (2, 2), "float32")):
        with T.Kernel(4) as cid:
            A[0, 0] = 1.0

    with pytest.raises(ValueError, match="out_idx is not supported"):
        compile_mesh_kernel(k, out_idx=[0])


# -- what PrepareTilelangMesh makes -----------------------------------------------------------
def test_prepare_stacks_shards_and_makes_buffers_core_private():
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def k(A: T.MeshTensor((8, 8), T.MeshShardingPolicy(y=0, x=1), (2, 2), "float32"),
          C: T.MeshTensor((8, 8), T.MeshShardingPolicy(y=0, x=1), (2, 2), "float32")):
        with T.Kernel(4) as cid:
            S = T.alloc_shared((4, 4), "float32")
            G = T.alloc_shared((4, 8), "float32", scope="shared.wsram")
            Acc = T.alloc_shared((4, 4), "float32", scope="shared.rsram")
            T.clear(Acc)
            for k in T.Pipelined(2, num_stages=2):
                T.comm.broadcast(A[0:4, 0:4], S, (cid // 2, k), "h")
                T.comm.all_gather(S, G, "h", axis=1)
            T.copy(Acc, C[0, 0])

    p = prepare_tilelang_mesh(k)
    f = p.func
    shapes = [tuple(int(n) for n in f.buffer_map[v].shape) for v in f.params]
    assert shapes == [(4, 4, 4), (4, 4, 4)]
    assert [(i, w) for i, _, w in p.params] == [(0, False), (1, True)]
    text = f.script()
    assert 'Acc = T.sblock_alloc_buffer((4, 4), scope="local")' in text
    assert 'G = T.sblock_alloc_buffer((4, 8), scope="shared")' in text
    assert "A_send0 = T.sblock_alloc_buffer((4, 4), scope=\"shared\")" in text
    assert "T.copy(T.region(A[bx, 0, 0], 1, 1, 4, 4), T.region(A_send0[0, 0], 2, 4, 4))" in text
    assert verify_mesh_tensors(k) == [] and verify_mesh_tensors(f) == []


WRITES = {  # id: (statement on a T.MeshTensor A, written back to the caller?)
    "load": (lambda A, S: T.copy(A[0:2, 0:2], S), False),
    "store": (lambda A, S: T.buffer_store(A, 1.0, [0, 0]), True),
    "copy_into": (lambda A, S: T.copy(S, A[0:2, 0:2]), True),
    "atomic_add": (lambda A, S: T.atomic_add(A[0, 1], 1.0), True),
    "atomic_add_region": (lambda A, S: T.atomic_add(A[0:2, 0:2], S), True),
    "read_pointer": (lambda A, S: T.evaluate(T.access_ptr(A[0, 0], "r", 4)), False),
    "address_of": (lambda A, S: T.evaluate(T.call_extern("handle", "f", T.address_of(A[0, 0]))),
                   True),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_prepare_finds_every_way_a_mesh_tensor_is_written(name):
    """A T.MeshTensor the kernel may write (a store, a tile op's write region, an atomic
    through an access pointer, a raw address) is copied back to the caller's tensor;
    one only read is not. T.atomic_add's element form was missed, and the caller's
    tensor kept its old values."""
    tm.enable(mesh=(2, 2))
    stmt, written = WRITES[name]

    @T.prim_func
    def k(A: T.MeshTensor((4, 4), T.MeshShardingPolicy(y=0, x=1), (2, 2), "float32")):
        with T.Kernel(4) as cid:
            S = T.alloc_shared((2, 2), "float32")
            stmt(A, S)

    assert [w for _, _, w in prepare_tilelang_mesh(k).params] == [written]


def test_mesh_tensor_records_live_in_the_kernel():
    """The T.MeshTensor records travel in the kernel's function attributes (nothing
    process-wide): a kernel saved and loaded keeps them, and two kernels built from
    one annotation each have their own."""
    import tvm
    from meshtensor.tilelang.ir.mesh_param import ATTR
    tm.enable(mesh=(2, 2))
    ann = T.MeshTensor((6, 4), T.MeshShardingPolicy(y=0, x=1), (2, 2), "float32")

    def build():
        @T.prim_func
        def k(A: ann, B: T.MeshTensor((5,), T.placement.mesh_as_line(0), "int32")):
            with T.Kernel() as cid:
                A[0, 0] = 1.0
        return k

    k1, k2 = build(), build()
    assert ATTR in k1.attrs and not k1.same_as(k2)
    p = mesh_params(k1)
    assert [(q.name, q.global_shape, q.shard_shape) for q in p.values()] == [
        ("A", (6, 4), (3, 2)), ("B", (5,), (2,))]
    back = tvm.ir.load_json(tvm.ir.save_json(k1))
    assert mesh_params(back) == p
    assert p[1].sharding.dim_bounds((5,), 0).tolist() == [0, 2, 3, 4, 5]  # balanced


# -- traffic: the closed forms of docs/tilelang_mesh.md ----------------------------------------
def _traffic(report):
    comm = report.is_comm
    h = report.hops[comm]
    nb = report.nbytes[comm]
    return (int(nb.sum()), int(comm.sum()), int((nb * h).sum()),
            len(report.supersteps))


def _one_op_kernel(n, make):
    tm.enable(mesh=(n, n))

    @T.prim_func
    def k():
        with T.Kernel(n * n) as cid:
            S = T.alloc_shared((2, 4), "float32")
            D = T.alloc_shared((2, 4), "float32")
            G = T.alloc_shared((n * n, 2, 4), "float32")
            Gh = T.alloc_shared((2, 4 * n), "float32")
            make(cid, S, D, G, Gh)

    return k


@settings(max_examples=12, deadline=None)
@given(n=st.integers(2, 5), r0=st.integers(0, 4), c0=st.integers(0, 4))
def test_closed_form_broadcast_all(n, r0, c0):
    """broadcast(..., "all") from (r0, c0) on n x n, S bytes: a column phase of n - 1
    transfers, a row phase of n(n - 1); S (n^2 - 1) bytes; byte-hops
    S (sum_i |i - r0| + n sum_j |j - c0|)."""
    r0, c0, S = r0 % n, c0 % n, 32
    k = _one_op_kernel(n, lambda cid, s, d, g, gh: T.comm.broadcast(s, d, (r0, c0), "all"))
    dist = lambda a: sum(abs(i - a) for i in range(n))  # noqa: E731
    assert _traffic(analyze_mesh_communication(k)) == (
        S * (n * n - 1), n * n - 1, S * (dist(r0) + n * dist(c0)), 2)
    steps = analyze_mesh_communication(k).supersteps
    assert [s.flows for s in steps] == [n - 1, n * (n - 1)]


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("direction", ["h", "all"])
def test_closed_form_all_gather(n, direction):
    """all_gather of S bytes: "h" is one row multicast per core, n^2 (n - 1) transfers,
    S n^2 (n - 1) bytes, byte-hops S n^2 (n^2 - 1) / 3; "all" is one 2-D broadcast per
    core: n^2 (n^2 - 1) transfers and S n^2 (n^2 - 1) bytes in two phases, byte-hops
    S n^2 (n + 1) (n^2 - 1) / 3."""
    S = 32
    if direction == "h":
        k = _one_op_kernel(n, lambda cid, s, d, g, gh: T.comm.all_gather(s, gh, "h", axis=-1))
        want = (S * n * n * (n - 1), n * n * (n - 1), S * n * n * (n * n - 1) // 3, 1)
    else:
        k = _one_op_kernel(n, lambda cid, s, d, g, gh: T.comm.all_gather(s, g, "all"))
        want = (S * n * n * (n * n - 1), n * n * (n * n - 1),
                S * n * n * (n + 1) * (n * n - 1) // 3, 2)
    assert _traffic(analyze_mesh_communication(k)) == want


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_closed_form_diagonal_put(n):
    """A put from (0, 0) to (n-1, n-1): two transfers (down to (n-1, 0), then along the
    row), 2S bytes, byte-hops 2 S (n - 1). Every core to its diagonal neighbour
    ((r+1) % n, (c+1) % n): 2 n^2 transfers, 2 n^2 S bytes, byte-hops 4 S n (n - 1)
    (no wraparound links: a wrap is n - 1 hops)."""
    S = 32
    k = _one_op_kernel(n, lambda cid, s, d, g, gh: T.comm.put(s, d, (0, 0), (n - 1, n - 1)))
    assert _traffic(analyze_mesh_communication(k)) == (2 * S, 2, 2 * S * (n - 1), 2)
    k = _one_op_kernel(n, lambda cid, s, d, g, gh: T.comm.put(
        s, d, cid, ((cid // n + 1) % n) * n + (cid % n + 1) % n))
    assert _traffic(analyze_mesh_communication(k)) == (2 * n * n * S, 2 * n * n,
                                                        4 * S * n * (n - 1), 2)


def test_comm_flows_of_static_ops_and_of_given_cores():
    k = _one_op_kernel(2, lambda cid, s, d, g, gh: T.comm.put(s, d, (0, 1), (1, 0)))
    op = find_comm_ops(k)[0]
    assert [a.tolist() for a in comm_flows(op)] == [[1, 3], [3, 2], [32, 32]]
    k = _one_op_kernel(2, lambda cid, s, d, g, gh: T.comm.broadcast(s, d, cid, "h"))
    op = find_comm_ops(k)[0]
    with pytest.raises(ValueError, match=r"src_core \['bx'\] is not static; pass cores="):
        comm_flows(op)
    assert [a.tolist() for a in comm_flows(op, cores=[0, 2])] == [[0, 2], [1, 3], [32, 32]]
    mesh = op.mesh
    snd, rcv, _ = comm_flows(op, cores=[0, 2])
    assert hops(mesh, snd, rcv).tolist() == [1, 1]


def test_traffic_counts_each_execution_of_a_looped_op():
    """A SUMMA-like row broadcast from column s in a loop: every row has its own sender
    (no conflict), n (n - 1) transfers per execution, n executions."""
    n = 3
    tm.enable(mesh=(n, n))

    @T.prim_func
    def k():
        with T.Kernel(n * n) as cid:
            S = T.alloc_shared((4,), "float32")
            D = T.alloc_shared((4,), "float32")
            for s in T.serial(n):
                T.comm.broadcast(S, D, (cid // n, s), "h")

    r = analyze_mesh_communication(k)
    assert [st.flows for st in r.supersteps] == [n * (n - 1)] * n
    assert sorted({int(p) % n for p in r.peer}) == [0, 1, 2]  # senders from every column
    assert np.array_equal(np.unique(r.step), np.arange(n))


@pytest.mark.parametrize("make, sends, phases", [
    # broadcast "all" from (0, 0): down column 0, then along each row
    (lambda cid, s, d, g, gh: T.comm.broadcast(s, d, (0, 0), "all"),
     [[2, 0, 0, 0, 0, 0, 0, 0, 0], [2, 0, 0, 2, 0, 0, 2, 0, 0]], [0, 1]),
    # a diagonal put (0, 0) -> (2, 2): down to (2, 0), then along row 2
    (lambda cid, s, d, g, gh: T.comm.put(s, d, (0, 0), (2, 2)),
     [[1, 0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 1, 0, 0]], [0, 1]),
    # all_gather "all": every core down its column, then every core along its row
    (lambda cid, s, d, g, gh: T.comm.all_gather(s, g, "all"),
     [[2] * 9, [2] * 9], [0, 1]),
], ids=["broadcast_all", "diagonal_put", "all_gather_all"])
def test_messages_are_counted_phase_by_phase(make, sends, phases):
    """Each phase of an execution is its own superstep, with its own messages: the
    performance model's per-core sends are those of that phase (they used to add up
    the rows of every phase of the execution, e.g. 4 messages from (0, 0) in the
    column phase of a 2-D broadcast, which sends 2)."""
    k = _one_op_kernel(3, make)
    report = analyze_mesh_communication(k)
    assert [st.phase for st in report.supersteps] == phases
    assert sorted(set(report.phase.tolist())) == phases
    work = count_mesh_kernel(k)
    assert [s.sends.tolist() for s in work.steps if s.exchange] == sends
