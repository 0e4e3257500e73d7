"""Collectives: the worked examples of seeds 002/003 value by value, and bad input."""
import numpy as np
import pytest

from meshtensor import Mesh, MeshArray, Sharding, distribute
from meshtensor import collectives as C

M22 = Mesh([2, 2])


def arr(mesh, locs):
    return MeshArray.from_locals(mesh, [np.array(v) for v in locs])


def vals(a):
    return [v.tolist() for v in a.locals]


def test_all_gather_seed():
    x = arr(M22, [[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, 12]], [[13, 14], [15, 16]]])
    r = C.all_gather(x, [1], 1)
    row0, row1 = [[1, 2, 5, 6], [3, 4, 7, 8]], [[9, 10, 13, 14], [11, 12, 15, 16]]
    assert vals(r) == [row0, row0, row1, row1]


def test_all_slice_seed():
    row0, row1 = [[1, 2, 5, 6], [3, 4, 7, 8]], [[9, 10, 13, 14], [11, 12, 15, 16]]
    r = C.all_slice(arr(M22, [row0, row0, row1, row1]), [1], 1)
    assert vals(r) == [[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, 12]], [[13, 14], [15, 16]]]


def test_all_to_all_seed():
    m = Mesh([3])
    x = arr(m, [[[11, 12], [13, 14], [15, 16]], [[21, 22], [23, 24], [25, 26]],
                [[31, 32], [33, 34], [35, 36]]])
    assert vals(C.all_to_all(x, [0], 0, 0)) == [
        [[11, 12], [21, 22], [31, 32]], [[13, 14], [23, 24], [33, 34]],
        [[15, 16], [25, 26], [35, 36]]]


def test_all_to_all_seed_001_reshard_6x6_on_3():
    # Seed 001: [[0], []] -> [[], [0]] on a 3-device mesh is one all_to_all
    # (split_axis 1, concat_axis 0).
    x = np.array([[10 * r + c for c in range(1, 7)] for r in range(1, 7)])
    m = Mesh([3])
    r = C.all_to_all(distribute(x, Sharding(m, [[0]])), [0], 1, 0)
    want = distribute(x, Sharding(m, [[], [0]]))
    assert vals(r) == vals(want)
    assert r.local(1).tolist() == [[13, 14], [23, 24], [33, 34], [43, 44], [53, 54], [63, 64]]


def test_reduce_scatter_seed():
    # Seed 003 draws the pieces without summing; the op reduces first, so the sums are:
    # group {(0,0),(0,1)}: [[1,2],[3,4]] + [[5,6],[7,8]] = [[6,8],[10,12]] cut along axis 0.
    x = arr(M22, [[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, 12]], [[13, 14], [15, 16]]])
    r = C.reduce_scatter(x, [1], 0, dtype=np.float64)
    assert vals(r) == [[[6, 8]], [[10, 12]], [[22, 24]], [[26, 28]]]
    assert r.dtype == np.float64


def test_scatter_seed():
    x = arr(M22, [[[0, 0], [0, 0]], [[0, 0], [0, 0]], [[1, 2], [3, 4]], [[5, 6], [7, 8]]])
    r = C.scatter(x, [0], 0, [1])
    assert vals(r) == [[[1, 2]], [[5, 6]], [[3, 4]], [[7, 8]]]


def test_shift_seed_rotate_and_plain():
    m = Mesh([2, 4])
    x = arr(m, [[1], [2], [3], [4], [5], [6], [7], [8]])
    assert [v[0] for v in vals(C.shift(x, [1], 1, 2, rotate=True))] == [3, 4, 1, 2, 7, 8, 5, 6]
    assert [v[0] for v in vals(C.shift(x, [1], 1, 1))] == [1, 1, 2, 3, 5, 5, 6, 7]
    assert [v[0] for v in vals(C.shift(x, [0, 1], 0, -1))] == [5, 6, 7, 8, 5, 6, 7, 8]


def test_broadcast_seed():
    x = arr(M22, [[1, 2], [3, 4], [0, 0], [0, 0]])
    assert vals(C.broadcast(x, [0], [0])) == [[1, 2], [3, 4], [1, 2], [3, 4]]


