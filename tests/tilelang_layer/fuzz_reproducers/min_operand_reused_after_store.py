"""meshtensor kernel fuzzer: seed 2026, program 867: wrong (run)
features: broadcast, let, let-after-write, same-buffer, select, shift

differs from the model: p867_Y5 (minimized)

Run from the repository root: PYTHONPATH=src python <this file>
"""
import tilelang.language as T

from meshtensor.tilelang import mesh_comm

mc = mesh_comm({"x": 4})


@T.prim_func
def fuzz_kernel(p867_X0: T.Tensor((4, 6), "float32"), p867_Y5: T.Tensor((4, 6), "float32")):
    with T.Kernel(4, threads=1) as bx:
        c0 = bx
        # -- program 867 (seed 2026:867)
        p867_S1 = T.alloc_shared((6,), "float32", scope="shared")
        p867_S4 = T.alloc_shared((6,), "float32", scope="shared")
        T.copy(p867_X0[bx, 0:6], p867_S1)
        p867_t2 = p867_S1[2]
        for i in T.grid(1):
            p867_S1[(i + 4)] = (2.0 + T.min(T.Cast("float32", i), p867_S1[(i + 4)]))
        p867_S1[4] = (T.if_then_else((bx >= 2), p867_X0[bx, 4], T.Cast("float32", 0)) + T.min(p867_X0[bx, 3], p867_S1[4]))
        mc.shift(p867_S1, p867_S4[0:6], ['x'], offset=4, rotate=False, shift_axis='x')
        T.copy(p867_S1, p867_Y5[c0, 0:6])


# -- data (written by tools/fuzz_kernels.py) -----------------------------------------
SENTINEL = -77
PARAMS = [
    ('p867_X0', (4, 6), 'float32'),
    ('p867_Y5', (4, 6), 'float32'),
]
INPUTS = {
    'p867_X0': [[1.0, -3.0, 0.0, 2.0, 2.0, 0.0], [1.0, -3.0, -2.0, 2.0, 0.0, 0.0], [3.0, -1.0, 3.0, -2.0, -3.0, -1.0], [1.0, 2.0, -1.0, -3.0, 2.0, 2.0]],
}
EXPECTED = {
    'p867_X0': [[1.0, -3.0, 0.0, 2.0, 2.0, 0.0], [1.0, -3.0, -2.0, 2.0, 0.0, 0.0], [3.0, -1.0, 3.0, -2.0, -3.0, -1.0], [1.0, 2.0, -1.0, -3.0, 2.0, 2.0]],
    'p867_Y5': [[1.0, -3.0, 0.0, 2.0, 2.0, 0.0], [1.0, -3.0, -2.0, 2.0, 2.0, 0.0], [3.0, -1.0, 3.0, -2.0, -5.0, -1.0], [1.0, 2.0, -1.0, -3.0, -1.0, 2.0]],
}
EXPECTED_MESH = {'x': 4}
EXPECTED_COMM_RECEIVED = [[0, 0, 0, 0]]
OBSERVED = "p867_Y5 = [1.0, -3.0, 0.0, 2.0, 2.0, 0.0, 1.0, -3.0, -2.0, 2.0, 0.0, 0.0, 3.0, -1.0, 3.0, -2.0, -6.0, -1.0, 1.0, 2.0, -1.0, -3.0, -1.0, 2.0]\nanalysis mesh {'x': 4}, comm bytes received [[0, 0, 0, 0]]"


def main() -> int:
    import numpy as np
    import torch
    from meshtensor.tilelang import analyze_mesh_communication, compile_mesh_kernel

    arrays = {name: (np.array(INPUTS[name], dtype=dtype) if name in INPUTS
                      else np.full(shape, SENTINEL, dtype=dtype))
              for name, shape, dtype in PARAMS}
    try:
        kernel = compile_mesh_kernel(fuzz_kernel)
    except ValueError as e:
        print(f"refused: {e}")
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
            print(f"{name}: {len(where)} of {got.size} elements differ, first at "
                  f"{tuple(int(i) for i in where[0])}")
            print("  expected", want.ravel().tolist())
            print("  got     ", got.ravel().tolist())
    report = analyze_mesh_communication(kernel)
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
