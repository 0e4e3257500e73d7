import pytest

from meshtensor import Mesh, Sharding, chunk_bounds

M23 = Mesh({"x": 2, "y": 3})


def test_canonical_equality():
    assert Sharding(M23, [[0]]) == Sharding(M23, [[0], []]) == Sharding(M23, [["x"]])
    assert hash(Sharding(M23, [[0]])) == hash(Sharding(M23, [["x"], [], []]))
    assert Sharding(M23, ["x", None]) == Sharding(M23, [["x"]])
    assert Sharding(M23, [[0]], halo_sizes=[0, 0]) == Sharding(M23, [[0]])
    assert Sharding(M23, [[0, 1]]) != Sharding(M23, [[1, 0]])
    assert Sharding(M23, [], partial={"y": "sum"}) == Sharding(M23, [], partial={1: "sum"})


def test_from_seed():
    m = Mesh({"x": 4, "y": 4})
    assert Sharding.from_seed(m, {"x": 0, "y": 1}) == Sharding(m, [[0], [1]])
    assert Sharding.from_seed(m, {"x": 1, "y": 0}) == Sharding(m, [[1], [0]])
    assert Sharding.from_seed(m, {"x": 0, "y": 0}) == Sharding(m, [["x", "y"]])
    assert Sharding.from_seed(m, {"x": None, "y": 1}) == Sharding(m, [[], [1]])
    assert Sharding.from_seed(m, {"y": 0}) == Sharding(m, [[1]])
    assert Sharding.from_seed(m, (0, None)) == Sharding(m, [[0]])
    assert Sharding.from_seed(m, {}).is_replicated
    with pytest.raises(ValueError, match="unknown mesh axis 'z'"):
        Sharding.from_seed(m, {"z": 0})
    with pytest.raises(ValueError, match="maps to -1"):
        Sharding.from_seed(m, {"x": -1})
    with pytest.raises(ValueError, match="needs one entry per mesh axis"):
        Sharding.from_seed(m, (0,))


@pytest.mark.parametrize("n,k,expected", [
    (6, 3, [0, 2, 4, 6]), (7, 3, [0, 3, 6, 7]), (2, 4, [0, 1, 2, 2, 2]), (0, 3, [0, 0, 0, 0]),
    (10, 4, [0, 3, 6, 9, 10]), (5, 1, [0, 5]),
])
def test_chunk_bounds(n, k, expected):
    assert chunk_bounds(n, k).tolist() == expected


def test_local_regions_seed_6x6_on_2x3():
    s = Sharding(M23, [[0], [1]])
    assert s.local_region((6, 6), (0, 0)) == (slice(0, 3), slice(0, 2))
    assert s.local_region((6, 6), (1, 1)) == (slice(3, 6), slice(2, 4))
    t = Sharding(M23, [[1], [0]])
    assert t.local_region((6, 6), (0, 1)) == (slice(2, 4), slice(0, 3))
    assert t.local_shape((6, 6), 5) == (2, 3)


def test_multi_axis_dim_is_row_major_over_listed_axes():
    # Seed 001: [[0, 1]] vs [[1, 0]] on a 2x3 mesh, 1-D tensor of 6.
    s01, s10 = Sharding(M23, [[0, 1]]), Sharding(M23, [[1, 0]])
    x = [11, 12, 13, 21, 22, 23]
    got01 = [[x[r] for r in range(s01.local_region((6,), d)[0].start,
                                    s01.local_region((6,), d)[0].stop)] for d in range(6)]
    got10 = [[x[r] for r in range(s10.local_region((6,), d)[0].start,
                                   s10.local_region((6,), d)[0].stop)] for d in range(6)]
    assert got01 == [[11], [12], [13], [21], [22], [23]]
    # Seed: [[1, 0]] puts 11 13 22 on row 0 and 12 21 23 on row 1.
    assert got10 == [[11], [13], [22], [12], [21], [23]]


def test_uneven_and_empty_shards():
    s = Sharding(Mesh([4]), [[0]])
    assert [s.local_region((2,), d)[0] for d in range(4)] == \
        [slice(0, 1), slice(1, 2), slice(2, 2), slice(2, 2)]
    assert s.tile_shape((2,)) == (1,)
    assert Sharding(Mesh({"x": 4, "y": 4}), [["x"], ["y"]]).tile_shape((10, 16)) == (3, 4)
    assert Sharding(Mesh({"x": 4, "y": 4}), [["x", "y"]]).tile_shape((10, 3)) == (1, 3)


def test_halos_and_offsets():
    s = Sharding(Mesh([2]), [[0]], halo_sizes=[1, 2])
    assert s.local_shape((8,), 0) == (7,) and s.local_region((8,), 1) == (slice(4, 8),)
    assert s.halo(0) == (1, 2) and s.halo(1) == (0, 0)
    o = Sharding(Mesh([4]), [[], [0]], sharded_dims_offsets=[0, 2, 5, 9, 14])
    assert [o.local_shape((4, 14), d) for d in range(4)] == [(4, 2), (4, 3), (4, 4), (4, 5)]
    assert o.tile_shape((4, 14)) == (4, 5)
    with pytest.raises(ValueError, match="offsets for dim 1 end at 14, but the dim has size 15"):
        o.local_shape((4, 15), 0)


