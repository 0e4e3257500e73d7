"""Standalone reproducer scripts for wrong or crashed programs.

A reproducer is one Python file: the generated kernel (as the fuzzer compiled it), the
inputs, the model's expected tensors and comm bytes, what the fuzzer observed, and a
``main`` that compiles and runs the kernel with ``compile_mesh_kernel``, analyses it
with ``analyze_mesh_communication`` and prints every difference. It exits 0 when the
kernel now matches the model (or is refused with a ``ValueError``), 1 otherwise. Run
it as ``PYTHONPATH=src python <file>`` from the repository root.

A reproducer of the spmdize mode (``accesses`` given) checks the global-view kernel
against the model and then ``spmdize``'s output: the owner-only check, its values, and
the comm bytes docs/spmdize.md promises (:func:`~.spmd_check.promise`, copied in).
"""
from __future__ import annotations

import inspect

import numpy as np

from . import spmd_check
from .model import SENTINEL
from .program import Batch, batch_source

_CHECK = '''

def check(kernel, label: str) -> int:
    """Run ``kernel`` on INPUTS (outputs start as SENTINEL); print and count the
    tensors that differ from EXPECTED."""
    import numpy as np
    import torch

    arrays = {{name: (np.array(INPUTS[name], dtype=dtype) if name in INPUTS
                      else np.full(shape, SENTINEL, dtype=dtype))
              for name, shape, dtype in PARAMS}}
    args = [torch.from_numpy(arrays[name]) for name, _, _ in PARAMS]
    kernel(*args)
    bad = 0
    for (name, shape, dtype), arg in zip(PARAMS, args):
        got = arg.numpy()
        want = np.array(EXPECTED[name], dtype=dtype).reshape(shape)
        if not np.array_equal(got, want):
            bad += 1
            where = np.argwhere(got != want)
            print(f"{{label}}: {{name}}: {{len(where)}} of {{got.size}} elements differ, "
                  f"first at {{tuple(int(i) for i in where[0])}}")
            print("  expected", want.ravel().tolist())
            print("  got     ", got.ravel().tolist())
    return bad
'''

_MAIN = '''

# -- data (written by tools/fuzz_kernels.py) -----------------------------------------
SENTINEL = {sentinel}
PARAMS = {params}
INPUTS = {inputs}
EXPECTED = {expected}
EXPECTED_MESH = {mesh}
EXPECTED_COMM_RECEIVED = {received}
OBSERVED = {observed!r}
MUST_REFUSE = {must_refuse!r}  # why the layer must refuse the kernel ("": valid)
CHECK_RACES = {check_races!r}  # compiled with check_races=True
''' + _CHECK + '''

def main() -> int:
    import numpy as np
    from meshtensor.tilelang import analyze_mesh_communication, compile_mesh_kernel

    try:
        kernel = compile_mesh_kernel(fuzz_kernel, **({{"check_races": True}}
                                                     if CHECK_RACES else {{}}))
        if MUST_REFUSE:
            check(kernel, "kernel")
    except ValueError as e:
        print(f"refused: {{e}}")
        print("OK: refused" if MUST_REFUSE else "")
        return 0
    if MUST_REFUSE:
        print(f"WRONG: it ran, but the layer must refuse it: {{MUST_REFUSE}}")
        return 1
    bad = check(kernel, "kernel")
    report = analyze_mesh_communication(kernel)
    if report is None:  # a kernel without comm ops (a shrunk one, say)
        if EXPECTED_COMM_RECEIVED:
            bad += 1
            print("the analysis found no comm op")
        print("WRONG" if bad else "OK: equal to the model")
        return 1 if bad else 0
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


_SPMD_MAIN = '''

# -- data (written by tools/fuzz_kernels.py --mode spmdize) --------------------------
SENTINEL = {sentinel}
PARAMS = {params}
INPUTS = {inputs}
EXPECTED = {expected}
EXPECTED_REMOTE = {remote}  # bytes the global view reads or writes on other cores
BYTES = {table}  # per read (tensor, buffer): remote, first_remote and later bytes
SPANS = {spans}  # reads of a block over several shards (spmdize must refuse them)
PROGRAMS = {programs}  # programs in the kernel
OBSERVED = {observed!r}


{promise}''' + _CHECK + '''

