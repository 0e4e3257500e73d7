"""meshtensor kernel fuzzer: seed 6, program 1748: crash (compile)
features: all_gather, core-region, global-write, int-axes, let, let-after-write, uninit-dst

RuntimeError: /tmp/fuzzrun6/repros/work/tmp-9691/tmpt6ozz6mz.cpp:59:192: error: no matching function for call to ‘vec_type<int, 2>::vec_type(int32_t, int32_t)’

A 2-element T.copy from global memory at a core-dependent offset: TileLang 0.1.15
vectorizes it into a gather its C vector type cannot build (stock tilelang.compile
fails the same way). compile_mesh_kernel now refuses it with a ValueError that says
what to change; the script accepts a refusal.

Run from the repository root: PYTHONPATH=src python <this file>
"""
import tilelang.language as T

from meshtensor.tilelang import mesh_comm

mc = mesh_comm({"pp": 2, "tp": 3})


@T.prim_func
def fuzz_kernel(p1748_X0: T.Tensor((30, 3), "int32"), p1748_X2: T.Tensor((6, 5, 3), "int32"), p1748_Y9: T.Tensor((2, 3, 5, 3), "int32"), p1748_Y10: T.Tensor((30, 3), "int32"), p1748_Y11: T.Tensor((2, 3, 1, 5), "int32"), p1748_Y12: T.Tensor((18, 5), "int32")):
    with T.Kernel(2, 3, threads=1) as (b0, b1):
        # -- program 1748 (seed 6:1748)
        p1748_S1 = T.alloc_local((5, 3), "int32")
        p1748_S3 = T.alloc_local((5, 3), "int32")
        p1748_S5 = T.alloc_local((1, 5), "int32")
        p1748_S6 = T.alloc_local((3, 5), "int32")
        for i, j in T.grid(1, 5):
            p1748_S5[i, j] = ((((b0 * 3 + b1) * 3) - i) - j)
        for i, j in T.grid(5, 3):
            p1748_S1[i, j] = p1748_X0[(b0 * 3 + b1) * 5 + i, j]
        for i, j in T.grid(5, 3):
            p1748_S3[i, j] = p1748_X2[(b0 * 3 + b1), i, j]
        for p1748_k4 in T.serial(3):
            for i, j in T.grid(2, 3):
                p1748_S1[(i + (p1748_k4 % 4)), j] = (T.max(2, 4) * (((b0 * 3 + b1) - 4) % 5))
        mc.all_gather(p1748_S5, p1748_S6, [1], gather_axis=0)
        p1748_t7 = p1748_X2[(b0 * 3 + b1), 1, 0]
        p1748_X2[(b0 * 3 + b1), 1, 0] = T.min((p1748_t7 - p1748_t7), T.min(p1748_X2[(b0 * 3 + b1), 2, (0 % 3)], p1748_S1[(((1 + b0) // 4) % 5), ((2 - p1748_t7) % 3)]))
        for i, j in T.grid(3, 3):
            p1748_S1[i, j] = (p1748_t7 + (p1748_t7 * T.min((-2), p1748_S1[i, j])))
        T.copy(p1748_X2[(b0 * 3 + b1), 0:1, ((((b0 * 3 + b1) + b1) // 2) % 2):((((b0 * 3 + b1) + b1) // 2) % 2) + 2], p1748_S1[3:4, 1:3])
        p1748_t8 = (b0 * 3 + b1)
        for i, j in T.grid(1, 1):
            p1748_S6[i, (j + (3 % 5))] = ((p1748_t7 % 2) - T.max(0, p1748_X2[(b0 * 3 + b1), (((2 + j) // 3) % 5), (j + 2)]))
        for i, j in T.grid(5, 3):
            p1748_Y9[b0, b1, i, j] = p1748_S1[i, j]
        T.copy(p1748_S3, p1748_Y10[(b0 * 3 + b1) * 5 + 0:(b0 * 3 + b1) * 5 + 0 + 5, 0:3])
        for i, j in T.grid(1, 5):
            p1748_Y11[b0, b1, i, j] = p1748_S5[i, j]
        T.copy(p1748_S6, p1748_Y12[(b0 * 3 + b1) * 3 + 0:(b0 * 3 + b1) * 3 + 0 + 3, 0:5])


# -- data (written by tools/fuzz_kernels.py) -----------------------------------------
SENTINEL = -77
PARAMS = [
    ('p1748_X0', (30, 3), 'int32'),
    ('p1748_X2', (6, 5, 3), 'int32'),
    ('p1748_Y9', (2, 3, 5, 3), 'int32'),
    ('p1748_Y10', (30, 3), 'int32'),
    ('p1748_Y11', (2, 3, 1, 5), 'int32'),
    ('p1748_Y12', (18, 5), 'int32'),
]
INPUTS = {
    'p1748_X0': [[-2, 2, 3], [2, 3, -2], [-1, 0, 1], [2, 0, -2], [3, -3, 2], [-2, -3, -1], [-3, -1, 2], [2, -3, 3], [-1, 2, -1], [1, 3, 0], [2, -1, 0], [2, -2, 3], [-3, 0, 1], [3, 2, -1], [-3, -2, -2], [1, 1, -2], [-2, 1, 3], [0, -3, -2], [3, 2, -3], [1, -1, -3], [-1, 3, 3], [0, -2, 2], [-2, -3, -1], [0, 3, 0], [-1, 3, -3], [3, -2, 0], [0, -2, 2], [3, 2, -2], [-3, 3, 3], [-3, -2, -3]],
    'p1748_X2': [[[0, -3, 1], [0, 1, 0], [-3, 2, 3], [0, -1, -2], [3, 0, 2]], [[-1, -3, -3], [-1, -3, 1], [0, 0, -3], [-2, 0, -3], [0, -1, 0]], [[0, 2, 3], [2, -3, -1], [1, -2, 2], [1, -2, -3], [-3, 1, 1]], [[-2, -2, 1], [1, -2, 0], [0, 1, 3], [1, 3, -1], [-2, 2, -3]], [[3, -3, -3], [-2, 2, 1], [-3, 3, -3], [1, 2, 2], [0, -1, 1]], [[0, 3, 2], [1, 1, -1], [-2, 0, 2], [-1, -2, -2], [0, -1, 3]]],
}
EXPECTED = {
    'p1748_X0': [[-2, 2, 3], [2, 3, -2], [-1, 0, 1], [2, 0, -2], [3, -3, 2], [-2, -3, -1], [-3, -1, 2], [2, -3, 3], [-1, 2, -1], [1, 3, 0], [2, -1, 0], [2, -2, 3], [-3, 0, 1], [3, 2, -1], [-3, -2, -2], [1, 1, -2], [-2, 1, 3], [0, -3, -2], [3, 2, -3], [1, -1, -3], [-1, 3, 3], [0, -2, 2], [-2, -3, -1], [0, 3, 0], [-1, 3, -3], [3, -2, 0], [0, -2, 2], [3, 2, -2], [-3, 3, 3], [-3, -2, -3]],
    'p1748_X2': [[[0, -3, 1], [-3, 1, 0], [-3, 2, 3], [0, -1, -2], [3, 0, 2]], [[-1, -3, -3], [0, -3, 1], [0, 0, -3], [-2, 0, -3], [0, -1, 0]], [[0, 2, 3], [0, -3, -1], [1, -2, 2], [1, -2, -3], [-3, 1, 1]], [[-2, -2, 1], [0, -2, 0], [0, 1, 3], [1, 3, -1], [-2, 2, -3]], [[3, -3, -3], [-3, 2, 1], [-3, 3, -3], [1, 2, 2], [0, -1, 1]], [[0, 3, 2], [-2, 1, -1], [-2, 0, 2], [-1, -2, -2], [0, -1, 3]]],
    'p1748_Y9': [[[[0, 0, 0], [0, 0, 0], [0, 0, 0], [4, 0, -3], [3, -3, 2]], [[1, 1, 1], [1, 1, 1], [1, 1, 1], [8, -3, -3], [1, 3, 0]], [[-2, -2, -2], [-2, -2, -2], [-2, -2, -2], [12, 0, 2], [-3, -2, -2]]], [[[-1, -1, -1], [-1, -1, -1], [-1, -1, -1], [16, -2, 1], [1, -1, -3]], [[2, 2, 2], [2, 2, 2], [2, 2, 2], [0, 3, -3], [-1, 3, -3]], [[-1, -1, -1], [-1, -1, -1], [-1, -1, -1], [4, 3, 2], [-3, -2, -3]]]],
    'p1748_Y10': [[0, -3, 1], [0, 1, 0], [-3, 2, 3], [0, -1, -2], [3, 0, 2], [-1, -3, -3], [-1, -3, 1], [0, 0, -3], [-2, 0, -3], [0, -1, 0], [0, 2, 3], [2, -3, -1], [1, -2, 2], [1, -2, -3], [-3, 1, 1], [-2, -2, 1], [1, -2, 0], [0, 1, 3], [1, 3, -1], [-2, 2, -3], [3, -3, -3], [-2, 2, 1], [-3, 3, -3], [1, 2, 2], [0, -1, 1], [0, 3, 2], [1, 1, -1], [-2, 0, 2], [-1, -2, -2], [0, -1, 3]],
    'p1748_Y11': [[[[0, -1, -2, -3, -4]], [[3, 2, 1, 0, -1]], [[6, 5, 4, 3, 2]]], [[[9, 8, 7, 6, 5]], [[12, 11, 10, 9, 8]], [[15, 14, 13, 12, 11]]]],
    'p1748_Y12': [[0, -1, -2, -1, -4], [3, 2, 1, 0, -1], [6, 5, 4, 3, 2], [0, -1, -2, 1, -4], [3, 2, 1, 0, -1], [6, 5, 4, 3, 2], [0, -1, -2, -3, -4], [3, 2, 1, 0, -1], [6, 5, 4, 3, 2], [9, 8, 7, 0, 5], [12, 11, 10, 9, 8], [15, 14, 13, 12, 11], [9, 8, 7, 0, 5], [12, 11, 10, 9, 8], [15, 14, 13, 12, 11], [9, 8, 7, -1, 5], [12, 11, 10, 9, 8], [15, 14, 13, 12, 11]],
}
EXPECTED_MESH = {'pp': 2, 'tp': 3}
EXPECTED_COMM_RECEIVED = [[40, 40, 40, 40, 40, 40]]
OBSERVED = '      for (int32_t i_2 = 0; i_2 < 2; ++i_2) {\n          for (int32_t j_3 = 0; j_3 < 3; ++j_3) {\n            ((int32_t*)p1748_S1_all)[(((((core_pp * 48) + (core_tp * 16)) + (i_2 * 3)) + (p1748_k4 * 3)) + j_3)] = (((((core_pp * 3) + core_tp) + 1) % 5) * 4);\n          }\n        }\n      }\n    }\n  }\n  for (int32_t dst_pp = 0; dst_pp < 2; ++dst_pp) {\n    for (int32_t dst_tp = 0; dst_tp < 3; ++dst_tp) {\n      for (int32_t p = 0; p < 3; ++p) {\n        for (int32_t i1 = 0; i1 < 5; ++i1) {\n          ((int32_t*)p1748_S6_all)[((((dst_pp * 48) + (dst_tp * 16)) + (p * 5)) + i1)] = ((int32_t*)p1748_S5_all)[(((dst_pp * 24) + (p * 8)) + i1)];\n        }\n      }\n    }\n  }\n  for (int32_t core_pp_1 = 0; core_pp_1 < 2; ++core_pp_1) {\n    for (int32_t core_tp_1 = 0; core_tp_1 < 3; ++core_tp_1) {\n      int32_t p1748_t7 = p1748_X2[(((core_pp_1 * 45) + (core_tp_1 * 15)) + 3)];\n      int32_t v_ = (p1748_X2[(((core_pp_1 * 45) + (core_tp_1 * 15)) + 6)] < ((int32_t*)p1748_S1_all)[((((core_pp_1 * 48) + (core_tp_1 * 16)) + (3 & (((2 - p1748_t7) % 3) >> 31))) + ((2 - p1748_t7) % 3))]) ? p1748_X2[(((core_pp_1 * 45) + (core_tp_1 * 15)) + 6)] : ((int32_t*)p1748_S1_all)[((((core_pp_1 * 48) + (core_tp_1 * 16)) + (3 & (((2 - p1748_t7) % 3) >> 31))) + ((2 - p1748_t7) % 3))];\n      p1748_X2[(((core_pp_1 * 45) + (core_tp_1 * 15)) + 3)] = ((0) < (v_) ? (0) : (v_));\n      for (int32_t i_3 = 0; i_3 < 3; ++i_3) {\n        for (int32_t j_4 = 0; j_4 < 3; ++j_4) {\n          ((int32_t*)p1748_S1_all)[((((core_pp_1 * 48) + (core_tp_1 * 16)) + (i_3 * 3)) + j_4)] = ((((-2 < ((int32_t*)p1748_S1_all)[((((core_pp_1 * 48) + (core_tp_1 * 16)) + (i_3 * 3)) + j_4)]) ? -2 : ((int32_t*)p1748_S1_all)[((((core_pp_1 * 48) + (core_tp_1 * 16)) + (i_3 * 3)) + j_4)]) + 1) * p1748_t7);\n        }\n      }\n      int32_t2 v__1 = int32_t2(((((core_pp_1 * 45) + (core_tp_1 * 15)) + ((core_pp_1 + core_tp_1) & 1)))+(1*0), ((((core_pp_1 * 45) + (core_tp_1 * 15)) + ((core_pp_1 + core_tp_1) & 1)))+(1*1));\n      *(int32_t2*)(((int32_t*)p1748_S1_all) + (((core_pp_1 * 48) + (core_tp_1 * 16)) + 10)) = (int32_t2(p1748_X2[v__1.s0],p1748_X2[v__1.s1]));\n      ((int32_t*)p1748_S6_all)[(((core_pp_1 * 48) + (core_tp_1 * 16)) + 3)] = ((p1748_t7 & 1) - ((p1748_X2[(((core_pp_1 * 45) + (core_tp_1 * 15)) + 2)] < 0) ? 0 : p1748_X2[(((core_pp_1 * 45) + (core_tp_1 * 15)) + 2)]));\n      for (int32_t i_4 = 0; i_4 < 5; ++i_4) {\n        for (int32_t j_5 = 0; j_5 < 3; ++j_5) {\n          p1748_Y9[((((core_pp_1 * 45) + (core_tp_1 * 15)) + (i_4 * 3)) + j_5)] = ((int32_t*)p1748_S1_all)[((((core_pp_1 * 48) + (core_tp_1 * 16)) + (i_4 * 3)) + j_5)];\n        }\n      }\n      for (int32_t i_5 = 0; i_5 < 5; ++i_5) {\n        for (int32_t j_6 = 0; j_6 < 3; ++j_6) {\n          p1748_Y10[((((core_pp_1 * 45) + (core_tp_1 * 15)) + (i_5 * 3)) + j_6)] = ((int32_t*)p1748_S3_all)[((((core_pp_1 * 48) + (core_tp_1 * 16)) + (i_5 * 3)) + j_6)];\n        }\n      }\n      for (int32_t j_7 = 0; j_7 < 5; ++j_7) {\n        p1748_Y11[(((core_pp_1 * 15) + (core_tp_1 * 5)) + j_7)] = ((int32_t*)p1748_S5_all)[(((core_pp_1 * 24) + (core_tp_1 * 8)) + j_7)];\n      }\n      for (int32_t i_6 = 0; i_6 < 3; ++i_6) {\n        for (int32_t j_8 = 0; j_8 < 5; ++j_8) {\n          p1748_Y12[((((core_pp_1 * 45) + (core_tp_1 * 15)) + (i_6 * 5)) + j_8)] = ((int32_t*)p1748_S6_all)[((((core_pp_1 * 48) + (core_tp_1 * 16)) + (i_6 * 5)) + j_8)];\n        }\n      }\n    }\n  }\n  return 0;\n}\n\n\n#ifdef _WIN32\n#define TL_EXPORT __declspec(dllexport)\n#else\n#define TL_EXPORT\n#endif\n\n#define ERROR_BUF_SIZE 1024\nstatic char error_buf[ERROR_BUF_SIZE];\n\nextern "C" TL_EXPORT const char* get_last_error() {\n    return error_buf;\n}\n\nextern "C" TL_EXPORT int init() {\n    error_buf[0] = \'\\0\';\n    \n    return 0;\n}\n\n#ifdef __cplusplus\nextern "C"\n#endif\nint32_t call(int32_t* p1748_X0, int32_t* p1748_X2, int32_t* p1748_Y9, int32_t* p1748_Y10, int32_t* p1748_Y11, int32_t* p1748_Y12, uint8_t* mesh_workspace) {\n  return fuzz_kernel_kernel(mesh_workspace, p1748_X0, p1748_X2, p1748_Y10, p1748_Y11, p1748_Y12, p1748_Y9);\n}\n\n'


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
        kernel = compile_mesh_kernel(fuzz_kernel)
    except ValueError as e:
        print(f"refused: {e}")
        return 0
    bad = check(kernel, "kernel")
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
