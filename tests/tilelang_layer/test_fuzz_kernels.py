"""The random mesh-kernel fuzzer (tools/fuzz_kernels.py, tools/mesh_fuzz): its model on
hand-written programs, its generator and source writer against the model, the spmdize
mode's oracle, and fixed-seed slices of random kernels (comm-op programs, and global-view
programs through spmdize) that must run equal to the model or be refused."""
import ctypes
import doctest
import importlib
import itertools
import math
import runpy
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from mesh_fuzz import (generate, global_view, minimize, model, program, reproducer, runner,
                       spmd_check)
from mesh_fuzz.generate import FEATURES, OPS, make_batch, make_program, result_extents
from mesh_fuzz.model import SENTINEL, ModelError, run_model, traffic, wrap
from mesh_fuzz.program import (Assign, Batch, Bin, BufDecl, Cast, Comm, Const, Copy,
                               Core, CoreId, Fill, For, Gemm, If, Let, Load, Name,
                               Program, Region, Select, SetVar, Tensor, batch_source,
                               children)

from meshtensor import Mesh, MeshArray
from meshtensor import collectives as C

ROOT = Path(__file__).resolve().parents[2]
I32 = "int32"


def c(v, dtype=I32):
    return Const(v, dtype)


def region(name, starts, extents, whole=False):
    return Region(name, tuple(c(s) for s in starts), tuple(extents), whole)


# -- the model on hand-written programs -------------------------------------------------
ROW_COL = (("row", 2), ("col", 2))  # not alphabetical on purpose


def hand_program():
    """Core ``d`` (linear id on the row x col mesh) loads ``[10d, 10d + 1, 10d + 2]``."""
    X = Tensor("X", (3,), I32, "linear", "in")
    outs = [Tensor(f"Y{n}", shape, I32, "grid", "out")
            for n, shape in (("S", (3,)), ("D", (2,)), ("E", (3,)), ("F", (1,)),
                             ("G", (4,)))]
    bufs = (BufDecl("S", (3,), I32, "local"), BufDecl("D", (2,), I32, "shared"),
            BufDecl("E", (3,), I32, "local"), BufDecl("F", (1,), I32, "shared"),
            BufDecl("G", (4,), I32, "local"))
    init = [Assign("D", (Name("i"),), (("i", 2),), c(-1)),
            Assign("E", (Name("i"),), (("i", 3),), c(7)),
            Assign("F", (c(0),), (), c(5))]
    body = init + [
        Copy(region("X", (0,), (3,)), region("S", (0,), (3,), whole=True)),
        Comm("reduce_scatter", region("S", (0,), (3,), True), region("D", (0,), (2,), True),
             (1,), (("reduction", "sum"), ("scatter_axis", 0))),
        Comm("shift", region("S", (0,), (3,), True), region("E", (0,), (3,), True), (0,),
             (("offset", 1), ("rotate", False), ("shift_axis", 0))),
        Comm("permute", region("S", (0,), (1,)), region("F", (0,), (1,), True), (0, 1),
             (("pairs", ((3, 0),)),)),
        Comm("all_gather", region("S", (0,), (1,)), region("G", (0,), (4,), True), (1, 0),
             (("gather_axis", 0),)),
    ] + [Copy(region(b, (0,), (n,), True), region(f"Y{b}", (0,), (n,)))
         for b, n in (("S", 3), ("D", 2), ("E", 3), ("F", 1), ("G", 4))]
    return Program(0, (X, *outs), bufs, (), tuple(body))


def test_model_of_a_hand_written_program():
    """Values worked out by hand from the semantics in docs/comm.md."""
    p = hand_program()
    x = np.array([[10 * d, 10 * d + 1, 10 * d + 2] for d in range(4)], dtype=np.int32)
    out = run_model(Batch(ROW_COL, "nd", (p,)), p, {"X": x})
    t = {k: v.reshape(4, -1).tolist() for k, v in out.tensors.items()}
    # reduce_scatter over col: rows sum to [10, 12, 14] and [50, 52, 54]; pieces of 3
    # for 2 cores are 2 and 1: the second core's result fills only the leading part
    assert t["YD"] == [[10, 12], [14, -1], [50, 52], [54, -1]]
    # shift by +1 along row without rotate: row 0 receives nothing and keeps E
    assert t["YE"] == [[7, 7, 7], [7, 7, 7], [0, 1, 2], [10, 11, 12]]
    # permute (3 -> 0): only core 0 receives
    assert t["YF"] == [[30], [5], [5], [5]]
    # all_gather over [col, row]: in-group order is row-major over (col, row)
    assert t["YG"] == [[0, 20, 10, 30]] * 4
    assert out.executions.tolist() == [1, 1, 1, 1]
    # comm bytes received per op and core (docs/traffic.md): reduce_scatter piece of the
    # other core, shift 12 bytes to row 1, permute 4 bytes to core 0, gather 3 x 4 bytes
    assert out.received.tolist() == [[8, 4, 8, 4], [0, 0, 12, 12], [4, 0, 0, 0],
                                     [12, 12, 12, 12]]


def test_model_loop_root_and_let_read_after_write():
    """A broadcast whose root is the loop variable, and a let that keeps the value its
    buffer had when it was bound."""
    X = Tensor("X", (2,), I32, "linear", "in")
    Y = Tensor("Y", (2,), I32, "linear", "out")
    S, B = BufDecl("S", (2,), I32, "local"), BufDecl("B", (2,), I32, "local")
    body = (Copy(region("X", (0,), (2,)), region("S", (0,), (2,), True)),
            Let("t", Load("S", (c(0),), I32)),
            Assign("S", (c(0),), (), c(100)),
            Assign("B", (Name("i"),), (("i", 2),), Name("t")),
            For("k", 0, 2, "serial", (
                Comm("broadcast", Region("S", (Name("k"),), (1,)),
                     Region("B", (Name("k"),), (1,)), (0,), (), (Name("k"),)),)),
            Copy(region("B", (0,), (2,), True), region("Y", (0,), (2,))))
    p = Program(0, (X, Y), (S, B), (), body)
    x = np.array([[1, 2], [3, 4]], dtype=np.int32)
    out = run_model(Batch((("x", 2),), "1d", (p,)), p, {"X": x})
    # k = 0: B[0] = core 0's S[0] = 100; k = 1: B[1] = core 1's S[1] = 4
    assert out.tensors["Y"].tolist() == [[100, 4], [100, 4]]
    assert out.executions.tolist() == [2]


