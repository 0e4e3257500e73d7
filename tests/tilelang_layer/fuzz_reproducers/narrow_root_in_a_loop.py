"""meshtensor kernel fuzzer: seed f4, program 145: wrong (run)
features: all_reduce, axis-order, broadcast, fragment, fragment-loop, int-axes, launch-1d, let, narrow-root, permute, pipelined, region, same-buffer, var

differs from the model: p145_Y15, p145_Y16, p145_Y17 (minimized)

Run from the repository root: PYTHONPATH=src python <this file>
"""
import tilelang.language as T

from meshtensor.tilelang import mesh_comm

mc = mesh_comm({"pp": 1, "dp": 1, "m": 2})


@T.prim_func
def fuzz_kernel(p145_X0: T.Tensor((10,), "float32"), p145_Y15: T.Tensor((1, 1, 2, 1), "float32")):
    with T.Kernel(2, threads=1) as bx:
        c0 = bx // 2
        c1 = bx // 2 % 1
        c2 = bx % 2
        # -- program 145 (seed f4:145)
        p145_S1 = T.alloc_local((5,), "float32")
        p145_S6 = T.alloc_local((1,), "float32")
        p145_S9 = T.alloc_local((6,), "float32")
        T.copy(p145_X0[bx * 5 + 0:bx * 5 + 0 + 5], p145_S1)
        for p145_k4 in T.serial(2):
            mc.broadcast(p145_S1[0:5], p145_S9[1:6], ['dp', 'm'], root=[0, ((T.Cast("int8", ((p145_k4 * 100) + 97)) // 50) % 2)])
        T.copy(p145_S9[3:4], p145_S6[0:1])
        T.copy(p145_S6, p145_Y15[c0, c1, c2, 0:1])


# -- data (written by tools/fuzz_kernels.py) -----------------------------------------
SENTINEL = -77
PARAMS = [
    ('p145_X0', (10,), 'float32'),
    ('p145_Y15', (1, 1, 2, 1), 'float32'),
]
INPUTS = {
    'p145_X0': [2.0, 2.0, 1.0, 1.0, 3.0, -3.0, 2.0, 0.0, 0.0, -1.0],
}
EXPECTED = {
    'p145_X0': [2.0, 2.0, 1.0, 1.0, 3.0, -3.0, 2.0, 0.0, 0.0, -1.0],
    'p145_Y15': [[[[1.0], [1.0]]]],
}
EXPECTED_MESH = {'pp': 1, 'dp': 1, 'm': 2}
EXPECTED_COMM_RECEIVED = [[20, 20]]
OBSERVED = "p145_Y15 = [0.0, 0.0]\nanalysis mesh {'pp': 1, 'dp': 1, 'm': 2}, comm bytes received [[20, 20]]"
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
