"""Conversions: JAX PartitionSpec, DTensor placements, MLIR shard.sharding, the seed dict."""
import doctest
import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meshtensor.forms as forms
import meshtensor.interop as interop
from meshtensor import Mesh, Sharding, plan_reshard
from meshtensor.sharding import chunk_bounds, nested_chunk_bounds

from strategies import meshes, shardings, shapes

M22 = Mesh({"x": 2, "y": 2})
M23 = Mesh({"x": 2, "y": 3})


def test_doctests():
    res = doctest.testmod(interop, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0 and res.attempted > 5


@st.composite
def mesh_and_sharding(draw, **kw):
    mesh = draw(meshes(max_axes=3, max_devices=24))
    shape = draw(shapes(min_rank=1, max_rank=3, max_size=9))
    return mesh, shape, draw(shardings(mesh, len(shape), shape=shape, **kw))


# -- nested chunks ----------------------------------------------------------------------
@given(st.integers(0, 40), st.lists(st.integers(1, 5), min_size=1, max_size=3))
def test_nested_chunk_bounds_is_torch_chunk_of_a_chunk(n, ks):
    torch = pytest.importorskip("torch")
    pieces = [torch.arange(n)]
    for k in ks:  # torch.chunk may return fewer than k chunks: pad with empty ones
        nxt = []
        for p in pieces:
            c = list(torch.chunk(p, k)) if len(p) else []
            nxt += c + [p[len(p):]] * (k - len(c))
        pieces = nxt
    sizes = [len(p) for p in pieces]
    b = nested_chunk_bounds(n, ks)
    assert np.diff(b).tolist() == sizes and b[0] == 0 and b[-1] == n
    if n % int(np.prod(ks)) == 0:
        assert b.tolist() == chunk_bounds(n, int(np.prod(ks))).tolist()


# -- JAX PartitionSpec ---------------------------------------------------------------------
PSPECS = [  # (spec, split_axes)
    ((), []),
    (("x",), [["x"]]),
    ((None, "y"), [[], ["y"]]),
    (("y", "x"), [["y"], ["x"]]),
    ((("x", "y"),), [["x", "y"]]),
    ((("y", "x"), None, None), [["y", "x"]]),
    ((None, ("y",)), [[], ["y"]]),
    (((), "x"), [[], ["x"]]),
]


@pytest.mark.parametrize("spec,split", PSPECS, ids=[str(p) for p, _ in PSPECS])
def test_from_partition_spec_table(spec, split):
    assert Sharding.from_partition_spec(M22, spec) == Sharding(M22, split)


@settings(max_examples=150, deadline=None)
@given(mesh_and_sharding())
def test_partition_spec_round_trip(case):
    mesh, shape, s = case
    spec = s.to_partition_spec()
    assert Sharding.from_partition_spec(mesh, spec, ndim=len(shape)) == s
    entries = tuple(spec)
    assert not entries or entries[-1] is not None  # trailing Nones dropped
    assert all(e is None or isinstance(e, str) or (isinstance(e, tuple) and len(e) > 1)
               for e in entries)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_partition_spec_from_the_jax_side(data):
    """Every spec (random names per dim, padded with Nones) reads back canonically."""
    mesh = data.draw(meshes(max_axes=3, max_devices=24))
    rank = data.draw(st.integers(0, 3))
    dims = [data.draw(st.sampled_from([None] + list(range(rank)))) if rank else None
            for _ in mesh.axis_names]
    entries = [[] for _ in range(rank)]
    for name, d in zip(mesh.axis_names, dims):
        if d is not None:
            entries[d].append(name)
    spec = tuple(None if not e else e[0] if len(e) == 1 and data.draw(st.booleans())
                 else tuple(e) for e in entries)
    s = Sharding.from_partition_spec(mesh, spec, ndim=rank)
    canon = tuple(None if not e else e[0] if len(e) == 1 else tuple(e) for e in entries)
    while canon and canon[-1] is None:
        canon = canon[:-1]
    assert tuple(s.to_partition_spec()) == canon


PSPEC_ERRORS = [
    (lambda: Sharding(M22, [[0]], partial={1: "sum"}).to_partition_spec(),
     r"PartitionSpec: sharding S\(x\) P\(sum:y\) is partial \(sum over mesh axes \['y'\]\); "
     r"PartitionSpec cannot express partial values"),
    (lambda: Sharding(M22, [[0]], halo_sizes=[1, 0]).to_partition_spec(),
     r"PartitionSpec: sharding S\(x\) halo=\[1, 0\] has halo_sizes \[1, 0\]; PartitionSpec "
     r"cannot express halos"),
    (lambda: Sharding(M22, [[0]], sharded_dims_offsets=[0, 1, 4]).to_partition_spec(),
     r"PartitionSpec: .* has sharded_dims_offsets \[0, 1, 4\]; PartitionSpec can only "
     r"express the ceil-div layout"),
    (lambda: Sharding.from_partition_spec(M22, ("x", None, "y"), ndim=2),
     r"spec \('x', None, 'y'\) has 3 entries but the tensor has rank 2"),
    (lambda: Sharding.from_partition_spec(M22, ("q",)), r"unknown mesh axis 'q'"),
    (lambda: Sharding.from_partition_spec(M22, (0,)),
     r"spec entry 0 is 0; expected None, a mesh axis name or a tuple of names"),
    (lambda: Sharding.from_partition_spec(M22, ("x", "x")), r"mesh axis 'x' \(0\) is used twice"),
    (lambda: Sharding.from_partition_spec(M22, "x"), r"spec must be a PartitionSpec or a tuple"),
]


@pytest.mark.parametrize("fn,msg", PSPEC_ERRORS, ids=[f"e{i}" for i in range(len(PSPEC_ERRORS))])
def test_partition_spec_errors(fn, msg):
    with pytest.raises((ValueError, TypeError), match=msg):
        fn()


def test_real_jax_partition_spec():
    jax = pytest.importorskip("jax")
    P = jax.sharding.PartitionSpec
    s = Sharding.from_partition_spec(M22, P(None, ("x", "y")))
    assert s == Sharding(M22, [[], ["x", "y"]])
    assert s.to_partition_spec() == P(None, ("x", "y"))


def test_without_jax_the_spec_is_a_tuple():
    if forms._jax_partition_spec() is not None:
        pytest.skip("jax is installed: to_partition_spec returns a PartitionSpec")
    assert Sharding(M22, [["y"]]).to_partition_spec() == ("y",)


# -- DTensor placements --------------------------------------------------------------------
PLACEMENTS = [  # (placements text, ndim, global shape or None, split_axes, kwargs)
    (["R", "R"], 2, None, [], {}),
    (["S(0)", "R"], 2, None, [["x"]], {}),
    (["S(1)", "S(0)"], 2, None, [["y"], ["x"]], {}),
    (["S(-1)", "R"], 2, None, [[], ["x"]], {}),
    (["S(0)", "S(0)"], 1, (8,), [["x", "y"]], {}),
    (["S(0)", "S(0)"], 1, (6,), [["x", "y"]], {"sharded_dims_offsets": [0, 2, 3, 5, 6]}),
    (["P(sum)", "S(1)"], 2, None, [[], ["y"]], {"partial": {"x": "sum"}}),
    (["P", "P(sum)"], 1, None, [], {"partial": {"x": "sum", "y": "sum"}}),
    (["P(max)", "R"], 1, None, [], {"partial": {"x": "max"}}),
    (["R", "P(product)"], 1, None, [], {"partial": {"y": "prod"}}),
]


@pytest.mark.parametrize("pl,ndim,shape,split,kw", PLACEMENTS,
                         ids=[" ".join(p[0]) + (f" {p[2]}" if p[2] else "") for p in PLACEMENTS])
def test_from_placements_table(pl, ndim, shape, split, kw):
    assert Sharding.from_placements(M22, pl, ndim, shape) == Sharding(M22, split, **kw)


def test_real_torch_placements_both_ways():
    pytest.importorskip("torch")
    from torch.distributed.tensor import Partial, Replicate, Shard
    pl = [Shard(1), Partial("sum")]
    s = Sharding.from_placements(M22, pl, 2)
    assert s == Sharding(M22, [[], ["x"]], partial={"y": "sum"})
    assert s.to_placements() == pl
    assert Sharding(M22, [[0]], partial={1: "prod"}).to_placements() == \
        [Shard(0), Partial("product")]
    assert Sharding(M22, []).to_placements() == [Replicate(), Replicate()]


@st.composite
def placement_cases(draw):
    mesh = draw(meshes(max_axes=3, max_devices=24))
    shape = draw(shapes(min_rank=1, max_rank=3, max_size=9))
    kind = draw(st.sampled_from(["sum", "max", "min", "product"]))
    opts = ["R", f"P({kind})"] + [f"S({d})" for d in range(len(shape))]
    return mesh, shape, [draw(st.sampled_from(opts)) for _ in range(mesh.ndim)]


@settings(max_examples=150, deadline=None)
@given(placement_cases())
def test_placements_round_trip_from_the_dtensor_side(case):
    pytest.importorskip("torch")
    mesh, shape, pl = case
    s = Sharding.from_placements(mesh, pl, len(shape), shape)
    assert [str(p) for p in s.to_placements(shape)] == pl
    assert [str(p) for p in s.to_placements()] == pl


@settings(max_examples=150, deadline=None)
@given(mesh_and_sharding(partial=True))
def test_placements_round_trip_from_our_side(case):
    """Every sharding DTensor can express (mesh-order splits, no halos, no offsets)."""
    pytest.importorskip("torch")
    mesh, shape, s = case
    s = Sharding(mesh, [sorted(a) for a in s.split_axes],
                 partial=s.partial or None)
    assert Sharding.from_placements(mesh, s.to_placements(), len(shape)) == s
    back = Sharding.from_placements(mesh, s.to_placements(), len(shape), shape)
    for d in range(len(shape)):  # same layout as DTensor's where the flat rule agrees
        ks = [mesh.shape[a] for a in s.axes_of(d)]
        if np.array_equal(nested_chunk_bounds(shape[d], ks), s.dim_bounds(shape, d)):
            assert back.dim_bounds(shape, d).tolist() == s.dim_bounds(shape, d).tolist()


def _random_placements(rng, n):
    out = []
    for _ in range(n):
        mesh_shape = [(2, 2), (2, 3), (3, 2), (4,), (3,), (2, 2, 2), (3, 1, 2)][rng.integers(7)]
        rank = int(rng.integers(1, 4))
        shape = tuple(int(v) for v in rng.integers(0, 12, size=rank))
        opts = ["R", "P(sum)"] + [f"S({d})" for d in range(rank)] * 2
        out.append((mesh_shape, shape, [opts[rng.integers(len(opts))] for _ in mesh_shape]))
    return out


def test_layouts_agree_with_dtensor_for_200_random_placements():
    """Local shape and global offset of every device, against DTensor's own
    compute_local_shape_and_global_offset (one fake process group per rank)."""
    pytest.importorskip("torch")
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.tensor._utils import compute_local_shape_and_global_offset
    from torch.testing._internal.distributed.fake_pg import FakeStore

    cases = _random_placements(np.random.default_rng(0), 200)
    uneven = sum(1 for ms, shape, pl in cases
                 if any(n % int(np.prod(ms)) for n in shape))
    assert uneven > 100
    if dist.is_initialized():
        pytest.skip("a process group is already initialised in this process")
    by_mesh = {}
    for c in cases:
        by_mesh.setdefault(c[0], []).append(c)
    checked = 0
    for mesh_shape, group in by_mesh.items():
        mesh = Mesh(mesh_shape)
        for rank in range(mesh.size):
            dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=mesh.size)
            try:
                dm = DeviceMesh("cpu", torch.arange(mesh.size).reshape(mesh_shape))
                for _, shape, pl in group:
                    s = Sharding.from_placements(mesh, pl, len(shape), shape)
                    placements = s.to_placements(shape)
                    theirs_shape, theirs_off = compute_local_shape_and_global_offset(
                        shape, dm, placements)
                    where = f"{mesh_shape} {shape} {pl} rank {rank}"
                    assert s.local_shape(shape, rank) == tuple(theirs_shape), where
                    region = s.local_region(shape, rank)
                    for d, n in enumerate(theirs_shape):
                        if n:  # an empty shard's offset is only a convention
                            assert region[d].start == theirs_off[d], where
                    checked += 1
            finally:
                dist.destroy_process_group()
    assert checked == sum(int(np.prod(c[0])) for c in cases)


