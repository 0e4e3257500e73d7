"""The planner on MLIR's patterns and seed 001's examples, value by value."""
import itertools

import numpy as np
import pytest

from meshtensor import Mesh, MeshArray, Sharding, distribute, plan_reshard, reshard
from meshtensor.cost import hops
from strategies import partial_terms
from meshtensor.resharding import transfer_step

T66 = np.array([[10 * r + c for c in range(1, 7)] for r in range(1, 7)])


def ops(plan):
    return [(s.op, s.mesh_axes, s.kwargs) if s.op != "transfers" else ("transfers",)
            for s in plan.steps]


def check(x, src, tgt, itemsize=None):
    got = reshard(distribute(x, src), tgt)
    want = distribute(x, tgt)
    assert all(np.array_equal(a, b) for a, b in zip(got.locals, want.locals))
    return got, plan_reshard(src, tgt, x.shape, itemsize or x.dtype.itemsize)


# -- MLIR's patterns: the op it emits ------------------------------------------------------
def test_move_split_between_dims_is_one_all_to_all():
    m = Mesh([2])
    _, p = check(T66, Sharding(m, [[0]]), Sharding(m, [[], [0]]))
    assert ops(p) == [("all_to_all", (0,), {"split_axis": 1, "concat_axis": 0})]
    assert p.bytes_moved == p.lower_bound_bytes


def test_seed_all_to_all_on_3_devices():
    m = Mesh([3])
    got, p = check(T66, Sharding(m, [[0]]), Sharding(m, [[], [0]]))
    assert ops(p) == [("all_to_all", (0,), {"split_axis": 1, "concat_axis": 0})]
    assert got.local(2).tolist() == [[15, 16], [25, 26], [35, 36], [45, 46], [55, 56], [65, 66]]


