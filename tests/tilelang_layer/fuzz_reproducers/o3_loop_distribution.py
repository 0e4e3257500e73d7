"""shrunk

differs from the model: p54_Y5, p54_Y8

Run from the repository root: PYTHONPATH=src python <this file>
"""
import tilelang.language as T

from meshtensor.tilelang import mesh_comm
from meshtensor import Mesh

mc = mesh_comm(Mesh({"col": 2, "pp": 2}))


@T.prim_func
def fuzz_kernel(p53_X0: T.Tensor((8,), "int32"), p53_Y12: T.Tensor((4, 2), "int32"), p54_X0: T.Tensor((2, 2, 6, 5), "int32"), p54_Y5: T.Tensor((2, 2, 6, 5), "int32")):
    with T.Kernel(4, threads=1) as bx:
        # -- program 54 (seed 7:53+7:54)
        p53_S1 = T.alloc_shared((2,), "int32", scope="shared")
        p53_S4 = T.alloc_local((2, 8), "int32")
        p53_S5 = T.alloc_local((1, 2), "int32")
        p54_S1 = T.alloc_shared((6, 5), "int32", scope="shared")
        p54_S3 = T.alloc_shared((3,), "int32", scope="shared")
        p54_S4 = T.alloc_shared((3,), "int32", scope="shared")
        p54_v2 = T.alloc_var("int32")
        for i, j in T.grid(2, 8):
            p53_S4[i, j] = (((bx * 1) - i) + j)
        T.copy(p53_X0[bx * 2 + 0:bx * 2 + 0 + 2], p53_S1)
        mc.reduce_scatter(p53_S4[(bx % 2):(bx % 2) + 1, 0:8], p53_S5, ['col', 'pp'], reduction='sum', scatter_axis=1)
        p53_t8 = (bx * bx)
        for i in T.grid(2):
            p53_S1[i] = (T.max(p53_t8, 3) * p53_t8)
        T.copy(p53_S5, p53_Y12[bx * 1 + 0:bx * 1 + 0 + 1, 0:2])
        p54_v2 = 0
        for i in T.grid(3):
            p54_S3[i] = 3
        for i, j in T.grid(6, 5):
            p54_S1[i, j] = p54_X0[(bx // 2), (bx % 2), i, j]
        p54_v2 = (p54_v2 + ((p54_v2 + 1) + 0))
        mc.all_reduce(p54_S3[0:3], p54_S4, [0], reduction='min')
        for i, j in T.grid(5, 3):
            p54_S1[(i + (p54_v2 % 2)), (j + 1)] = p54_S4[j]
        for i, j in T.grid(6, 5):
            p54_Y5[(bx // 2), (bx % 2), i, j] = p54_S1[i, j]


# -- data (written by tools/fuzz_kernels.py) -----------------------------------------
SENTINEL = -77
PARAMS = [
    ('p53_X0', (8,), 'int32'),
    ('p53_Y12', (4, 2), 'int32'),
    ('p54_X0', (2, 2, 6, 5), 'int32'),
    ('p54_Y5', (2, 2, 6, 5), 'int32'),
]
INPUTS = {
    'p53_X0': [2, 1, 1, 0, -2, 2, -2, 3],
    'p53_X2': [[[0, -1, 0, -2], [-1, 2, -1, -1]], [[-3, -3, -2, -2], [-3, -3, -3, 1]]],
    'p54_X0': [[[[0, 1, 0, 3, 1], [-3, 1, -3, 2, -3], [1, -2, 1, -1, 1], [-3, 3, 3, -2, 2], [2, 3, -2, 3, 0], [-3, -3, -3, -1, -3]], [[3, 0, -2, -1, 0], [2, -1, -2, 2, -3], [-3, -3, 1, -3, 1], [2, 3, 3, 3, -1], [1, 3, 0, -1, -3], [-2, -2, 1, 3, -2]]], [[[-3, -3, 1, 0, 3], [2, -1, 3, 3, 3], [-1, -3, 2, -2, -3], [1, 2, 0, 3, -1], [3, 2, -2, -1, -3], [1, 1, 3, 3, 1]], [[-1, 1, -3, -1, 0], [-3, -1, 3, -1, 1], [-2, 3, 2, 0, -1], [-1, 1, 3, 0, -3], [1, 3, 2, -2, -2], [3, 1, 3, -3, -1]]]],
}
EXPECTED = {
    'p53_X0': [2, 1, 1, 0, -2, 2, -2, 3],
    'p53_Y12': [[4, 8], [12, 16], [20, 24], [28, 32]],
    'p54_X0': [[[[0, 1, 0, 3, 1], [-3, 1, -3, 2, -3], [1, -2, 1, -1, 1], [-3, 3, 3, -2, 2], [2, 3, -2, 3, 0], [-3, -3, -3, -1, -3]], [[3, 0, -2, -1, 0], [2, -1, -2, 2, -3], [-3, -3, 1, -3, 1], [2, 3, 3, 3, -1], [1, 3, 0, -1, -3], [-2, -2, 1, 3, -2]]], [[[-3, -3, 1, 0, 3], [2, -1, 3, 3, 3], [-1, -3, 2, -2, -3], [1, 2, 0, 3, -1], [3, 2, -2, -1, -3], [1, 1, 3, 3, 1]], [[-1, 1, -3, -1, 0], [-3, -1, 3, -1, 1], [-2, 3, 2, 0, -1], [-1, 1, 3, 0, -3], [1, 3, 2, -2, -2], [3, 1, 3, -3, -1]]]],
    'p54_Y5': [[[[0, 1, 0, 3, 1], [-3, 3, 3, 3, -3], [1, 3, 3, 3, 1], [-3, 3, 3, 3, 2], [2, 3, 3, 3, 0], [-3, 3, 3, 3, -3]], [[3, 0, -2, -1, 0], [2, 3, 3, 3, -3], [-3, 3, 3, 3, 1], [2, 3, 3, 3, -1], [1, 3, 3, 3, -3], [-2, 3, 3, 3, -2]]], [[[-3, -3, 1, 0, 3], [2, 3, 3, 3, 3], [-1, 3, 3, 3, -3], [1, 3, 3, 3, -1], [3, 3, 3, 3, -3], [1, 3, 3, 3, 1]], [[-1, 1, -3, -1, 0], [-3, 3, 3, 3, 1], [-2, 3, 3, 3, -1], [-1, 3, 3, 3, -3], [1, 3, 3, 3, -2], [3, 3, 3, 3, -1]]]],
}
EXPECTED_MESH = {'col': 2, 'pp': 2}
EXPECTED_COMM_RECEIVED = [[24, 24, 24, 24], [12, 12, 12, 12]]
OBSERVED = "p54_Y5 = [0, 3, 3, 3, 1, -3, 3, 3, 3, -3, 1, 3, 3, 3, 1, -3, 3, 3, 3, 2, 2, 3, 3, 3, 0, -3, -3, -3, -1, -3, 3, 3, 3, 3, 0, 2, 3, 3, 3, -3, -3, 3, 3, 3, 1, 2, 3, 3, 3, -1, 1, 3, 3, 3, -3, -2, -2, 1, 3, -2, -3, 3, 3, 3, 3, 2, 3, 3, 3, 3, -1, 3, 3, 3, -3, 1, 3, 3, 3, -1, 3, 3, 3, 3, -3, 1, 1, 3, 3, 1, -1, 3, 3, 3, 0, -3, 3, 3, 3, 1, -2, 3, 3, 3, -1, -1, 3, 3, 3, -3, 1, 3, 3, 3, -2, 3, 1, 3, -3, -1]\nanalysis mesh {'col': 2, 'pp': 2}, comm bytes received [[24, 24, 24, 24], [12, 12, 12, 12]]"


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