PLACEMENT_ERRORS = [
    (lambda: Sharding(M22, [["y", "x"]]).to_placements(),
     r"dim 0 is split by mesh axes \['y', 'x'\] \(outer to inner\); DTensor placements split a "
     r"dim in mesh-axis order only \(\['x', 'y'\]\)"),
    (lambda: Sharding(M22, [[0]], halo_sizes=[1, 1]).to_placements(),
     r"DTensor placements: sharding S\(x\) halo=\[1, 1\] has halo_sizes \[1, 1\]; DTensor "
     r"placements cannot express halos"),
    (lambda: Sharding(M22, [[0]], sharded_dims_offsets=[0, 1, 6]).to_placements(),
     r"dim 0 \(size 6\) is cut at \[0, 1, 6\], but DTensor's chunks over mesh axes \['x'\] cut "
     r"it at \[0, 3, 6\]; DTensor cannot express this layout"),
    (lambda: Sharding(M22, [[0, 1]]).to_placements((6,)),
     r"dim 0 \(size 6\) is cut at \[0, 2, 4, 6, 6\], but DTensor's chunks over mesh axes "
     r"\['x', 'y'\] cut it at \[0, 2, 3, 5, 6\]"),
    (lambda: Sharding.from_placements(M22, ["P(avg)", "R"], 1),
     r"Partial\('avg'\) on mesh axis 0 has no meshtensor partial kind"),
    (lambda: Sharding.from_placements(M22, ["P(sum)", "P(max)"], 1),
     r"Partial placements with different ops \['max', 'sum'\]"),
    (lambda: Sharding.from_placements(M22, ["S(0)"], 1),
     r"1 placements for a mesh with 2 axes \['x', 'y'\]; DTensor needs one per mesh axis"),
    (lambda: Sharding.from_placements(M22, ["S(2)", "R"], 2),
     r"placement Shard\(2\) on mesh axis 0 is out of range for a tensor of rank 2"),
    (lambda: Sharding.from_placements(M22, ["Q", "R"], 2),
     r"placement 'Q' on mesh axis 0 is not one of 'R', 'S\(dim\)', 'P\(op\)'"),
    (lambda: Sharding.from_placements(M22, [1, "R"], 2), r"placement 1 on mesh axis 0 is a int"),
    (lambda: Sharding.from_placements(M22, ["R", "R"], 2, global_shape=(4,)),
     r"global_shape \(4,\) has rank 1, ndim is 2"),
]


