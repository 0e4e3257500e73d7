"""meshtensor kernel fuzzer: seed 78, program 41: wrong (spmdize-verify)
features: axes-form, axis-order, group, launch-1d, perm, pipelined, replicated, split-order, uneven

verify_mesh_tensors(owner_only=True) on spmdize's output: remote: copy 2 reads p41_X0[0:2, 8:10] on program (0, 0, 1): not its own shard: owned by [(0, 1, 1)] (owner_only) (4 of 24 iterations)

Run from the repository root: PYTHONPATH=src python <this file>
"""
import tilelang.language as T

from meshtensor import Mesh, Sharding
from meshtensor.tilelang import mesh_tensor_functions

M = Mesh({"tp": 2, "u": 3, "col": 2})
_F = mesh_tensor_functions({"tp": 2, "u": 3, "col": 2})
annotate = _F["annotate_mesh_tensor_info"]
init = _F["init_mesh_tensor_info"]
mcopy = _F["mesh_tensor_copy"]


@T.prim_func
def fuzz_kernel(p41_X0: T.Tensor((1, 11), "float32"), p41_Y1: T.Tensor((2, 24), "int32"), p41_Y8: T.Tensor((2, 3, 2, 2, 2), "int32"), p41_Y9: T.Tensor((24, 2), "float32"), p41_Y10: T.Tensor((12, 2, 2), "float32"), p41_Y11: T.Tensor((2, 3, 2, 2, 2), "float32")):
    annotate({p41_X0: init(Sharding(M, [[], ["col", "u"]]), (2, 2)), p41_Y1: init(Sharding(M, [[], ["u", "col", "tp"]]), (2, 2))})
    with T.Kernel(12, threads=1) as bx:
        c0 = bx // 6
        c1 = bx // 2 % 3
        c2 = bx % 2
        # -- program 41 (seed 78:41)
        p41_S2 = T.alloc_shared((2, 2), "int32", scope="shared")
        p41_S4 = T.alloc_local((2, 2), "float32")
        p41_S5 = T.alloc_local((2, 2), "float32")
        p41_S7 = T.alloc_local((2, 2), "float32")
        for i, j in T.grid(2, 2):
            p41_S2[i, j] = 2
        for p41_k3 in T.Pipelined(1, num_stages=2):
            mcopy(p41_X0, p41_S4, src_coord=(0, ((p41_k3 * 3) + c1)))
            for i, j in T.grid(2, 2):
                p41_S2[i, j] = T.min(p41_S2[i, j], T.Cast("int32", p41_S4[i, j]))
            mcopy(p41_X0, p41_S5, src_coord=(0, ((c2 * 3) + 0)))
            for i, j in T.grid(2, 2):
                p41_S2[i, j] = (p41_S2[i, j] + T.Cast("int32", p41_S5[i, j]))
            for p41_k6 in T.serial(2):
                mcopy(p41_X0, p41_S7, src_coord=(0, ((T.if_then_else((c2 == 0), 0, 1) * 3) + T.if_then_else((c1 == 0), 0, T.if_then_else((c1 == 1), 2, 1)))))
                for i in T.serial(2):
                    for j in T.serial(2):
                        p41_S2[i, j] = T.min(p41_S2[i, j], T.Cast("int32", p41_S7[i, j]))
        mcopy(p41_S2, p41_Y1, dst_coord=(0, ((((c1 * 2) + c2) * 2) + c0)))
        for i, j in T.grid(2, 2):
            p41_Y8[c0, c1, c2, i, j] = p41_S2[i, j]
        for i, j in T.grid(2, 2):
            p41_Y9[bx * 2 + i, j] = p41_S4[i, j]
        for i, j in T.grid(2, 2):
            p41_Y10[bx, i, j] = p41_S5[i, j]
        T.copy(p41_S7, p41_Y11[c0, c1, c2, 0:2, 0:2])


