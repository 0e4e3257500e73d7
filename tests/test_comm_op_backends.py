"""Each comm op is declared once (meshtensor.comm_ops) and every backend registers
against the declaration: a backend an op declares and lacks, a backend entry for an
op nobody declared, or a front end whose parameters differ from the declaration's,
fails here."""
import importlib.util
import inspect

import pytest

from meshtensor import collectives
from meshtensor.comm_ops import BACKENDS, DECLS

HAVE_TORCH = importlib.util.find_spec("torch") is not None
HAVE_TILELANG = importlib.util.find_spec("tilelang") is not None


def _kernel_forms():
    from meshtensor.tilelang.ir.comm_op import FORMS
    return FORMS


def tables():
    """``{backend: {key: implementation}}`` and how a declaration names its keys."""
    out = {"numpy": collectives.NUMPY}
    if HAVE_TORCH:
        from meshtensor.dist.engine import TORCH
        out["torch"] = TORCH
    if HAVE_TILELANG:
        from meshtensor.tilelang.analysis.comm_cost import COLLECTIVE_COSTS
        from meshtensor.tilelang.analysis.flows import FLOWS
        from meshtensor.tilelang.transform.lower_comm import TIR
        out["tir"], out["flows"], out["perf"] = TIR, FLOWS, COLLECTIVE_COSTS
    return out


def keys(name, backend):
    """The keys a backend files op ``name`` under: host backends by its name, kernel
    backends by each of its TIR forms."""
    if backend in ("numpy", "torch"):
        return [name]
    return [form for form, (op, _) in _kernel_forms().items() if op == name]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_declared_backend_is_registered(backend):
    have = tables()
    if backend not in have:
        pytest.skip(f"{backend} needs a package that is not installed")
    table = have[backend]
    missing = [n for n, d in DECLS.items() if backend in d.backends
               for k in keys(n, backend) if k not in table]
    assert missing == [], f"ops declaring backend {backend!r} without an entry: {missing}"
    declared = {k for n, d in DECLS.items() if backend in d.backends for k in keys(n, backend)}
    assert sorted(set(table) - declared) == [], f"{backend} entries nobody declared"
    if backend in ("tir", "flows", "perf"):
        for n, d in DECLS.items():
            assert bool(keys(n, backend)) == (backend in d.backends), n


def _names(fn, skip):
    ps = [p for p in inspect.signature(fn).parameters.values()
          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [(p.name, None if p.default is p.empty else p.default) for p in ps[skip:]]


@pytest.mark.parametrize("name", [n for n, d in DECLS.items() if "host" in d.params])
def test_host_front_ends_take_the_declared_parameters(name):
    want = [(p.name, p.default) for p in DECLS[name].params["host"]]
    assert _names(collectives.NUMPY[name], 1) == want
    if HAVE_TORCH:
        from meshtensor.dist.engine import TORCH
        got = _names(TORCH[name], 2)  # self, x
        if name == "update_halo":  # the engine also takes the global shape it cannot infer
            got = got[:1]
        assert got == want


@pytest.mark.skipif(not HAVE_TILELANG, reason="needs tilelang")
@pytest.mark.parametrize("name", [n for n, d in DECLS.items() if "mesh_comm" in d.params])
def test_mesh_comm_takes_the_declared_parameters(name):
    from meshtensor.tilelang.language.comm import MeshComm
    got = _names(getattr(MeshComm, name), 1)  # self
    want = [(p.name, p.default) for p in DECLS[name].params["mesh_comm"]]
    if name == "barrier":
        assert got == [("mesh_axes", None)]
    elif name == "permute":
        assert got == [("src", None), ("dst", None)] + want
    else:
        assert got == [("src", None), ("dst", None), ("mesh_axes", None)] + want


@pytest.mark.skipif(not HAVE_TILELANG, reason="needs tilelang")
@pytest.mark.parametrize("name", [n for n, d in DECLS.items() if "T.comm" in d.params])
def test_t_comm_takes_the_declared_parameters(name):
    from meshtensor.tilelang.language.tilelang_mesh import TilelangMeshComm
    got = dict(_names(getattr(TilelangMeshComm, name), 2))  # the two operands
    want = {p.name: p.default for p in DECLS[name].params["T.comm"]}
    assert {k: v for k, v in got.items() if k in want} == want
    extra = set(got) - set(want)
    assert extra <= {"group", "src_offset_byte", "group_id"}, extra  # accepted, no effect


def test_reductions_come_from_the_one_reduction_type():
    from meshtensor import REDUCTION_KINDS, REDUCTIONS
    assert REDUCTION_KINDS == ("sum", "max", "min", "prod")
    assert all(DECLS[n].reduction_kinds("host") == REDUCTION_KINDS
               for n in ("all_reduce", "reduce", "reduce_scatter"))
    assert DECLS["all_reduce"].reduction_kinds("T.comm") == (
        "sum", "abssum", "max", "min", "absmax", "bitand", "bitor", "bitxor")
    assert set(REDUCTIONS) == set(REDUCTION_KINDS) | set(DECLS["all_reduce"].reduction_kinds(
        "T.comm"))
