"""A reduction's dtype must hold every input value (decision 32): widening accumulates,
narrowing raises instead of wrapping (int32 300 -> int8 used to give 44)."""
import itertools

import numpy as np
import pytest

from meshtensor import Mesh, MeshArray
from meshtensor import collectives as C
from meshtensor.reduction import check_accumulation, reduce_arrays

M2 = Mesh([2])
OPS = {
    "all_reduce": lambda x, dt: C.all_reduce(x, [0], dtype=dt),
    "reduce": lambda x, dt: C.reduce(x, [0], [0], dtype=dt),
    "reduce_scatter": lambda x, dt: C.reduce_scatter(x, [0], 0, dtype=dt),
}
NUMERIC = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
           "float16", "float32", "float64", "complex64", "complex128"]


def pair(dtype, values=(300, -7)):
    return MeshArray.from_locals(M2, [np.array(values).astype(dtype)] * 2)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("src, dst", [
    ("int32", "int8"), ("int64", "int32"), ("float64", "float32"), ("float32", "int64"),
    ("int8", "uint16"), ("float32", "float16"), ("complex64", "float64"), ("uint64", "int64"),
], ids=lambda v: v)
def test_narrowing_raises(op, src, dst):
    with pytest.raises(ValueError, match=rf"^{op}: dtype {dst} cannot hold every {src} input "
                                         rf"value; the result dtype must hold every input value "
                                         rf"\(NumPy 'safe' casting"):
        OPS[op](pair(src), dst)


def test_the_reported_wrap_is_refused():
    x = MeshArray.from_locals(M2, [np.int32([300]), np.int32([0])])
    with pytest.raises(ValueError, match="all_reduce: dtype int8 cannot hold every int32"):
        C.all_reduce(x, [0], dtype=np.int8)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("src, dst, want", [
    ("int8", "int32", [200, -14]), ("float32", "float64", [600, -14]),
    ("int16", "float32", [600, -14]), ("uint8", "int16", [88, 498]), ("int32", "int32", [600, -14]),
], ids=["int8-int32", "float32-float64", "int16-float32", "uint8-int16", "same"])
def test_widening_accumulates_exactly(op, src, dst, want):
    vals = (100, -7) if src == "int8" else (44, 249) if src == "uint8" else (300, -7)
    r = OPS[op](pair(src, vals), dst)
    assert r.dtype == np.dtype(dst)
    got = r.local(0).tolist() + (r.local(1).tolist() if op == "reduce_scatter" else [])
    assert got == want


def test_allowed_exactly_when_numpy_casts_safely():
    """The rule is NumPy's safe casting for every pair of numeric dtypes, in the
    simulator's ops and in reduce_arrays (what partial shardings reduce with)."""
    for src, dst in itertools.product(NUMERIC, NUMERIC):
        safe = np.can_cast(src, dst, casting="safe")
        x = pair(src, (1, 0))
        for call in (lambda: C.all_reduce(x, [0], dtype=dst),
                     lambda: reduce_arrays(list(x.locals), "max", np.dtype(dst))):
            if safe:
                call()
            else:
                with pytest.raises(ValueError, match="cannot hold every"):
                    call()


def test_check_accumulation_override_for_dtypes_numpy_lacks():
    check_accumulation("all_reduce", "bfloat16", "float32", safe=True)
    with pytest.raises(ValueError, match="all_reduce: dtype bfloat16 cannot hold every float32"):
        check_accumulation("all_reduce", "float32", "bfloat16", safe=False)
