"""Tilelang-Mesh's comm ops on CPU against a NumPy model of their semantics: one kernel
per mesh (2x2, 2x4, 4x4) runs every op, direction, size, core form, gather layout,
reduce type, dim, clear and output form into its own slot; hypothesis draws the data."""
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from meshtensor.tilelang import compile_mesh_kernel  # noqa: E402
from meshtensor.tilelang import tilelang_mesh as tm  # noqa: E402

A, B = 2, 3                    # every core's source tile
FLAGS = ["-O1"]                # correctness only: compile faster
REDUCE_FLOAT = ("sum", "abssum", "max", "min", "absmax")
REDUCE_INT = ("bitand", "bitor", "bitxor", "sum", "max")
DIRECTIONS = ("h", "v", "all")


@dataclass(frozen=True)
class Slot:
    """Where an op writes: ``buf`` (D, DS, D1, DI, DI1 of every core), start, shape."""

    buf: str
    start: tuple
    shape: tuple

    def view(self, arr: np.ndarray) -> np.ndarray:
        return arr[tuple(slice(s, s + n) for s, n in zip(self.start, self.shape))]


@dataclass(frozen=True)
class Op:
    kind: str                               # bcast, put, gather, reduce
    slot: Slot
    core: Callable | None = None            # cid -> core (sender)
    dst: Callable | None = None             # cid -> core (put receiver)
    direction: str = "all"
    size: int = -1
    axis: Any = None                        # gather axis (None: stacked)
    src_rows: tuple | None = None           # broadcast a row range of S
    rtype: str = "sum"
    dim: int = 0
    clear: bool = True
    keep: bool = True
    ints: bool = False


class Layout:
    """Allocates slots row by row in the per-core buffers."""

    def __init__(self):
        self.rows = {"D": 0, "DS": 0, "D1": 0, "DI": 0, "DI1": 0, "DP": 0}

    def take(self, buf: str, shape: tuple) -> Slot:
        start = self.rows[buf]
        self.rows[buf] += shape[0]
        return Slot(buf, (start,) + (0,) * (len(shape) - 1), shape)


