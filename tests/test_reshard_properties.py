"""reshard(distribute(x, src), tgt) == distribute(x, tgt) for random pairs, and the
plan moves exactly the lower bound whenever the source is not partial."""
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from meshtensor import distribute, plan_reshard, reshard
from strategies import meshes, n_examples, partial_terms, shapes, shardings

SETTINGS = settings(max_examples=n_examples(300), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@st.composite
def pairs(draw, partial=True, halos=True, offsets=True):
    mesh = draw(meshes(max_devices=36))
    shape = draw(shapes(max_rank=3, max_size=9))
    src = draw(shardings(mesh, len(shape), partial=partial, halos=halos, offsets=offsets,
                         shape=shape))
    tgt = draw(shardings(mesh, len(shape), halos=halos, offsets=offsets, shape=shape))
    if draw(st.booleans()) and not src.partial_axes:
        tgt = src if draw(st.booleans()) else tgt
    return mesh, shape, src, tgt


def check_equal(got, want):
    assert got.sharding == want.sharding and got.global_shape == want.global_shape
    for d, (a, b) in enumerate(zip(got.locals, want.locals)):
        assert a.shape == b.shape, (d, a.shape, b.shape)
        assert np.array_equal(a, b), (d, a, b)


@SETTINGS
@given(pairs(), st.integers(0, 5))
def test_reshard_equals_fresh_distribute(case, seed):
    mesh, shape, src, tgt = case
    x = np.random.default_rng(seed).integers(-9, 9, size=shape).astype(np.int32)
    a = distribute(x, src)
    before = [v.copy() for v in a.locals]
    got = reshard(a, tgt)
    check_equal(got, distribute(x, tgt))
    assert all(np.array_equal(u, v) for u, v in zip(before, a.locals))  # input untouched
    plan = plan_reshard(src, tgt, shape, x.dtype.itemsize)
    assert plan.bytes_moved >= plan.lower_bound_bytes
    if not src.partial_axes:
        assert plan.bytes_moved == plan.lower_bound_bytes, plan.explain()


@SETTINGS
@given(pairs(partial=True, halos=False, offsets=False), st.integers(0, 5))
def test_partial_sources_reduce_on_the_way(case, seed):
    mesh, shape, src, tgt = case
    # Random terms on every device of each partial group that reduce to x (any kind).
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, size=shape).astype(np.int64)
    a = partial_terms(x, src, rng) if src.partial_axes else distribute(x, src)
    got = reshard(a, tgt)
    check_equal(got, distribute(x, tgt))
    plan = plan_reshard(src, tgt, shape, 8)
    assert plan.bytes_moved >= plan.lower_bound_bytes
    assert plan_reshard(src, tgt, shape, 8) is plan  # cached


@SETTINGS
@given(pairs(partial=False, halos=False, offsets=False))
def test_round_trip_is_exact(case):
    mesh, shape, src, tgt = case
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    back = reshard(reshard(distribute(x, src), tgt), src)
    check_equal(back, distribute(x, src))
    assert np.array_equal(back.to_global(), x)