@pytest.mark.parametrize("body, message", [
    ((Assign("B", (c(0),), (), Load("S", (c(0),), I32)),), "nothing was written"),
    ((Assign("S", (c(2),), (), c(1)),), "outside"),
    ((If(Bin("==", Core(0), c(0)), (Comm("barrier", None, None, None),)),),
     "depends on the core"),
], ids=["undefined-read", "out-of-range", "comm-under-core-if"])
def test_model_rejects_programs_the_generator_must_not_make(body, message):
    p = Program(0, (), (BufDecl("S", (2,), I32, "local"), BufDecl("B", (1,), I32, "local")),
                (), body)
    with pytest.raises(ModelError, match=message):
        run_model(Batch((("x", 2),), "nd", (p,)), p, {})


@pytest.mark.parametrize("dtype, ctype", [("int16", ctypes.c_int16),
                                          ("int8", ctypes.c_int8),
                                          ("uint8", ctypes.c_uint8)])
def test_model_wraps_narrowing_casts_as_c_converts(dtype, ctype):
    v = np.random.default_rng(0).integers(-2 ** 20, 2 ** 20, 500)
    assert wrap(v, dtype).tolist() == [ctype(int(x)).value for x in v]


def _views_program():
    """Core ``d`` loads ``S = [8d .. 8d + 7]``; ``V`` (2 x 4) reshapes ``S``, ``D`` is
    its elements 4.. (a decl_buffer at offset 4), ``F`` its float32 bits; ``E``'s
    float32 view receives ``F`` from the previous core (a shift of bits)."""
    X = Tensor("X", (8,), I32, "linear", "in")
    Y = Tensor("Y", (8,), I32, "linear", "out")
    bufs = (BufDecl("S", (8,), I32, "shared"), BufDecl("E", (8,), I32, "global"),
            BufDecl("V", (2, 4), I32, "shared", parent="S", view="reshape"),
            BufDecl("D", (4,), I32, "shared", parent="S", view="decl", offset=4),
            BufDecl("F", (2, 4), "float32", "shared", parent="S", view="view"),
            BufDecl("G", (2, 4), "float32", "global", parent="E", view="view"))
    body = (Copy(region("X", (0,), (8,)), region("S", (0,), (8,), True)),
            Fill("E", c(-1)),
            Assign("V", (c(1), c(0)), (), c(100)),  # S[4]
            Assign("D", (c(1),), (), Bin("+", Load("D", (c(0),), I32), c(1))),  # S[5]
            Comm("shift", region("F", (0, 1), (2, 3)), region("G", (0, 1), (2, 3)), (0,),
                 (("offset", 1), ("rotate", True), ("shift_axis", 0))),
            Copy(region("E", (0,), (8,), True), region("Y", (0,), (8,))))
    return Program(0, (X, Y), bufs, (), body)


def test_model_views_share_their_allocation():
    """Values worked out by hand: writes through a reshape and an offset decl_buffer
    land in the allocation, and a shift between views of another dtype moves its
    bits (rows 0..1 x cols 1..3 of the float32 views: elements 1..3 and 5..7)."""
    p = _views_program()
    x = np.arange(24, dtype=np.int32).reshape(3, 8)
    out = run_model(Batch((("x", 3),), "nd", (p,)), p, {"X": x})
    want = []
    for d in range(3):
        s = list(range(8 * ((d - 1) % 3), 8 * ((d - 1) % 3) + 8))
        s[4], s[5] = 100, 101
        want.append([-1] + s[1:4] + [-1] + s[5:8])
    assert out.tensors["Y"].tolist() == want
    assert out.received.tolist() == [[24, 24, 24]]
    text = batch_source(Batch((("x", 3),), "nd", (p,)))
    assert "V = T.reshape(S, (2, 4))" in text
    assert 'D = T.decl_buffer((4,), "int32", data=S.data, elem_offset=4, scope="shared")' \
        in text
    assert 'F = T.view(S, (2, 4), dtype="float32")' in text and "T.fill(E, (-1))" in text


def _remote_program(*middle, owner=None, write_owner=None, expect=""):
    """Every core writes 5 into its tile of ``X`` (or the tile of core
    ``write_owner``), runs ``middle``, then reads the next core's tile (or
    ``owner``'s) into ``B``."""
    X = Tensor("X", (2,), I32, "linear", "in")
    Y = Tensor("Y", (2,), I32, "linear", "out")
    nxt = owner or Bin("%", Bin("+", CoreId(), c(1)), c(3))
    i = (Name("i"),)
    body = (Assign("X", i, (("i", 2),), Bin("+", CoreId(), c(5)), owner=write_owner),
            *middle,
            Assign("B", i, (("i", 2),), Load("X", i, I32, owner=nxt)),
            Copy(region("B", (0,), (2,), True), region("Y", (0,), (2,))))
    return Program(0, (X, Y), (BufDecl("B", (2,), I32, "local"),), (), body, expect=expect)