# -- data (written by tools/fuzz_kernels.py --mode spmdize) --------------------------
SENTINEL = -77
PARAMS = [
    ('p41_X0', (1, 11), 'float32'),
    ('p41_Y1', (2, 24), 'int32'),
    ('p41_Y8', (2, 3, 2, 2, 2), 'int32'),
    ('p41_Y9', (24, 2), 'float32'),
    ('p41_Y10', (12, 2, 2), 'float32'),
    ('p41_Y11', (2, 3, 2, 2, 2), 'float32'),
]
INPUTS = {
    'p41_X0': [[-2.0, 3.0, -2.0, 3.0, 2.0, 0.0, 1.0, 2.0, 0.0, 1.0, 1.0]],
}
EXPECTED = {
    'p41_X0': [[-2.0, 3.0, -2.0, 3.0, 2.0, 0.0, 1.0, 2.0, 0.0, 1.0, 1.0]],
    'p41_Y1': [[-4, 3, -4, 3, -1, 2, -1, 2, -4, 0, -4, 0, -1, 0, -1, 0, -2, 3, -2, 3, 0, 1, 0, 1], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]],
    'p41_Y8': [[[[[-4, 3], [0, 0]], [[-1, 2], [0, 0]]], [[[-4, 0], [0, 0]], [[-1, 0], [0, 0]]], [[[-2, 3], [0, 0]], [[0, 1], [0, 0]]]], [[[[-4, 3], [0, 0]], [[-1, 2], [0, 0]]], [[[-4, 0], [0, 0]], [[-1, 0], [0, 0]]], [[[-2, 3], [0, 0]], [[0, 1], [0, 0]]]]],
    'p41_Y9': [[-2.0, 3.0], [0.0, 0.0], [-2.0, 3.0], [0.0, 0.0], [-2.0, 3.0], [0.0, 0.0], [-2.0, 3.0], [0.0, 0.0], [2.0, 0.0], [0.0, 0.0], [2.0, 0.0], [0.0, 0.0], [-2.0, 3.0], [0.0, 0.0], [-2.0, 3.0], [0.0, 0.0], [-2.0, 3.0], [0.0, 0.0], [-2.0, 3.0], [0.0, 0.0], [2.0, 0.0], [0.0, 0.0], [2.0, 0.0], [0.0, 0.0]],
    'p41_Y10': [[[-2.0, 3.0], [0.0, 0.0]], [[1.0, 2.0], [0.0, 0.0]], [[-2.0, 3.0], [0.0, 0.0]], [[1.0, 2.0], [0.0, 0.0]], [[-2.0, 3.0], [0.0, 0.0]], [[1.0, 2.0], [0.0, 0.0]], [[-2.0, 3.0], [0.0, 0.0]], [[1.0, 2.0], [0.0, 0.0]], [[-2.0, 3.0], [0.0, 0.0]], [[1.0, 2.0], [0.0, 0.0]], [[-2.0, 3.0], [0.0, 0.0]], [[1.0, 2.0], [0.0, 0.0]]],
    'p41_Y11': [[[[[-2.0, 3.0], [0.0, 0.0]], [[1.0, 2.0], [0.0, 0.0]]], [[[2.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 0.0]]], [[[-2.0, 3.0], [0.0, 0.0]], [[0.0, 1.0], [0.0, 0.0]]]], [[[[-2.0, 3.0], [0.0, 0.0]], [[1.0, 2.0], [0.0, 0.0]]], [[[2.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 0.0]]], [[[-2.0, 3.0], [0.0, 0.0]], [[0.0, 1.0], [0.0, 0.0]]]]],
}
EXPECTED_REMOTE = 224  # bytes the global view reads or writes on other cores
BYTES = {
    ('p41_X0', 'p41_S4'): {'remote': 96, 'first_remote': 96, 'later': 0},
    ('p41_X0', 'p41_S5'): {'remote': 128, 'first_remote': 128, 'later': 0},
    ('p41_X0', 'p41_S7'): {'remote': 256, 'first_remote': 128, 'later': 192},
}  # per read (tensor, buffer): remote, first_remote and later bytes
SPANS = []  # reads of a block over several shards (spmdize must refuse them)
PROGRAMS = 1  # programs in the kernel
OBSERVED = "remote: copy 2 reads p41_X0[0:2, 8:10] on program (0, 0, 1): not its own shard: owned by [(0, 1, 1)] (owner_only) (4 of 24 iterations)\nplan: p41_X0[0, bx % 6 // 2] -> broadcast over col from core (tp, u, 0)\nplan: p41_X0[0, bx % 2 * 3] -> broadcast over u from core (tp, 0, col)\nplan: p41_X0[0, T.if_then_else(bx % 2 == 0, 0, 1) * 3 + T.if_then_else(bx % 6 // 2 == 0, 0, T.if_then_else(bx % 6 // 2 == 1, 2, 1))] -> permute of 8 tiles ((0, 1, 0)->(0, 2, 0), (0, 1, 1)->(0, 2, 1), (0, 2, 0)->(0, 1, 0), ...)\nplan: p41_Y1[0, bx % 6 * 2 + bx // 6] <- local write (own shard)\nanalysis per program: global view {'remote': 224, 'comm': 0}, spmdized {'remote': 32, 'comm': 480}"