def build_ops(R: int, C: int):
    """Every statement of the kernel (the looped ones are listed with their loop)."""
    N = R * C
    lay = Layout()
    ops: list[Op] = []
    # broadcasts with cores fixed at build time (the looped ones follow)
    ops.append(Op("bcast", lay.take("D", (A, B)), core=lambda c: (R - 1, 0),
                  direction="horizontal", size=5))
    ops.append(Op("bcast", lay.take("D", (A, B)), core=lambda c: N - 1, direction="a",
                  src_rows=(1, 2), size=-1))
    ops.append(Op("bcast", lay.take("D", (A, B)), core=lambda c: (c // C, C - 1),
                  direction="H"))
    ops.append(Op("bcast", lay.take("D", (A, B)), core=lambda c: (R - 1, c % C),
                  direction="vertical", size=2))
    # puts: every core sends to the next (two-leg puts write their intermediate core),
    # a column ring, one fixed diagonal put
    ops.append(Op("put", lay.take("D", (A, B)), core=lambda c: c, dst=lambda c: (c + 1) % N,
                  size=4))
    ops.append(Op("put", lay.take("D", (A, B)), core=lambda c: (c // C, c % C),
                  dst=lambda c: ((c // C + 1) % R, c % C)))
    ops.append(Op("put", lay.take("D", (A, B)), core=lambda c: (0, C - 1),
                  dst=lambda c: (R - 1, 0)))
    # senders whose column wraps around within their row: a row ring, and every core
    # getting its diagonal neighbour's (a core is one put's intermediate and another's
    # destination); TileLang once folded such a sender's index into a wrong linear shift
    ops.append(Op("put", lay.take("D", (A, B)), core=lambda c: c,
                  dst=lambda c: (c // C, (c % C + 1) % C), size=5))
    ops.append(Op("put", lay.take("D", (A, B)), dst=lambda c: c,
                  core=lambda c: ((c // C + 1) % R, (c % C + 1) % C)))
    # gathers: every direction stacked / axis 0 / last axis, and two partial sizes
    k = {"h": C, "v": R, "all": N}
    for d in DIRECTIONS:
        ops.append(Op("gather", lay.take("DS", (k[d], A, B)), direction=d))
        ops.append(Op("gather", lay.take("D", (k[d] * A, B)), direction=d, axis=0))
        ops.append(Op("gather", lay.take("D", (A, k[d] * B)), direction=d, axis=-1))
    ops.append(Op("gather", lay.take("DS", (N, A, B)), direction="all", size=4))
    ops.append(Op("gather", lay.take("D", (A, C * B)), direction="h", axis=1, size=5))
    # reductions: each type in each direction, dim / clear / output form rotating
    combos = [(d, c, kp) for d in (0, 1) for c in (True, False) for kp in (True, False)]
    i = 0
    for ints, types in ((False, REDUCE_FLOAT), (True, REDUCE_INT)):
        for t in types:
            for d in DIRECTIONS:
                dim, clear, keep = combos[i % len(combos)]
                i += 1
                two, one = ("DI", "DI1") if ints else ("D", "D1")
                if keep:
                    slot = lay.take(two, (1, B) if dim == 0 else (A, 1))
                else:
                    slot = lay.take(one, (B,) if dim == 0 else (A,))
                ops.append(Op("reduce", slot, direction=d, rtype=t, dim=dim if dim == 0 else -1,
                              clear=clear, keep=keep, ints=ints))
    looped = {  # broadcast from every core in turn, in three forms; every ordered pair put
        "b_lin_h": lay.take("D", (N * A, B)),
        "b_tuple_v": lay.take("D", (N * A, B)),
        "b_all": lay.take("D", (N * A, B)),
        "b_rows": lay.take("D", (C * A, B)),
        "p_pairs": lay.take("DP", (N * N * A, B)),
    }
    return ops, looped, lay.rows


def emit(op: Op, cid, S, SI, D, DS, D1, DI, DI1):
    """The one T.comm statement of ``op`` (called inside the kernel)."""
    bufs = {"D": D, "DS": DS, "D1": D1, "DI": DI, "DI1": DI1}
    sl = op.slot
    dst = bufs[sl.buf][tuple(slice(s, s + n) for s, n in zip(sl.start, sl.shape))]
    src = S if op.src_rows is None else S[op.src_rows[0]:op.src_rows[1], 0:B]
    if op.kind == "bcast":
        return T.comm.broadcast(src, dst, op.core(cid), op.direction, size=op.size)
    if op.kind == "put":
        return T.comm.put(S, dst, op.core(cid), op.dst(cid), size=op.size)
    if op.kind == "gather":
        return T.comm.all_gather(S, dst, direction=op.direction, size=op.size, axis=op.axis)
    return T.comm.all_reduce(SI if op.ints else S, dst, op.rtype, op.direction, dim=op.dim,
                             clear=op.clear)


def ops_kernel(R: int, C: int):
    N = R * C
    cfg = (R, C)
    tm.enable(mesh=cfg)
    ops, looped, rows = build_ops(R, C)
    W = N * B
    line = T.MeshShardingPolicy(cross_mesh_dim=0)
    F, I32 = "float32", "int32"
    nD, nS, n1, nI, nI1, nP = (rows[k] for k in ("D", "DS", "D1", "DI", "DI1", "DP"))
    bl, bt, ba, br = (looped[k].start[0] for k in ("b_lin_h", "b_tuple_v", "b_all", "b_rows"))

    @T.prim_func
    def kernel(X: T.MeshTensor((N, A, B), line, cfg, F),
               XI: T.MeshTensor((N, A, B), line, cfg, I32),
               YD: T.MeshTensor((N, nD, W), line, cfg, F),
               YS: T.MeshTensor((N, nS, A, B), line, cfg, F),
               Y1: T.MeshTensor((N, n1), line, cfg, F),
               YI: T.MeshTensor((N, nI, B), line, cfg, I32),
               YI1: T.MeshTensor((N, nI1), line, cfg, I32),
               YP: T.MeshTensor((N, nP, B), line, cfg, F)):
        with T.Kernel(N) as cid:
            S = T.alloc_shared((A, B), F)
            SI = T.alloc_shared((A, B), I32, scope="shared.rsram")
            D = T.alloc_shared((nD, W), F, scope="shared.asram")
            DS = T.alloc_shared((nS, A, B), F, scope="shared.wsram")
            D1 = T.alloc_shared((n1,), F)
            DI = T.alloc_shared((nI, B), I32)
            DI1 = T.alloc_shared((nI1,), I32)
            DP = T.alloc_shared((nP, B), F)
            T.copy(X[0, 0:A, 0:B], S)
            T.copy(XI[0, 0:A, 0:B], SI)
            T.copy(YD[0, 0:nD, 0:W], D)       # the outputs' old values: what is not
            T.copy(YS[0, 0:nS, 0:A, 0:B], DS)  # written stays, clear=False combines
            T.copy(Y1[0, 0:n1], D1)
            T.copy(YI[0, 0:nI, 0:B], DI)
            T.copy(YI1[0, 0:nI1], DI1)
            T.copy(YP[0, 0:nP, 0:B], DP)
            for op in ops:
                emit(op, cid, S, SI, D, DS, D1, DI, DI1)
            for s in T.serial(N):
                T.comm.broadcast(S, D[bl + s * A:bl + s * A + A, 0:B], s, "h")
                T.comm.broadcast(S, D[bt + s * A:bt + s * A + A, 0:B], (s // C, s % C), "V",
                                 size=4)
                T.comm.broadcast(S, D[ba + s * A:ba + s * A + A, 0:B], s, direction="all")
                for t in T.serial(N):
                    if s != t:
                        T.comm.put(S, DP[(s * N + t) * A:(s * N + t) * A + A, 0:B], s, t)
            for s in T.Pipelined(C, num_stages=2):
                T.comm.broadcast(S, D[br + s * A:br + s * A + A, 0:B], (cid // C, s), "h")
            T.copy(D, YD[0, 0:nD, 0:W])
            T.copy(DS, YS[0, 0:nS, 0:A, 0:B])
            T.copy(D1, Y1[0, 0:n1])
            T.copy(DI, YI[0, 0:nI, 0:B])
            T.copy(DI1, YI1[0, 0:nI1])
            T.copy(DP, YP[0, 0:nP, 0:B])

    return kernel, ops, looped, rows


# -- the NumPy model ------------------------------------------------------------------------
def _rc(core, C):
    return (core // C, core % C) if not isinstance(core, tuple) else core


def _lin(core, C):
    r, c = _rc(core, C)
    return r * C + c


def _group(core, direction, R, C):
    r, c = _rc(core, C)
    if direction in ("h", "horizontal", "H"):
        return [r * C + j for j in range(C)]
    if direction in ("v", "vertical", "V"):
        return [i * C + c for i in range(R)]
    return list(range(R * C))


def _norm(direction):
    return {"h": "h", "horizontal": "h", "v": "v", "vertical": "v", "a": "all",
            "all": "all"}[direction.lower()]


def _copy_prefix(dst_view, src, n):
    idx = np.unravel_index(np.arange(n), dst_view.shape)
    dst_view[idx] = src.reshape(-1)[:n]


IDENT = {"sum": 0, "abssum": 0, "absmax": 0, "bitor": 0, "bitxor": 0, "bitand": -1}


def _identity(t, dtype):
    if t == "max":
        return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min
    if t == "min":
        return np.inf if dtype.kind == "f" else np.iinfo(dtype).max
    return IDENT[t]


def _combine(t, a, b):
    if t in ("sum", "abssum"):
        return a + b
    if t in ("max", "absmax"):
        return np.maximum(a, b)
    if t == "min":
        return np.minimum(a, b)
    return {"bitand": np.bitwise_and, "bitor": np.bitwise_or, "bitxor": np.bitwise_xor}[t](a, b)


def _fold(t, parts, dtype):
    acc = np.full(parts[0].shape, _identity(t, dtype), dtype=dtype)
    for x in parts:
        acc = _combine(t, acc, np.abs(x) if t.startswith("abs") else x).astype(dtype)
    return acc


def model(R, C, ops, looped, x, xi, state):
    """Every core's buffers after the kernel (``state``: name -> (N, ...) arrays, the
    old values; updated in place)."""
    N = R * C
    src = {False: x, True: xi}

    def write(slot, core, data, n):
        _copy_prefix(slot.view(state[slot.buf][core]), data, n)

    def bcast(op_slot, senders, direction, n, rows=None):
        for s in sorted(set(senders)):
            data = x[s] if rows is None else x[s][rows[0]:rows[1]]
            for m in _group(s, _norm(direction), R, C):
                write(op_slot, m, data, n)

    def put(slot, pairs, n):
        pairs = sorted(set(pairs))
        vert, horiz = [], []
        for s, d in pairs:
            (sr, sc), (dr, dc) = _rc(s, C), _rc(d, C)
            if sc == dc:
                vert.append((s, d))
            elif sr == dr:
                horiz.append((s, d))
            else:
                vert.append((s, dr * C + sc))
                horiz.append((s, d))
        for s, d in vert + horiz:
            write(slot, d, x[s], n)

    for op in ops:
        n = op.size if op.size >= 0 else A * B
        if op.kind == "bcast":
            rows = op.src_rows
            n = op.size if op.size >= 0 else (A * B if rows is None else B)
            bcast(op.slot, [_lin(op.core(c), C) for c in range(N)], op.direction, n, rows)
        elif op.kind == "put":
            put(op.slot, [(_lin(op.core(c), C), _lin(op.dst(c), C)) for c in range(N)], n)
        elif op.kind == "gather":
            for c in range(N):
                dst = op.slot.view(state[op.slot.buf][c])
                for k, m in enumerate(_group(c, op.direction, R, C)):
                    if op.axis is None:
                        _copy_prefix(dst[k], x[m], n)
                    else:
                        ax = op.axis % 2
                        sl = [slice(None)] * 2
                        sl[ax] = slice(k * (A, B)[ax], (k + 1) * (A, B)[ax])
                        _copy_prefix(dst[tuple(sl)], x[m], n)
        else:
            data = src[op.ints]
            dt = data.dtype
            dim = op.dim % 2
            local = [_fold(op.rtype, [np.take(data[c], i, axis=dim)
                                      for i in range(data.shape[1 + dim])], dt)
                     for c in range(N)]
            for c in range(N):
                g = _group(c, op.direction, R, C)
                if op.direction == "all":
                    rows = [_fold(op.rtype, [local[r * C + j] for j in range(C)], dt)
                            for r in range(R)]
                    total = _fold(op.rtype, rows, dt)
                else:
                    total = _fold(op.rtype, [local[m] for m in g], dt)
                out = op.slot.view(state[op.slot.buf][c])
                res = total if op.clear else _combine(op.rtype, out.reshape(-1), total).astype(dt)
                out[...] = res.reshape(out.shape)
    # the looped statements, in program order
    for s in range(N):
        sl = Slot("D", (looped["b_lin_h"].start[0] + s * A, 0), (A, B))
        bcast(sl, [s] * N, "h", A * B)
        sl = Slot("D", (looped["b_tuple_v"].start[0] + s * A, 0), (A, B))
        bcast(sl, [s] * N, "v", 4)
        sl = Slot("D", (looped["b_all"].start[0] + s * A, 0), (A, B))
        bcast(sl, [s] * N, "all", A * B)
        for t in range(N):
            if s != t:
                sl = Slot("DP", ((s * N + t) * A, 0), (A, B))
                put(sl, [(s, t)], A * B)
    for s in range(C):
        sl = Slot("D", (looped["b_rows"].start[0] + s * A, 0), (A, B))
        bcast(sl, [(c // C) * C + s for c in range(N)], "h", A * B)


MESHES = [(2, 2), (2, 4), (4, 4)]


@pytest.fixture(scope="module", params=MESHES, ids=lambda m: f"{m[0]}x{m[1]}")
def compiled(request):
    R, C = request.param
    kernel, ops, looped, rows = ops_kernel(R, C)
    return R, C, compile_mesh_kernel(kernel, compile_flags=FLAGS), ops, looped, rows


def run_case(R, C, kern, ops, looped, rows, seed):
    N = R * C
    rng = np.random.default_rng(seed)
    x = rng.uniform(-50, 50, (N, A, B)).astype(np.float32)
    xi = rng.integers(-1000, 1000, (N, A, B)).astype(np.int32)
    W = N * B
    init = {"D": rng.uniform(-9, 9, (N, rows["D"], W)).astype(np.float32),
            "DS": rng.uniform(-9, 9, (N, rows["DS"], A, B)).astype(np.float32),
            "D1": rng.uniform(-9, 9, (N, rows["D1"])).astype(np.float32),
            "DI": rng.integers(-99, 99, (N, rows["DI"], B)).astype(np.int32),
            "DI1": rng.integers(-99, 99, (N, rows["DI1"])).astype(np.int32),
            "DP": rng.uniform(-9, 9, (N, rows["DP"], B)).astype(np.float32)}
    got = {k: torch.from_numpy(v.copy()) for k, v in init.items()}
    kern(torch.from_numpy(x), torch.from_numpy(xi), got["D"], got["DS"], got["D1"], got["DI"],
         got["DI1"], got["DP"])
    want = {k: v.copy() for k, v in init.items()}
    model(R, C, ops, looped, x, xi, want)
    for k in want:
        np.testing.assert_array_equal(got[k].numpy(), want[k], err_msg=f"buffer {k}")


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_every_op_equals_the_model(compiled, seed):
    """Every op, direction, size, core form (constant, tuple, linear, expression of the
    core id and loop variables), gather layout, reduce type, dim, clear and output form
    equals the NumPy model bit for bit, on random data."""
    run_case(*compiled, seed)


def test_slots_cover_every_combination():
    """The kernel's table covers what it claims: every reduce type in every direction,
    both dims, both clears, both output forms, every gather layout and direction."""
    ops, _, _ = build_ops(2, 2)
    red = [o for o in ops if o.kind == "reduce"]
    assert {(o.rtype, o.direction) for o in red} >= {(t, d) for t in REDUCE_FLOAT + REDUCE_INT
                                                     for d in DIRECTIONS}
    assert {o.dim % 2 for o in red} == {0, 1} and {o.clear for o in red} == {True, False}
    assert {o.keep for o in red} == {True, False}
    gat = [o for o in ops if o.kind == "gather"]
    assert {(o.direction, o.axis) for o in gat} >= {(d, a) for d in DIRECTIONS
                                                    for a in (None, 0, -1)}
    assert {o.size for o in gat} > {-1}


def axis_of_one_kernel(R: int, C: int, two_d: bool):
    N = R * C
    cfg = (R, C)
    tm.enable(mesh=cfg)
    line = T.MeshShardingPolicy(cross_mesh_dim=0)
    grid = (R, C) if two_d else (N,)
    F = "float32"

    @T.prim_func
    def kernel(X: T.MeshTensor((N, A, B), line, cfg, F),
               YD: T.MeshTensor((N, 4 * A, B), line, cfg, F),
               YH: T.MeshTensor((N, C, A, B), line, cfg, F),
               YV: T.MeshTensor((N, R * A, B), line, cfg, F),
               YO: T.MeshTensor((N, B), line, cfg, F)):
        with T.Kernel(*grid) as b:
            S = T.alloc_shared((A, B), F)
            D = T.alloc_shared((4 * A, B), F)
            GH = T.alloc_shared((C, A, B), F)
            GV = T.alloc_shared((R * A, B), F)
            O = T.alloc_shared((B,), F)
            T.copy(X[0, 0:A, 0:B], S)
            T.copy(YD[0, 0:4 * A, 0:B], D)
            T.comm.broadcast(S, D[0:A, 0:B], (0, 0), "h")
            T.comm.broadcast(S, D[A:2 * A, 0:B], N - 1, "v")
            T.comm.broadcast(S, D[2 * A:3 * A, 0:B], (R - 1, C - 1), "all")
            T.comm.put(S, D[3 * A:4 * A, 0:B], 0, N - 1)
            T.comm.all_gather(S, GH, "h")
            T.comm.all_gather(S, GV, "v", axis=0)
            T.comm.all_reduce(S, O, "sum", "all", dim=0)
            T.copy(D, YD[0, 0:4 * A, 0:B])
            T.copy(GH, YH[0, 0:C, 0:A, 0:B])
            T.copy(GV, YV[0, 0:R * A, 0:B])
            T.copy(O, YO[0, 0:B])

    return kernel


@pytest.mark.parametrize("R, C, two_d", [(1, 3, True), (3, 1, False)],
                         ids=["1x3-launch-2d", "3x1-launch-1d"])
def test_a_mesh_axis_of_one(R, C, two_d):
    """A mesh of one row or one column (the fork's device_mesh_nrow_1): the ops equal
    the model; the lowering once left the core variable of such an axis (a loop of
    extent 1, which TileLang drops) in the kernel, and compiling it failed."""
    N = R * C
    kern = compile_mesh_kernel(axis_of_one_kernel(R, C, two_d), compile_flags=FLAGS)
    rng = np.random.default_rng(0)
    x = rng.integers(-9, 10, (N, A, B)).astype(np.float32)
    d0 = rng.integers(-9, 10, (N, 4 * A, B)).astype(np.float32)
    yd, yh, yv, yo = (torch.from_numpy(d0.copy()), torch.zeros(N, C, A, B),
                      torch.zeros(N, R * A, B), torch.zeros(N, B))
    kern(torch.from_numpy(x), yd, yh, yv, yo)
    want = d0.copy()
    for c in range(N):
        r, k = divmod(c, C)
        if r == 0:
            want[c, 0:A] = x[0]                      # row of (0, 0)
        if k == C - 1:
            want[c, A:2 * A] = x[N - 1]              # column of the last core
        want[c, 2 * A:3 * A] = x[N - 1]
        np.testing.assert_array_equal(yh[c].numpy(), x[r * C:(r + 1) * C])
        np.testing.assert_array_equal(yv[c].numpy(), x[k::C].reshape(R * A, B))
        np.testing.assert_array_equal(yo[c].numpy(), x.sum(axis=(0, 1)))
    want[N - 1, 3 * A:4 * A] = x[0]                  # one row or column: no intermediate
    np.testing.assert_array_equal(yd.numpy(), want)