@pytest.mark.parametrize("middle, owner, write_owner, racy", [
    ((), None, None, True),  # the owner writes, the next core reads: one superstep
    ((Comm("barrier", None, None, None),), None, None, False),  # a barrier between
    ((Comm("barrier", None, None, None),), None, Bin("//", CoreId(), c(2)), True),
    ((Comm("barrier", None, None, None),), c(0), None, False),  # all read core 0
], ids=["write-read", "barrier", "two-writers", "read-only"])
def test_model_records_races_per_superstep(middle, owner, write_owner, racy):
    mesh = Batch((("x", 3),), "nd", ())
    x = {"X": np.zeros((3, 2), dtype=np.int32)}
    p = _remote_program(*middle, owner=owner, write_owner=write_owner)
    if racy:
        with pytest.raises(ModelError, match="unplanned race: X"):
            run_model(mesh, p, x)
        p = _remote_program(*middle, owner=owner, write_owner=write_owner, expect="race")
        got = run_model(mesh, p, x).refusal
        assert got.startswith("race: X[") and "core 1" in got and "core 0" in got, got
        return
    out = run_model(mesh, p, x)
    assert not out.refusal
    reader = [int(owner.value) if owner else (d + 1) % 3 for d in range(3)]
    assert out.tensors["Y"].tolist() == [[r + 5] * 2 for r in reader]
    with pytest.raises(ModelError, match="the planted race never happens"):
        run_model(mesh, _remote_program(*middle, owner=owner, expect="race"), x)


def _planted(kind):
    """A program whose comm op the layer must refuse for ``kind``, on a 1-D mesh of 3
    (a loop k over 0..2 where a narrowing cast wraps at k = 2)."""
    S = BufDecl("S", (4,), I32, "local")
    k = Name("k")
    wrapped = lambda t, m: Bin("//", Cast(t, Bin("*", k, c(m))), c(m))  # noqa: E731
    src, root = region("S", (0,), (2,)), (c(0),)
    if kind == "data-start":
        src = Region("S", (Bin("%", Load("S", (c(0),), I32), c(3)),), (2,))
    elif kind == "wrapped-start":
        src = Region("S", (wrapped("int16", 20000),), (2,))
    elif kind == "wrapped-root":
        root = (wrapped("int8", 64),)
    op = Comm("broadcast", src, region("S", (2,), (2,)), (0,), (), root)
    if kind == "data-if":
        op = If(Bin(">=", Load("S", (c(1),), I32), c(0)), (op,))
    body = (Assign("S", (Name("i"),), (("i", 4),), CoreId()), For("k", 0, 3, "serial", (op,)))
    return Program(0, (), (S,), (), body)


@pytest.mark.parametrize("kind", ["data-start", "data-if", "wrapped-start",
                                  "wrapped-root"])
def test_model_stops_at_a_planted_reason_and_flags_an_unplanned_one(kind):
    p = _planted(kind)
    shell = Batch((("x", 3),), "nd", ())
    with pytest.raises(ModelError, match=f"unplanned {kind}"):
        run_model(shell, p, {})
    out = run_model(shell, replace(p, expect=kind), {})
    assert out.refusal.startswith(kind)
    # the int64 value of a wrapped start or root is in range: only wrapping leaves it
    if kind.startswith("wrapped"):
        assert "outside" in out.refusal


def test_model_gemm_and_fill():
    A, B = BufDecl("A", (2, 3), I32, "shared"), BufDecl("B", (3, 2), I32, "shared")
    C = BufDecl("C", (2, 2), I32, "fragment")
    Y = Tensor("Y", (2, 2), I32, "linear", "out")
    ij = (Name("i"), Name("j"))
    body = (Assign("A", ij, (("i", 2), ("j", 3)), Bin("+", Name("i"), Name("j"))),
            Assign("B", ij, (("i", 3), ("j", 2)), Bin("-", Name("i"), CoreId())),
            Assign("C", ij, (("i", 2), ("j", 2)), c(1), "parallel"),
            Gemm("A", "B", "C"), Copy(region("C", (0, 0), (2, 2), True),
                                      region("Y", (0, 0), (2, 2))))
    p = Program(0, (Y,), (A, B, C), (), body)
    out = run_model(Batch((("x", 2),), "nd", (p,)), p, {})
    for d in range(2):
        a = np.add.outer(np.arange(2), np.arange(3))
        b = np.subtract.outer(np.arange(3), np.full(2, d))
        assert out.tensors["Y"][d].tolist() == (1 + a @ b).tolist()
    assert "T.gemm(A, B, C)" in batch_source(Batch((("x", 2),), "nd", (p,)))


@pytest.mark.parametrize("op, params", [
    ("all_gather", {"gather_axis": 1}),
    ("reduce_scatter", {"scatter_axis": 0, "reduction": "sum"}),
    ("reduce_scatter", {"scatter_axis": 1, "reduction": "max"}),
    ("all_to_all", {"split_axis": 0, "concat_axis": 1}),
    ("all_to_all", {"split_axis": 1, "concat_axis": 1}),
], ids=lambda v: v if isinstance(v, str) else "-".join(f"{k}={x}" for k, x in v.items()))
@pytest.mark.parametrize("ext", [(5, 3), (3, 7), (1, 2), (8, 4)], ids=str)
def test_dst_extents_are_the_host_result_of_the_first_member(op, params, ext):
    mesh = Mesh({"b": 3, "a": 2})
    x = MeshArray.from_locals(mesh, [np.ones(ext) for _ in range(mesh.size)])
    host = {"all_gather": lambda: C.all_gather(x, ["a", "b"], params["gather_axis"]),
            "reduce_scatter": lambda: C.reduce_scatter(x, ["a", "b"],
                                                       params.get("scatter_axis", 0)),
            "all_to_all": lambda: C.all_to_all(x, ["a", "b"], params.get("split_axis", 0),
                                               params.get("concat_axis", 0))}[op]()
    got = result_extents(op, ext, 6, params)
    assert got == host.local(0).shape
    assert all(all(g >= s for g, s in zip(got, host.local(d).shape))
               for d in range(mesh.size))