@pytest.mark.parametrize("fn,msg", PLACEMENT_ERRORS,
                         ids=[f"e{i}" for i in range(len(PLACEMENT_ERRORS))])
def test_placement_errors(fn, msg):
    pytest.importorskip("torch")
    with pytest.raises((ValueError, TypeError), match=msg):
        fn()


def test_strided_shard_is_refused():
    pytest.importorskip("torch")
    from torch.distributed.tensor.placement_types import _StridedShard
    with pytest.raises(ValueError, match=r"\(_StridedShard\) has no meshtensor counterpart"):
        Sharding.from_placements(M22, [_StridedShard(0, split_factor=2), "S(0)"], 1)


# -- MLIR shard.sharding -------------------------------------------------------------------
MLIR = [  # (text, split_axes, kwargs)
    ("shard.sharding @grid0 split_axes = [[]]", [], {}),
    ("shard.sharding @grid0 split_axes = [[0]]", [[0]], {}),
    ("%s = shard.sharding @g split_axes = [[], [1, 0]] : !shard.sharding", [[], [1, 0]], {}),
    ("shard.sharding @grid0 split_axes = [[0]] halo_sizes = [1, 2]", [[0]], {"halo_sizes": [1, 2]}),
    ("shard.grid @g(shape = 2x2)\n%s = shard.sharding @g split_axes = [[], [0]] "
     "sharded_dims_offsets = [0, 2, 5]", [[], [0]], {"sharded_dims_offsets": [0, 2, 5]}),
    ("shard.sharding @g split_axes=[[1],[0]]halo_sizes=[0,1,2,0]", [[1], [0]],
     {"halo_sizes": [0, 1, 2, 0]}),
]