def test_gather_seed_root_only():
    x = arr(M22, [[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, 12]], [[13, 14], [15, 16]]])
    r = C.gather(x, [1], 1, [1])
    assert r.local((0, 1)).tolist() == [[1, 2, 5, 6], [3, 4, 7, 8]]
    assert r.local((1, 1)).tolist() == [[9, 10, 13, 14], [11, 12, 15, 16]]
    assert r.local((0, 0)).tolist() == [[1, 2], [3, 4]]  # non-root keeps its input


@pytest.mark.parametrize("kind,expect", [("sum", [4, 6]), ("max", [3, 4]), ("min", [1, 2]),
                                         ("prod", [3, 8])])
def test_all_reduce_and_reduce(kind, expect):
    x = arr(M22, [[1], [2], [3], [4]])
    assert [v[0] for v in vals(C.all_reduce(x, [0], kind))] == [expect[0], expect[1]] * 2
    r = C.reduce(x, [0], [1], kind)
    assert [v[0] for v in vals(r)] == [1, 2, expect[0], expect[1]]


def test_all_reduce_wider_dtype():
    x = MeshArray.from_locals(Mesh([4]), [np.full(2, 100, np.int8)] * 4)
    r = C.all_reduce(x, [0], dtype=np.int32)
    assert r.dtype == np.int32 and r.local(0).tolist() == [400, 400]
    r2 = C.reduce(x, [0], [0], dtype="int32")
    assert r2.dtype == np.int32 and r2.local(1).tolist() == [100, 100]


def test_permute():
    x = arr(M22, [[1], [2], [3], [4]])
    r = C.permute(x, [((0, 0), (1, 1)), ((1, 1), (0, 0)), (1, 2)])
    assert [v[0] for v in vals(r)] == [4, 2, 2, 1]


def test_uneven_splitting_ops():
    m = Mesh([3])
    x = distribute(np.arange(7), Sharding.replicated(m))
    assert vals(C.all_slice(x, [0], 0)) == [[0, 1, 2], [3, 4, 5], [6]]
    g = C.all_gather(C.all_slice(x, [0], 0), [0], 0)
    assert vals(g) == [list(range(7))] * 3
    assert vals(C.scatter(x, [0], 0, [2])) == [[0, 1, 2], [3, 4, 5], [6]]
    y = distribute(np.arange(2), Sharding.replicated(Mesh([4])))
    assert vals(C.all_slice(y, [0], 0)) == [[0], [1], [], []]


