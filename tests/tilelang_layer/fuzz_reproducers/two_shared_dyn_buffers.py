"""Two T.alloc_shared buffers of the default scope (shared.dyn), used only after the
last comm op: compile_mesh_kernel leaves them shared.dyn and TileLang's C back end
stops ("Only one dynamic shared memory allocation is allowed"); stock TileLang does
the same for any kernel with two. Written by hand (issue 26 helper i26f).

Run from the repository root: PYTHONPATH=src python <this file>
"""
import numpy as np
import tilelang.language as T

from meshtensor.tilelang import mesh_comm

mc = mesh_comm({"x": 4})


@T.prim_func
def k(X: T.Tensor((4, 8), "float32"), Y: T.Tensor((4, 8), "float32")):
    with T.Kernel(4, threads=1) as bx:
        S = T.alloc_shared((8,), "float32", scope="shared")
        L = T.alloc_local((8,), "float32")
        D1 = T.alloc_shared((8,), "float32")
        D2 = T.alloc_shared((8,), "float32")
        for i in T.serial(8):
            S[i] = X[bx, i]
        mc.shift(S, L, ["x"], shift_axis="x", offset=1, rotate=True)
        for i in T.serial(8):
            D1[i] = L[i]
            D2[i] = S[i] * 2
        for i in T.serial(8):
            Y[bx, i] = D2[i] + D1[i]


def main() -> int:
    import torch
    from meshtensor.tilelang import compile_mesh_kernel
    try:
        kernel = compile_mesh_kernel(k)
    except ValueError as e:
        print(f"refused: {e}")
        return 0
    x = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    y = torch.zeros(4, 8)
    kernel(x, y)
    want = 2 * x.numpy() + np.roll(x.numpy(), 1, axis=0)
    ok = np.array_equal(y.numpy(), want)
    print("OK: equal" if ok else f"WRONG: {y.numpy().tolist()}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
