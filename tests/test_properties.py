"""Property tests of the core model: regions tile the tensor, round trips are exact,
and every collective agrees with a naive reference built from the global tensor."""
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from meshtensor import MeshArray, distribute
from meshtensor import collectives as C
from strategies import cases, groups_naive, meshes, n_examples, partial_terms, piece

SETTINGS = settings(max_examples=n_examples(150), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def tensor(shape, seed=0):
    return np.random.default_rng(seed).integers(-50, 50, size=shape).astype(np.int64)


@SETTINGS
@given(cases(offsets=True))
def test_regions_tile_each_split_dim_once_per_replica(case):
    mesh, shape, s = case
    count = np.zeros(shape, dtype=np.int64)
    for d in range(mesh.size):
        count[s.local_region(shape, d)] += 1
    replicas = mesh.size // int(np.prod([s.shard_count(d) for d in s.split_dims] or [1]))
    assert np.all(count == replicas)
    for d in s.split_dims:  # empty ceil-div shards start at n
        if s.offsets(d) is None:
            starts, stops = s.regions(shape)
            empty = starts[:, d] == stops[:, d]
            assert np.all(starts[empty, d] == shape[d]) or shape[d] == 0


@SETTINGS
@given(cases(partial=True, halos=True, offsets=True), st.integers(0, 3))
def test_distribute_to_global_round_trip(case, seed):
    mesh, shape, s = case
    x = tensor(shape, seed)
    a = distribute(x, s)
    assert np.array_equal(a.to_global(), x)
    for d in range(mesh.size):
        assert a.local(d).shape == s.local_shape(shape, d)
    b = MeshArray.from_locals(mesh, a.locals, sharding=s)
    assert b.global_shape == shape and np.array_equal(b.to_global(), x)


@SETTINGS
@given(cases(partial=True, halos=True), st.integers(0, 3))
def test_random_partial_terms_reduce_to_the_tensor(case, seed):
    # Every device of a partial group holds its own random term (sum, max, min, prod).
    mesh, shape, s = case
    x = tensor(shape, seed)
    a = partial_terms(x, s, np.random.default_rng(seed)) if s.partial_axes else distribute(x, s)
    assert np.array_equal(a.to_global(), x)


@st.composite
def collective_case(draw):
    mesh, shape, s = draw(cases())
    x = tensor(shape, draw(st.integers(0, 3)))
    a = distribute(x, s)
    axes = draw(st.lists(st.integers(0, mesh.ndim - 1), unique=True, max_size=mesh.ndim))
    return mesh, shape, s, x, a, axes


def locals_of(a):
    return [np.asarray(v) for v in a.locals]


@SETTINGS
@given(collective_case(), st.data())
def test_collectives_match_reference(case, data):
    mesh, shape, s, x, a, axes = case
    groups = groups_naive(mesh, axes)
    k = len(groups[0])
    # Reference inputs: each device's block read straight from the global tensor.
    ins = [x[s.local_region(shape, d)] for d in range(mesh.size)]
    assert all(np.array_equal(i, l) for i, l in zip(ins, a.locals))
    rank = len(shape)

    def check(result, expected):
        for d in range(mesh.size):
            assert result.local(d).shape == expected[d].shape, d
            assert np.array_equal(result.local(d), expected[d]), d

    if rank:
        ax = data.draw(st.integers(0, rank - 1))
        ax2 = data.draw(st.integers(0, rank - 1))
        # all_slice / all_to_all / scatter cut any local.
        exp = [None] * mesh.size
        for g in groups:
            for p, d in enumerate(g):
                exp[d] = piece(ins[d], ax, k, p)
        check(C.all_slice(a, axes, ax), exp)
        for g in groups:
            for j, d in enumerate(g):
                exp[d] = np.concatenate([piece(ins[i], ax, k, j) for i in g], axis=ax2) \
                    if _concatable([piece(ins[i], ax, k, j) for i in g], ax2) else None
        if all(e is not None for e in exp):
            check(C.all_to_all(a, axes, ax, ax2), exp)
        root = [data.draw(st.integers(0, mesh.shape[m] - 1)) for m in axes]
        rpos = int(np.ravel_multi_index(root, [mesh.shape[m] for m in axes])) if axes else 0
        for g in groups:
            for p, d in enumerate(g):
                exp[d] = piece(ins[g[rpos]], ax, k, p)
        check(C.scatter(a, axes, ax, root), exp)
        # all_gather / gather need equal sizes outside the gather axis.
        if all(_concatable([ins[i] for i in g], ax) for g in groups):
            for g in groups:
                cat = np.concatenate([ins[i] for i in g], axis=ax)
                for d in g:
                    exp[d] = cat
            check(C.all_gather(a, axes, ax), exp)
            for g in groups:
                for d in g:
                    exp[d] = ins[d]
                exp[g[rpos]] = np.concatenate([ins[i] for i in g], axis=ax)
            check(C.gather(a, axes, ax, root), exp)
    # Reductions: make every device of a group hold the same shape by using a
    # replicated-along-axes layout of per-device random terms.
    terms = [tensor(ins[0].shape, seed=d) for d in range(mesh.size)] \
        if all(i.shape == ins[0].shape for i in ins) else None
    if terms is not None:
        t = MeshArray.from_locals(mesh, terms)
        for kind, op in [("sum", np.add), ("max", np.maximum), ("min", np.minimum)]:
            exp = [None] * mesh.size
            for g in groups:
                r = terms[g[0]].copy()
                for i in g[1:]:
                    r = op(r, terms[i])
                for d in g:
                    exp[d] = r
            check(C.all_reduce(t, axes, kind), exp)
            if rank:
                rs = [None] * mesh.size
                for g in groups:
                    for p, d in enumerate(g):
                        rs[d] = piece(exp[d], ax, k, p)
                check(C.reduce_scatter(t, axes, ax, kind), rs)


def _concatable(parts, axis):
    ref = [n for i, n in enumerate(parts[0].shape) if i != axis]
    return all([n for i, n in enumerate(p.shape) if i != axis] == ref for p in parts)


@SETTINGS
@given(meshes(), st.data())
def test_shift_and_permute_match_numpy(mesh, data):
    vals = np.arange(mesh.size).reshape(mesh.shape)
    a = MeshArray.from_locals(mesh, [np.array([v]) for v in vals.reshape(-1)])
    sa = data.draw(st.integers(0, mesh.ndim - 1))
    off = data.draw(st.integers(-6, 6))
    rolled = np.roll(vals, off, axis=sa)
    got = np.array([v[0] for v in C.shift(a, [sa], sa, off, rotate=True).locals]).reshape(mesh.shape)
    assert np.array_equal(got, rolled)
    plain = np.array([v[0] for v in C.shift(a, [sa], sa, off).locals]).reshape(mesh.shape)
    n = mesh.shape[sa]
    idx = np.arange(n)
    src = idx - off
    for c in range(n):
        want = np.take(vals, src[c] if 0 <= src[c] < n else c, axis=sa)
        assert np.array_equal(np.take(plain, c, axis=sa), want)
    perm = data.draw(st.permutations(range(mesh.size)))
    r = C.permute(a, list(zip(range(mesh.size), perm)))
    for src_dev, dst in enumerate(perm):
        assert r.local(dst)[0] == src_dev


@SETTINGS
@given(cases(halos=True), st.integers(0, 3))
def test_update_halo_restores_distribute(case, seed):
    mesh, shape, s = case
    x = tensor(shape, seed)
    good = distribute(x, s)
    w0, w1 = s.windows(shape)
    starts, stops = s.regions(shape)
    # Corrupt every in-tensor halo cell; keep cores and out-of-tensor cells.
    stale = []
    for d in range(mesh.size):
        loc = np.array(good.local(d))
        pos = np.indices(loc.shape) if loc.ndim else np.zeros((0,), int)
        if loc.ndim:
            g = [pos[i] + w0[d, i] for i in range(loc.ndim)]
            inside = np.all([(gi >= 0) & (gi < shape[i]) for i, gi in enumerate(g)], axis=0)
            core = np.all([(gi >= starts[d, i]) & (gi < stops[d, i]) for i, gi in enumerate(g)], axis=0)
            loc[inside & ~core] = 999
        stale.append(loc)
    r = C.update_halo(MeshArray.from_locals(mesh, stale, sharding=s), s)
    for d in range(mesh.size):
        assert np.array_equal(r.local(d), good.local(d))