def test_update_halo_2d_with_corners():
    m = Mesh([2, 2])
    s = Sharding(m, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    x = np.arange(1, 17).reshape(4, 4)
    good = distribute(x, s)
    stale = MeshArray.from_locals(m, [np.where(np.arange(16).reshape(4, 4) % 5 == 0, -1, v)
                                      for v in good.locals], sharding=s)
    # Halo cells are wrong in "stale"; core cells are right.
    cores = [v[1:3, 1:3] for v in good.locals]
    stale = MeshArray.from_locals(m, [np.pad(c, 1, constant_values=-7) for c in cores], sharding=s)
    r = C.update_halo(stale, s)
    for d in range(4):
        inside = good.local(d) != 0
        assert np.array_equal(r.local(d)[inside], good.local(d)[inside])
        assert np.all(r.local(d)[~inside] == -7)  # outside the tensor: kept as is
    assert r.local((1, 1))[0, 0] == x[1, 1]  # corner from the diagonal neighbour


def test_update_halo_moves_only_halo_cells():
    # One new array per device and the halo boxes: no global array per replica group
    # (which doubled the memory and made it ~4x a copy of the data).
    import tracemalloc
    m = Mesh([4, 4])
    s = Sharding(m, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    a = distribute(np.ones((512, 512)), s)
    # a first call in a process imports numpy.ma (np.unique), about 1 MB of module
    # code: not what this test measures (it failed when no earlier test had done it)
    C.update_halo(distribute(np.ones((8, 8)), s), s)
    tracemalloc.start()
    r = C.update_halo(a, s)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1.1 * a.nbytes
    assert r.local((0, 0))[0, 0] == 0 and r.local((1, 1))[0, 0] == 1  # halo outside / inside


# -- bad input: each names the op and the numbers ------------------------------------
X = arr(M22, [[[1, 2]]] * 4)


@pytest.mark.parametrize("call,msg", [
    (lambda: C.all_gather(X, [2], 0), r"all_gather: mesh axis 2 out of range \[0, 2\)"),
    (lambda: C.all_gather(X, [0, 0], 0), r"all_gather: mesh axis repeated in mesh_axes \[0, 0\]"),
    (lambda: C.all_gather(X, [0], 2), r"all_gather: gather_axis 2 out of range \[0, 2\)"),
    (lambda: C.all_slice(X, [0], 5), r"all_slice: slice_axis 5 out of range \[0, 2\)"),
    (lambda: C.all_to_all(X, [0], 0, 3), r"all_to_all: concat_axis 3 out of range \[0, 2\)"),
    (lambda: C.all_reduce(X, ["q"]), r"all_reduce: unknown mesh axis 'q'"),
    (lambda: C.all_reduce(X, [0], "mean"), r"all_reduce: reduction 'mean' is not one of"),
    (lambda: C.broadcast(X, [0], [2]), r"broadcast: root coordinate 2 on mesh axis 0 out of range \[0, 2\)"),
    (lambda: C.broadcast(X, [0, 1], [0]), r"broadcast: root \[0\] has 1 coordinates, mesh_axes \[0, 1\] needs 2"),
    (lambda: C.gather(X, [1], 0, [-1]), r"gather: root coordinate -1 on mesh axis 1 out of range"),
    (lambda: C.reduce(X, [0], [3]), r"reduce: root coordinate 3"),
    (lambda: C.scatter(X, [0], 9, [0]), r"scatter: scatter_axis 9 out of range"),
    (lambda: C.reduce_scatter(X, [0], -1), r"reduce_scatter: scatter_axis -1 out of range \[0, 2\)"),
    (lambda: C.shift(X, [0], 1, 1), r"shift: shift_axis 1 is not among mesh_axes \[0\]"),
    (lambda: C.shift(X, [0], 3, 1), r"shift: mesh axis 3 out of range \[0, 2\)"),
    (lambda: C.permute(X, [(0, 1), (2, 1)]), r"permute: destination \(0, 1\) receives from both \(0, 0\) and \(1, 0\)"),
    (lambda: C.permute(X, [(0, 4)]), r"device 4 out of range \[0, 4\)"),
    (lambda: C.permute(X, [(0,)]), r"permute: pairs\[0\] must be \(source, destination\)"),
    (lambda: C.all_reduce(arr(M22, [[1], [1, 2], [1], [1]]), [1]),
     r"all_reduce: shapes disagree inside a device group: device \(0, 0\) has \(1,\), device \(0, 1\) has \(2,\)"),
    (lambda: C.all_gather(arr(M22, [[[1]], [[1, 2]], [[1]], [[1]]]), [1], 0),
     r"all_gather: shapes disagree outside axis 0"),
    (lambda: C.all_gather(arr(M22, [[1], [[1]], [1], [1]]), [1], 0), r"all_gather: local arrays have different ranks"),
    (lambda: C.update_halo(X, Sharding(M22, [[0]], halo_sizes=[1, 1])), r"update_halo: from_locals: device \(0, 0\) holds 1 cells along dim 0, fewer than its halos 1 \+ 1"),
])
def test_bad_input(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()


def test_type_errors():
    with pytest.raises(TypeError, match="all_gather: expected a MeshArray"):
        C.all_gather(np.zeros(3), [0], 0)
    with pytest.raises(TypeError, match="all_reduce: dtype 'nope' is not a NumPy dtype"):
        C.all_reduce(X, [0], dtype="nope")
    with pytest.raises(TypeError, match="shift: offset must be an int"):
        C.shift(X, [0], 0, 1.5)


def test_inputs_never_mutated():
    x = distribute(np.arange(8), Sharding(M22, [["x", "y"]]))
    before = [v.copy() for v in x.locals]
    for f in [lambda: C.all_gather(x, [0, 1], 0), lambda: C.all_reduce(x, [0]),
              lambda: C.update_halo(x, x.sharding), lambda: C.shift(x, [0], 0, 1, True)]:
        r = f()
        assert r.sharding is None
    assert all(np.array_equal(a, b) for a, b in zip(before, x.locals))
