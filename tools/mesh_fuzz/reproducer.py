"""Standalone reproducer scripts for wrong or crashed programs.

A reproducer is one Python file: the generated kernel (as the fuzzer compiled it), the
inputs, the model's expected tensors and comm bytes, what the fuzzer observed, and a
``main`` that compiles and runs the kernel with ``compile_mesh_kernel``, analyses it
with ``analyze_mesh_communication`` and prints every difference. It exits 0 when the
kernel now matches the model (or is refused with a ``ValueError``), 1 otherwise. Run
it as ``PYTHONPATH=src python <file>`` from the repository root.
"""
from __future__ import annotations

import numpy as np

from .model import SENTINEL
from .program import Batch, batch_source

_MAIN = '''

# -- data (written by tools/fuzz_kernels.py) -----------------------------------------
SENTINEL = {sentinel}
PARAMS = {params}
INPUTS = {inputs}
EXPECTED = {expected}
EXPECTED_MESH = {mesh}
EXPECTED_COMM_RECEIVED = {received}
OBSERVED = {observed!r}


def main() -> int:
    import numpy as np
    import torch
    from meshtensor.tilelang import analyze_mesh_communication, compile_mesh_kernel

    arrays = {{name: (np.array(INPUTS[name], dtype=dtype) if name in INPUTS
                      else np.full(shape, SENTINEL, dtype=dtype))
              for name, shape, dtype in PARAMS}}
    try:
        kernel = compile_mesh_kernel(fuzz_kernel)
    except ValueError as e:
        print(f"refused: {{e}}")
        return 0
    args = [torch.from_numpy(arrays[name]) for name, _, _ in PARAMS]
    kernel(*args)
    bad = 0
    for (name, shape, dtype), arg in zip(PARAMS, args):
        got = arg.numpy()
        want = np.array(EXPECTED[name], dtype=dtype).reshape(shape)
        if not np.array_equal(got, want):
            bad += 1
            where = np.argwhere(got != want)
            print(f"{{name}}: {{len(where)}} of {{got.size}} elements differ, first at "
                  f"{{tuple(int(i) for i in where[0])}}")
            print("  expected", want.ravel().tolist())
            print("  got     ", got.ravel().tolist())
    report = analyze_mesh_communication(kernel)
    mesh = dict(zip(report.mesh.axis_names, report.mesh.shape))
    if list(mesh.items()) != list(EXPECTED_MESH.items()):
        bad += 1
        print(f"analysed mesh {{mesh}}, kernel mesh {{EXPECTED_MESH}}")
    got_rec = np.zeros((len(report.comm_ops), report.mesh.size), dtype=np.int64)
    rows = report.op >= 0
    np.add.at(got_rec, (report.op[rows], report.core[rows]), report.nbytes[rows])
    if got_rec.tolist() != EXPECTED_COMM_RECEIVED:
        bad += 1
        print(f"comm bytes received per op and core (analysed mesh {{report.mesh}}):")
        print("  expected", EXPECTED_COMM_RECEIVED)
        print("  got     ", got_rec.tolist())
    print("WRONG" if bad else "OK: equal to the model")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
'''


def _lit(a: np.ndarray) -> str:
    return repr(np.asarray(a).tolist())


def reproducer_source(batch: Batch, inputs: list, expected: list, received: list,
                      title: str, detail: str, observed: str = "") -> str:
    """The script for ``batch`` (its programs' ``inputs`` and model ``expected``
    tensors, ``received`` the model's comm bytes per op and core)."""
    header = (f"{title}\n\n{detail.strip()}\n\nRun from the repository root: "
              f"PYTHONPATH=src python <this file>\n")
    src = batch_source(batch, header=header.replace('"""', "'''"))
    params = [(t.name, t.global_shape(batch), t.dtype) for t in batch.params()]
    ins = {k: v for x in inputs for k, v in x.items()}
    exp = {k: v for x in expected for k, v in x.items()}
    data = _MAIN.format(
        sentinel=SENTINEL,
        mesh="{" + ", ".join(f"{n!r}: {v}" for n, v in batch.mesh) + "}",
        params="[\n" + "".join(f"    {p!r},\n" for p in params) + "]",
        inputs="{\n" + "".join(f"    {k!r}: {_lit(v)},\n" for k, v in ins.items()) + "}",
        expected="{\n" + "".join(f"    {k!r}: {_lit(v)},\n" for k, v in exp.items()) + "}",
        received=_lit(np.concatenate(received) if received else np.zeros((0, batch.size))),
        observed=observed[-4000:])
    return src + data