def test_traffic_of_a_broadcast_and_an_all_reduce():
    mesh = Mesh({"y": 2, "x": 3})
    bc = Comm("broadcast", None, None, (1,), (), (c(2),))
    rec, sent = traffic(bc, mesh, (2,), 4, root=(2,))
    assert rec.tolist() == [8, 8, 0, 8, 8, 0] and sent.tolist() == [0, 0, 16, 0, 0, 16]
    ar = Comm("all_reduce", None, None, (0,), (("reduction", "sum"),))
    rec, _ = traffic(ar, mesh, (3,), 4)
    # 3 elements in 2 pieces (2, 1): member 0 gets piece 0 + piece 1 from member 1
    assert rec.tolist() == [12] * 6


# -- generator and source writer ------------------------------------------------------
class _FakeT:
    """The parts of ``tilelang.language`` that generated expressions use, on Python
    numbers (floor // and % as in TIR)."""

    max, min = staticmethod(max), staticmethod(min)

    @staticmethod
    def Cast(dtype, x):  # noqa: N802 (TileLang's name)
        if dtype.startswith("float"):
            return float(x)
        narrow = {"int16": ctypes.c_int16, "int8": ctypes.c_int8, "uint8": ctypes.c_uint8}
        x = int(math.trunc(x))  # C's conversion to a narrow type wraps
        return narrow[dtype](x).value if dtype in narrow else x

    @staticmethod
    def if_then_else(cond, a, b):
        return a if cond else b


def _exprs(body, out):
    """Every expression of ``body`` with its nest: values, indices, owners, region
    starts and roots."""
    for s in body:
        if isinstance(s, Assign):
            out.append((s.value, s.nest))
            out += [(i, s.nest) for i in s.index + ((s.owner,) if s.owner else ())]
        elif isinstance(s, (Copy, Comm)):
            for r in (s.src, s.dst):
                if r is not None:
                    out += [(x, ()) for x in r.starts + ((r.owner,) if r.owner else ())]
            out += [(x, ()) for x in getattr(s, "root", None) or ()]
        elif isinstance(s, (Let, SetVar)):
            out.append((s.value, ()))
        elif isinstance(s, For):
            _exprs(s.body, out)
        elif isinstance(s, If):
            out.append((s.cond, ()))
            _exprs(s.then, out)
            _exprs(s.orelse, out)
    return out


def _names(e, acc):
    if isinstance(e, Name):
        acc.add((e.name, e.dtype))
    for ch in children(e):
        _names(ch, acc)
    return acc


SHELLS = [Batch(mesh, launch, (), coord_lets=lets) for mesh, launch, lets in itertools.product(
    ((("x", 5),), (("row", 2), ("col", 3)), (("r", 3), ("c", 2), ("a", 2))),
    ("nd", "1d"), (True, False))]


@pytest.mark.parametrize("shell", SHELLS, ids=lambda b: f"{dict(b.mesh)}-{b.launch}-"
                         f"{'lets' if b.coord_lets else 'inline'}")
def test_written_expressions_evaluate_as_the_model_does(shell):
    """Every expression as written in the kernel source, evaluated by Python at one
    point per core, equals the model's value (core coordinates, operator precedence,
    floor division, global tile indexing)."""
    rng = np.random.default_rng(len(shell.mesh))
    checked = 0
    for k in range(4):
        p, x, _ = make_program(shell, k, "expr")
        batch = shell.with_programs((p,))
        w = program._Writer(batch)
        m = model._Model(batch, p, x)
        for core in m.cores:
            for b in p.bufs:
                if not b.parent:  # (a view shows its allocation's values)
                    core.bufs[b.name][...] = rng.integers(-5, 6, b.shape)
                    core.defined[b.name][...] = True
        for e, nest in _exprs(p.body, []):
            env = {n: (np.int64(rng.integers(0, 3)) if dt == I32 else
                       np.float64(rng.integers(-3, 4))) for n, dt in _names(e, set())}
            env.update({v: np.int64(rng.integers(0, n)) for v, n in nest})
            for core in m.cores:
                want = m.ev(e, core, env)
                scope = {"T": _FakeT, "bx": core.lin}
                scope.update({f"c{a}": v for a, v in enumerate(core.coords)})
                if shell.launch == "nd":
                    scope.update({f"b{a}": v for a, v in enumerate(core.coords)})
                scope.update({t.name: m.tensors[t.name] for t in p.tensors})
                scope.update({b.name: core.bufs[b.name] for b in p.bufs})
                scope.update({n: v.item() for n, v in env.items()})
                got = eval(w.expr(e), scope)  # noqa: S307 (our own generated text)
                assert np.array_equal(got, want), (w.expr(e), core.coords, got, want)
                checked += 1
    assert checked > 50


@pytest.mark.parametrize("seed", range(6))
def test_generated_batches_are_valid_deterministic_python(seed):
    batch, inputs, results = make_batch(str(seed), seed, 10 * seed, 4)
    again = make_batch(str(seed), seed, 10 * seed, 4)
    assert batch_source(batch) == batch_source(again[0])
    compile(batch_source(batch), "<batch>", "exec")
    for p, x, res in zip(batch.programs, inputs, results):
        out = run_model(batch.with_programs((p,)), p, x)  # no ModelError
        assert all(np.array_equal(out.tensors[k], v) for k, v in res.tensors.items())
        assert 1 <= len(program.comm_ops(p.body)) <= 3 * 3  # 1-3 units, ifs and GEMMs
        assert bool(out.refusal) == bool(p.expect)  # the model meets a planted reason
        if not p.expect:  # (the model stops at a planted one)
            assert all((SENTINEL != v).all() for k, v in out.tensors.items()
                       if p.tensor(k).role == "out")  # every output element is written


