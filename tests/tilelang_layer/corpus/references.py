"""NumPy references for the corpus, written from TileLang's semantics as the upstream
kernels use them: each operation in its dtype with one rounding (float32, or a narrow
format through ``ml_dtypes``/NumPy's float16), ``T.gemm`` accumulating ``C + A[:, k] *
B[k, :]`` one ``k`` at a time, reductions folding from the first element, and the math
functions as the C library computes them in float32 (``exp2f``, ``logf``: NumPy's own
float32 ``exp2`` differs from the C library's in a fifth of its results).
"""
from __future__ import annotations

import ctypes
import ctypes.util
from typing import Callable

import ml_dtypes
import numpy as np

_LIBM = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
for _name in ("exp2f", "logf", "expf", "log2f", "sqrtf"):
    getattr(_LIBM, _name).restype = ctypes.c_float
    getattr(_LIBM, _name).argtypes = [ctypes.c_float]

DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
          "float8_e4m3fn": ml_dtypes.float8_e4m3fn}


def _libm(name: str) -> Callable[[np.ndarray], np.ndarray]:
    fn = np.frompyfunc(getattr(_LIBM, name), 1, 1)

    def call(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.float32)
        return np.asarray(fn(x), dtype=np.float64).astype(np.float32).reshape(x.shape)
    return call


exp2f, logf = _libm("exp2f"), _libm("logf")
expf, log2f, sqrtf = _libm("expf"), _libm("log2f"), _libm("sqrtf")


def rnd(x: np.ndarray, dtype: str) -> np.ndarray:
    """``x`` stored in ``dtype`` (round to nearest even), as float32 values."""
    return np.asarray(x, np.float32).astype(DTYPES[dtype]).astype(np.float32)


def op(x: np.ndarray, dtype: str) -> np.ndarray:
    """The result of an operation in ``dtype``: computed in float32 (exact for the
    operations of two narrow values, or the float32 operation itself), rounded once."""
    return rnd(x, dtype) if dtype != "float32" else np.asarray(x, np.float32)


def gemm(c: np.ndarray, a: np.ndarray, b: np.ndarray, acc: str = "float32") -> np.ndarray:
    """``T.gemm(a, b, c)``: ``c = c + a[:, k] * b[k, :]`` for each k in order, each
    product and sum in the accumulator's dtype (operands are float32 values of their
    own dtype: a product of two of them is exact in float32)."""
    c = np.array(c, np.float32)
    for k in range(a.shape[1]):
        prod = op(a[:, k:k + 1].astype(np.float32) * b[k:k + 1, :].astype(np.float32), acc)
        c = op(c + prod, acc)
    return c


def row_sum(x: np.ndarray, dtype: str = "float32") -> np.ndarray:
    """``T.reduce_sum(x, s, dim=1)``: from 0, one element at a time."""
    s = np.zeros(x.shape[0], np.float32)
    for j in range(x.shape[1]):
        s = op(s + x[:, j], dtype)
    return s


def tile(x: np.ndarray, starts: tuple, shape: tuple) -> np.ndarray:
    """The tile of ``x`` at ``starts`` of ``shape``, zero past its edges (a T.copy from a
    global buffer reads zero there)."""
    out = np.zeros(shape, np.float32)
    src = tuple(slice(s, min(s + n, d)) for s, n, d in zip(starts, shape, x.shape))
    part = x[src]
    out[tuple(slice(0, p) for p in part.shape)] = part
    return out


def attention_tile(scores: Callable[[int], np.ndarray], values: Callable[[int], np.ndarray],
                   steps: int, scale: float, dtype: str = "bfloat16", acc: str = "float32"
                   ) -> tuple:
    """One query tile of the upstream's flash attention (its examples and the MLA
    decode kernels): per key block ``k``, ``scores(k)`` is ``acc_s`` after its T.gemm
    (``mask + q k^T``; the MLA kernels add a second product), then the running max, the
    ``exp2`` rescaling with ``scale``, the probabilities stored in ``dtype`` and
    multiplied into ``acc_o`` by ``values(k)``; each operation of ``acc`` values in
    ``acc`` (one rounding each; T.gemm per step, as :func:`gemm`); returns ``(acc_o /
    logsum, logsum, scores_max)``, before the output's own rounding."""
    sc = np.float32(scale)
    acc_o, logsum, smax = None, None, None
    for k in range(steps):
        s = scores(k)
        if acc_o is None:
            acc_o = np.zeros((s.shape[0], values(k).shape[1]), np.float32)
            logsum = np.zeros(s.shape[0], np.float32)
            smax = np.full(s.shape[0], -np.inf, np.float32)
        prev = smax
        smax = np.maximum(s.max(axis=1), prev)        # reduce_max(clear=False), then max
        # ``x * scale`` with a Python float: TileLang (as TVM) types the constant float32
        # and widens ``x`` to it, so the exp2 argument is float32 arithmetic whatever
        # ``acc`` is; T.exp2 is then a float32 call, its result stored in ``acc``
        sscale = op(exp2f(prev * sc - smax * sc), acc)
        p = op(exp2f(s * sc - smax[:, None] * sc), acc)
        ssum = row_sum(p, acc)
        logsum = op(op(logsum * sscale, acc) + ssum, acc)
        acc_o = op(acc_o * sscale[:, None], acc)
        acc_o = gemm(acc_o, rnd(p, dtype), values(k), acc)
    return op(acc_o / logsum[:, None], acc), logsum, smax
