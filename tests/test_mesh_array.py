import numpy as np
import pytest

from meshtensor import Mesh, MeshArray, Sharding, distribute

M22 = Mesh({"x": 2, "y": 2})


def test_distribute_seed_6x6_on_2x3():
    x = np.array([[10 * r + c for c in range(1, 7)] for r in range(1, 7)])
    a = distribute(x, Sharding(Mesh([2, 3]), [[0], [1]]))
    assert a.local((0, 0)).tolist() == [[11, 12], [21, 22], [31, 32]]
    assert a.local((1, 2)).tolist() == [[45, 46], [55, 56], [65, 66]]
    b = distribute(x, Sharding(Mesh([2, 3]), [[1], [0]]))
    assert b.local((0, 1)).tolist() == [[31, 32, 33], [41, 42, 43]]
    assert b.local((1, 2)).tolist() == [[54, 55, 56], [64, 65, 66]]
    assert np.array_equal(a.to_global(), x) and np.array_equal(b.to_global(), x)


def test_replicas_share_memory_and_are_read_only():
    x = np.arange(8.0)
    a = distribute(x, Sharding(M22, [["y"]]))
    assert a.local((0, 0)) is a.local((1, 0))  # same replica, one object
    assert a.local((0, 0)).base is a.local((0, 1)).base  # views of one copy
    assert not np.shares_memory(a.local(0), x)  # input is copied once, never aliased
    with pytest.raises(ValueError):
        a.local(0)[0] = 5
    x[0] = 99
    assert a.to_global()[0] == 0


def test_halos_filled_from_global_and_zero_outside():
    s = Sharding(Mesh([3]), [[0]], halo_sizes=[2, 1])
    a = distribute(np.arange(1, 7), s)
    assert [v.tolist() for v in a.locals] == [[0, 0, 1, 2, 3], [1, 2, 3, 4, 5], [3, 4, 5, 6, 0]]
    assert a.to_global().tolist() == [1, 2, 3, 4, 5, 6]
    # Small uneven shards: a halo reaching beyond the neighbour still holds global values.
    t = Sharding(Mesh([4]), [[0]], halo_sizes=[2, 0])
    b = distribute(np.arange(1, 3), t)
    assert [v.tolist() for v in b.locals] == [[0, 0, 1], [0, 1, 2], [1, 2], [1, 2]]


@pytest.mark.parametrize("kind,ident", [("sum", 0), ("max", -np.inf), ("min", np.inf), ("prod", 1)])
def test_partial_distribute_and_to_global(kind, ident):
    s = Sharding(M22, [["x"]], partial={"y": kind})
    x = np.arange(4.0) + 1
    a = distribute(x, s)
    assert a.local((0, 0)).tolist() == [1, 2] and a.local((1, 0)).tolist() == [3, 4]
    assert a.local((0, 1)).tolist() == [ident, ident]
    assert np.array_equal(a.to_global(), x)
    terms = MeshArray.from_locals(M22, [np.array([1.0, 2]), np.array([3.0, 5]),
                                        np.array([2.0, 2]), np.array([4.0, 1])], sharding=s)
    op = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}[kind]
    assert terms.to_global().tolist() == [op(1, 3), op(2, 5), op(2, 4), op(2, 1)]


def test_partial_int_max_identity():
    a = distribute(np.array([5, -3], dtype=np.int16), Sharding(Mesh([2]), [], partial={0: "max"}))
    assert a.local(1).tolist() == [-32768, -32768]
    assert a.to_global().tolist() == [5, -3]


def test_from_locals_forms_and_inference():
    m = Mesh([3])
    s = Sharding(m, [[0]])
    locs = [np.arange(3), np.arange(3, 6), np.arange(6, 7)]
    a = MeshArray.from_locals(m, locs, sharding=s)
    assert a.global_shape == (7,) and a.to_global().tolist() == list(range(7))
    b = MeshArray.from_locals(m, {(2,): locs[2], 0: locs[0], 1: locs[1]}, sharding=s,
                              global_shape=(7,))
    assert b.to_global().tolist() == list(range(7))
    h = Sharding(m, [[0]], halo_sizes=[1, 1])
    c = distribute(np.arange(7), h)
    assert MeshArray.from_locals(m, c.locals, sharding=h).global_shape == (7,)
    raw = MeshArray.from_locals(m, locs)
    assert raw.sharding is None and raw.global_shape is None
    with pytest.raises(ValueError, match="has no sharding"):
        raw.to_global()


@pytest.mark.parametrize("locs,kw,msg", [
    ([np.zeros(2)] * 2, {}, "2 arrays for a mesh of 3 devices"),
    ({0: np.zeros(2), 1: np.zeros(2)}, {}, r"no array for devices \[\(2,\)\]"),
    ([np.zeros(2), np.zeros(2, int), np.zeros(2)], {}, "different dtypes"),
    ([np.zeros(3), np.zeros(3), np.zeros(3)], {"global_shape": (7,)},
     r"device \(2,\) holds shape \(3,\), sharding S\(x\) of global shape \(7,\) expects \(1,\)"),
    ([np.zeros(2)] * 3, {"global_shape": (6,), "no_sharding": True}, "global_shape needs a sharding"),
])
def test_from_locals_errors(locs, kw, msg):
    m = Mesh([3])
    sharding = None if kw.pop("no_sharding", False) else Sharding(m, [[0]])
    with pytest.raises(ValueError, match=msg):
        MeshArray.from_locals(m, locs, sharding=sharding, **kw)


def test_distribute_errors():
    with pytest.raises(ValueError, match="splits dim 1 but the tensor has rank 1"):
        distribute(np.zeros(4), Sharding(M22, [[], [0]]))
    with pytest.raises(TypeError, match="sharding must be a Sharding"):
        distribute(np.zeros(4), [[0]])


def test_rank0_and_zero_size():
    a = distribute(np.array(3.5), Sharding.replicated(M22))
    assert a.local(3).shape == () and a.to_global() == 3.5
    z = distribute(np.zeros((0, 3)), Sharding(M22, [["x"], ["y"]]))
    assert z.local((1, 1)).shape == (0, 1) and z.to_global().shape == (0, 3)
