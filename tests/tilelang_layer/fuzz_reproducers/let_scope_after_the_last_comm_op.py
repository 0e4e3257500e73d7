"""meshtensor kernel fuzzer: seed 778, program 122: crash (compile)
features: all_reduce, core-region, global-write, int-axes, launch-1d, let, let-after-write, parallel, permute, reduce_scatter, region, same-buffer, var

RuntimeError: /tmp/fuzzrun4/repros/work/tmp-7794/tmpfzvlhh5x.cpp:106:69: error: ‘p122_t10’ was not declared in this scope; did you mean ‘p122_t13’?

A per-core let (p122_t10) and then a let every core shares (p122_t12, simplified to a
constant) after the last comm op: the lowering split the code there and used
p122_t10 outside its scope. A shared let where no comm op follows now stays inside the
last segment.

Run from the repository root: PYTHONPATH=src python <this file>
"""
import tilelang.language as T

from meshtensor.tilelang import mesh_comm

mc = mesh_comm({"a": 4, "row": 2})


@T.prim_func
def fuzz_kernel(p122_X0: T.Tensor((4, 2, 4, 5), "float32"), p122_Y14: T.Tensor((32, 5), "float32"), p122_Y15: T.Tensor((4, 2, 6), "float32"), p122_Y16: T.Tensor((48,), "float32"), p122_Y17: T.Tensor((4, 2, 8), "float32"), p122_Y18: T.Tensor((16,), "float32"), p122_Y19: T.Tensor((4, 2, 2, 5), "float32"), p122_Y20: T.Tensor((8, 1), "float32")):
    with T.Kernel(8, threads=1) as bx:
        c0 = bx // 2
        c1 = bx % 2
        # -- program 122 (seed 778:122)
        p122_S1 = T.alloc_local((4, 5), "float32")
        p122_S3 = T.alloc_shared((6,), "float32", scope="shared")
        p122_S4 = T.alloc_local((6,), "float32")
        p122_S5 = T.alloc_shared((8,), "float32", scope="shared")
        p122_S6 = T.alloc_shared((2,), "float32", scope="shared")
        p122_S9 = T.alloc_shared((2, 5), "float32", scope="shared")
        p122_v11 = T.alloc_var("float32")
        for i in T.grid(6):
            p122_S3[i] = T.Cast("float32", ((bx * 1) + i))
        for i in T.grid(6):
            p122_S4[i] = T.Cast("float32", ((bx * 1) - i))
        for i in T.grid(8):
            p122_S5[i] = T.Cast("float32", ((bx * 1) - i))
        for i in T.grid(2):
            p122_S6[i] = 2.0
        for i, j in T.Parallel(2, 5):
            p122_S9[i, j] = (0.0 + T.Cast("float32", bx))
        p122_v11 = 0.0
        for i, j in T.grid(4, 5):
            p122_S1[i, j] = p122_X0[c0, c1, i, j]
        for p122_k2 in T.serial(4):
            mc.permute(p122_S3, p122_S4[0:6], pairs=(((2, 1), (3, 0)),))
            mc.reduce_scatter(p122_S5, p122_S6[0:1], ['a', 'row'], reduction='max', scatter_axis=0)
        for p122_k7 in T.serial(2):
            for p122_k8 in T.serial(1):
                mc.all_reduce(p122_S9[0:2, (p122_k7 % 3):(p122_k7 % 3) + 3], p122_S9[0:2, 0:3], [0], reduction='sum')
        p122_t10 = p122_X0[c0, c1, 1, 3]
        p122_X0[c0, c1, 1, 3] = 5.0
        for i in T.grid(3):
            p122_S5[(i + 4)] = (p122_t10 - T.min((p122_X0[c0, c1, 2, (i + 2)] - 0.0), 2.0))
        p122_v11 = (p122_v11 + ((p122_X0[c0, c1, 1, (bx % 5)] + 5.0) - p122_S9[1, 3]))
        p122_t12 = ((p122_X0[c0, c1, 2, ((c1 + c0) % 5)] * 0.0) * (0.0 - T.Cast("float32", bx)))
        for i in T.serial(2):
            for j in T.serial(4):
                p122_S1[(i + (c1 % 3)), j] = p122_S9[1, 2]
        p122_t13 = p122_S6[0]
        p122_S6[0] = (p122_t10 + (T.Cast("float32", bx) + T.Cast("float32", 3)))
        for i in T.grid(2):
            p122_S3[i] = (p122_t13 + p122_S5[(i + 1)])
        for i, j in T.grid(4, 5):
            p122_Y14[bx * 4 + i, j] = p122_S1[i, j]
        for i in T.grid(6):
            p122_Y15[c0, c1, i] = p122_S3[i]
        T.copy(p122_S4, p122_Y16[bx * 6 + 0:bx * 6 + 0 + 6])
        for i in T.grid(8):
            p122_Y17[c0, c1, i] = p122_S5[i]
        T.copy(p122_S6, p122_Y18[bx * 2 + 0:bx * 2 + 0 + 2])
        for i, j in T.grid(2, 5):
            p122_Y19[c0, c1, i, j] = p122_S9[i, j]
        p122_Y20[bx, 0] = p122_v11


