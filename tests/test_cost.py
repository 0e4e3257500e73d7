"""The cost model: closed-form collective flows against their listed pairs, and XY
link loads against a hop-by-hop walk."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from meshtensor import Mesh
from meshtensor.cost import Flows, GroupFlows, hops, xy_link_loads
from strategies import meshes, n_examples

SETTINGS = settings(max_examples=n_examples(150), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def walk_link_loads(mesh, src, dst, nbytes, wrap=None):
    """Reference: move each flow one link at a time, axis 0 first; on a ring (``wrap``)
    the shorter way round, upward on a tie."""
    wrap = wrap or (False,) * mesh.ndim
    loads = np.zeros((mesh.ndim, 2) + mesh.shape, dtype=np.int64)
    for s, d, b in zip(src.tolist(), dst.tolist(), nbytes.tolist()):
        c, t = list(mesh.multi_index(s)), mesh.multi_index(d)
        for a in range(mesh.ndim):
            n = mesh.shape[a]
            if wrap[a]:
                up = (t[a] - c[a]) % n
                step = 1 if 0 < up <= n - up else -1
            else:
                step = 1 if t[a] > c[a] else -1
            while c[a] != t[a]:
                if step > 0:
                    loads[(a, 0) + tuple(c)] += b
                    c[a] = (c[a] + 1) % n
                else:
                    c[a] = (c[a] - 1) % n
                    loads[(a, 1) + tuple(c)] += b
    return loads


@SETTINGS
@given(meshes(max_axes=3, max_devices=36), st.data())
def test_xy_link_loads_match_a_hop_by_hop_walk(mesh, data):
    n = data.draw(st.integers(0, 20))
    src = np.array(data.draw(st.lists(st.integers(0, mesh.size - 1), min_size=n, max_size=n)), dtype=np.int64)
    dst = np.array(data.draw(st.lists(st.integers(0, mesh.size - 1), min_size=n, max_size=n)), dtype=np.int64)
    nb = np.array(data.draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n)), dtype=np.int64)
    loads = xy_link_loads(mesh, src, dst, nb)
    assert np.array_equal(loads, walk_link_loads(mesh, src, dst, nb))
    f = Flows(src, dst, nb)
    assert f.link_bytes(mesh) == int((nb * hops(mesh, src, dst)).sum())
    wrap = tuple(data.draw(st.lists(st.booleans(), min_size=mesh.ndim, max_size=mesh.ndim)))
    loads = xy_link_loads(mesh, src, dst, nb, wrap=wrap)
    assert np.array_equal(loads, walk_link_loads(mesh, src, dst, nb, wrap))
    assert int(loads.sum()) == int((nb * hops(mesh, src, dst, wrap)).sum())


@SETTINGS
@given(meshes(max_axes=3, max_devices=36), st.data())
def test_group_flows_closed_form_equals_the_listed_pairs(mesh, data):
    axes = tuple(data.draw(st.lists(st.integers(0, mesh.ndim - 1), min_size=1, unique=True)))
    groups = mesh.group_array(axes)
    terms = {}
    for name in ("send", "recv", "u", "w"):
        if data.draw(st.booleans()):
            terms[name] = np.array(data.draw(st.lists(st.one_of(st.just(0), st.integers(0, 50)),
                                                      min_size=groups.size,
                                                      max_size=groups.size))).reshape(groups.shape)
    f = GroupFlows(axes, groups, **terms)
    pairs = f.as_pairs()
    G, k = groups.shape
    z = np.zeros(groups.shape, dtype=np.int64)
    s, r, u, w = (terms.get(n, z) for n in ("send", "recv", "u", "w"))
    want = sum(int(s[g, i] + r[g, j] + u[g, i] * w[g, j])
               for g in range(G) for i in range(k) for j in range(k) if i != j)
    assert f.total() == pairs.total() == want
    assert f.num_pairs() == pairs.num_pairs()
    assert np.array_equal(f.received(mesh), pairs.received(mesh))
    assert np.array_equal(f.link_loads(mesh), walk_link_loads(mesh, pairs.src, pairs.dst, pairs.nbytes))
    assert f.max_link_bytes(mesh) == int(f.link_loads(mesh).max())


def test_pairs_are_summed_and_sorted_largest_first():
    f = Flows(np.array([0, 1, 0, 2]), np.array([1, 0, 1, 0]), np.array([3, 5, 4, 1]))
    assert f.pairs() == [(0, 1, 7), (1, 0, 5), (2, 0, 1)]
    assert f.pairs(2) == [(0, 1, 7), (1, 0, 5)] and f.num_pairs() == 3


def test_link_loads_are_read_only_and_remembered():
    m = Mesh([4])
    f = GroupFlows((0,), m.group_array((0,)), send=np.full((1, 4), 2))
    loads = f.link_loads(m)
    assert loads is f.link_loads(m) and not loads.flags.writeable
    # all_gather of 2 bytes on a line of 4: the middle link carries 2 senders x 2 receivers
    assert loads[0, 0].tolist() == [6, 8, 6, 0] and f.max_link_bytes(m) == 8
    with pytest.raises(ValueError):
        loads[0, 0, 0] = 1