def test_str_and_repr():
    s = Sharding(M23, [[], ["x", "y"]], partial=None)
    assert str(s) == "RS(x,y)"
    p = Sharding(M23, [[0]], partial={"y": "max"})
    assert str(p) == "S(x) P(max:y)" and p.partial == {"y": "max"}
    assert eval(repr(p)) == p  # the repr is valid code


@pytest.mark.parametrize("kwargs,msg", [
    (dict(split_axes=[[0], [0]]), r"mesh axis 'x' \(0\) is used twice, by dims 0 and 1"),
    (dict(split_axes=[[2]]), r"split_axes\[0\]: mesh axis 2 out of range \[0, 2\)"),
    (dict(split_axes=[["q"]]), "unknown mesh axis 'q'"),
    (dict(split_axes=[[0]], partial={0: "sum"}), r"mesh axis 'x' \(0\) is both split \(dim 0\) and partial"),
    (dict(split_axes=[], partial={0: "avg"}), "partial kind 'avg'"),
    (dict(split_axes=[], partial={0: "sum", 1: "max"}), "share one kind"),
    (dict(split_axes=[[0], [1]], halo_sizes=[1, 1]), r"halo_sizes needs 2 values per split dim \(2 split dims -> 4\), got 2"),
    (dict(split_axes=[[0]], halo_sizes=[1, -1]), r"halo_sizes\[1\] must be >= 0, got -1"),
    (dict(split_axes=[[0]], halo_sizes=[1, 1], sharded_dims_offsets=[0, 1, 2]), "mutually exclusive"),
    (dict(split_axes=[[0]], sharded_dims_offsets=[0, 1]), r"needs k\+1 values per split dim \(3 in all\), got 2"),
    (dict(split_axes=[[0]], sharded_dims_offsets=[0, 3, 2]), "dim 0 decrease at shard 1: 3 > 2"),
    (dict(split_axes=[[0]], sharded_dims_offsets=[1, 2, 3]), "dim 0 must start at 0, got 1"),
])
def test_invalid_shardings(kwargs, msg):
    split = kwargs.pop("split_axes")
    with pytest.raises(ValueError, match=msg):
        Sharding(M23, split, **kwargs)


def test_rank_checks():
    s = Sharding(M23, [[], [0]])
    with pytest.raises(ValueError, match="splits dim 1 but the tensor has rank 1"):
        s.local_region((4,), 0)
    with pytest.raises(ValueError, match=r"global_shape\[0\] must be >= 0"):
        s.local_region((-1, 2), 0)
    with pytest.raises(TypeError, match="must be a Mesh"):
        Sharding("mesh", [[0]])


def naive_local_region(mesh_shape, split_axes, shape, device):
    """docs/model.md's rule, written out by hand: coordinates by repeated divmod (row-major,
    axis 0 outermost), shard index row-major over the dim's axes as listed, shard ``i``
    of ``k`` covers ``[min(i*c, n), min((i+1)*c, n))`` with ``c = ceil(n / k)``."""
    coords, rest = [], device
    for size in reversed(mesh_shape):
        rest, c = divmod(rest, size)
        coords.insert(0, c)
    out = []
    for d, n in enumerate(shape):
        axes = split_axes[d] if d < len(split_axes) else []
        i, k = 0, 1
        for a in axes:
            i, k = i * mesh_shape[a] + coords[a], k * mesh_shape[a]
        c = -(-n // k)
        out.append(slice(min(i * c, n), min((i + 1) * c, n)))
    return tuple(out)


@pytest.mark.parametrize("mesh_shape,split,shape", [
    ((2, 3), [[1], [0]], (6, 7)),
    ((2, 3), [[0, 1]], (6,)),
    ((2, 3), [[1, 0], []], (7, 2)),
    ((4, 2), [[], [1, 0]], (3, 5)),
    ((2, 2, 3), [[2], [0, 1]], (5, 9)),
    ((3, 4), [[0]], (2, 3)),  # empty shards start at n
    ((5,), [[0]], (0,)),
], ids=["swap-6x7", "two-axes-one-dim", "reversed-axes-uneven", "empty-shards",
        "3d-mesh", "more-shards-than-rows", "zero-size"])
def test_local_region_matches_an_independent_reference(mesh_shape, split, shape):
    s = Sharding(Mesh(list(mesh_shape)), split)
    size = 1
    for n in mesh_shape:
        size *= n
    for d in range(size):
        assert s.local_region(shape, d) == naive_local_region(mesh_shape, split, shape, d), d


def test_regions_are_vectorised_and_read_only():
    s = Sharding(M23, [[1], [0]])
    starts, stops = s.regions((6, 7))
    assert starts.shape == (6, 2) and not starts.flags.writeable and not stops.flags.writeable
    assert s.dim_of("y") == 0 and s.dim_of("x") == 1 and s.shard_count(1) == 2
    assert s.replicated_axes == () and Sharding(M23, [[1]]).replicated_axes == (0,)


def test_an_axis_listed_twice_for_one_dim_says_so():
    with pytest.raises(ValueError, match=r"mesh axis 'x' \(0\) is listed twice in "
                                         r"split_axes\[0\]; a mesh axis may split a dim once"):
        Sharding(Mesh([2, 2]), [["x", "x"]])
    with pytest.raises(ValueError, match=r"used twice, by dims 0 and 1"):
        Sharding(Mesh([2, 2]), [["x"], ["x"]])
