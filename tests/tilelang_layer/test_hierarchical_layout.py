"""SUNMMIO's hierarchical layouts: T.MeshTensor(..., hierarchical_dims=...) and the
layout makers make_hierarchical_layout / make_blockwise_zz_layout (the rules of
tilelang/language/mesh_tensor.py and tilelang/layout/hierarchical_layout.py in
wanghz18/Tilelang-Mesh and SUNMMIO/Tilelang)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402

from meshtensor.tilelang import tilelang_mesh as tm  # noqa: E402
from meshtensor.tilelang.ir.mesh_param import mesh_params  # noqa: E402
from meshtensor.tilelang.language.hierarchical_layout import (  # noqa: E402
    HierarchicalLayout, make_blockwise_zz_layout, make_hierarchical_layout)


@pytest.fixture(autouse=True)
def _mesh():
    tm.enable(mesh=(2, 2))
    yield
    tm.enable(mesh=(4, 4))


def _offset_by_digits(lay, idx):
    """The fork's formula element by element: each logical index's mixed-radix digits
    (most significant first) dotted with their strides."""
    total = 0
    for (s, e), i in zip(lay.groups, idx):
        digits = []
        for f in reversed(lay.hdims[s:e]):
            digits.append(i % f)
            i //= f
        total += sum(h * st_ for h, st_ in zip(reversed(digits), lay.hstrides[s:e]))
    return total


def test_the_forks_4x4_example():
    """The fork's docstring: hdims (2, 2, 2, 2), strides (8, 2, 4, 1), groups
    ((0, 2), (2, 4)) keeps the 4x4 tensor in 2x2 blocks."""
    lay = HierarchicalLayout((2, 2, 2, 2), (8, 2, 4, 1), ((0, 2), (2, 4)))
    memory = np.empty(16, int)
    memory[lay.offsets().ravel()] = np.arange(16)
    assert memory.tolist() == [0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15]
    assert lay == make_blockwise_zz_layout((4, 4), (2, 2))


@st.composite
def layouts(draw):
    ndim = draw(st.integers(1, 3))
    groups, hdims, at = [], [], 0
    for _ in range(ndim):
        n = draw(st.integers(1, 3))
        hdims += draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
        groups.append((at, at + n))
        at += n
    order = draw(st.permutations(range(len(hdims))))
    strides, step = [0] * len(hdims), 1
    for k in order:  # a compact layout in a random digit order
        strides[k] = step
        step *= hdims[k]
    return HierarchicalLayout(tuple(hdims), tuple(strides), tuple(groups))


@settings(max_examples=60, deadline=None)
@given(layouts())
def test_offsets_follow_the_digit_formula_and_a_compact_layout_is_a_permutation(lay):
    off = lay.offsets()
    assert off.shape == lay.logical_shape
    for idx in np.ndindex(*lay.logical_shape):
        assert off[idx] == _offset_by_digits(lay, idx)
    assert sorted(off.ravel().tolist()) == list(range(math.prod(lay.hdims)))


@settings(max_examples=60, deadline=None)
@given(layouts(), st.data())
def test_a_shard_is_a_compact_layout_of_the_shard_shape(lay, data):
    counts = [data.draw(st.sampled_from([k for k in (1, 2, 4) if lay.hdims[s] % k == 0]))
              for s, _ in lay.groups]
    part = lay.shard(counts)
    assert part.logical_shape == tuple(n // k for n, k in zip(lay.logical_shape, counts))
    assert sorted(part.offsets().ravel().tolist()) == list(range(math.prod(part.hdims)))
    # digits (of more than one value) keep their order of significance in memory
    order = [i for i in sorted(range(len(lay.hdims)), key=lambda i: lay.hstrides[i])
             if part.hdims[i] > 1]
    assert [part.hstrides[i] for i in order] == sorted(part.hstrides[i] for i in order)


def test_the_forks_shard_rule_on_its_test_values():
    """test_hierarchical_layout_values: (64, 64) row-major split 2x2 keeps (32, 32) with
    strides (32, 1); the DMA test's (4, 32, 128) split 4 ways over rows keeps the digit
    of 4 as 1 and its part column-major."""
    part = HierarchicalLayout((64, 64), (64, 1), ((0, 1), (1, 2))).shard((2, 2))
    assert (part.hdims, part.hstrides) == ((32, 32), (32, 1))
    assert part.offsets()[1, 0] == 32 and part.offsets()[0, 1] == 1
    dma = HierarchicalLayout((4, 32, 128), (32, 1, 4096), ((0, 2), (2, 3))).shard((4, 1))
    assert (dma.hdims, dma.hstrides) == ((1, 32, 128), (32, 1, 32))


@pytest.mark.parametrize("args, match", [
    (((4, 4), (4,), ((0, 1), (1, 2))), r"differ in length \(2 != 1\)"),
    (((4, 4), (4, 1), ((0, 1), (2, 2))), r"hierarchical_groups\[1\] = \(2, 2\): groups must "
                                         r"cover hierarchical_dims in order"),
    (((4, 4), (4, 1), ((0, 1),)), r"cover 1 of the 2 hierarchical_dims"),
    (((4, 4), (1, 1), ((0, 1), (1, 2))), r"puts two elements at one offset"),
    (((0, 4), (4, 1), ((0, 1), (1, 2))), r"hierarchical_dims\[0\] must be an int >= 1"),
    (((4, 4), (4, -1), ((0, 1), (1, 2))), r"hierarchical_strides\[1\] must be an int >= 0"),
])
def test_invalid_layouts_are_refused(args, match):
    with pytest.raises(ValueError, match=match):
        make_hierarchical_layout(*args)


def test_a_layout_with_interleaved_strides_that_do_not_overlap_is_accepted():
    """Strides (3, 2) on digits (2, 2): offsets 0, 2, 3, 5 (no stride order proves it;
    the offsets are compared)."""
    lay = make_hierarchical_layout((2, 2), (3, 2), ((0, 1), (1, 2)))
    assert lay.offsets().tolist() == [[0, 2], [3, 5]]


def test_a_shard_must_be_whole_digits():
    with pytest.raises(ValueError, match=r"most significant hierarchical dim \(2\) of "
                                         r"logical dim 0 is not divisible by its shard "
                                         r"count \(4\)"):
        HierarchicalLayout((2, 64), (64, 1), ((0, 2),)).shard((4,))


def test_blockwise_zz_needs_whole_blocks():
    with pytest.raises(ValueError, match=r"shape \(48, 64\) is not whole blocks of "
                                         r"\(32, 32\)"):
        make_blockwise_zz_layout((48, 64))


# -- T.MeshTensor -------------------------------------------------------------------------
def _dma_tensor(**kw):
    args = dict(sharding_policy=T.MeshShardingPolicy(cross_mesh_dim=0),
                device_mesh_config=(2, 2), hierarchical_dims=(4, 32, 128),
                hierarchical_groups=((0, 2), (2, 3)), hierarchical_strides=(32, 1, 4096))
    args.update(kw)
    return T.MeshTensor((128, 128), **args)


def test_mesh_tensor_records_the_layout_and_each_cores_part():
    A = _dma_tensor()
    assert A.local_shape == (32, 128)
    assert A.hierarchical == HierarchicalLayout((4, 32, 128), (32, 1, 4096),
                                                ((0, 2), (2, 3)))
    assert A.local_layout.hstrides == (32, 1, 32)

    @T.prim_func
    def k(C: A):
        with T.Kernel() as cid:
            C[0, cid] = 1.0

    (p,) = mesh_params(k).values()
    assert p.layout == ("hierarchical(hdims=((4, 32), (128,)), hstrides=((32, 1), (4096,)))"
                        ", per core hierarchical(hdims=((1, 32), (128,)), hstrides=((32, 1), "
                        "(32,)))")


def test_mesh_tensor_without_a_hierarchical_layout_has_none():
    A = T.MeshTensor((8, 8), T.MeshShardingPolicy(y=0, x=1), (2, 2))
    assert A.hierarchical is None and A.local_layout is None


@pytest.mark.parametrize("kw, match", [
    (dict(hierarchical_strides=None), r"\['hierarchical_strides'\] missing"),
    (dict(hierarchical_dims=(4, 32, 64)), r"make shape \(128, 64\), the tensor's is "
                                          r"\(128, 128\)"),
    (dict(hierarchical_dims=(2, 64, 128), hierarchical_strides=(64, 1, 4096)),
     r"T.MeshTensor: hierarchical layout: the most "
                                           r"significant hierarchical dim \(2\)"),
    (dict(layout="zz"), r"layout=zz and hierarchical_dims= both name"),
    (dict(hierarchical_strides=(32, 1, 1)), r"T.MeshTensor: hierarchical layout: .* puts "
                                            r"two elements at one offset"),
])
def test_mesh_tensor_refuses_a_layout_it_cannot_keep(kw, match):
    with pytest.raises(ValueError, match=match):
        _dma_tensor(**kw)


def test_blockwise_zz_in_annotate_layout_is_recorded():
    from tilelang.layout import make_blockwise_zz_layout as maker

    @T.prim_func
    def k(O: T.Tensor((4,), "float32")):
        with T.Kernel() as cid:
            S = T.alloc_shared((64, 64), "float32", scope="shared.rsram")
            T.annotate_layout({S: maker(S)})
            O[cid] = 1.0

    assert dict(k.attrs["meshtensor.layouts"]) == {
        "S": "hierarchical(hdims=((2, 32), (2, 32)), hstrides=((2048, 32), (1024, 1)))"}


def test_blockwise_zz_takes_a_buffer_region_and_refuses_a_symbolic_shape():
    import tilelang  # noqa: F401
    from tvm import tirx
    buf = tirx.decl_buffer((128, 64), "float32", "S")
    region = tirx.BufferRegion(buf, [ir_range(0, 64), ir_range(0, 64)])
    assert make_blockwise_zz_layout(region).logical_shape == (64, 64)
    assert make_blockwise_zz_layout(buf).logical_shape == (128, 64)
    with pytest.raises(ValueError, match="expected a buffer or \\(rows, cols\\) of ints"):
        make_blockwise_zz_layout(tirx.decl_buffer((tirx.Var("m", "int32"), 64), "float32"))


def ir_range(start, extent):
    from tvm import ir
    return ir.Range.from_min_extent(start, extent)
