"""meshtensor kernel fuzzer: seed g27, program 498: crash (run)
features: all_reduce, all_to_all, barrier, check-races, fold-index, fold-write, gemm, let, region, same-buffer, unroll, var

refused although valid: ValueError: Mesh: device -1 out of range [0, 6) (minimized)

Run from the repository root: PYTHONPATH=src python <this file>
"""
import tilelang.language as T

from meshtensor.tilelang import mesh_comm

mc = mesh_comm({"q": 6})


@T.prim_func
def fuzz_kernel(p498_Y14: T.Tensor((6, 1), "int32")):
    with T.Kernel(6, threads=1) as b0:
        # -- program 498 (seed g27:498)
        p498_S3 = T.alloc_local((1,), "int32")
        for i in T.grid(1):
            p498_S3[i] = ((b0 * 2) - i)
        for i in T.grid(1):
            p498_Y14[(((((b0 // 2) + 1) % 3) * 2) + (((b0 % 2) + 1) % 2)), i] = p498_S3[i]


# -- data (written by tools/fuzz_kernels.py) -----------------------------------------
SENTINEL = -77
PARAMS = [
    ('p498_Y14', (6, 1), 'int32'),
]
INPUTS = {
    'p498_X0': [[[-3, -2, 0, 1, -3, 0], [-2, 2, 3, -2, 3, 3], [-3, 2, -3, 2, -1, 3], [-3, 1, 2, -2, -3, 1]], [[-2, 2, -3, -3, 3, 1], [-3, -3, 2, -3, 0, -3], [-3, 1, -2, -1, 2, 0], [-1, 0, 3, -2, 2, 0]], [[1, 2, -3, 0, 3, 0], [1, -2, -1, 1, -2, -3], [0, 0, -2, -3, -3, -2], [-2, 3, -2, -1, 1, 0]], [[2, -2, -3, 2, 1, -2], [3, -2, 3, 0, 3, 0], [1, 1, 3, -3, 1, -2], [1, -3, 0, 0, -1, 2]], [[3, 2, 2, -2, 2, 0], [2, 3, -3, -3, 2, 1], [-1, 3, 2, 2, -2, 3], [1, -3, 3, 3, 1, 3]], [[-1, 2, 2, -1, 1, -3], [3, 3, -2, 0, -2, -3], [3, -2, -2, 1, -1, -1], [2, 3, -1, -2, -3, 2]]],
}
EXPECTED = {
    'p498_Y14': [[10], [8], [2], [0], [6], [4]],
}
EXPECTED_MESH = {'q': 6}
EXPECTED_COMM_RECEIVED = []
OBSERVED = ''
MUST_REFUSE = ''  # why the layer must refuse the kernel ("": valid)
CHECK_RACES = True  # compiled with check_races=True


def check(kernel, label: str) -> int:
    """Run ``kernel`` on INPUTS (outputs start as SENTINEL); print and count the
    tensors that differ from EXPECTED."""
    import numpy as np
    import torch

    arrays = {name: (np.array(INPUTS[name], dtype=dtype) if name in INPUTS
                      else np.full(shape, SENTINEL, dtype=dtype))
              for name, shape, dtype in PARAMS}
    args = [torch.from_numpy(arrays[name]) for name, _, _ in PARAMS]
    kernel(*args)
    bad = 0
    for (name, shape, dtype), arg in zip(PARAMS, args):
        got = arg.numpy()
        want = np.array(EXPECTED[name], dtype=dtype).reshape(shape)
        if not np.array_equal(got, want):
            bad += 1
            where = np.argwhere(got != want)
            print(f"{label}: {name}: {len(where)} of {got.size} elements differ, "
                  f"first at {tuple(int(i) for i in where[0])}")
            print("  expected", want.ravel().tolist())
            print("  got     ", got.ravel().tolist())
    return bad


def main() -> int:
    import numpy as np
    from meshtensor.tilelang import analyze_mesh_communication, compile_mesh_kernel

    try:
        kernel = compile_mesh_kernel(fuzz_kernel, **({"check_races": True}
                                                     if CHECK_RACES else {}))
        if MUST_REFUSE:
            check(kernel, "kernel")
    except ValueError as e:
        print(f"refused: {e}")
        print("OK: refused" if MUST_REFUSE else "")
        return 0
    if MUST_REFUSE:
        print(f"WRONG: it ran, but the layer must refuse it: {MUST_REFUSE}")
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
        print(f"analysed mesh {mesh}, kernel mesh {EXPECTED_MESH}")
    got_rec = np.zeros((len(report.comm_ops), report.mesh.size), dtype=np.int64)
    rows = report.op >= 0
    np.add.at(got_rec, (report.op[rows], report.core[rows]), report.nbytes[rows])
    if got_rec.tolist() != EXPECTED_COMM_RECEIVED:
        bad += 1
        print(f"comm bytes received per op and core (analysed mesh {report.mesh}):")
        print("  expected", EXPECTED_COMM_RECEIVED)
        print("  got     ", got_rec.tolist())
    print("WRONG" if bad else "OK: equal to the model")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