@pytest.mark.parametrize("text,split,kw", MLIR, ids=[t.split("=", 1)[-1][:30] for t, *_ in MLIR])
def test_from_mlir_table(text, split, kw):
    assert Sharding.from_mlir(text, M22) == Sharding(M22, split, **kw)


@settings(max_examples=200, deadline=None)
@given(mesh_and_sharding(halos=True, offsets=True))
def test_mlir_round_trip(case):
    mesh, shape, s = case
    text = s.to_mlir("grid0")
    assert Sharding.from_mlir(text, mesh) == s
    assert Sharding.from_mlir(f"%sh = {text} : !shard.sharding", mesh) == s


MLIR_ERRORS = [
    ("shard.sharding @g split_axes = [[0], [x]]",
     r"expected an int in split_axes\[1\], got 'x' at column 39"),
    ("shard.sharding @g split_axes = [[0] [1]]",
     r"expected ',' or '\]' in split_axes, got '\[' at column 37"),
    ("shard.sharding g split_axes = [[0]]", r"expected a grid symbol like @grid0, got 'g' at column 16"),
    ("shard.sharding @g split_axes = [[0]] halo_sizes = [1, ?]",
     r"expected a static int in halo_sizes \(dynamic '\?' sizes are not supported\), got '\?'"),
    ("shard.sharding @g split_axes = [[0]] halos = [1, 1]",
     r"expected 'halo_sizes', 'sharded_dims_offsets', ':' or the end, got 'halos' at column 38"),
    ("shard.sharding @g split_axes = [[0]",
     r"expected ',' or '\]' in split_axes but the text ended"),
    ("shard.grid @g(shape = 2x2)\n%s = shard.sharding @g split_axes = [[0] [1]]",
     r"expected ',' or '\]' in split_axes, got '\[' at line 2, column 42"),
    ("shard.sharding @g split_axes = [[0]] # x", r"unexpected character '#' at column 38"),
    ("shard.sharding @g split_axes = [[2]]",
     r"split_axes\[0\] names mesh axis 2, out of range \[0, 2\) for mesh 2x2"),
    ("shard.sharding @g split_axes = [[0]] halo_sizes = [1]",
     r"Sharding.from_mlir: Sharding: halo_sizes needs 2 values per split dim"),
    ("shard.grid @g(shape = 4x4)\nshard.sharding @g split_axes = [[0]]",
     r"shard.grid @g has shape 4x4, the mesh is 2x2"),
    ("split_axes = [[0]]", r"expected one 'shard.sharding' op, found 0"),
    ("shard.sharding @g split_axes = [[0]] : !shard.foo", r"expected '!shard.sharding', got '!shard.foo'"),
]