def test_every_feature_and_op_occurs_and_exclusion_removes_it():
    used = set()
    meshes = set()
    for b in range(40):
        batch, _, _ = make_batch("cover", b, 4 * b, 4)
        meshes.add(batch.mesh)
        for p in batch.programs:
            used |= p.features
    assert set(FEATURES) | set(OPS) <= used, sorted(set(FEATURES) | set(OPS) - used)
    assert {len(m) for m in meshes} == {1, 2, 3}
    ex = frozenset({"pipelined", "let-after-write", "axis-order", "permute", "var"})
    for b in range(10):
        batch, _, _ = make_batch("cover", b, 4 * b, 4, ex)
        assert list(batch.names) == sorted(batch.names)
        for p in batch.programs:
            assert not p.features & ex
            assert "permute" not in [o.op for o in program.comm_ops(p.body)]
            assert not p.vars


def test_minimizer_keeps_a_failure_and_drops_the_rest():
    """With a fake failure test ("the program still has a shift"), the minimizer
    keeps the shift and what it needs, and little else."""
    shell = Batch(ROW_COL, "nd", ())
    p, x, _ = make_program(shell, 3, "min", frozenset(OPS) - {"shift"})
    assert any(o.op == "shift" for o in program.comm_ops(p.body))
    small = minimize.minimize(shell, p, x, lambda q, m: any(
        o.op == "shift" for o in program.comm_ops(q.body)))
    assert [o.op for o in program.comm_ops(small.body)] == ["shift"]
    assert len(batch_source(shell.with_programs((small,)))) < \
        len(batch_source(shell.with_programs((p,))))
    run_model(shell.with_programs((small,)), small, x)


def test_reproducer_is_a_standalone_script():
    p = hand_program()
    shell = Batch(ROW_COL, "nd", (p,))
    x = {"X": np.arange(12, dtype=np.int32).reshape(4, 3)}
    m = run_model(shell, p, x)
    text = reproducer.reproducer_source(shell, [x], [m.tensors], [m.received], "title",
                                        "detail")
    compile(text, "<repro>", "exec")
    assert "def main()" in text and "EXPECTED_COMM_RECEIVED" in text


@pytest.mark.slow
def test_reproducer_of_a_planted_program_fails_when_the_kernel_runs(capsys, tmp_path):
    """A kernel planted to be refused that compiles and runs makes its reproducer
    exit 1 (here a valid kernel stands in for one the layer wrongly accepts)."""
    pytest.importorskip("tilelang")
    p = hand_program()
    shell = Batch(ROW_COL, "nd", (p,))
    x = {"X": np.arange(12, dtype=np.int32).reshape(4, 3)}
    m = run_model(shell, p, x)
    path = tmp_path / "repro_planted.py"
    path.write_text(reproducer.reproducer_source(shell, [x], [m.tensors], [m.received],
                                                 "t", "d", must_refuse="race: X[0]"))
    assert runpy.run_path(str(path))["main"]() == 1
    assert "WRONG: it ran, but the layer must refuse it: race: X[0]" in \
        capsys.readouterr().out


@pytest.mark.slow
def test_reproducer_main_passes_on_the_model_and_fails_on_a_difference(capsys, tmp_path):
    pytest.importorskip("tilelang")
    p = hand_program()
    shell = Batch(ROW_COL, "nd", (p,))
    x = {"X": np.arange(12, dtype=np.int32).reshape(4, 3)}
    m = run_model(shell, p, x)
    off = {k: v.copy() for k, v in m.tensors.items()}
    off["YD"].flat[0] += 1
    codes = []
    for i, want in enumerate((m.tensors, off)):
        path = tmp_path / f"repro_{i}.py"  # TileLang parses the kernel from its file
        path.write_text(reproducer.reproducer_source(shell, [x], [want], [m.received],
                                                     "t", "d"))
        codes.append(runpy.run_path(str(path))["main"]())
    out = capsys.readouterr().out
    assert codes == [0, 1], out
    assert "kernel: YD: 1 of" in out and out.rstrip().endswith("WRONG")


@pytest.mark.parametrize("name", ["mesh_fuzz.program", "mesh_fuzz.model",
                                  "mesh_fuzz.generate", "mesh_fuzz.minimize",
                                  "mesh_fuzz.global_view", "mesh_fuzz.spmd_check"])
def test_doctests(name):
    mod = importlib.import_module(name)
    runner_ = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for t in doctest.DocTestFinder().find(mod, name):
        runner_.run(t)
    res = runner_.summarize(verbose=False)
    assert res.failed == 0 and res.attempted > 0


