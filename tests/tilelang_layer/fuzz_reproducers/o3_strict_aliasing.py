"""shrunk

differs from the model: p87_Y4

Run from the repository root: PYTHONPATH=src python <this file>
"""
import tilelang.language as T

from meshtensor.tilelang import mesh_comm

mc = mesh_comm({"col": 2, "dp": 2, "w": 1})


@T.prim_func
def fuzz_kernel(p87_X0: T.Tensor((4, 1), "int32"), p87_Y3: T.Tensor((4, 1), "int32"), p87_Y4: T.Tensor((4, 6, 2), "float32")):
    with T.Kernel(4, threads=1) as bx:
        # -- program 90 (seed 8:87+8:90)
        p87_S1 = T.alloc_local((1, 1), "int32")
        p87_S2 = T.alloc_shared((6, 2), "float32", scope="shared")
        p90_S4 = T.alloc_local((6,), "int32")
        p90_S5 = T.alloc_local((6,), "int32")
        for i, j in T.grid(6, 2):
            p87_S2[i, j] = T.Cast("float32", (((bx * 1) - i) + j))
        for i, j in T.grid(1, 1):
            p87_S1[i, j] = p87_X0[bx * 1 + i, j]
        mc.reduce_scatter(p87_S2[0:5, 0:2], p87_S2[0:5, 1:2], ['dp'], reduction='max', scatter_axis=1)
        for i, j in T.Parallel(4, 2):
            p87_S2[i, j] = (T.Cast("float32", (bx % 1)) + (T.Cast("float32", bx) - 3.0))
        for i, j in T.grid(1, 1):
            p87_Y3[bx * 1 + i, j] = p87_S1[i, j]
        T.copy(p87_S2, p87_Y4[bx, 0:6, 0:2])
        for i in T.grid(6):
            p90_S4[i] = ((bx * 3) - i)
        mc.permute(p90_S4, p90_S5, pairs=((3, 2), (3, 3), (1, 1)))


# -- data (written by tools/fuzz_kernels.py) -----------------------------------------
SENTINEL = -77
PARAMS = [
    ('p87_X0', (4, 1), 'int32'),
    ('p87_Y3', (4, 1), 'int32'),
    ('p87_Y4', (4, 6, 2), 'float32'),
]
INPUTS = {
    'p87_X0': [[-1], [1], [3], [1]],
    'p90_X0': [[[1, 2]], [[-3, -2]], [[-3, 3]], [[-3, 2]]],
}
EXPECTED = {
    'p87_X0': [[-1], [1], [3], [1]],
    'p87_Y3': [[-1], [1], [3], [1]],
    'p87_Y4': [[[-3.0, -3.0], [-3.0, -3.0], [-3.0, -3.0], [-3.0, -3.0], [-4.0, -3.0], [-5.0, -4.0]], [[-2.0, -2.0], [-2.0, -2.0], [-2.0, -2.0], [-2.0, -2.0], [-3.0, -2.0], [-4.0, -3.0]], [[-1.0, -1.0], [-1.0, -1.0], [-1.0, -1.0], [-1.0, -1.0], [-2.0, -1.0], [-3.0, -2.0]], [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [-1.0, 0.0], [-2.0, -1.0]]],
}
EXPECTED_MESH = {'col': 2, 'dp': 2, 'w': 1}
EXPECTED_COMM_RECEIVED = [[20, 20, 20, 20], [0, 0, 24, 0]]
OBSERVED = "p87_Y4 = [-3.0, 1.0, -3.0, 0.0, -3.0, -1.0, -3.0, -2.0, -4.0, -3.0, -5.0, -4.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -3.0, -2.0, -4.0, -3.0, -1.0, 3.0, -1.0, 2.0, -1.0, 1.0, -1.0, 0.0, -2.0, -1.0, -3.0, -2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, -2.0, -1.0]\nanalysis mesh {'col': 2, 'dp': 2, 'w': 1}, comm bytes received [[20, 20, 20, 20], [0, 0, 24, 0]]"


def main() -> int:
    import numpy as np
    import torch
    from meshtensor.tilelang import analyze_mesh_communication, compile_mesh_kernel

    arrays = {name: (np.array(INPUTS[name], dtype=dtype) if name in INPUTS
                      else np.full(shape, SENTINEL, dtype=dtype))
              for name, shape, dtype in PARAMS}
    try:
        import os; fl = os.environ.get("CFLAGS"); kernel = compile_mesh_kernel(fuzz_kernel) if not fl else compile_mesh_kernel(fuzz_kernel, compile_flags=fl.split())
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