@pytest.mark.parametrize("text,msg", MLIR_ERRORS, ids=[f"e{i}" for i in range(len(MLIR_ERRORS))])
def test_mlir_errors(text, msg):
    with pytest.raises(ValueError, match=msg):
        Sharding.from_mlir(text, M22)


def test_to_mlir_refuses_partial_and_bad_names():
    with pytest.raises(ValueError, match=r"shard.sharding: sharding R P\(sum:x\) is partial"):
        Sharding(M22, [], partial={0: "sum"}).to_mlir()
    with pytest.raises(ValueError, match=r"mesh_name '2d' is not an MLIR symbol name"):
        Sharding(M22, []).to_mlir("2d")


# -- ReshardPlan.to_mlir ---------------------------------------------------------------------
PLAN_OPS = [  # (src, src partial, tgt, shape, expected op lines)
    ([[0], [1]], None, [], (8, 6),
     ["%1 = shard.all_gather %0 on @mesh grid_axes = [1] gather_axis = 1 : tensor<4x2xf32> -> "
      "tensor<4x6xf32>",
      "%2 = shard.all_gather %1 on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x6xf32> -> "
      "tensor<8x6xf32>"]),
    ([[0]], None, [[], [0]], (8, 6),
     ["%1 = shard.all_to_all %0 on @mesh grid_axes = [0] split_axis = 1 concat_axis = 0 : "
      "tensor<4x6xf32> -> tensor<8x3xf32>"]),
    ([], {0: "max"}, [], (4, 6),
     ["%1 = shard.all_reduce %0 on @mesh grid_axes = [0] reduction = <max> : tensor<4x6xf32> -> "
      "tensor<4x6xf32>"]),
    ([], {1: "sum"}, [[1]], (6, 6),
     ["%1 = shard.reduce_scatter %0 on @mesh grid_axes = [1] reduction = <sum> scatter_axis = 0 "
      ": tensor<6x6xf32> -> tensor<2x6xf32>"]),
    ([[0], [1]], None, [[1], [0]], (6, 6),
     ["// %1 = point-to-point transfers of %0: 12 copies, 104 B; no shard collective expresses "
      "them (shard.send/recv per device pair) : tensor<3x2xf32> -> tensor<2x3xf32>"]),
]


