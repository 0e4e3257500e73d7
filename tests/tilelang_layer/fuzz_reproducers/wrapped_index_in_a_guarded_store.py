"""meshtensor kernel fuzzer: seed m27, program 660: crash (compile)
features: all_to_all, alloc-buffer, axis-order, barrier, barrier-axes, core-if, fold-write, fragment, launch-1d, mesh-object, narrow-index, narrow-start, parallel, pipelined, select, uneven, uniform-if, var; shown in its batch of 5, look at p660_*

only together with programs [656, 657, 658, 659, 660]: InternalError: Check failed: (combined.defined()) is false:

Run from the repository root: PYTHONPATH=src python <this file>
"""
import tilelang.language as T

from meshtensor.tilelang import mesh_comm
from meshtensor import Mesh

mc = mesh_comm(Mesh({"q": 2, "pp": 2}))


def p657_comm0(src, dst):
    mc.permute(src, dst, pairs=((2, 0),))


@T.prim_func
def fuzz_kernel(p656_X0: T.Tensor((4, 2, 1), "int32"), p656_Y10: T.Tensor((4, 2, 1), "int32"), p656_Y11: T.Tensor((12,), "int32"), p656_Y12: T.Tensor((8,), "int32"), p656_Y13: T.Tensor((12,), "int32"), p656_Y14: T.Tensor((4, 1), "int32"), p657_X0: T.Tensor((4, 5), "float32"), p657_X2: T.Tensor((2, 2, 5, 2), "float32"), p657_X7: T.Tensor((2, 2, 1), "int32"), p657_Y9: T.Tensor((2, 2, 1, 5), "float32"), p657_Y10: T.Tensor((4, 5, 2), "float32"), p657_Y11: T.Tensor((2, 2, 5), "float32"), p657_Y12: T.Tensor((80,), "float32"), p657_Y13: T.Tensor((4, 4), "int32"), p657_Y14: T.Tensor((4,), "float32"), p658_X0: T.Tensor((4, 6, 5), "int32"), p658_X9: T.Tensor((4, 4, 5), "int32"), p658_Y11: T.Tensor((24, 5), "int32"), p658_Y12: T.Tensor((2, 2, 15, 2), "int32"), p658_Y13: T.Tensor((8,), "int32"), p658_Y14: T.Tensor((4, 4), "int32"), p659_X0: T.Tensor((2, 2, 3, 3), "int32"), p659_Y7: T.Tensor((2, 2, 3, 3), "int32"), p659_Y8: T.Tensor((4, 4), "int32"), p659_Y9: T.Tensor((24,), "int32"), p659_Y10: T.Tensor((8,), "int32"), p660_X0: T.Tensor((4, 3), "int32"), p660_X2: T.Tensor((2, 2, 4), "int32"), p660_Y10: T.Tensor((4, 1, 3), "int32"), p660_Y11: T.Tensor((4, 4), "int32"), p660_Y12: T.Tensor((4, 6), "int32"), p660_Y13: T.Tensor((2, 2, 8), "int32"), p660_Y14: T.Tensor((4, 1), "int32")):
    with T.Kernel(4, threads=1) as bx:
        c0 = bx // 2
        c1 = bx % 2
        # -- program 656 (seed m27:656)
        p656_S1 = T.alloc_local((2, 1), "int32")
        p656_S2 = T.alloc_local((3,), "int32")
        p656_S3 = T.alloc_local((2,), "int32")
        p656_S9 = T.alloc_shared((3,), "int32", scope="shared")
        p656_v6 = T.alloc_var("int32")
        for i in T.grid(3):
            p656_S2[i] = ((bx * 3) + i)
        for i in T.grid(2):
            p656_S3[i] = ((bx * 3) - i)
        p656_v6 = 0
        for i in T.grid(3):
            p656_S9[i] = (-2)
        T.copy(p656_X0[bx, 0:2, 0:1], p656_S1)
        mc.all_to_all(p656_S2[((T.Cast("uint8", ((c0 * 64) + 4)) % 32) % 2):((T.Cast("uint8", ((c0 * 64) + 4)) % 32) % 2) + 2], p656_S3, ['q'], concat_axis=0, split_axis=0)
        for p656_k4 in T.serial(4):
            T.copy(p656_X0[bx, 0:2, 0:1], p656_S1[0:2, 0:1])
            for p656_k5 in T.Pipelined(3, num_stages=2):
                for i in T.serial(2):
                    for j in T.serial(1):
                        p656_S1[i, j] = i
                p656_v6 = (p656_v6 + T.max(2, (p656_S1[((bx - bx) % 2), 0] % 4)))
                if ((p656_k5 % 2) == 0):
                    mc.shift(p656_S3[0:2], p656_S2[0:2], ['pp', 'q'], offset=1, rotate=False, shift_axis='q')
        for p656_k7 in T.serial(4):
            for i in T.grid(1):
                p656_S2[(i + 1)] = T.max(T.min((p656_S3[(i + 1)] * (p656_X0[bx, (i + 1), i] * p656_S1[i, 0])), 4), (-4))
            for p656_k8 in T.Pipelined(3, num_stages=2):
                mc.broadcast(p656_S2[0:3], p656_S9, ['pp'], root=[((p656_k7 + 3) % 2)])
            p656_v6 = p656_k7
        for i, j in T.grid(2, 1):
            p656_S1[((i + ((4 + 1) // 2)) % 2), j] = p656_S3[i]
        for i, j in T.grid(2, 1):
            p656_Y10[((bx + 1) % 4), i, j] = p656_S1[i, j]
        for i in T.grid(3):
            p656_Y11[bx * 3 + i] = p656_S2[i]
        for i in T.grid(2):
            p656_Y12[bx * 2 + i] = p656_S3[i]
        T.copy(p656_S9, p656_Y13[bx * 3 + 0:bx * 3 + 0 + 3])
        p656_Y14[bx, 0] = p656_v6
        # -- program 657 (seed m27:657)
        p657_S1 = T.alloc_buffer((1, 5), "float32", scope="global")
        p657_S3 = T.alloc_shared((5, 2), "float32", scope="shared")
        p657_S4 = T.alloc_shared((5,), "float32", scope="shared")
        p657_S5 = T.alloc_local((20,), "float32")
        p657_S8 = T.alloc_local((4,), "int32")
        p657_v6 = T.alloc_var("float32")
        for i in T.grid(5):
            p657_S4[i] = T.Cast("float32", ((bx * 2) - i))
        p657_v6 = 0.0
        for i in T.grid(4):
            p657_S8[i] = ((bx * 3) + i)
        T.copy(p657_X0[bx * 1 + 0:bx * 1 + 0 + 1, 0:5], p657_S1)
        for i, j in T.grid(5, 2):
            p657_S3[i, j] = p657_X2[c0, c1, i, j]
        mc.all_gather(p657_S4, p657_S5, ['q', 'pp'], gather_axis=0)
        p657_v6 = T.Cast("float32", bx)
        p657_comm0(p657_S1, p657_S1[0:1, 0:5])
        T.copy(p657_X7[((bx + 1) % 4) // 2, ((bx + 1) % 4) % 2, 0:1], p657_S8[2:3])
        T.copy(p657_S1, p657_Y9[c0, c1, 0:1, 0:5])
        for i, j in T.grid(5, 2):
            p657_Y10[bx, i, j] = p657_S3[i, j]
        T.copy(p657_S4, p657_Y11[c0, c1, 0:5])
        for i in T.grid(20):
            p657_Y12[bx * 20 + i] = p657_S5[i]
        for i in T.grid(4):
            p657_Y13[bx, i] = p657_S8[i]
        p657_Y14[bx * 1 + 0] = p657_v6
        # -- program 658 (seed m27:658)
        p658_S1 = T.alloc_local((6, 5), "int32")
        p658_S5 = T.alloc_shared((15, 2), "int32", scope="shared")
        p658_S7 = T.alloc_shared((2,), "int32", scope="shared")
        p658_S8 = T.alloc_buffer((4,), "int32")
        p658_V4 = T.view(p658_S1, (15, 2), dtype="float32")
        p658_V6 = T.view(p658_S5, (15, 2), dtype="float32")
        for i, j in T.grid(15, 2):
            p658_S5[i, j] = (((bx * 1) - i) - j)
        for i in T.Parallel(2):
            p658_S7[i] = ((-2) + bx)
        T.fill(p658_S8, (-2))
        for i, j in T.grid(6, 5):
            p658_S1[i, j] = p658_X0[bx, i, j]
        p658_t2 = (1 + bx)
        for i, j in T.grid(4, 4):
            p658_S1[(i + (c0 % 3)), j] = p658_S1[(i + (c0 % 3)), j]
        for p658_k3 in T.serial(4):
            if (p658_k3 != 2):
                mc.barrier()
            for i, j in T.grid(2, 4):
                p658_S1[(i + 3), j] = (T.min(p658_S1[(i + 3), j], bx) - p658_S1[(i + 3), j])
            mc.shift(p658_V4, p658_V6[0:15, 0:2], ['q'], offset=1, rotate=True, shift_axis='q')
            for i, j in T.grid(8, 2):
                p658_S5[i, j] = 5
        mc.broadcast(p658_S7, p658_S8[1:3], [0, 1], root=[0, 1])
        for i, j in T.grid(4, 5):
            p658_X9[bx, i, j] = p658_t2
        mc.barrier()
        T.copy(p658_X9[(((((bx // 2) + 1) % 2) * 2) + (((bx % 2) + 1) % 2)), 0:2, 3:5], p658_S5[3:5, 0:2])
        T.fill(p658_S8, c0)
        p658_t10 = c0
        for i, j in T.grid(6, 3):
            p658_S1[i, j] = ((2 // 5) - (p658_S1[i, j] + p658_t2))
        for i, j in T.grid(6, 5):
            p658_Y11[bx * 6 + i, j] = p658_S1[i, j]
        T.copy(p658_S5, p658_Y12[c0, c1, 0:15, 0:2])
        for i in T.grid(2):
            p658_Y13[bx * 2 + i] = p658_S7[i]
        T.copy(p658_S8, p658_Y14[bx, 0:4])
        # -- program 659 (seed m27:659)
        p659_S1 = T.alloc_shared((3, 3), "int32", scope="shared")
        p659_S5 = T.alloc_local((4,), "int32")
        p659_S6 = T.alloc_shared((6,), "int32", scope="shared")
        p659_v2 = T.alloc_var("int32")
        p659_v3 = T.alloc_var("int32")
        p659_v2 = 0
        p659_v3 = 0
        for i in T.grid(4):
            p659_S5[i] = ((bx * 1) + i)
        for i in T.grid(6):
            p659_S6[i] = ((bx * 3) - i)
        T.copy(p659_X0[c0, c1, 0:3, 0:3], p659_S1)
        p659_v2 = (c1 * (p659_v2 // 2))
        p659_v3 = (T.max(c0, c0) % 4)
        p659_t4 = 2
        p659_S1[0, 2] = p659_X0[c0, c1, ((T.Cast("uint8", (c0 * 200)) % 100) % 3), (p659_v2 % 3)]
        mc.shift(p659_S5, p659_S6[0:4], ['pp'], offset=-1, rotate=True, shift_axis='pp')
        T.copy(p659_S1, p659_Y7[c0, c1, 0:3, 0:3])
        T.copy(p659_S5, p659_Y8[bx, 0:4])
        for i in T.grid(6):
            p659_Y9[bx * 6 + i] = p659_S6[i]
        p659_Y10[bx * 2 + 0] = p659_v2
        p659_Y10[bx * 2 + 1] = p659_v3
        # -- program 660 (seed m27:660)
        p660_S1 = T.alloc_shared((1, 3), "int32", scope="shared")
        p660_S3 = T.alloc_local((4,), "int32")
        p660_S7 = T.alloc_buffer((6,), "int32")
        p660_S8 = T.alloc_fragment((8,), "int32")
        p660_v5 = T.alloc_var("int32")
        p660_v5 = 0
        for i in T.Parallel(6):
            p660_S7[i] = 3
        for i in T.Parallel(8):
            p660_S8[i] = ((-1) + bx)
        for i, j in T.grid(1, 3):
            p660_S1[i, j] = p660_X0[bx * 1 + i, j]
        T.copy(p660_X2[c0, c1, 0:4], p660_S3)
        for p660_k4 in T.serial(1, 3):
            if ((p660_k4 % 2) == 1):
                mc.barrier(['q'])
            p660_v5 = ((p660_k4 + 0) // 3)
            for p660_k6 in T.Pipelined(1, num_stages=3):
                if (p660_S1[0, (bx % 3)] >= 0):
                    for i in T.serial(4):
                        p660_S3[i] = (T.max(((1 + bx) % 4), 5) // 4)
                if (p660_k4 < 2):
                    mc.all_to_all(p660_S7[((T.Cast("int16", (c0 * 20000)) // 3) % 2):((T.Cast("int16", (c0 * 20000)) // 3) % 2) + 5], p660_S8, ['pp', 'q'], concat_axis=0, split_axis=0)
            for p660_k9 in T.serial(3):
                for i, j in T.grid(1, 1):
                    p660_S1[i, j] = ((p660_X0[bx * 1 + i, (4 % 3)] - p660_k4) * (p660_S1[i, j] % 3))
                p660_v5 = (p660_v5 + (p660_k4 + (5 + p660_X2[c0, c1, (bx % 4)])))
        p660_S7[1] = c0
        for i in T.serial(1):
            for j in T.serial(1):
                p660_S1[i, (j + 2)] = ((p660_S3[((T.Cast("int8", (bx * 32)) % 32) % 4)] // 3) - T.if_then_else(((p660_v5 * j) >= 3), 2, p660_v5))
        for i, j in T.grid(1, 3):
            p660_Y10[bx, i, j] = p660_S1[i, j]
        for i in T.grid(4):
            p660_Y11[((bx + 2) % 4), i] = p660_S3[i]
        for i in T.grid(6):
            p660_Y12[bx, i] = p660_S7[i]
        T.copy(p660_S8, p660_Y13[c0, c1, 0:8])
        p660_Y14[bx, 0] = p660_v5


# -- data (written by tools/fuzz_kernels.py) -----------------------------------------
SENTINEL = -77
PARAMS = [
    ('p656_X0', (4, 2, 1), 'int32'),
    ('p656_Y10', (4, 2, 1), 'int32'),
    ('p656_Y11', (12,), 'int32'),
    ('p656_Y12', (8,), 'int32'),
    ('p656_Y13', (12,), 'int32'),
    ('p656_Y14', (4, 1), 'int32'),
    ('p657_X0', (4, 5), 'float32'),
    ('p657_X2', (2, 2, 5, 2), 'float32'),
    ('p657_X7', (2, 2, 1), 'int32'),
    ('p657_Y9', (2, 2, 1, 5), 'float32'),
    ('p657_Y10', (4, 5, 2), 'float32'),
    ('p657_Y11', (2, 2, 5), 'float32'),
    ('p657_Y12', (80,), 'float32'),
    ('p657_Y13', (4, 4), 'int32'),
    ('p657_Y14', (4,), 'float32'),
    ('p658_X0', (4, 6, 5), 'int32'),
    ('p658_X9', (4, 4, 5), 'int32'),
    ('p658_Y11', (24, 5), 'int32'),
    ('p658_Y12', (2, 2, 15, 2), 'int32'),
    ('p658_Y13', (8,), 'int32'),
    ('p658_Y14', (4, 4), 'int32'),
    ('p659_X0', (2, 2, 3, 3), 'int32'),
    ('p659_Y7', (2, 2, 3, 3), 'int32'),
    ('p659_Y8', (4, 4), 'int32'),
    ('p659_Y9', (24,), 'int32'),
    ('p659_Y10', (8,), 'int32'),
    ('p660_X0', (4, 3), 'int32'),
    ('p660_X2', (2, 2, 4), 'int32'),
    ('p660_Y10', (4, 1, 3), 'int32'),
    ('p660_Y11', (4, 4), 'int32'),
    ('p660_Y12', (4, 6), 'int32'),
    ('p660_Y13', (2, 2, 8), 'int32'),
    ('p660_Y14', (4, 1), 'int32'),
]
INPUTS = {
    'p656_X0': [[[-2], [-1]], [[-3], [-1]], [[0], [-3]], [[1], [-2]]],
    'p657_X0': [[-3.0, 3.0, 3.0, 1.0, -3.0], [3.0, 1.0, 0.0, -2.0, 3.0], [3.0, -3.0, 2.0, -3.0, 2.0], [2.0, 2.0, 0.0, -3.0, 0.0]],
    'p657_X2': [[[[1.0, -1.0], [0.0, 1.0], [0.0, 1.0], [0.0, -3.0], [-1.0, 2.0]], [[-1.0, -1.0], [1.0, 1.0], [-1.0, 1.0], [-3.0, 1.0], [-1.0, 2.0]]], [[[-3.0, -3.0], [-3.0, -2.0], [3.0, -2.0], [-1.0, 3.0], [1.0, -3.0]], [[-2.0, 0.0], [3.0, -1.0], [-1.0, -1.0], [2.0, 0.0], [1.0, 1.0]]]],
    'p657_X7': [[[2], [3]], [[3], [3]]],
    'p658_X0': [[[1, 2, -2, -1, -2], [-3, -1, 3, 3, 3], [3, 0, 3, 2, 1], [2, 0, -2, 2, 0], [-2, 0, -1, 0, 0], [-3, -1, 3, -2, -1]], [[1, 0, 1, 0, 0], [2, -3, -1, -2, -2], [-1, 3, -3, -2, 2], [-2, -2, 3, 0, 1], [1, 1, 3, 1, 3], [1, -2, -3, 0, -3]], [[0, -3, -1, 3, 0], [2, -1, 1, 1, -1], [-2, 3, 3, -3, 0], [-3, -1, 1, -2, -1], [-3, 0, 2, -1, 2], [2, 1, 1, 2, -2]], [[0, -3, 3, -1, 0], [1, -1, -2, -3, -1], [0, 2, -2, -1, 3], [3, -3, -1, -1, 0], [-1, -3, 3, 3, -2], [3, 3, 2, 3, 2]]],
    'p658_X9': [[[-1, 0, -2, 1, -2], [1, -1, 0, 2, 2], [0, -3, 3, 0, -3], [-1, 1, 0, 0, -2]], [[-1, 0, 3, 1, 2], [3, -2, 3, 1, -2], [0, -3, -2, -1, 0], [-3, -2, 0, -3, 3]], [[3, 2, 2, 3, 3], [3, 2, 2, 3, 0], [-2, 2, -1, -1, -2], [0, -2, -1, -3, 3]], [[3, -3, 3, 2, -3], [-2, 1, 0, 0, 2], [-2, 0, -1, 2, -1], [0, -3, -1, 2, 2]]],
    'p659_X0': [[[[-2, 2, -1], [0, 2, 3], [-3, 0, 2]], [[-2, -3, -2], [-2, 1, 3], [0, 2, -3]]], [[[0, -3, 0], [1, 2, -2], [-2, -1, 0]], [[3, 2, -3], [3, 0, 0], [3, 3, 0]]]],
    'p660_X0': [[-2, -1, 2], [-1, -3, -2], [3, -2, -1], [1, 2, 2]],
    'p660_X2': [[[-3, -3, -3, 0], [0, 0, 3, -1]], [[-3, 3, 0, 1], [-2, 2, 1, -2]]],
}
EXPECTED = {
    'p656_X0': [[[-2], [-1]], [[-3], [-1]], [[0], [-3]], [[1], [-2]]],
    'p656_Y10': [[[4], [10]], [[0], [6]], [[3], [9]], [[1], [7]]],
    'p656_Y11': [0, 0, 2, 3, 0, 5, 0, 0, 8, 3, 0, 11],
    'p656_Y12': [0, 6, 3, 9, 1, 7, 4, 10],
    'p656_Y13': [0, 0, 2, 0, 0, 2, 0, 0, 8, 0, 0, 8],
    'p656_Y14': [[3], [3], [3], [3]],
    'p657_X0': [[-3.0, 3.0, 3.0, 1.0, -3.0], [3.0, 1.0, 0.0, -2.0, 3.0], [3.0, -3.0, 2.0, -3.0, 2.0], [2.0, 2.0, 0.0, -3.0, 0.0]],
    'p657_X2': [[[[1.0, -1.0], [0.0, 1.0], [0.0, 1.0], [0.0, -3.0], [-1.0, 2.0]], [[-1.0, -1.0], [1.0, 1.0], [-1.0, 1.0], [-3.0, 1.0], [-1.0, 2.0]]], [[[-3.0, -3.0], [-3.0, -2.0], [3.0, -2.0], [-1.0, 3.0], [1.0, -3.0]], [[-2.0, 0.0], [3.0, -1.0], [-1.0, -1.0], [2.0, 0.0], [1.0, 1.0]]]],
    'p657_X7': [[[2], [3]], [[3], [3]]],
    'p657_Y9': [[[[3.0, -3.0, 2.0, -3.0, 2.0]], [[3.0, 1.0, 0.0, -2.0, 3.0]]], [[[3.0, -3.0, 2.0, -3.0, 2.0]], [[2.0, 2.0, 0.0, -3.0, 0.0]]]],
    'p657_Y10': [[[1.0, -1.0], [0.0, 1.0], [0.0, 1.0], [0.0, -3.0], [-1.0, 2.0]], [[-1.0, -1.0], [1.0, 1.0], [-1.0, 1.0], [-3.0, 1.0], [-1.0, 2.0]], [[-3.0, -3.0], [-3.0, -2.0], [3.0, -2.0], [-1.0, 3.0], [1.0, -3.0]], [[-2.0, 0.0], [3.0, -1.0], [-1.0, -1.0], [2.0, 0.0], [1.0, 1.0]]],
    'p657_Y11': [[[0.0, -1.0, -2.0, -3.0, -4.0], [2.0, 1.0, 0.0, -1.0, -2.0]], [[4.0, 3.0, 2.0, 1.0, 0.0], [6.0, 5.0, 4.0, 3.0, 2.0]]],
    'p657_Y12': [0.0, -1.0, -2.0, -3.0, -4.0, 2.0, 1.0, 0.0, -1.0, -2.0, 4.0, 3.0, 2.0, 1.0, 0.0, 6.0, 5.0, 4.0, 3.0, 2.0, 0.0, -1.0, -2.0, -3.0, -4.0, 2.0, 1.0, 0.0, -1.0, -2.0, 4.0, 3.0, 2.0, 1.0, 0.0, 6.0, 5.0, 4.0, 3.0, 2.0, 0.0, -1.0, -2.0, -3.0, -4.0, 2.0, 1.0, 0.0, -1.0, -2.0, 4.0, 3.0, 2.0, 1.0, 0.0, 6.0, 5.0, 4.0, 3.0, 2.0, 0.0, -1.0, -2.0, -3.0, -4.0, 2.0, 1.0, 0.0, -1.0, -2.0, 4.0, 3.0, 2.0, 1.0, 0.0, 6.0, 5.0, 4.0, 3.0, 2.0],
    'p657_Y13': [[0, 1, 3, 3], [3, 4, 3, 6], [6, 7, 3, 9], [9, 10, 2, 12]],
    'p657_Y14': [0.0, 1.0, 2.0, 3.0],
    'p658_X0': [[[1, 2, -2, -1, -2], [-3, -1, 3, 3, 3], [3, 0, 3, 2, 1], [2, 0, -2, 2, 0], [-2, 0, -1, 0, 0], [-3, -1, 3, -2, -1]], [[1, 0, 1, 0, 0], [2, -3, -1, -2, -2], [-1, 3, -3, -2, 2], [-2, -2, 3, 0, 1], [1, 1, 3, 1, 3], [1, -2, -3, 0, -3]], [[0, -3, -1, 3, 0], [2, -1, 1, 1, -1], [-2, 3, 3, -3, 0], [-3, -1, 1, -2, -1], [-3, 0, 2, -1, 2], [2, 1, 1, 2, -2]], [[0, -3, 3, -1, 0], [1, -1, -2, -3, -1], [0, 2, -2, -1, 3], [3, -3, -1, -1, 0], [-1, -3, 3, 3, -2], [3, 3, 2, 3, 2]]],
    'p658_X9': [[[1, 1, 1, 1, 1], [1, 1, 1, 1, 1], [1, 1, 1, 1, 1], [1, 1, 1, 1, 1]], [[2, 2, 2, 2, 2], [2, 2, 2, 2, 2], [2, 2, 2, 2, 2], [2, 2, 2, 2, 2]], [[3, 3, 3, 3, 3], [3, 3, 3, 3, 3], [3, 3, 3, 3, 3], [3, 3, 3, 3, 3]], [[4, 4, 4, 4, 4], [4, 4, 4, 4, 4], [4, 4, 4, 4, 4], [4, 4, 4, 4, 4]]],
    'p658_Y11': [[-2, -3, 1, -1, -2], [2, 0, -4, 3, 3], [-4, -1, -4, 2, 1], [-1, -1, -1, 0, 0], [-1, -1, -1, 0, 0], [2, 0, -4, -2, -1], [-3, -2, -3, 0, 0], [-4, 1, -1, -2, -2], [-1, -5, 1, -2, 2], [-2, -2, -2, 0, 1], [-2, -2, -2, 0, 3], [-3, 0, 1, 0, -3], [-3, 0, -2, 3, 0], [-5, -2, -4, 1, -1], [-1, -6, -6, -3, 0], [-3, -3, -3, 0, -1], [-3, -3, -3, 0, 2], [-5, -4, -4, 2, -2], [-4, -1, -7, -1, 0], [-5, -3, -2, -3, -1], [-4, -6, -2, -1, 3], [-4, -4, -4, 0, 0], [-4, -4, -4, 0, -2], [-7, -7, -6, 3, 2]],
    'p658_Y12': [[[[5, 5], [5, 5], [5, 5], [4, 4], [4, 4], [5, 5], [5, 5], [5, 5], [0, 0], [0, -1], [0, 0], [0, 0], [2, 2], [1, 1], [2, -2]], [[5, 5], [5, 5], [5, 5], [3, 3], [3, 3], [5, 5], [5, 5], [5, 5], [0, 0], [0, 0], [0, 0], [0, 0], [-2, 3], [3, 2], [3, 2]]], [[[5, 5], [5, 5], [5, 5], [2, 2], [2, 2], [5, 5], [5, 5], [5, 5], [0, 0], [0, 0], [0, 0], [0, 0], [0, -3], [-1, 3], [-2, -1]], [[5, 5], [5, 5], [5, 5], [1, 1], [1, 1], [5, 5], [5, 5], [5, 5], [0, 0], [0, 1], [0, 0], [0, 0], [3, 1], [-2, -3], [0, -3]]]],
    'p658_Y13': [-2, -2, -1, -1, 0, 0, 1, 1],
    'p658_Y14': [[0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1]],
    'p659_X0': [[[[-2, 2, -1], [0, 2, 3], [-3, 0, 2]], [[-2, -3, -2], [-2, 1, 3], [0, 2, -3]]], [[[0, -3, 0], [1, 2, -2], [-2, -1, 0]], [[3, 2, -3], [3, 0, 0], [3, 3, 0]]]],
    'p659_Y7': [[[[-2, 2, -2], [0, 2, 3], [-3, 0, 2]], [[-2, -3, -2], [-2, 1, 3], [0, 2, -3]]], [[[0, -3, 0], [1, 2, -2], [-2, -1, 0]], [[3, 2, 3], [3, 0, 0], [3, 3, 0]]]],
    'p659_Y8': [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
    'p659_Y9': [1, 2, 3, 4, -4, -5, 0, 1, 2, 3, -1, -2, 3, 4, 5, 6, 2, 1, 2, 3, 4, 5, 5, 4],
    'p659_Y10': [0, 0, 0, 0, 0, 1, 0, 1],
    'p660_X0': [[-2, -1, 2], [-1, -3, -2], [3, -2, -1], [1, 2, 2]],
    'p660_X2': [[[-3, -3, -3, 0], [0, 0, 3, -1]], [[-3, 3, 0, 1], [-2, 2, 1, -2]]],
    'p660_Y10': [[[0, -1, -13]], [[-5, -3, -21]], [[0, -2, -22]], [[0, 2, -15]]],
    'p660_Y11': [[-3, 3, 0, 1], [1, 1, 1, 1], [-3, -3, -3, 0], [0, 0, 3, -1]],
    'p660_Y12': [[3, 0, 3, 3, 3, 3], [3, 0, 3, 3, 3, 3], [3, 1, 3, 3, 3, 3], [3, 1, 3, 3, 3, 3]],
    'p660_Y13': [[[3, 3, 3, 3, 3, 3, 3, 3], [3, 3, 3, 3, 0, 0, 0, 0]], [[3, 3, 3, 3, 3, 3, 3, 3], [2, 2, 2, 2, 2, 2, 2, 2]]],
    'p660_Y14': [[12], [21], [21], [15]],
}
EXPECTED_MESH = {'q': 2, 'pp': 2}
EXPECTED_COMM_RECEIVED = [[4, 4, 4, 4], [0, 0, 64, 64], [72, 72, 72, 72], [60, 60, 60, 60], [20, 0, 0, 0], [0, 0, 0, 0], [480, 480, 480, 480], [8, 0, 8, 8], [0, 0, 0, 0], [16, 16, 16, 16], [0, 0, 0, 0], [24, 12, 24, 0]]
OBSERVED = 'tvm::tirx::Stmt const&)>*)#4}::_FUN(tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*)\n  File "<unknown>", line 0, in tvm::arith::IRMutatorWithAnalyzer::VisitStmt_(tvm::tirx::ForNode const*)\n  File "<unknown>", line 0, in tvm::tirx::StmtMutator::VisitStmt_(tvm::tirx::ForNode const*)\n  File "<unknown>", line 0, in tvm::tirx::StmtMutator::VisitStmt(tvm::tirx::Stmt const&)\n  File "<unknown>", line 0, in tvm::NodeFunctor<tvm::tirx::Stmt (tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*)>::operator()(tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*) const\n  File "<unknown>", line 0, in tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>::InitVTable()::{lambda(tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*)#4}::_FUN(tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*)\n  File "<unknown>", line 0, in tvm::arith::IRMutatorWithAnalyzer::VisitStmt_(tvm::tirx::ForNode const*)\n  File "<unknown>", line 0, in tvm::tirx::StmtMutator::VisitStmt_(tvm::tirx::ForNode const*)\n  File "<unknown>", line 0, in tvm::tirx::StmtMutator::VisitStmt(tvm::tirx::Stmt const&)\n  File "<unknown>", line 0, in tvm::NodeFunctor<tvm::tirx::Stmt (tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*)>::operator()(tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*) const\n  File "<unknown>", line 0, in tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>::InitVTable()::{lambda(tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*)#4}::_FUN(tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*)\n  File "<unknown>", line 0, in tvm::arith::IRMutatorWithAnalyzer::VisitStmt_(tvm::tirx::ForNode const*)\n  File "<unknown>", line 0, in tvm::tirx::StmtMutator::VisitStmt_(tvm::tirx::ForNode const*)\n  File "<unknown>", line 0, in tvm::tirx::StmtMutator::VisitStmt(tvm::tirx::Stmt const&)\n  File "<unknown>", line 0, in tvm::NodeFunctor<tvm::tirx::Stmt (tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*)>::operator()(tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*) const\n  File "<unknown>", line 0, in tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>::InitVTable()::{lambda(tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*)#4}::_FUN(tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*)\n  File "<unknown>", line 0, in tvm::arith::IRMutatorWithAnalyzer::VisitStmt_(tvm::tirx::ForNode const*)\n  File "<unknown>", line 0, in tvm::tirx::StmtMutator::VisitStmt_(tvm::tirx::ForNode const*)\n  File "<unknown>", line 0, in tvm::tirx::StmtMutator::VisitStmt(tvm::tirx::Stmt const&)\n  File "<unknown>", line 0, in tvm::NodeFunctor<tvm::tirx::Stmt (tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*)>::operator()(tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*) const\n  File "<unknown>", line 0, in tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>::InitVTable()::{lambda(tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*)#11}::_FUN(tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*)\n  File "<unknown>", line 0, in tvm::tl::SafeMemorysRewriter::VisitStmt_(tvm::tirx::BufferStoreNode const*)\n  File "/project/src/transform/legalize_safe_memory_access.cc", line 689, in tvm::PrimExpr tvm::tl::SafeMemorysRewriter::CombineConditions(const tvm::ffi::Array<tvm::PrimExpr>&)\ntvm.error.InternalError: Check failed: (combined.defined()) is false: \n'
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
