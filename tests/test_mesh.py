import numpy as np
import pytest

from meshtensor import Mesh


def test_shape_from_sequence_and_mapping():
    assert Mesh([2, 3]).axis_names == ("x", "y")
    m = Mesh({"rows": 2, "cols": 3})
    assert m.shape == (2, 3) and m.axis_names == ("rows", "cols")
    assert Mesh([1, 1, 1, 1, 2]).axis_names == ("x", "y", "z", "a3", "a4")
    assert m.size == 6 and m.ndim == 2 and m.as_dict == {"rows": 2, "cols": 3}


def test_targets():
    assert Mesh.from_target("a4e") == Mesh({"x": 4, "y": 4})
    assert Mesh.from_target("a4e-lite").shape == (2, 4)
    assert Mesh.parse("2x3x4").shape == (2, 3, 4)
    assert Mesh.parse("a4e").shape == (4, 4)
    with pytest.raises(ValueError, match="unknown target 'b9'"):
        Mesh.from_target("b9")
    with pytest.raises(ValueError, match="expected sizes like"):
        Mesh.parse("4by4")


@pytest.mark.parametrize("coords,linear", [((0, 0), 0), ((0, 3), 3), ((1, 0), 4), ((3, 3), 15)])
def test_linear_index_row_major(coords, linear):
    m = Mesh({"x": 4, "y": 4})
    assert m.linear_index(coords) == linear
    assert m.multi_index(linear) == coords
    assert m.linear_index(linear) == linear


def test_axis_lookup():
    m = Mesh({"x": 2, "y": 3})
    assert m.axis_index("y") == 1 and m.axis_index(0) == 0
    with pytest.raises(ValueError, match=r"mesh axis 2 out of range \[0, 2\)"):
        m.axis_index(2)
    with pytest.raises(ValueError, match="unknown mesh axis 'z'"):
        m.axis_index("z")
    with pytest.raises(TypeError, match="int or a name"):
        m.axis_index(1.5)


def test_device_groups_seed_002():
    # Seed 002: 2x3x4x5 mesh, mesh_axes [0, 1]: (1,0,2,3) and (1,1,2,3) share a group,
    # (1,0,2,4) is in another.
    m = Mesh([2, 3, 4, 5])
    groups = m.device_groups([0, 1])
    assert len(groups) == 20 and all(len(g) == 6 for g in groups)
    where = {d: gi for gi, g in enumerate(groups) for d in g}
    a, b, c = (m.linear_index(t) for t in [(1, 0, 2, 3), (1, 1, 2, 3), (1, 0, 2, 4)])
    assert where[a] == where[b] != where[c]
    # Axis list [3, 1]: (i,1,k,0) precedes (i,0,k,1) and (i,2,k,0).
    g = next(g for g in m.device_groups([3, 1]) if m.linear_index((1, 1, 2, 0)) in g)
    pos = {d: p for p, d in enumerate(g)}
    first = m.linear_index((1, 1, 2, 0))
    assert pos[first] < pos[m.linear_index((1, 0, 2, 1))]
    assert pos[first] < pos[m.linear_index((1, 2, 2, 0))]


def test_device_groups_order_and_empty():
    m = Mesh({"x": 2, "y": 2})
    assert m.device_groups(["x"]) == [[0, 2], [1, 3]]
    assert m.device_groups(["y"]) == [[0, 1], [2, 3]]
    assert m.device_groups(["y", "x"]) == [[0, 2, 1, 3]]
    assert m.device_groups([]) == [[0], [1], [2], [3]]


@pytest.mark.parametrize("bad,exc,msg", [
    ([2, 0], ValueError, "size of axis 1 must be >= 1, got 0"),
    ([2, "a"], TypeError, "size of axis 1 must be an int"),
    ("4x4", TypeError, "shape must be a sequence"),
])
def test_bad_mesh(bad, exc, msg):
    with pytest.raises(exc, match=msg):
        Mesh(bad)


def test_bad_names_and_devices():
    with pytest.raises(ValueError, match="duplicated axis name"):
        Mesh([2, 2], ["x", "x"])
    with pytest.raises(ValueError, match="2 axis names"):
        Mesh([2], ["a", "b"])
    m = Mesh([2, 3])
    with pytest.raises(ValueError, match=r"device 6 out of range \[0, 6\)"):
        m.multi_index(6)
    with pytest.raises(ValueError, match=r"coordinate 3 on mesh axis 'y' out of range \[0, 3\)"):
        m.linear_index((0, 3))
    with pytest.raises(ValueError, match="have 3 entries, mesh has 2 axes"):
        m.linear_index((0, 0, 0))
    with pytest.raises(ValueError, match="repeated in mesh_axes"):
        m.device_groups([0, "x"])


def test_mesh_is_immutable_and_hashable():
    m = Mesh([2, 2])
    with pytest.raises(AttributeError):
        m.shape = (4,)
    assert hash(m) == hash(Mesh({"x": 2, "y": 2}))
    assert not m.coords.flags.writeable
    assert np.array_equal(m.coords[3], [1, 1])