@pytest.mark.parametrize("src,partial,tgt,shape,ops", PLAN_OPS,
                         ids=["gathers", "all_to_all", "all_reduce", "reduce_scatter", "transfers"])
def test_plan_to_mlir(src, partial, tgt, shape, ops):
    plan = plan_reshard(Sharding(M23, src, partial=partial), Sharding(M23, tgt), shape)
    lines = plan.to_mlir().splitlines()
    assert lines[0] == "shard.grid @mesh(shape = 2x3)"
    assert [ln for ln in lines if ln.startswith(("%", "// %"))] == ops
    assert len(ops) == len(plan.steps)


def test_plan_to_mlir_halo_and_element_type():
    s = Sharding(M22, [[0]])
    text = plan_reshard(s, s.replace(halo_sizes=[1, 1]), (8, 6), itemsize=2).to_mlir("g", "bf16")
    assert text.splitlines()[-1] == ("%1 = shard.update_halo %0 on @g split_axes = [[0]] "
                                     "halo_sizes = [1, 1] : tensor<6x6xbf16>")
    with pytest.raises(ValueError, match=r"no default element type for itemsize 3"):
        plan_reshard(s, s, (4,), itemsize=3).to_mlir()
    with pytest.raises(ValueError, match=r"element_type 'f 32' is not an MLIR type name"):
        plan_reshard(s, s, (4,)).to_mlir(element_type="f 32")


# -- the seed dict ----------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(mesh_and_sharding())
def test_seed_round_trip(case):
    mesh, shape, s = case
    s = Sharding(mesh, [sorted(a) for a in s.split_axes])
    seed = s.to_seed()
    assert list(seed) == list(mesh.axis_names)
    assert Sharding.from_seed(mesh, seed, ndim=len(shape)) == s


SEED_ERRORS = [
    (Sharding(M22, [["y", "x"]]), r"dim 0 is split by mesh axes \['y', 'x'\] \(outer to inner\); "
                                  r"the seed dict splits a dim by its axes in mesh-axis order only"),
    (Sharding(M22, [], partial={"x": "sum"}), r"the seed dict: sharding R P\(sum:x\) is partial"),
    (Sharding(M22, [[0]], halo_sizes=[0, 1]), r"has halo_sizes \[0, 1\]; the seed dict cannot express halos"),
    (Sharding(M22, [[0]], sharded_dims_offsets=[0, 3, 4]), r"has sharded_dims_offsets \[0, 3, 4\]"),
]


@pytest.mark.parametrize("s,msg", SEED_ERRORS, ids=["order", "partial", "halos", "offsets"])
def test_to_seed_errors(s, msg):
    with pytest.raises(ValueError, match=msg):
        s.to_seed()


def test_from_seed_checks_the_rank():
    with pytest.raises(ValueError, match=re.escape(
            "Sharding.from_seed: mesh axis 'x' maps to tensor dim 5, which would make the "
            "tensor rank 6 on a 2-axis mesh; pass ndim= (the tensor's rank) to confirm")):
        Sharding.from_seed(M22, {"x": 5})
    assert Sharding.from_seed(M22, {"x": 5}, ndim=6).spec() == [[], [], [], [], [], ["x"]]
    assert Sharding.from_seed(M22, {"y": 2}).spec() == [[], [], ["y"]]  # rank 3: a batch dim
    with pytest.raises(ValueError, match=re.escape(
            "mesh axis 'y' maps to tensor dim 2, out of range [0, 2) for ndim=2")):
        Sharding.from_seed(M22, {"x": 0, "y": 2}, ndim=2)
    with pytest.raises(ValueError, match=r"ndim must be an int >= 0, got -1"):
        Sharding.from_seed(M22, {"x": 0}, ndim=-1)


def test_every_form_agrees_on_one_sharding():
    s = Sharding(M23, [["y"], ["x"]])
    assert s.to_seed() == {"x": 1, "y": 0}
    assert tuple(s.to_partition_spec()) == ("y", "x")
    assert s.to_mlir() == "shard.sharding @mesh split_axes = [[1], [0]]"
    forms = [Sharding.from_seed(M23, s.to_seed()), Sharding.from_partition_spec(M23, ("y", "x")),
             Sharding.from_mlir(s.to_mlir(), M23),
             Sharding.from_placements(M23, ["S(1)", "S(0)"], 2)]
    assert all(f == s for f in forms)
    assert list(itertools.chain(*s.spec())) == ["y", "x"]