def test_gather_then_slice_example_slices_first():
    # [[0],[],[1,2]] -> [[],[],[1,2,3]] on 2x3x4x5: MLIR emits all_gather(axis 0) then
    # all_slice(axis 3). Slicing first moves 5x fewer bytes and reaches the lower bound.
    m = Mesh([2, 3, 4, 5])
    x = np.arange(2 * 3 * 120).reshape(2, 3, 120)
    _, p = check(x, Sharding(m, [[0], [], [1, 2]]), Sharding(m, [[], [], [1, 2, 3]]))
    assert ops(p) == [("all_slice", (3,), {"slice_axis": 2}),
                      ("all_gather", (0,), {"gather_axis": 0})]
    assert p.bytes_moved == p.lower_bound_bytes
    mlir = 120 * (x.nbytes // 2 // 12)  # all_gather first: every device gets the other half of its [[1,2]] slab
    assert p.bytes_moved * 5 == mlir


@pytest.mark.parametrize("src,tgt,want", [
    ([[0]], [[0, 1]], [("all_slice", (1,), {"slice_axis": 0})]),
    ([[0, 1]], [[0]], [("all_gather", (1,), {"gather_axis": 0})]),
    ([], [[1], [0]], [("all_slice", (1,), {"slice_axis": 0}), ("all_slice", (0,), {"slice_axis": 1})]),
    ([[0, 1]], [], [("all_gather", (0, 1), {"gather_axis": 0})]),
    ([[0], [1]], [[0, 1]], [("all_to_all", (1,), {"split_axis": 0, "concat_axis": 1})]),
])
def test_split_unsplit_move(src, tgt, want):
    m = Mesh([2, 2])
    x = np.arange(64).reshape(8, 8)
    _, p = check(x, Sharding(m, src), Sharding(m, tgt))
    assert ops(p) == want and p.bytes_moved == p.lower_bound_bytes


def test_halo_added_is_update_halo_and_changed_halo_moves_only_new_cells():
    m = Mesh([4])
    x = np.arange(32).reshape(16, 2)
    _, p = check(x, Sharding(m, [[0]]), Sharding(m, [[0]], halo_sizes=[1, 2]))
    assert ops(p) == [("update_halo", (), {})]
    assert p.bytes_moved == p.lower_bound_bytes == (2 + 3 + 3 + 1) * 2 * 8  # edges have no outer halo
    _, p2 = check(x, Sharding(m, [[0]], halo_sizes=[1, 1]), Sharding(m, [[0]], halo_sizes=[2, 0]))
    assert ops(p2) == [("transfers",)]
    assert p2.bytes_moved == p2.lower_bound_bytes == 3 * 2 * 8  # one new lower row each, not the edge
    _, p3 = check(x, Sharding(m, [[0]], halo_sizes=[2, 2]), Sharding(m, [[0]]))
    assert p3.bytes_moved == 0 and p3.steps[0].describe().startswith("local re-layout")


# -- seed 001's TODO examples ----------------------------------------------------------------
def test_seed_swap_axes_2x3_value_by_value():
    m = Mesh([2, 3])
    got, p = check(T66, Sharding(m, [[0], [1]]), Sharding(m, [[1], [0]]))
    assert got.local((0, 0)).tolist() == [[11, 12, 13], [21, 22, 23]]
    assert got.local((0, 1)).tolist() == [[31, 32, 33], [41, 42, 43]]
    assert got.local((0, 2)).tolist() == [[51, 52, 53], [61, 62, 63]]
    assert got.local((1, 0)).tolist() == [[14, 15, 16], [24, 25, 26]]
    assert got.local((1, 2)).tolist() == [[54, 55, 56], [64, 65, 66]]
    assert p.bytes_moved == p.lower_bound_bytes


def test_seed_swap_axes_2x6():
    m = Mesh([2, 6])
    got, p = check(T66, Sharding(m, [[0], [1]]), Sharding(m, [[1], [0]]))
    assert got.local((0, 3)).tolist() == [[41, 42, 43]] and got.local((1, 5)).tolist() == [[64, 65, 66]]
    assert p.bytes_moved == p.lower_bound_bytes


def test_seed_axis_reorder_on_one_dim():
    m = Mesh([2, 3])
    x = np.array([11, 12, 13, 21, 22, 23])
    got, p = check(x, Sharding(m, [[0, 1]]), Sharding(m, [[1, 0]]))
    assert [int(v[0]) for v in got.locals] == [11, 13, 22, 12, 21, 23]
    # Devices whose index is the same in both orders keep their value.
    assert p.bytes_moved == p.lower_bound_bytes == 4 * 8


def test_seed_gather_one_of_two_axes_2x2x2():
    # [[0], [1, 2]] -> [[0], [2]]: "can't be done with just an all-gather".
    m = Mesh([2, 2, 2])
    x = np.array([[10 * r + c for c in range(1, 9)] for r in range(1, 5)])
    got, p = check(x, Sharding(m, [[0], [1, 2]]), Sharding(m, [[0], [2]]))
    assert got.local((0, 1, 0)).tolist() == [[11, 12, 13, 14], [21, 22, 23, 24]]
    assert got.local((1, 0, 1)).tolist() == [[35, 36, 37, 38], [45, 46, 47, 48]]
    assert p.bytes_moved == p.lower_bound_bytes
    # The seed's two-step route ([[0],[2,1]] then all_gather) moves as much, in two steps.
    via = plan_reshard(Sharding(m, [[0], [1, 2]]), Sharding(m, [[0], [2, 1]]), x.shape, 8)
    after = plan_reshard(Sharding(m, [[0], [2, 1]]), Sharding(m, [[0], [2]]), x.shape, 8)
    assert p.bytes_moved <= via.bytes_moved + after.bytes_moved


def test_seed_split_two_dims_2x2x2():
    m = Mesh([2, 2, 2])
    x = np.array([[10 * r + c for c in range(1, 5)] for r in range(1, 5)])
    got, p = check(x, Sharding(m, [[0], [1, 2]]), Sharding(m, [[0, 1], [2]]))
    assert got.local((0, 1, 0)).tolist() == [[21, 22]]
    assert p.bytes_moved == p.lower_bound_bytes


def test_seed_gather_examples():
    m = Mesh([2, 3])
    x = np.array([[11, 12, 13], [21, 22, 23]])
    # One value per device -> columns: all_gather along mesh axis 0.
    got, p = check(x, Sharding(m, [[0], [1]]), Sharding(m, [[], [1]]))
    assert ops(p) == [("all_gather", (0,), {"gather_axis": 0})]
    assert got.local((1, 2)).tolist() == [[13], [23]]
    x2 = np.array([[11, 12, 13, 14, 15, 16], [21, 22, 23, 24, 25, 26]])
    got, p = check(x2, Sharding(m, [[], [0, 1]]), Sharding(m, [[], [0]]))
    assert ops(p) == [("all_gather", (1,), {"gather_axis": 1})]
    assert got.local((1, 1)).tolist() == [[14, 15, 16], [24, 25, 26]]


def test_seed_uneven_swap_and_index_maps():
    # Seed's check: K=16, L=23 on a 3x4 mesh: t[13, 17] = d(2, 2)[1, 5].
    x = np.arange(16 * 23).reshape(16, 23)
    m = Mesh([3, 4])
    a = distribute(x, Sharding(m, [[0], [1]]))
    assert a.local((2, 2))[1, 5] == x[13, 17]
    got, p = check(x, Sharding(m, [[0], [1]]), Sharding(m, [[1], [0]]))
    assert p.bytes_moved == p.lower_bound_bytes
    # [[1],[0]]: d(m, n)[k, l] = t[n * ceil(K/N) + k, m * ceil(L/M) + l]
    assert got.local((1, 3))[2, 4] == x[3 * 4 + 2, 1 * 8 + 4]


def test_sizes_that_do_not_divide_and_empty_shards():
    m = Mesh([4, 2])
    x = np.arange(3 * 5).reshape(3, 5)
    for src, tgt in [([[0], [1]], [[1], [0]]), ([[0, 1]], [[1, 0]]), ([[0, 1]], [[], [1, 0]]),
                     ([[1]], [[0]]), ([], [[0, 1], []])]:
        _, p = check(x, Sharding(m, src), Sharding(m, tgt))
        assert p.bytes_moved == p.lower_bound_bytes


def test_explicit_offsets():
    m = Mesh([4])
    x = np.arange(14 * 2).reshape(14, 2)
    src = Sharding(m, [[0]], sharded_dims_offsets=[0, 2, 5, 9, 14])
    _, p = check(x, src, Sharding(m, [[0]]))
    assert p.bytes_moved == p.lower_bound_bytes
    _, p = check(x, Sharding(m, [[], [0]]), src)
    assert p.bytes_moved == p.lower_bound_bytes


# -- partial sources ------------------------------------------------------------------------
@pytest.mark.parametrize("tgt,first_op", [([], "all_reduce"), ([[0]], "reduce_scatter"),
                                          ([[], [0]], "reduce_scatter"), ([[0, 1]], "reduce_scatter")])
def test_partial_picks_the_cheaper_reduction(tgt, first_op, rng):
    m = Mesh([4, 2])
    x = rng.integers(-9, 9, size=(8, 6))
    src = Sharding(m, [], partial={0: "sum"})
    a = partial_terms(x, src, rng)
    got = reshard(a, Sharding(m, tgt))
    want = distribute(x, Sharding(m, tgt))
    assert all(np.array_equal(u, v) for u, v in zip(got.locals, want.locals))
    p = plan_reshard(src, Sharding(m, tgt), x.shape, 8)
    assert p.steps[0].op == first_op
    # Never more than MLIR's route: all_reduce, then the rest.
    ar = plan_reshard(src, Sharding(m, []), x.shape, 8)
    rest = plan_reshard(Sharding(m, []), Sharding(m, tgt), x.shape, 8)
    assert p.bytes_moved <= ar.bytes_moved + rest.bytes_moved
    assert p.bytes_moved >= p.lower_bound_bytes


@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("tgt", [[[1], [0]], [], [[1, 0]]], ids=["to-S(y)S(x)", "to-R", "to-S(y,x)"])
def test_partial_kinds_with_random_terms_on_every_device(kind, tgt, rng):
    m = Mesh([2, 2])
    x = rng.integers(1, 5, size=(4, 4))
    s = Sharding(m, [[1]], partial={0: kind})
    a = partial_terms(x, s, rng)
    assert not any(np.array_equal(a.local(d), a.local(d + 2)) for d in (0, 1))  # real terms
    got = reshard(a, Sharding(m, tgt))
    want = distribute(x, Sharding(m, tgt))
    assert all(np.array_equal(u, v) for u, v in zip(got.locals, want.locals))


def test_all_reduce_cost_model():
    m = Mesh([4])
    p = plan_reshard(Sharding(m, [], partial={0: "sum"}), Sharding(m, []), (8, 8), 4)
    assert p.steps[0].op == "all_reduce"
    assert p.bytes_moved == 4 * 2 * (256 - 64)  # each device: 2 * (B - B/k)


# -- cost numbers -------------------------------------------------------------------------------
def test_link_aware_choice_of_the_sending_replica():
    # S(x) on dim 0 -> dim 1, replicated along y: nearest replicas make every column an
    # all-to-all (busiest link 3 pieces); taking replicas in turn spreads it over the
    # columns: the same bytes, a lower busiest link, more link bytes.
    m = Mesh([4, 4])
    src, tgt = Sharding(m, [[0]]), Sharding(m, [[1]])
    p = plan_reshard(src, tgt, (16, 16), 4)
    near = transfer_step(src, tgt, (16, 16), 4)
    for t in near.transfers:  # the nearest sender sits in the receiver's column
        assert m.multi_index(t.src)[1] == m.multi_index(t.dst)[1]
    (step,) = p.steps
    assert step.op == "transfers" and step.bytes == near.bytes == p.lower_bound_bytes
    assert near.flows.max_link_bytes(m) == 3 * 256
    assert p.max_link_bytes == 2 * 256 < near.flows.max_link_bytes(m)
    f = step.flows
    assert p.link_bytes == int((f.nbytes * hops(m, f.src, f.dst)).sum()) > near.flows.link_bytes(m)
    assert p.max_device_bytes == 4 * 16 * 4  # (i, j) holds row block i and needs block j
    text = p.explain()
    assert "lower bound 3072 (ratio 1.00), max_link_bytes 512" in text
    assert "busiest link 512" in text and "256 B" in text


def test_nearest_replica_kept_when_spreading_does_not_help():
    m = Mesh([2, 2])
    src, tgt = Sharding(m, [[0]]), Sharding(m, [[1]])
    p = plan_reshard(src, tgt, (4, 4), 4)
    assert p.steps == (transfer_step(src, tgt, (4, 4), 4),)


def test_same_sharding_is_empty_and_input_is_returned():
    m = Mesh([2])
    a = distribute(np.arange(4), Sharding(m, [[0]]))
    assert reshard(a, Sharding(m, [[0]])) is a
    p = plan_reshard(a.sharding, a.sharding, (4,))
    assert p.steps == () and p.bytes_moved == 0 and "nothing to do" in p.explain()


def test_errors():
    m = Mesh([2, 2])
    with pytest.raises(ValueError, match=r"cannot reshard S\(x\) into the partial sharding R P\(sum:y\)"):
        plan_reshard(Sharding(m, [[0]]), Sharding(m, [], partial={1: "sum"}), (4,))
    with pytest.raises(ValueError, match="src is on mesh"):
        plan_reshard(Sharding(m, [[0]]), Sharding(Mesh([4]), [[0]]), (4,))
    with pytest.raises(ValueError, match="itemsize must be a positive int, got 0"):
        plan_reshard(Sharding(m, [[0]]), Sharding(m, [[1]]), (4,), itemsize=0)
    with pytest.raises(ValueError, match=r"plan_reshard \(tgt\): sharding RS\(x\) splits dim 1 but the tensor has rank 1"):
        plan_reshard(Sharding(m, [[0]]), Sharding(m, [[], [0]]), (4,))
    with pytest.raises(TypeError, match="src must be a Sharding"):
        plan_reshard([[0]], Sharding(m, [[0]]), (4,))
    with pytest.raises(ValueError, match="has no sharding"):
        reshard(MeshArray.from_locals(m, [np.zeros(1)] * 4), Sharding(m, [[0]]))


# -- plans as values, cached ----------------------------------------------------------------------
def test_plans_are_immutable_values_and_cached():
    m = Mesh([2, 3])
    src, tgt = Sharding(m, [[0], [1]]), Sharding(m, [[1], [0]])
    p = plan_reshard(src, tgt, (6, 6))
    assert plan_reshard(src, tgt, [6, 6]) is p  # one cache entry per normal form
    assert plan_reshard(src, tgt, np.array([6, 6]), np.int64(4)) is p
    assert plan_reshard(src, tgt, range(6, 8)) is plan_reshard(src, tgt, (6, 7))
    plan_reshard.cache_clear()
    assert plan_reshard(src, tgt, (6, 6), np.int64(4)).itemsize == 4
    assert plan_reshard.cache_info()[:2] == (0, 1)  # one call, one miss
    plan_reshard.cache_clear()
    q = plan_reshard(src, tgt, (6, 6))
    assert q is not p and q == p and hash(q) == hash(p) and {p: 1}[q] == 1
    assert q.steps[0] == p.steps[0] and q.steps[0] is not p.steps[0]
    assert plan_reshard(src, tgt, (6, 6), 8) != p
    assert plan_reshard(src, Sharding(m, []), (6, 6)) != p
    info = plan_reshard.cache_info()
    plan_reshard(src, tgt, (6, 6))
    assert plan_reshard.cache_info().hits == info.hits + 1
    with pytest.raises(AttributeError):
        p.steps = ()
    with pytest.raises(ValueError):
        p.steps[0].src[0] = 3  # transfer rows are read-only
    assert "ReshardPlan(S(x)S(y) -> S(y)S(x), shape=(6, 6)" in repr(p)


def test_plan_cache_is_bounded_by_bytes_too(monkeypatch):
    from meshtensor.resharding import cache as C
    m = Mesh([2, 3])
    src, tgt = Sharding(m, [[0], [1]]), Sharding(m, [[1], [0]])
    built = plan_reshard(src, tgt, (6, 6)).steps
    built[0].src  # (rows are built on first use)
    one = C.steps_nbytes(built)
    assert one > 0  # a swap is point-to-point transfers
    cache = C.PlanCache(maxsize=8, maxbytes=2 * one)
    monkeypatch.setattr(C, "PLANS", cache)
    lazy = plan_reshard(src, tgt, (6, 6))
    assert "rows" not in lazy.steps[0].__dict__ and cache.cache_info().nbytes == 0
    lazy.steps[0].src  # rows built after caching are counted then
    assert cache.cache_info().nbytes == one
    for n in (12, 18):  # same row count each: the third evicts the first
        plan_reshard(src, tgt, (n, n)).steps[0].src
    info = cache.cache_info()
    assert (info.currsize, info.nbytes, info.misses) == (2, 2 * one, 3)
    plan_reshard(src, tgt, (6, 6))
    assert cache.cache_info().misses == 4  # evicted: planned again
    small = C.PlanCache(maxsize=8, maxbytes=one - 1)
    monkeypatch.setattr(C, "PLANS", small)
    plan_reshard(src, tgt, (6, 6)).steps[0].flows
    assert small.cache_info().currsize == 0  # larger than the whole budget: not kept


# -- planning by structure: big meshes ------------------------------------------------------------
@pytest.mark.parametrize("src,tgt,kinds", [
    ([[0], [1]], [], ["all_gather", "all_gather"]),
    ([[0], [1]], [[1], [0]], ["transfers"]),
    ([[0]], [[], [0]], ["all_to_all"]),
    ([], [[0], [1]], ["all_slice", "all_slice"]),
    ([[0], [1]], "halo", ["update_halo"]),
], ids=["gather", "swap", "move", "split", "halo"])
def test_64x64_plans_are_linear_in_devices(src, tgt, kinds):
    # The gather used to build 4096 x 4095 transfers (3 GB, 6 s) to compare them with
    # the collectives: costs are now closed-form, so planning stays small.
    import tracemalloc
    m = Mesh([64, 64])
    s = Sharding(m, src)
    t = s.replace(halo_sizes=[1, 1, 1, 1]) if tgt == "halo" else Sharding(m, tgt)
    plan_reshard.cache_clear()
    tracemalloc.start()
    p = plan_reshard(s, t, (4096, 4096, 8), 4)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [st.op for st in p.steps] == kinds
    assert p.bytes_moved == p.lower_bound_bytes and peak < 40 * 2**20
    text = p.explain()  # 80 columns: long lines continue on the next
    assert len(text.splitlines()) <= 20 * len(p.steps) + 6  # not one line per device
    assert max(len(line) for line in text.splitlines()) <= 80
    assert f"max_link_bytes {p.max_link_bytes}" in text


def test_big_mesh_explain_summarises_groups_and_busiest_links():
    m = Mesh([64, 64])
    p = plan_reshard(Sharding(m, [[0], [1]]), Sharding(m, []), (4096, 4096))
    text = p.explain()
    assert "64 groups of 64 devices along ['y']" in text
    assert "4096 of 4096 devices receive" in text and ") -> (" not in text  # no pair list
    # all_gather along a line of 64: the middle link carries 32 senders x 32 receivers
    piece = 4096 * 4096 * 4 // 4096
    assert f"busiest link {32 * 32 * piece}" in text


@pytest.mark.parametrize("bad", [-1, 1.5, "3"])
def test_explain_rejects_a_bad_max_pairs(bad):
    m = Mesh([2])
    p = plan_reshard(Sharding(m, [[0]]), Sharding(m, []), (4,))
    with pytest.raises(ValueError, match=r"explain: max_pairs must be an int >= 0, got"):
        p.explain(max_pairs=bad)


# -- the fast path for even layouts ----------------------------------------------------------------
def _all_shardings(mesh, rank):
    out = set()
    for dims in itertools.product(range(-1, rank), repeat=mesh.ndim):
        for order in itertools.permutations(range(mesh.ndim)):
            split = [[] for _ in range(rank)]
            for a in order:
                if dims[a] >= 0:
                    split[dims[a]].append(a)
            out.add(Sharding(mesh, split))
    return sorted(out, key=repr)


def test_even_fast_path_equals_the_general_planner_on_every_refinement_of_2x2x2():
    # Pure refinements and coarsenings skip _next_move: every sharding of a rank-3 tensor
    # against each of its per-dim prefix cuts, both ways (a coarsening over two dims
    # once built a wrong intermediate layout that random pairs did not find).
    from meshtensor.resharding.even import even_plan
    from meshtensor.resharding.planner import general_plan
    m = Mesh([2, 2, 2])
    shape = (8, 8, 8)
    n = 0
    for s in _all_shardings(m, 3):
        for keep in itertools.product(*(range(len(a) + 1) for a in s.split_axes)):
            cut = Sharding(m, [a[:k] for a, k in zip(s.split_axes, keep)])
            for src, tgt in ((s, cut), (cut, s)):
                fast = even_plan(src, tgt, shape, 4)
                general = general_plan(src, tgt, shape, 4)
                assert fast == general, (src, tgt, fast.steps, general.steps)
                n += 1
    assert n > 300


def test_fast_path_plans_build_their_steps_when_read():
    from meshtensor.resharding.even import even_plan
    from meshtensor.resharding.planner import general_plan
    m = Mesh([4, 4])
    p = plan_reshard(Sharding(m, [[0], [1]]), Sharding(m, [[1], [0]]), (16, 16, 4))
    (step,) = p.steps
    assert step.op == "transfers" and "rows" not in step.__dict__  # decided, not built
    assert "flows" not in step.__dict__ and p.moves is p.steps
    assert p.bytes_moved == p.lower_bound_bytes == step.bytes > 0
    assert general_plan(p.src, p.tgt, p.global_shape, 4).steps == p.steps  # builds rows
    assert "rows" in step.__dict__ and step.flows.total() == step.bytes
    # sizes past int64 go to the general planner, as do arguments the fast path does not
    # take (it checks them)
    assert even_plan(p.src, p.tgt, (2 ** 40, 2 ** 40, 4), 4) is None
    assert even_plan(p.src, p.tgt, (2 ** 20, 2 ** 20, 4), 4) is not None
    m = p.src.mesh  # layouts with more than split axes are the general planner's
    for other in (Sharding(m, [[0]], halo_sizes=[1, 1]), Sharding(m, [[1]], partial={0: "sum"}),
                  Sharding(m, [[0]], sharded_dims_offsets=[0, 4, 8, 12, 16])):
        assert even_plan(other, p.tgt, (16, 16, 4), 4) is None
        assert even_plan(p.src, other, (16, 16, 4), 4) is None
    with pytest.raises(ValueError, match="itemsize"):
        plan_reshard(p.src, p.tgt, (16, 16, 4), 0)
    with pytest.raises(ValueError, match="rank"):
        plan_reshard(p.src, p.tgt, (16,))


@pytest.mark.parametrize("shape,itemsize,err,match", [
    ((4, 4), 4.0, ValueError, r"itemsize must be a positive int, got 4.0"),
    ((4, 4), True, ValueError, r"itemsize must be a positive int, got True"),
    ((4.0, 4), 4, TypeError, r"global_shape\[0\] must be an int, got 4.0"),
], ids=["float-itemsize", "bool-itemsize", "float-dim"])
def test_arguments_are_checked_on_a_warm_cache_too(shape, itemsize, err, match):
    """4.0 == 4 and (4.0, 4) == (4, 4): a cached plan for the valid arguments must not
    answer the invalid ones."""
    m = Mesh({"row": 2, "col": 2})
    s, t = Sharding(m, [["row"]]), Sharding(m, [["col"]])
    plan_reshard(s, t, (4, 4), 4)  # warm
    for _ in range(2):
        with pytest.raises(err, match=match):
            plan_reshard(s, t, shape, itemsize)


@pytest.mark.parametrize("shape", [(99999999999, 99999999999), (2 ** 31, 2 ** 31)],
                         ids=["1e11-squared", "2^31-squared"])
def test_byte_counts_that_would_wrap_int64_are_refused(shape):
    m = Mesh({"row": 2, "col": 2})
    with pytest.raises(ValueError, match=r"past the int64 byte counts a plan reports"):
        plan_reshard(Sharding(m, [["row"], ["col"]]), Sharding(m, [["col"], ["row"]]), shape)


def test_largest_plannable_counts_are_exact_python_ints():
    m = Mesh({"row": 2, "col": 2})
    shape = (2 ** 29, 2 ** 29)  # 2^60 bytes per copy of the tensor
    with pytest.raises(ValueError, match="past the int64"):
        plan_reshard(Sharding(m, [["row"], ["col"]]), Sharding(m, [["col"], ["row"]]), shape)
    shape = (2 ** 27, 2 ** 28)
    p = plan_reshard(Sharding(m, [["row"], ["col"]]), Sharding(m, [["col"], ["row"]]), shape)
    # (0, 1) and (1, 0) swap their quarters, the diagonal keeps its own: half of 2^57 B
    assert p.bytes_moved == p.lower_bound_bytes == 2 ** 56
    assert type(p.bytes_moved) is int and "72057594037927936" in p.explain()


def test_one_step_model_and_the_public_names():
    """Issue 26: resharding.py held two step models (the planner's Move and the
    executors' CollectiveStep/TransferStep). A plan's steps are its decisions now, one
    Step record each; the old names still import and mean the same."""
    import meshtensor
    from meshtensor.resharding import (CollectiveStep, Move, ReshardPlan, Step, Transfer,
                                       TransferStep, apply_step, new_local_shape,
                                       own_cells, plan_reshard as pr, reshard as rs,
                                       transfer_step)
    assert Move is Step and pr is meshtensor.plan_reshard and rs is meshtensor.reshard
    assert meshtensor.apply_step is apply_step and meshtensor.ReshardPlan is ReshardPlan
    assert callable(new_local_shape) and callable(own_cells) and callable(transfer_step)
    m = Mesh([2, 2])
    p = plan_reshard(Sharding(m, [[0], [1]], partial=None), Sharding(m, [[1], [0]]), (4, 4))
    q = plan_reshard(Sharding(m, [[0], [1]]), Sharding(m, []), (4, 4))
    for step in p.steps + q.steps:
        assert isinstance(step, Step) and type(step) in (CollectiveStep, TransferStep)
        assert step.global_shape == (4, 4) and step.itemsize == 4
    assert p.moves is p.steps and isinstance(p.steps[0].transfers[0], Transfer)
    import pickle
    assert pickle.loads(pickle.dumps(p.steps)) == p.steps  # values survive pickling


def test_cache_hits_need_the_checked_objects():
    """The cache's fast path (issue 30 item 15: a hit took 0.9-1.5 us, DTensor's cached
    planner 0.4-0.6) answers only a call with the very objects an earlier call was
    checked with; an equal shape of floats, an equal itemsize of another type or
    nothing at all still goes through the checks."""
    m = Mesh([2, 2])
    src, tgt = Sharding(m, [[0]]), Sharding(m, [[1]])
    shape = (4, 4)
    p = plan_reshard(src, tgt, shape)
    assert plan_reshard(src, tgt, shape) is p  # the last call
    plan_reshard(tgt, src, shape)
    assert plan_reshard(src, tgt, shape) is p  # through the index
    assert plan_reshard(Sharding(m, [[0]]), Sharding(m, [[1]]), (4, 4)) is p  # equal values
    with pytest.raises(TypeError, match=r"global_shape\[0\] must be an int, got 4.0"):
        plan_reshard(src, tgt, (4.0, 4.0))
    with pytest.raises(ValueError, match="itemsize must be a positive int, got 4.0"):
        plan_reshard(src, tgt, shape, 4.0)
    plan_reshard.cache_clear()
    with pytest.raises(TypeError, match="src must be a Sharding, got NoneType"):
        plan_reshard(None, None, None, None)
    info = plan_reshard.cache_info()
    plan_reshard(src, tgt, shape)
    plan_reshard(src, tgt, shape)
    plan_reshard(tgt, src, shape)
    plan_reshard(src, tgt, shape)
    got = plan_reshard.cache_info()
    assert (got.hits - info.hits, got.misses - info.misses) == (2, 2)
