"""meshtensor kernel fuzzer: seed 1, program 3: wrong (spmdize-run)
features: axes-form, axis-order, dict-form, group, launch-1d, shift, split-order, sub-block, tuple-form, uneven

spmdize's kernel differs from the model and the global view: p3_Y1, p3_Y8, p3_Y10 (minimized)

A shift read in a 1-D launch of a 4 x 2 mesh: spmdize's load for the sender composed
the linear id with the mod, and TileLang's copy lowering folded that nest wrongly (every
core received its neighbour's neighbour's tile); spmdize now simplifies each mod before
folding it.

Run from the repository root: PYTHONPATH=src python <this file>
"""
import tilelang.language as T

from meshtensor import Mesh, Sharding
from meshtensor.tilelang import mesh_tensor_functions

M = Mesh({"k0": 4, "dp": 2})
_F = mesh_tensor_functions({"k0": 4, "dp": 2})
annotate = _F["annotate_mesh_tensor_info"]
init = _F["init_mesh_tensor_info"]
mcopy = _F["mesh_tensor_copy"]


@T.prim_func
def fuzz_kernel(p3_X0: T.Tensor((16,), "float32"), p3_Y1: T.Tensor((31,), "float32")):
    annotate({p3_X0: init(Sharding(M, [["dp", "k0"]]), (2,)), p3_Y1: init({"k0": 0, "dp": 0}, (2,))})
    with T.Kernel(8, threads=1) as bx:
        c0 = bx // 2
        c1 = bx % 2
        # -- program 3 (seed 1:3)
        p3_S2 = T.alloc_local((2,), "float32")
        p3_S5 = T.alloc_local((2,), "float32")
        for i in T.grid(2):
            p3_S2[i] = T.Cast("float32", ((bx * 1) - i))
        mcopy(p3_X0, p3_S5, src_coord=(((c1 * 4) + ((c0 + 3) % 4)),))
        for i in T.grid(2):
            p3_S2[i] = (p3_S2[i] + p3_S5[i])
        mcopy(p3_S2, p3_Y1, dst_coord=(((((c0 * 2) + c1) * 2) + 0),))


# -- data (written by tools/fuzz_kernels.py --mode spmdize) --------------------------
SENTINEL = -77
PARAMS = [
    ('p3_X0', (16,), 'float32'),
    ('p3_Y1', (31,), 'float32'),
]
INPUTS = {
    'p3_X0': [-1.0, -2.0, 2.0, 0.0, 0.0, -3.0, 2.0, -3.0, -3.0, -1.0, 3.0, 2.0, -1.0, 2.0, -1.0, 3.0],
}
EXPECTED = {
    'p3_X0': [-1.0, -2.0, 2.0, 0.0, 0.0, -3.0, 2.0, -3.0, -3.0, -1.0, 3.0, 2.0, -1.0, 2.0, -1.0, 3.0],
    'p3_Y1': [2.0, -4.0, -77.0, -77.0, 0.0, 3.0, -77.0, -77.0, 1.0, -1.0, -77.0, -77.0, 0.0, 1.0, -77.0, -77.0, 6.0, 3.0, -77.0, -77.0, 8.0, 6.0, -77.0, -77.0, 6.0, 2.0, -77.0, -77.0, 6.0, 8.0, -77.0],
}
EXPECTED_REMOTE = 64  # bytes the global view reads or writes on other cores
BYTES = {
    ('p3_X0', 'p3_S5'): {'remote': 64, 'first_remote': 64, 'later': 0},
}  # per read (tensor, buffer): remote, first_remote and later bytes
OBSERVED = "spmdized p3_Y1 = [0.0, -4.0, -77.0, -77.0, 0.0, 2.0, -77.0, -77.0, 4.0, -2.0, -77.0, -77.0, 2.0, 5.0, -77.0, -77.0, 3.0, 1.0, -77.0, -77.0, 2.0, 3.0, -77.0, -77.0, 8.0, 5.0, -77.0, -77.0, 10.0, 8.0, -77.0]\nplan: p3_X0[bx % 2 * 4 + (bx // 2 + 3) % 4] -> shift along k0 by 1 (rotate): core (k0, dp) receives from (k0-1, dp)\nplan: p3_Y1[bx * 2] <- local write (own shard)\nanalysis per program: global view {'remote': 64, 'comm': 0}, spmdized {'remote': 0, 'comm': 64}"


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


def main() -> int:
    import numpy as np
    import torch
    from meshtensor.tilelang import (analyze_mesh_communication, compile_mesh_kernel,
                                     verify_mesh_tensors)
    from meshtensor.tilelang.transform.spmdize import plan_mesh_copies, spmdize

    def check(kernel, label):
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
        print("WRONG" if bad else "OK: refused")
        return 1 if bad else 0
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