def promise(table: dict, kinds: dict) -> int:
    """The bytes the comm ops of the spmdized program receive, by docs/spmdize.md:
    a ``broadcast``, ``shift`` or ``permute`` copy receives exactly the blocks the
    global view read from other cores (``remote``; whole staging tiles, padding past
    the tensor's edge included); a ``carried`` copy receives its first iteration's
    remote blocks, then at every later iteration every core's held block (a rotation
    also carries the tile that returns to its owner); a ``local`` copy nothing.
    ``table``: :func:`byte_table`; ``kinds``: ``(tensor, buffer)`` -> plan kind."""
    total = 0
    for key, b in table.items():
        kind = kinds.get(key, "local")
        if kind in ("broadcast", "shift", "permute"):
            total += b["remote"]
        elif kind == "carried":
            total += b["first_remote"] + b["later"]
    return total


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
    from meshtensor.tilelang import (analyze_mesh_communication, compile_mesh_kernel,
                                     verify_mesh_tensors)
    from meshtensor.tilelang.transform.spmdize import plan_mesh_copies, spmdize

    bad = 0
    try:
        gv = compile_mesh_kernel(fuzz_kernel)
    except ValueError as e:
        print(f"global view refused: {e}")
        gv = None
    if gv is not None:
        bad += check(gv, "global view")
        remote = analyze_mesh_communication(fuzz_kernel).remote_bytes
        if remote != EXPECTED_REMOTE:
            bad += 1
            print(f"global view: {remote} remote bytes, the model {EXPECTED_REMOTE}")
    try:
        out = spmdize(fuzz_kernel)
    except ValueError as e:
        print(f"spmdize refused: {e}")
        if PROGRAMS > 1:  # the fuzzer ran spmdize on the programs it accepts only
            print("WRONG: the kernel holds several programs; run each alone "
                  "(fuzz_kernels.py --first I --programs 1)")
            return 1
        print("WRONG" if bad else "OK: refused")
        return 1 if bad else 0
    if SPANS:
        bad += 1
        print(f"spmdize accepts reads of a block over several shards: {SPANS}")
    for issue in verify_mesh_tensors(out, owner_only=True):
        bad += 1
        print(f"verify_mesh_tensors(owner_only=True): {issue.message}")
    for p in plan_mesh_copies(fuzz_kernel):
        print(f"plan: {p}")
    try:
        kernel = compile_mesh_kernel(out)
    except ValueError as e:
        print(f"spmdize's output refused: {e}")
        bad += gv is not None
    else:
        bad += check(kernel, "spmdized")
        kinds = {(p.copy.src.buffer.name, p.copy.dst.buffer.name): p.kind
                 for p in plan_mesh_copies(fuzz_kernel)}
        comm, want = analyze_mesh_communication(out).comm_bytes, promise(BYTES, kinds)
        if comm != want:
            bad += 1
            print(f"spmdized: comm ops receive {comm} bytes, promised {want}")
    print("WRONG" if bad else "OK: equal to the model")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
