"""reshard(distribute(x, src), tgt) == distribute(x, tgt) for random pairs, and the
plan moves exactly the lower bound whenever the source is not partial."""
import math

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from meshtensor import distribute, plan_reshard, reshard
from meshtensor.resharding.even import even_plan
from meshtensor.resharding.planner import general_plan
from meshtensor.resharding.steps import STEP_FIELDS, make_step
from meshtensor import Sharding
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


# -- the planner's fast path and lazily built steps -------------------------------------------
@st.composite
def even_pairs(draw):
    """Two shardings on a mesh of at most 64 devices and a shape whose every dim divides
    by its shard count in both (zero-size dims included)."""
    mesh = draw(meshes(max_devices=64))
    rank = draw(st.integers(1, 3))
    src = draw(shardings(mesh, rank))
    tgt = src if draw(st.integers(0, 9)) == 0 else draw(shardings(mesh, rank))
    how = draw(st.sampled_from(["any", "coarser", "finer"]))
    if how != "any":  # one side a per-dim prefix of the other: slices or gathers only
        cut = Sharding(mesh, [axes[:draw(st.integers(0, len(axes)))] for axes in src.split_axes])
        src, tgt = (src, cut) if how == "coarser" else (cut, src)
    shape = tuple(math.lcm(src.shard_count(d), tgt.shard_count(d)) * draw(st.integers(0, 3))
                  for d in range(rank))
    return mesh, shape, src, tgt


@SETTINGS
@given(even_pairs(), st.sampled_from([1, 4, 8]))
def test_even_fast_path_equals_the_general_planner(case, itemsize):
    mesh, shape, src, tgt = case
    fast = even_plan(src, tgt, shape, itemsize)
    assert fast is not None  # decided, nothing built yet:
    assert not any({"flows", "rows"} & set(s.__dict__) for s in fast.steps)
    general = general_plan(src, tgt, shape, itemsize)
    assert fast == general, (fast.steps, general.steps)  # (rows compared too)
    assert fast.lower_bound_bytes == general.lower_bound_bytes
    assert [_pairs(s) for s in fast.steps] == [_pairs(s) for s in general.steps]
    assert [s.flows.total() for s in fast.steps] == [s.bytes for s in fast.steps]


@SETTINGS
@given(pairs())
def test_steps_built_on_first_use_equal_the_planned_steps(case):
    """The planner builds flows and rows while it compares candidates; a step holding
    only the decision builds the same ones when first read."""
    mesh, shape, src, tgt = case
    general = general_plan(src, tgt, shape, 4)
    fresh = [make_step(*(getattr(s, f) for f in STEP_FIELDS)) for s in general.steps]
    assert not any({"flows", "rows"} & set(s.__dict__) for s in fresh)
    assert tuple(fresh) == general.steps  # (rows built and compared)
    assert [_pairs(s) for s in fresh] == [_pairs(s) for s in general.steps]
    assert [s.flows.total() for s in fresh] == [s.bytes for s in general.steps]


def _pairs(step):
    return sorted(step.flows.pairs())


@settings(max_examples=n_examples(150), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(pairs(), st.integers(40, 120))
def test_explain_and_matrix_fit_their_width_and_keep_every_word(case, width):
    """Narrow text only moves line breaks: the same words as on one wide line each
    (from 60 columns; narrower, a word longer than a line is broken too)."""
    from meshtensor import visualize_plan
    mesh, shape, src, tgt = case
    if tgt.partial_axes and tgt != src:
        return
    plan = plan_reshard(src, tgt, shape)
    for narrow, wide in ((plan.explain(width=width), plan.explain(width=10 ** 4)),
                         (visualize_plan(plan, width=width), None)):
        assert max(len(line) for line in narrow.splitlines()) <= width, narrow
        if wide is not None and width >= 60:
            assert narrow.split() == wide.split()