def test_cli_help_fits_80_columns_and_rejects_unknown_features():
    cli = [sys.executable, str(ROOT / "tools" / "fuzz_kernels.py")]
    out = subprocess.run(cli + ["--help"], capture_output=True, text=True, check=True)
    assert max(map(len, out.stdout.splitlines())) <= 80
    bad = subprocess.run(cli + ["--exclude", "pipelined,nonsense"], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "unknown feature(s) nonsense" in bad.stderr
    # a comm op is no feature of the global-view generator
    bad = subprocess.run(cli + ["--mode", "spmdize", "--exclude", "shift,all_gather"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and \
        "unknown feature(s) all_gather (spmdize mode)" in bad.stderr
    assert max(map(len, bad.stderr.splitlines())) <= 80


def test_summary_line_and_refusal_grouping():
    s = runner.Summary([runner.Outcome(0, "equal"), runner.Outcome(1, "refused", "ValueError: "
                        "let 'p1_t3' = p1_S2[0] is used"), runner.Outcome(2, "refused",
                        "ValueError: let 'p2_t9' = T.max(p2_S4[1], 3) is used"),
                        runner.Outcome(3, "wrong"), runner.Outcome(4, "crash")])
    assert s.line() == "5 programs, 1 equal, 2 refused, 1 wrong, 1 crashed"
    assert runner.refusal_table(s) == ["    2  ValueError: let '_' = ... is used"]
    assert runner.normalise("LowerMeshComm: the launch grid {'blockIdx.x': 3} does not "
                            "match the comm ops' mesh {'y': 2}") == \
        "LowerMeshComm: the launch grid {..} does not match the comm ops' mesh {..}"


@pytest.mark.parametrize("first, n, bs, want", [
    (0, 5, 2, [(0, 0, 2), (1, 2, 2), (2, 4, 1)]),
    (3, 4, 2, [(1, 3, 1), (2, 4, 2), (3, 6, 1)]),
    (16, 16, 16, [(1, 16, 16)]),
], ids=["from-0", "unaligned", "one-batch"])
def test_batches_are_aligned_so_a_program_keeps_its_mesh(first, n, bs, want):
    fz = runner.Fuzzer("s", n, "/nonexistent", batch_size=bs, first=first)
    assert fz.batches() == want


def test_program_is_the_same_whichever_run_it_is_in():
    """Program 5 of a run of 8 and of a run that starts at 4 (batches of 4)."""
    a, _, _ = make_batch("same", 1, 4, 4)
    b, _, _ = make_batch("same", 1, 5, 3)
    assert batch_source(a.with_programs(a.programs[1:2])) == \
        batch_source(b.with_programs(b.programs[0:1]))


class _FakeLayer:
    """Answers ``Fuzzer.call`` without TileLang: refuses any kernel holding program
    ``build_refuse`` when it is built, and any holding program ``refuse`` when it is
    compiled (naming the program in the message, as the layer does), crashes any
    kernel holding both ``pair`` programs, gets program ``wrong``'s first output
    wrong, and runs everything else exactly (the model's tensors)."""

    def __init__(self, refuse, pair, wrong, build_refuse=None):
        self.refuse, self.pair, self.wrong, self.calls = refuse, set(pair), wrong, []
        self.build_refuse, self.built = build_refuse, []

    def __call__(self, batch, cases, compile_=True, build_only=False):
        idx = {c.program.index for c in cases}
        (self.built if build_only else self.calls).append(sorted(idx))
        if self.build_refuse in idx:
            return {"status": "refused", "phase": "build", "type": "ValueError",
                    "message": f"mesh_comm.shift: src 'p{self.build_refuse}_S2' has scope "
                               f"'local.fragment'"}
        if build_only:
            return {"status": "ok"}
        if self.refuse in idx:
            return {"status": "refused", "phase": "compile", "type": "ValueError",
                    "message": f"LowerMeshComm: let 'p{self.refuse}_t1' is used across"}
        if self.pair <= idx:
            return {"status": "crash", "phase": "compile", "type": "InternalError",
                    "message": "Check failed", "traceback": ""}
        outs = []
        for c in cases:
            for t in c.program.tensors:
                a = c.expected[t.name].copy()
                if c.program.index == self.wrong and t.role == "out" and t is \
                        c.program.outputs[0]:
                    a.flat[0] += 1
                outs.append(a)
        rep = {"names": batch.names, "shape": batch.shape,
               "received": np.concatenate([c.received for c in cases])}
        return {"status": "ok", "outputs": outs, "report": rep}


def test_runner_attributes_refusals_crashes_and_wrong_values(tmp_path):
    fz = runner.Fuzzer("fake", 8, str(tmp_path), batch_size=8, confirm=0,
                       log=lambda s: None, exclude=frozenset(generate.PLANTED))
    (tmp_path / "work").mkdir()
    fake = _FakeLayer(refuse=2, pair=(4, 6), wrong=5, build_refuse=3)
    fz.call = fake
    outs = fz.run_batch(fz.batches()[0])
    status = {o.index: o.status for o in outs}
    assert status == {0: "equal", 1: "equal", 2: "refused", 3: "refused", 4: "equal",
                      5: "wrong", 6: "crash", 7: "equal"}, status
    # each program was built alone first; the one refused there never reached a
    # compiled batch, and the batch was compiled without it at once
    assert sorted(fake.built) == [[i] for i in range(8)]
    assert not any(3 in c for c in fake.calls)
    assert fake.calls[0] == [0, 1, 2, 4, 5, 6, 7]
    # the program named by the compile-time refusal was run alone at once, not found
    # by halving
    assert [2] in fake.calls
    crash = next(o for o in outs if o.status == "crash")
    assert "only together with programs" in crash.detail
    assert Path(crash.reproducer).exists()
    wrong = next(o for o in outs if o.status == "wrong")
    assert "p5_Y" in wrong.detail and Path(wrong.reproducer).exists()


class _PlantedLayer:
    """Refuses any kernel holding planted program ``refuse`` and runs every other
    kernel as the model says (so a planted race that runs is not refused)."""

    def __init__(self, refuse):
        self.refuse, self.calls = refuse, []

    def __call__(self, batch, cases, compile_=True, build_only=False):
        self.calls.append(([c.program.index for c in cases], build_only))
        if any(c.program.index == self.refuse for c in cases):
            return {"status": "refused", "phase": "compile", "type": "ValueError",
                    "message": f"LowerMeshComm: a race on p{self.refuse}_X1"}
        if build_only:
            return {"status": "ok"}
        return {"status": "ok",
                "outputs": [c.expected[t.name] for c in cases for t in c.program.tensors],
                "report": {"names": batch.names, "shape": batch.shape,
                           "received": np.concatenate([c.received for c in cases])}}


def test_runner_runs_planted_programs_alone_and_a_planted_race_that_runs_is_wrong(
        tmp_path):
    """Programs planted to be refused are run alone: refused is right, running
    (even to the model's values) is wrong, with a reproducer that exits 1 unless the
    layer refuses; valid refusals are counted apart."""
    fz = runner.Fuzzer("planted", 16, str(tmp_path), batch_size=16, confirm=0,
                       log=lambda s: None)
    (tmp_path / "work").mkdir()
    spec = next(b for b in ((k, 16 * k, 16) for k in range(20))
                if sum(bool(p.expect) for p in make_batch("planted", *b)[0].programs) >= 2)
    planted = [p for p in make_batch("planted", *spec)[0].programs if p.expect]
    races = [p for p in planted if p.expect == "race"]
    ran = (races or planted)[0]
    refused = next(p for p in planted if p is not ran)
    fake = _PlantedLayer(refuse=refused.index)
    fz.call = fake
    outs = {o.index: o for o in fz.run_batch(spec)}
    assert outs[refused.index].status == "refused"
    assert outs[refused.index].expect == refused.expect
    bad = outs[ran.index]
    assert bad.status == "wrong" and bad.detail.startswith("ran, but must be refused")
    text = Path(bad.reproducer).read_text()
    assert f"MUST_REFUSE = {bad.detail[len('ran, but must be refused: '):]!r}" in text
    assert f"CHECK_RACES = {ran.expect == 'race'}" in text
    for p in planted:  # each alone, never in the batch nor its build screen
        assert ([p.index], False) in fake.calls
        assert all(idx == [p.index] for idx, _ in fake.calls if p.index in idx)
    fz.summary.outcomes = list(outs.values())
    kinds = fz.summary.planted()
    assert kinds[ran.expect]["wrong"] == 1
    assert fz.summary.valid_refused() == (0, 16 - len(planted))
    assert [x.split(None, 1)[1] for x in runner.planted_refusal_table(fz.summary)] == [
        f"{refused.expect}: ValueError: LowerMeshComm: a race on p_"]


def test_runner_a_valid_program_refused_as_it_runs_is_wrong(tmp_path):
    """check_races=True stops a run only on a race; the model finds none in a valid
    program, so a refusal from the run is a false race report."""
    fz = runner.Fuzzer("fake", 8, str(tmp_path), batch_size=8, confirm=0,
                       log=lambda s: None, exclude=frozenset(generate.PLANTED))
    (tmp_path / "work").mkdir()
    fake = _FakeLayer(refuse=None, pair=(98, 99), wrong=None)

    def call(batch, cases, compile_=True, build_only=False):
        if any(c.program.index == 3 for c in cases) and not build_only:
            return {"status": "refused", "phase": "run", "type": "ValueError",
                    "message": "compile_mesh_kernel (check_races=True): a race on 'p3_Y9'",
                    "traceback": "Traceback ..."}
        return fake(batch, cases, compile_, build_only)

    fz.call = call
    outs = {o.index: o for o in fz.run_batch(fz.batches()[0])}
    assert outs[3].status == "wrong" and outs[3].detail.startswith(
        "refused as it ran, with no race: ValueError: compile_mesh_kernel")
    assert Path(outs[3].reproducer).exists()
    assert {o.status for i, o in outs.items() if i != 3} == {"equal"}, outs


# -- the spmdize mode's oracle -------------------------------------------------------------
def _global_view_case():
    """A generated global-view program without spanning reads (which spmdize must
    refuse), its model result, and the worker's answer for a spmdize that is right."""
    batch, inputs, results = make_batch("oracle", 0, 0, 8, frozenset({"span"}),
                                        gen=global_view.GlobalGen)
    for p, m in zip(batch.programs, results):
        reads = [a for a in m.accesses if not a.write]
        if any(a.remote.any() for a in reads):
            break
    else:
        pytest.fail("no program of the batch reads a remote block")
    names = [t.name for t in p.tensors]
    kinds = {(a.tensor, a.buf): "broadcast" for a in reads}
    plan = {"status": "ok", "copies": [{"src": t, "dst": b, "kind": k, "first": "",
                                        "text": ""} for (t, b), k in kinds.items()]}
    ans = {"status": "ok", "outputs": [m.tensors[n] for n in names],
           "report": {p.index: {"remote": spmd_check.global_remote(m.accesses)}},
           "plans": {p.index: plan}, "issues": {},
           "sp_outputs": dict(m.tensors),
           "sp_report": {p.index: {"comm": spmd_check.promise(
               spmd_check.byte_table(m.accesses), kinds)}}}
    return p, m, names, ans


def _judge(p, m, names, ans):
    return spmd_check.judge(p.index, m.tensors, m.accesses, ans, names)[:2]


def test_spmdize_oracle_accepts_a_right_answer_and_flags_each_wrong_one():
    p, m, names, ans = _global_view_case()
    assert _judge(p, m, names, ans) == ("equal", "")
    out = next(t.name for t in p.tensors if t.role == "out")

    def changed(**kw):
        a = dict(ans, **kw)
        return _judge(p, m, names, a)

    sp = {n: v.copy() for n, v in m.tensors.items()}
    sp[out].flat[0] += 1
    assert changed(sp_outputs=sp) == (
        "wrong", f"spmdize's kernel differs from the model and the global view: {out}")
    gv = [v.copy() for v in ans["outputs"]]
    gv[names.index(out)].flat[0] += 1
    assert changed(outputs=gv)[0] == "wrong"
    assert changed(issues={p.index: ["remote-read: ..."]})[0] == "wrong"
    comm = ans["sp_report"][p.index]["comm"]
    status, detail = changed(sp_report={p.index: {"comm": comm + 4}})
    assert status == "wrong" and f"receive {comm + 4} bytes" in detail
    remote = ans["report"][p.index]["remote"]
    assert changed(report={p.index: {"remote": remote + 4}})[0] == "wrong"
    refused = {"status": "refused", "type": "ValueError",
               "message": "SpmdizeMeshCopies: x\n  more"}
    assert changed(plans={p.index: refused}) == ("refused", "ValueError: SpmdizeMeshCopies: x")
    # a kernel that did not run, or an output it lacks, is no pass
    no_run = {k: v for k, v in ans.items() if k != "sp_outputs"}
    assert _judge(p, m, names, no_run)[0] == "crash"
    assert changed(sp_outputs={})[0] == "wrong"
    # a failed analysis defers only the byte counts, never a wrong value
    failed = {"status": "refused", "phase": "analysis", "type": "ValueError", "message": "x"}
    assert spmd_check.judge(p.index, m.tensors, m.accesses, dict(ans, analysis=failed),
                            names) is None
    assert changed(analysis=failed, sp_outputs=sp)[0] == "wrong"
    assert changed(sp_analysis=failed, sp_outputs=sp)[0] == "wrong"


def test_spmdize_oracle_when_the_layer_refuses_the_global_view():
    p, m, names, ans = _global_view_case()
    out = next(t.name for t in p.tensors if t.role == "out")
    gv_refused = {"status": "refused", "phase": "compile", "type": "ValueError",
                  "message": "VerifyMeshTensors: ..."}

    def verdict(**kw):
        a = dict(ans, **gv_refused, **kw)
        return spmd_check.judge_refused(p.index, m.tensors, m.accesses, a)[0]

    assert verdict() == "refused"  # spmdize's kernel runs equal: the refusal stands
    sp = {n: v.copy() for n, v in m.tensors.items()}
    sp[out].flat[0] += 1
    assert verdict(sp_outputs=sp) == "wrong"
    assert verdict(issues={p.index: ["remote-read: ..."]}) == "wrong"
    assert verdict(sp_error={"status": "crash", "phase": "spmdize-compile",
                             "type": "InternalError", "message": "x"}) == "crash"
    assert verdict(sp_error={"status": "refused", "phase": "spmdize-compile",
                             "type": "ValueError", "message": "x"}) == "refused"


def test_spmdize_promise_counts_what_each_plan_kind_receives():
    table = {("A", "S"): {"remote": 64, "first_remote": 16, "later": 96},
             ("B", "T"): {"remote": 32, "first_remote": 32, "later": 0}}
    assert spmd_check.promise(table, {("A", "S"): "shift", ("B", "T"): "local"}) == 64
    assert spmd_check.promise(table, {("A", "S"): "carried", ("B", "T"): "permute"}) == \
        16 + 96 + 32


# -- the fixed-seed slices -----------------------------------------------------------------
SLICE_SEED, SLICE_PROGRAMS = "ci", 48


@pytest.mark.slow
def test_fixed_seed_slice_runs_equal_or_is_refused(tmp_path):
    """48 random programs (3 kernels of 16) must each run equal to the model or be
    refused with a ValueError; the failure message lists the reproducers."""
    pytest.importorskip("tilelang")
    fz = runner.Fuzzer(SLICE_SEED, SLICE_PROGRAMS, str(tmp_path), batch_size=16, jobs=1,
                       confirm=4, log=lambda s: None, cache=True)
    summary = fz.run()
    assert len(summary.outcomes) == SLICE_PROGRAMS
    bad = summary.failed
    assert not bad, summary.line() + "\n" + "\n".join(
        f"program {o.index}: {o.status}: {o.detail[:200]}\n  {o.reproducer}" for o in bad)


def _first_planted(seed: str, feature: str):
    """The first program of run ``seed`` (batches of 16) that plants ``feature``: its
    batch shell and case."""
    for b in range(200):
        shell, inputs, results = make_batch(seed, b, 16 * b, 16)
        for p, x, m in zip(shell.programs, inputs, results):
            if feature in p.features and p.expect == generate.PLANTED[feature]:
                return shell, runner._Case.of(p, x, m)
    raise AssertionError(f"no program of seed {seed} plants {feature}")


@pytest.mark.slow
def test_planted_programs_are_refused_and_checked_races_pass_valid_kernels(tmp_path):
    """One program per planted feature (each alone, a race with check_races=True) must
    be refused; 8 valid programs compiled with check_races=True run equal."""
    pytest.importorskip("tilelang")
    fz = runner.Fuzzer(SLICE_SEED, 8, str(tmp_path), batch_size=8, jobs=1, confirm=2,
                       log=lambda s: None, cache=True)
    (tmp_path / "work").mkdir()
    outs = {}
    try:
        for feature in sorted(generate.PLANTED):
            shell, case = _first_planted(SLICE_SEED, feature)
            outs[feature] = fz.planted(shell, case)
        shell, inputs, results = make_batch(SLICE_SEED, 0, 0, 8, frozenset(generate.PLANTED))
        shell = replace(shell, check_races=True)
        cases = [runner._Case.of(p, x, m) for p, x, m in zip(shell.programs, inputs, results)]
        valid = fz.check(shell, cases)
    finally:
        for w in fz.workers:
            w.stop()
    bad = {f: o for f, o in outs.items() if o.status != "refused"}
    assert not bad, "\n".join(f"{f}: program {o.index}: {o.status}: {o.detail[:200]}\n  "
                              f"{o.reproducer}" for f, o in bad.items())
    bad = [o for o in valid if o.status in ("wrong", "crash")]
    assert not bad, "\n".join(f"program {o.index}: {o.status}: {o.detail[:200]}\n  "
                              f"{o.reproducer}" for o in bad)


@pytest.mark.slow
def test_spmdize_fixed_seed_slice_is_equal_or_refused(tmp_path):
    """16 random global-view programs through spmdize (one kernel): each is refused, or
    spmdize's kernel passes the owner-only check, runs equal to the model and the
    global view, and receives the bytes docs/spmdize.md promises."""
    pytest.importorskip("tilelang")
    fz = runner.Fuzzer(SLICE_SEED, 16, str(tmp_path), batch_size=16, jobs=1, confirm=2,
                       log=lambda s: None, mode="spmdize", cache=True)
    summary = fz.run()
    assert len(summary.outcomes) == 16
    assert any(o.status == "equal" for o in summary.outcomes), summary.line()
    bad = summary.failed
    assert not bad, summary.line() + "\n" + "\n".join(
        f"program {o.index}: {o.status}: {o.detail[:200]}\n  {o.reproducer}" for o in bad)