def main() -> int:
    from meshtensor.tilelang import (analyze_mesh_communication, compile_mesh_kernel,
                                     verify_mesh_tensors)
    from meshtensor.tilelang.transform.spmdize import plan_mesh_copies, spmdize

    bad = 0
    try:
        gv = compile_mesh_kernel(fuzz_kernel)
    except ValueError as e:
        print(f"global view refused: {{e}}")
        gv = None
    if gv is not None:
        bad += check(gv, "global view")
        remote = analyze_mesh_communication(fuzz_kernel).remote_bytes
        if remote != EXPECTED_REMOTE:
            bad += 1
            print(f"global view: {{remote}} remote bytes, the model {{EXPECTED_REMOTE}}")
    try:
        out = spmdize(fuzz_kernel)
    except ValueError as e:
        print(f"spmdize refused: {{e}}")
        if PROGRAMS > 1:  # the fuzzer ran spmdize on the programs it accepts only
            print("WRONG: the kernel holds several programs; run each alone "
                  "(fuzz_kernels.py --first I --programs 1)")
            return 1
        print("WRONG" if bad else "OK: refused")
        return 1 if bad else 0
    if SPANS:
        bad += 1
        print(f"spmdize accepts reads of a block over several shards: {{SPANS}}")
    for issue in verify_mesh_tensors(out, owner_only=True):
        bad += 1
        print(f"verify_mesh_tensors(owner_only=True): {{issue.message}}")
    for p in plan_mesh_copies(fuzz_kernel):
        print(f"plan: {{p}}")
    try:
        kernel = compile_mesh_kernel(out)
    except ValueError as e:
        print(f"spmdize's output refused: {{e}}")
        bad += gv is not None
    else:
        bad += check(kernel, "spmdized")
        kinds = {{(p.copy.src.buffer.name, p.copy.dst.buffer.name): p.kind
                 for p in plan_mesh_copies(fuzz_kernel)}}
        comm, want = analyze_mesh_communication(out).comm_bytes, promise(BYTES, kinds)
        if comm != want:
            bad += 1
            print(f"spmdized: comm ops receive {{comm}} bytes, promised {{want}}")
    print("WRONG" if bad else "OK: equal to the model")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
'''


def _lit(a: np.ndarray) -> str:
    return repr(np.asarray(a).tolist())


def reproducer_source(batch: Batch, inputs: list, expected: list, received: list,
                      title: str, detail: str, observed: str = "",
                      accesses: list | None = None, must_refuse: str = "",
                      check_races: bool = False) -> str:
    """The script for ``batch`` (its programs' ``inputs`` and model ``expected``
    tensors, ``received`` the model's comm bytes per op and core); with ``accesses``
    (each program's ``model.Accesses``), the spmdize mode's script. ``must_refuse``:
    why the layer must refuse the kernel (its ``main`` then exits 0 only on a
    ``ValueError``, from the compilation or the run); ``check_races``: compile with
    ``check_races=True``."""
    header = (f"{title}\n\n{detail.strip()}\n\nRun from the repository root: "
              f"PYTHONPATH=src python <this file>\n")
    src = batch_source(batch, header=header.replace('"""', "'''"))
    params = [(t.name, t.global_shape(batch), t.dtype) for t in batch.params()]
    ins = {k: v for x in inputs for k, v in x.items()}
    exp = {k: v for x in expected for k, v in x.items()}
    common = dict(
        sentinel=SENTINEL,
        params="[\n" + "".join(f"    {p!r},\n" for p in params) + "]",
        inputs="{\n" + "".join(f"    {k!r}: {_lit(v)},\n" for k, v in ins.items()) + "}",
        expected="{\n" + "".join(f"    {k!r}: {_lit(v)},\n" for k, v in exp.items()) + "}",
        observed=observed[-4000:])
    if accesses is not None:
        flat = [a for acc in accesses for a in acc]
        table = spmd_check.byte_table(flat)
        return src + _SPMD_MAIN.format(
            remote=spmd_check.global_remote(flat), promise=inspect.getsource(spmd_check.promise),
            spans=repr(spmd_check.spans(flat)), programs=len(batch.programs),
            table="{\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in table.items()) + "}",
            **common)
    data = _MAIN.format(
        must_refuse=must_refuse, check_races=check_races,
        mesh="{" + ", ".join(f"{n!r}: {v}" for n, v in batch.mesh) + "}",
        received=_lit(np.concatenate(received) if received else np.zeros((0, batch.size))),
        **common)
    return src + data
