"""meshtensor kernel fuzzer: seed p32, program 507: crash (compile)
features: axis-order, decl-buffer, fold-index, mesh-object, narrow-index, permute, pipelined, region, same-buffer, shared-dyn, shift, uniform-if

RuntimeError: /tmp/mesh-fuzz-dutkebym/work/tmp-2924/tmpcf0q9xav.cpp:117:128: error: no matching function for call to ‘vec_type<int, 2>::vec_type(int32_t, int32_t)’

Run from the repository root: PYTHONPATH=src python <this file>
"""
import tilelang.language as T

from meshtensor.tilelang import mesh_comm
from meshtensor import Mesh

mc = mesh_comm(Mesh({"y": 4, "c": 2}))


@T.prim_func
def fuzz_kernel(p507_X0: T.Tensor((8, 3), "int32"), p507_Y5: T.Tensor((8, 3), "int32"), p507_Y6: T.Tensor((24, 2), "int32")):
    with T.Kernel(4, 2, threads=1) as (b0, b1):
        # -- program 507 (seed p32:507)
        p507_S1 = T.alloc_shared((3,), "int32")
        p507_S3 = T.alloc_local((3, 2), "int32")
        p507_V4 = T.decl_buffer((4,), "int32", data=p507_S3.data, elem_offset=1, scope="local")
        for i, j in T.grid(3, 2):
            p507_S3[i, j] = ((((b0 * 2 + b1) * 3) + i) - j)
        for i in T.grid(3):
            p507_S1[i] = p507_X0[(b0 * 2 + b1), i]
        for i in T.grid(3):
            p507_S1[i] = p507_X0[(b0 * 2 + b1), ((b0 * 2 + b1) % 3)]
        for i in T.serial(3):
            p507_S1[i] = (p507_X0[(b0 * 2 + b1), i] % 2)
        for p507_k2 in T.Pipelined(1, 4, num_stages=3):
            mc.permute(p507_S3[0:2, 0:2], p507_S3[0:2, 0:2], pairs=((6, 3), (6, 4), (2, 2), (4, 7), (5, 6), (2, 0), (2, 5), (1, 1)))
            if ((p507_k2 % 2) == 0):
                mc.shift(p507_V4, p507_V4[0:4], ['c'], offset=-2, rotate=True, shift_axis='c')
            for i in T.serial(1):
                p507_V4[i] = p507_S1[((T.Cast("int16", ((b0 * 2 + b1) * 16384)) // 16384) % 3)]
        T.copy(p507_V4[2:4], p507_S1[0:2])
        for i in T.serial(2):
            for j in T.serial(2):
                p507_S3[(i + 1), j] = (p507_S3[(i + 1), j] * ((i - j) + (2 * b0)))
        T.copy(p507_S1, p507_Y5[(b0 * 2 + b1), 0:3])
        for i, j in T.grid(3, 2):
            p507_Y6[(b0 * 2 + b1) * 3 + i, j] = p507_S3[i, j]


# -- data (written by tools/fuzz_kernels.py) -----------------------------------------
SENTINEL = -77
PARAMS = [
    ('p507_X0', (8, 3), 'int32'),
    ('p507_Y5', (8, 3), 'int32'),
    ('p507_Y6', (24, 2), 'int32'),
]
INPUTS = {
    'p507_X0': [[2, 3, 3], [0, 0, 2], [-2, 2, 2], [1, 1, -2], [-1, 3, -3], [-1, 3, 3], [1, 2, -1], [3, -3, 2]],
}
EXPECTED = {
    'p507_X0': [[2, 3, 3], [0, 0, 2], [-2, 2, 2], [1, 1, -2], [-1, 3, -3], [-1, 3, 3], [1, 2, -1], [3, -3, 2]],
    'p507_Y5': [[6, 2, 1], [3, 5, 0], [6, 8, 0], [6, 11, 0], [6, 14, 1], [6, 17, 1], [6, 20, 1], [15, 23, 0]],
    'p507_Y6': [[6, 0], [0, -6], [2, 0], [3, 0], [0, -3], [5, 0], [6, 0], [14, 6], [24, 14], [6, 0], [14, 6], [33, 20], [6, 1], [28, 18], [70, 52], [6, 1], [28, 18], [85, 64], [6, 0], [42, 30], [140, 114], [15, 0], [96, 75], [161, 132]],
}
EXPECTED_MESH = {'y': 4, 'c': 2}
EXPECTED_COMM_RECEIVED = [[48, 0, 0, 48, 48, 48, 48, 48], [0, 0, 0, 0, 0, 0, 0, 0]]
OBSERVED = '0_5 * 2) + i1_5) + 56)] = ((int32_t*)stage)[(((i0_5 * 2) + i1_5) + 16)];\n      }\n    }\n    for (int32_t i0_6 = 0; i0_6 < 2; ++i0_6) {\n      for (int32_t i1_6 = 0; i1_6 < 2; ++i1_6) {\n        ((int32_t*)p507_S3_all)[(((i0_6 * 2) + i1_6) + 48)] = ((int32_t*)stage)[(((i0_6 * 2) + i1_6) + 20)];\n      }\n    }\n    for (int32_t i0_7 = 0; i0_7 < 2; ++i0_7) {\n      for (int32_t i1_7 = 0; i1_7 < 2; ++i1_7) {\n        ((int32_t*)p507_S3_all)[(((i0_7 * 2) + i1_7) + 24)] = ((int32_t*)stage)[(((i0_7 * 2) + i1_7) + 24)];\n      }\n    }\n    for (int32_t i0_8 = 0; i0_8 < 2; ++i0_8) {\n      for (int32_t i1_8 = 0; i1_8 < 2; ++i1_8) {\n        ((int32_t*)p507_S3_all)[(((i0_8 * 2) + i1_8) + 32)] = ((int32_t*)stage)[(((i0_8 * 2) + i1_8) + 24)];\n      }\n    }\n    if ((p507_k2 % 2) == 0) {\n      void* stage_1 = comm_stage;\n      for (int32_t src_y_1 = 0; src_y_1 < 4; ++src_y_1) {\n        for (int32_t src_c_1 = 0; src_c_1 < 2; ++src_c_1) {\n          for (int32_t i0_9 = 0; i0_9 < 4; ++i0_9) {\n            ((int32_t*)stage_1)[(((src_y_1 * 8) + (src_c_1 * 4)) + i0_9)] = ((int32_t*)p507_S3_all)[((((src_y_1 * 16) + (src_c_1 * 8)) + i0_9) + 1)];\n          }\n        }\n      }\n      for (int32_t dst_y = 0; dst_y < 4; ++dst_y) {\n        for (int32_t dst_c = 0; dst_c < 2; ++dst_c) {\n          for (int32_t i0_10 = 0; i0_10 < 4; ++i0_10) {\n            ((int32_t*)p507_S3_all)[((((dst_y * 16) + (dst_c * 8)) + i0_10) + 1)] = ((int32_t*)stage_1)[(((dst_y * 8) + (dst_c * 4)) + i0_10)];\n          }\n        }\n      }\n    }\n    for (int32_t core_y_1 = 0; core_y_1 < 4; ++core_y_1) {\n      for (int32_t core_c_1 = 0; core_c_1 < 2; ++core_c_1) {\n        index[0] = (((49152 & ((((int32_t)((int16_t)(((((core_y_1 * 32768) + (core_c_1 * 16384)) + 32768) & 65535) - 32768))) % 49152) >> 31)) + (((int32_t)((int16_t)(((((core_y_1 * 32768) + (core_c_1 * 16384)) + 32768) & 65535) - 32768))) % 49152)) >> 14);\n        int32_t condval;\n        if (((0 <= index[0]) && (index[0] < 3))) {\n          condval = ((int32_t*)p507_S1_all)[(((((int64_t)core_y_1) * (int64_t)8) + (((int64_t)core_c_1) * (int64_t)4)) + ((int64_t)index[(int64_t)0]))];\n        } else {\n          condval = 0;\n        }\n        ((int32_t*)p507_S3_all)[(((core_y_1 * 16) + (core_c_1 * 8)) + 1)] = condval;\n      }\n    }\n  }\n  for (int32_t core_y_2 = 0; core_y_2 < 4; ++core_y_2) {\n    for (int32_t core_c_2 = 0; core_c_2 < 2; ++core_c_2) {\n      int32_t2 v_ = int32_t2(((((core_y_2 * 16) + (core_c_2 * 8)) + 3))+(1*0), ((((core_y_2 * 16) + (core_c_2 * 8)) + 3))+(1*1));\n      *(int32_t2*)(((int32_t*)p507_S1_all) + ((core_y_2 * 8) + (core_c_2 * 4))) = (int32_t2(((int32_t*)p507_S3_all)[v_.s0],((int32_t*)p507_S3_all)[v_.s1]));\n      for (int32_t i_4 = 0; i_4 < 2; ++i_4) {\n        for (int32_t j_1 = 0; j_1 < 2; ++j_1) {\n          ((int32_t*)p507_S3_all)[(((((core_y_2 * 16) + (core_c_2 * 8)) + (i_4 * 2)) + j_1) + 2)] = (((int32_t*)p507_S3_all)[(((((core_y_2 * 16) + (core_c_2 * 8)) + (i_4 * 2)) + j_1) + 2)] * (((core_y_2 * 2) + i_4) - j_1));\n        }\n      }\n      for (int32_t i_5 = 0; i_5 < 3; ++i_5) {\n        p507_Y5[(((core_y_2 * 6) + (core_c_2 * 3)) + i_5)] = ((int32_t*)p507_S1_all)[(((core_y_2 * 8) + (core_c_2 * 4)) + i_5)];\n      }\n      for (int32_t i_6 = 0; i_6 < 3; ++i_6) {\n        for (int32_t j_2 = 0; j_2 < 2; ++j_2) {\n          p507_Y6[((((core_y_2 * 12) + (core_c_2 * 6)) + (i_6 * 2)) + j_2)] = ((int32_t*)p507_S3_all)[((((core_y_2 * 16) + (core_c_2 * 8)) + (i_6 * 2)) + j_2)];\n        }\n      }\n    }\n  }\n  return 0;\n}\n\n\n#ifdef _WIN32\n#define TL_EXPORT __declspec(dllexport)\n#else\n#define TL_EXPORT\n#endif\n\n#define ERROR_BUF_SIZE 1024\nstatic char error_buf[ERROR_BUF_SIZE];\n\nextern "C" TL_EXPORT const char* get_last_error() {\n    return error_buf;\n}\n\nextern "C" TL_EXPORT int init() {\n    error_buf[0] = \'\\0\';\n    \n    return 0;\n}\n\n#ifdef __cplusplus\nextern "C"\n#endif\nint32_t call(int32_t* p507_X0, int32_t* p507_Y5, int32_t* p507_Y6, uint8_t* mesh_workspace) {\n  return fuzz_kernel_kernel(mesh_workspace, p507_X0, p507_Y5, p507_Y6);\n}\n\n'
MUST_REFUSE = ''  # why the layer must refuse the kernel ("": valid)
CHECK_RACES = False  # compiled with check_races=True


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