# -- data (written by tools/fuzz_kernels.py) -----------------------------------------
SENTINEL = -77
PARAMS = [
    ('p122_X0', (4, 2, 4, 5), 'float32'),
    ('p122_Y14', (32, 5), 'float32'),
    ('p122_Y15', (4, 2, 6), 'float32'),
    ('p122_Y16', (48,), 'float32'),
    ('p122_Y17', (4, 2, 8), 'float32'),
    ('p122_Y18', (16,), 'float32'),
    ('p122_Y19', (4, 2, 2, 5), 'float32'),
    ('p122_Y20', (8, 1), 'float32'),
]
INPUTS = {
    'p122_X0': [[[[2.0, 2.0, 3.0, -3.0, -1.0], [-1.0, 1.0, -3.0, 0.0, 2.0], [-2.0, -3.0, -2.0, 3.0, 2.0], [3.0, 3.0, -2.0, 1.0, 3.0]], [[3.0, 3.0, -2.0, 0.0, 1.0], [0.0, 3.0, 3.0, 0.0, 2.0], [-1.0, 3.0, -3.0, 1.0, -3.0], [-3.0, -2.0, -1.0, 3.0, 2.0]]], [[[-3.0, 0.0, -2.0, -2.0, 2.0], [-1.0, 1.0, 1.0, -2.0, 2.0], [0.0, -2.0, -1.0, -2.0, 1.0], [-2.0, -2.0, 2.0, 2.0, -2.0]], [[-3.0, 1.0, 3.0, 1.0, -3.0], [2.0, -1.0, 0.0, -2.0, 3.0], [2.0, 2.0, 1.0, 3.0, 2.0], [-1.0, 2.0, 1.0, 1.0, -1.0]]], [[[-1.0, -2.0, 3.0, -3.0, 3.0], [0.0, -1.0, 1.0, -1.0, -1.0], [1.0, -2.0, 1.0, 3.0, 2.0], [0.0, 1.0, -3.0, 2.0, 3.0]], [[1.0, 3.0, -1.0, -2.0, 1.0], [0.0, 3.0, -1.0, 3.0, 1.0], [1.0, 1.0, -3.0, 3.0, 2.0], [2.0, 0.0, 2.0, -3.0, -2.0]]], [[[1.0, 1.0, -3.0, 3.0, -2.0], [0.0, 1.0, 1.0, 0.0, 1.0], [-3.0, 2.0, 0.0, -3.0, 0.0], [-3.0, 2.0, 3.0, -3.0, -1.0]], [[0.0, 1.0, 3.0, 0.0, 0.0], [-3.0, -1.0, 2.0, 0.0, 3.0], [-2.0, -1.0, -1.0, 0.0, -3.0], [-1.0, -1.0, -2.0, 2.0, 1.0]]]],
}
EXPECTED = {
    'p122_X0': [[[[2.0, 2.0, 3.0, -3.0, -1.0], [-1.0, 1.0, -3.0, 5.0, 2.0], [-2.0, -3.0, -2.0, 3.0, 2.0], [3.0, 3.0, -2.0, 1.0, 3.0]], [[3.0, 3.0, -2.0, 0.0, 1.0], [0.0, 3.0, 3.0, 5.0, 2.0], [-1.0, 3.0, -3.0, 1.0, -3.0], [-3.0, -2.0, -1.0, 3.0, 2.0]]], [[[-3.0, 0.0, -2.0, -2.0, 2.0], [-1.0, 1.0, 1.0, 5.0, 2.0], [0.0, -2.0, -1.0, -2.0, 1.0], [-2.0, -2.0, 2.0, 2.0, -2.0]], [[-3.0, 1.0, 3.0, 1.0, -3.0], [2.0, -1.0, 0.0, 5.0, 3.0], [2.0, 2.0, 1.0, 3.0, 2.0], [-1.0, 2.0, 1.0, 1.0, -1.0]]], [[[-1.0, -2.0, 3.0, -3.0, 3.0], [0.0, -1.0, 1.0, 5.0, -1.0], [1.0, -2.0, 1.0, 3.0, 2.0], [0.0, 1.0, -3.0, 2.0, 3.0]], [[1.0, 3.0, -1.0, -2.0, 1.0], [0.0, 3.0, -1.0, 5.0, 1.0], [1.0, 1.0, -3.0, 3.0, 2.0], [2.0, 0.0, 2.0, -3.0, -2.0]]], [[[1.0, 1.0, -3.0, 3.0, -2.0], [0.0, 1.0, 1.0, 5.0, 1.0], [-3.0, 2.0, 0.0, -3.0, 0.0], [-3.0, 2.0, 3.0, -3.0, -1.0]], [[0.0, 1.0, 3.0, 0.0, 0.0], [-3.0, -1.0, 2.0, 5.0, 3.0], [-2.0, -1.0, -1.0, 0.0, -3.0], [-1.0, -1.0, -2.0, 2.0, 1.0]]]],
    'p122_Y14': [[12.0, 12.0, 12.0, 12.0, -1.0], [12.0, 12.0, 12.0, 12.0, 2.0], [-2.0, -3.0, -2.0, 3.0, 2.0], [3.0, 3.0, -2.0, 1.0, 3.0], [3.0, 3.0, -2.0, 0.0, 1.0], [16.0, 16.0, 16.0, 16.0, 2.0], [16.0, 16.0, 16.0, 16.0, -3.0], [-3.0, -2.0, -1.0, 3.0, 2.0], [12.0, 12.0, 12.0, 12.0, 2.0], [12.0, 12.0, 12.0, 12.0, 2.0], [0.0, -2.0, -1.0, -2.0, 1.0], [-2.0, -2.0, 2.0, 2.0, -2.0], [-3.0, 1.0, 3.0, 1.0, -3.0], [16.0, 16.0, 16.0, 16.0, 3.0], [16.0, 16.0, 16.0, 16.0, 2.0], [-1.0, 2.0, 1.0, 1.0, -1.0], [12.0, 12.0, 12.0, 12.0, 3.0], [12.0, 12.0, 12.0, 12.0, -1.0], [1.0, -2.0, 1.0, 3.0, 2.0], [0.0, 1.0, -3.0, 2.0, 3.0], [1.0, 3.0, -1.0, -2.0, 1.0], [16.0, 16.0, 16.0, 16.0, 1.0], [16.0, 16.0, 16.0, 16.0, 2.0], [2.0, 0.0, 2.0, -3.0, -2.0], [12.0, 12.0, 12.0, 12.0, -2.0], [12.0, 12.0, 12.0, 12.0, 1.0], [-3.0, 2.0, 0.0, -3.0, 0.0], [-3.0, 2.0, 3.0, -3.0, -1.0], [0.0, 1.0, 3.0, 0.0, 0.0], [16.0, 16.0, 16.0, 16.0, 3.0], [16.0, 16.0, 16.0, 16.0, -3.0], [-1.0, -1.0, -2.0, 2.0, 1.0]],
    'p122_Y15': [[[6.0, 5.0, 2.0, 3.0, 4.0, 5.0], [6.0, 5.0, 3.0, 4.0, 5.0, 6.0]], [[6.0, 5.0, 4.0, 5.0, 6.0, 7.0], [6.0, 5.0, 5.0, 6.0, 7.0, 8.0]], [[6.0, 5.0, 6.0, 7.0, 8.0, 9.0], [6.0, 5.0, 7.0, 8.0, 9.0, 10.0]], [[6.0, 5.0, 8.0, 9.0, 10.0, 11.0], [6.0, 5.0, 9.0, 10.0, 11.0, 12.0]]],
    'p122_Y16': [0.0, -1.0, -2.0, -3.0, -4.0, -5.0, 1.0, 0.0, -1.0, -2.0, -3.0, -4.0, 2.0, 1.0, 0.0, -1.0, -2.0, -3.0, 3.0, 2.0, 1.0, 0.0, -1.0, -2.0, 4.0, 3.0, 2.0, 1.0, 0.0, -1.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0],
    'p122_Y17': [[[0.0, -1.0, -2.0, -3.0, 2.0, -2.0, -2.0, -7.0], [1.0, 0.0, -1.0, -2.0, 3.0, -1.0, 3.0, -6.0]], [[2.0, 1.0, 0.0, -1.0, -1.0, 0.0, -3.0, -5.0], [3.0, 2.0, 1.0, 0.0, -3.0, -4.0, -4.0, -4.0]], [[4.0, 3.0, 2.0, 1.0, -2.0, -3.0, -3.0, -3.0], [5.0, 4.0, 3.0, 2.0, 6.0, 1.0, 1.0, -2.0]], [[6.0, 5.0, 4.0, 3.0, 0.0, 3.0, 0.0, -1.0], [7.0, 6.0, 5.0, 4.0, 1.0, 0.0, 3.0, 0.0]]],
    'p122_Y18': [3.0, 2.0, 4.0, 2.0, 3.0, 2.0, 4.0, 2.0, 6.0, 2.0, 11.0, 2.0, 9.0, 2.0, 10.0, 2.0],
    'p122_Y19': [[[[48.0, 48.0, 12.0, 0.0, 0.0], [48.0, 48.0, 12.0, 0.0, 0.0]], [[64.0, 64.0, 16.0, 1.0, 1.0], [64.0, 64.0, 16.0, 1.0, 1.0]]], [[[48.0, 48.0, 12.0, 2.0, 2.0], [48.0, 48.0, 12.0, 2.0, 2.0]], [[64.0, 64.0, 16.0, 3.0, 3.0], [64.0, 64.0, 16.0, 3.0, 3.0]]], [[[48.0, 48.0, 12.0, 4.0, 4.0], [48.0, 48.0, 12.0, 4.0, 4.0]], [[64.0, 64.0, 16.0, 5.0, 5.0], [64.0, 64.0, 16.0, 5.0, 5.0]]], [[[48.0, 48.0, 12.0, 6.0, 6.0], [48.0, 48.0, 12.0, 6.0, 6.0]], [[64.0, 64.0, 16.0, 7.0, 7.0], [64.0, 64.0, 16.0, 7.0, 7.0]]]],
    'p122_Y20': [[4.0], [7.0], [4.0], [7.0], [0.0], [0.0], [0.0], [0.0]],
}
EXPECTED_MESH = {'a': 4, 'row': 2}
EXPECTED_COMM_RECEIVED = [[0, 0, 0, 0, 0, 0, 96, 0], [112, 112, 112, 112, 112, 112, 112, 112], [80, 80, 80, 80, 80, 80, 48, 48]]
OBSERVED = ') + (i0_3 * 5)) + i1_2)] + ((float*)stage)[(((((p_1 * 12) + (dst_row_1 * 6)) + (i0_3 * 3)) + i1_2) + 12)]);\n            }\n          }\n        }\n      }\n    }\n  }\n  for (int32_t core_a_1 = 0; core_a_1 < 4; ++core_a_1) {\n    for (int32_t core_row_1 = 0; core_row_1 < 2; ++core_row_1) {\n      float p122_t10 = p122_X0[(((core_a_1 * 40) + (core_row_1 * 20)) + 8)];\n      p122_X0[(((core_a_1 * 40) + (core_row_1 * 20)) + 8)] = 5.000000e+00f;\n      for (int32_t i_6 = 0; i_6 < 3; ++i_6) {\n        ((float*)p122_S5_all)[((((core_a_1 * 16) + (core_row_1 * 8)) + i_6) + 4)] = (p122_t10 - ((p122_X0[((((core_a_1 * 40) + (core_row_1 * 20)) + i_6) + 12)] < 2.000000e+00f) ? p122_X0[((((core_a_1 * 40) + (core_row_1 * 20)) + i_6) + 12)] : 2.000000e+00f));\n      }\n      ((float*)p122_v11_all)[((core_a_1 * 2) + core_row_1)] = (((float*)p122_v11_all)[((core_a_1 * 2) + core_row_1)] + ((p122_X0[((((core_a_1 * 40) + (core_row_1 * 20)) + (((core_a_1 * 2) + core_row_1) % 5)) + 5)] + 5.000000e+00f) - ((float*)p122_S9_all)[(((core_a_1 * 32) + (core_row_1 * 16)) + 8)]));\n    }\n  }\n  for (int32_t core_a_2 = 0; core_a_2 < 4; ++core_a_2) {\n    for (int32_t core_row_2 = 0; core_row_2 < 2; ++core_row_2) {\n      for (int32_t i_7 = 0; i_7 < 2; ++i_7) {\n        for (int32_t j_1 = 0; j_1 < 4; ++j_1) {\n          ((float*)p122_S1_all)[((((core_a_2 * 64) + (core_row_2 * 37)) + (i_7 * 5)) + j_1)] = ((float*)p122_S9_all)[(((core_a_2 * 32) + (core_row_2 * 16)) + 7)];\n        }\n      }\n      float p122_t13 = ((float*)p122_S6_all)[((core_a_2 * 4) + (core_row_2 * 2))];\n      ((float*)p122_S6_all)[((core_a_2 * 4) + (core_row_2 * 2))] = (p122_t10 + (((float)((core_a_2 * 2) + core_row_2)) + 3.000000e+00f));\n      for (int32_t i_8 = 0; i_8 < 2; ++i_8) {\n        ((float*)p122_S3_all)[(((core_a_2 * 16) + (core_row_2 * 8)) + i_8)] = (p122_t13 + ((float*)p122_S5_all)[((((core_a_2 * 16) + (core_row_2 * 8)) + i_8) + 1)]);\n      }\n      for (int32_t i_9 = 0; i_9 < 4; ++i_9) {\n        for (int32_t j_2 = 0; j_2 < 5; ++j_2) {\n          p122_Y14[((((core_a_2 * 40) + (core_row_2 * 20)) + (i_9 * 5)) + j_2)] = ((float*)p122_S1_all)[((((core_a_2 * 64) + (core_row_2 * 32)) + (i_9 * 5)) + j_2)];\n        }\n      }\n      for (int32_t i_10 = 0; i_10 < 6; ++i_10) {\n        p122_Y15[(((core_a_2 * 12) + (core_row_2 * 6)) + i_10)] = ((float*)p122_S3_all)[(((core_a_2 * 16) + (core_row_2 * 8)) + i_10)];\n      }\n      for (int32_t i_11 = 0; i_11 < 3; ++i_11) {\n        *(float2*)(p122_Y16 + (((core_a_2 * 12) + (core_row_2 * 6)) + (i_11 * 2))) = *(float2*)(((float*)p122_S4_all) + (((core_a_2 * 16) + (core_row_2 * 8)) + (i_11 * 2)));\n      }\n      for (int32_t i_12 = 0; i_12 < 8; ++i_12) {\n        p122_Y17[(((core_a_2 * 16) + (core_row_2 * 8)) + i_12)] = ((float*)p122_S5_all)[(((core_a_2 * 16) + (core_row_2 * 8)) + i_12)];\n      }\n      *(float2*)(p122_Y18 + ((core_a_2 * 4) + (core_row_2 * 2))) = *(float2*)(((float*)p122_S6_all) + ((core_a_2 * 4) + (core_row_2 * 2)));\n      for (int32_t i_13 = 0; i_13 < 2; ++i_13) {\n        for (int32_t j_3 = 0; j_3 < 5; ++j_3) {\n          p122_Y19[((((core_a_2 * 20) + (core_row_2 * 10)) + (i_13 * 5)) + j_3)] = ((float*)p122_S9_all)[((((core_a_2 * 32) + (core_row_2 * 16)) + (i_13 * 5)) + j_3)];\n        }\n      }\n      p122_Y20[((core_a_2 * 2) + core_row_2)] = ((float*)p122_v11_all)[((core_a_2 * 2) + core_row_2)];\n    }\n  }\n  return 0;\n}\n\n\n#ifdef _WIN32\n#define TL_EXPORT __declspec(dllexport)\n#else\n#define TL_EXPORT\n#endif\n\n#define ERROR_BUF_SIZE 1024\nstatic char error_buf[ERROR_BUF_SIZE];\n\nextern "C" TL_EXPORT const char* get_last_error() {\n    return error_buf;\n}\n\nextern "C" TL_EXPORT int init() {\n    error_buf[0] = \'\\0\';\n    \n    return 0;\n}\n\n#ifdef __cplusplus\nextern "C"\n#endif\nint32_t call(float* p122_X0, float* p122_Y14, float* p122_Y15, float* p122_Y16, float* p122_Y17, float* p122_Y18, float* p122_Y19, float* p122_Y20, uint8_t* mesh_workspace) {\n  return fuzz_kernel_kernel(mesh_workspace, p122_X0, p122_Y14, p122_Y15, p122_Y16, p122_Y17, p122_Y18, p122_Y19, p122_Y20);\n}\n\n'


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
