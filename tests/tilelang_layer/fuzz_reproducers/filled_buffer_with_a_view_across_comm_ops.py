"""meshtensor kernel fuzzer: seed p32, program 360: crash (compile)
features: alloc-buffer, axis-order, check-races, decl-buffer, fill, fold-index, launch-1d, let, pipelined, shared-dyn, shift, uniform-if, var

InternalError: Check failed: (!buffer_def_count_.count(ptr)) is false: buffer p360_V8 has already been defined, the Stmt is not SSA

Run from the repository root: PYTHONPATH=src python <this file>
"""
import tilelang.language as T

from meshtensor.tilelang import mesh_comm

mc = mesh_comm({"q": 4, "a": 2})


@T.prim_func
def fuzz_kernel(p360_X0: T.Tensor((48, 2), "float32"), p360_Y9: T.Tensor((8, 6, 2), "float32"), p360_Y10: T.Tensor((40,), "float32"), p360_Y11: T.Tensor((4, 2, 5), "float32"), p360_Y12: T.Tensor((8, 1), "int32")):
    with T.Kernel(8, threads=1) as bx:
        # -- program 360 (seed p32:360)
        p360_S1 = T.alloc_buffer((6, 2), "float32")
        p360_S3 = T.alloc_local((5,), "float32")
        p360_S4 = T.alloc_shared((5,), "float32", scope="shared")
        p360_S5 = T.alloc_shared((6, 2), "float32")
        p360_V8 = T.decl_buffer((5,), "float32", data=p360_S3.data, scope="local")
        p360_v2 = T.alloc_var("int32")
        p360_v2 = 0
        T.fill(p360_S3, 1.0)
        for i in T.grid(5):
            p360_S4[i] = T.Cast("float32", ((bx * 3) - i))
        T.copy(p360_X0[bx * 6 + 0:bx * 6 + 0 + 6, 0:2], p360_S1)
        p360_S1[0, 1] = T.min(T.Cast("float32", (bx + bx)), ((-3.0) + (-3.0)))
        p360_v2 = T.min(p360_v2, ((-3) + p360_v2))
        mc.shift(p360_S3, p360_S4, ['a', 'q'], offset=1, rotate=False, shift_axis='a')
        for i, j in T.grid(6, 2):
            p360_S5[i, j] = T.max(T.min((p360_S4[(j + 2)] * (T.Cast("float32", (bx * j)) * (-1.0))), 4.0), (-4.0))
        for i in T.serial(6):
            for j in T.serial(2):
                p360_S1[i, j] = p360_S5[i, j]
        p360_t6 = 1
        for i in T.grid(4):
            p360_S3[i] = ((p360_X0[bx * 6 + i, (((bx + p360_v2) // 2) % 2)] - T.Cast("float32", 0)) * T.max(p360_S4[(bx % 5)], p360_X0[bx * 6 + ((((((bx // 2) + 2) % 4) * 2) + (((bx % 2) + 1) % 2)) % 6), (bx % 2)]))
        for p360_k7 in T.Pipelined(1, num_stages=3):
            for i, j in T.grid(6, 1):
                p360_S1[((i + bx) % 6), (j + 1)] = (T.max(p360_S1[((i + bx) % 6), (j + 1)], T.Cast("float32", (bx * (bx // 2)))) + ((-1.0) + T.Cast("float32", (bx + p360_k7))))
            if ((p360_k7 % 2) == 0):
                mc.shift(p360_V8, p360_S4[0:5], ['a'], offset=1, rotate=True, shift_axis='a')
            T.copy(p360_V8[0:5], p360_S4[0:5])
        for i, j in T.grid(6, 2):
            p360_Y9[bx, i, j] = p360_S1[i, j]
        for i in T.grid(5):
            p360_Y10[bx * 5 + i] = p360_S3[i]
        for i in T.grid(5):
            p360_Y11[(bx // 2), (bx % 2), i] = p360_S4[i]
        p360_Y12[bx, 0] = p360_v2


# -- data (written by tools/fuzz_kernels.py) -----------------------------------------
SENTINEL = -77
PARAMS = [
    ('p360_X0', (48, 2), 'float32'),
    ('p360_Y9', (8, 6, 2), 'float32'),
    ('p360_Y10', (40,), 'float32'),
    ('p360_Y11', (4, 2, 5), 'float32'),
    ('p360_Y12', (8, 1), 'int32'),
]
INPUTS = {
    'p360_X0': [[-1.0, -3.0], [-3.0, -2.0], [-2.0, -2.0], [1.0, -1.0], [-3.0, -2.0], [-3.0, -2.0], [-1.0, 3.0], [1.0, -3.0], [3.0, -2.0], [-1.0, -3.0], [3.0, 3.0], [2.0, 1.0], [-2.0, -1.0], [2.0, 2.0], [3.0, 3.0], [3.0, 2.0], [-3.0, -2.0], [3.0, -2.0], [-3.0, 2.0], [3.0, 1.0], [1.0, 0.0], [0.0, -3.0], [2.0, 3.0], [2.0, 1.0], [2.0, -1.0], [-2.0, 0.0], [2.0, 0.0], [0.0, 1.0], [3.0, 0.0], [-3.0, -3.0], [-2.0, 0.0], [2.0, -3.0], [2.0, 1.0], [1.0, 1.0], [-2.0, 1.0], [-3.0, 3.0], [-1.0, 1.0], [-3.0, -2.0], [3.0, 3.0], [2.0, -1.0], [2.0, -3.0], [-3.0, -1.0], [-2.0, 1.0], [1.0, 2.0], [-1.0, -1.0], [0.0, -3.0], [1.0, 0.0], [3.0, -2.0]],
}
EXPECTED = {
    'p360_X0': [[-1.0, -3.0], [-3.0, -2.0], [-2.0, -2.0], [1.0, -1.0], [-3.0, -2.0], [-3.0, -2.0], [-1.0, 3.0], [1.0, -3.0], [3.0, -2.0], [-1.0, -3.0], [3.0, 3.0], [2.0, 1.0], [-2.0, -1.0], [2.0, 2.0], [3.0, 3.0], [3.0, 2.0], [-3.0, -2.0], [3.0, -2.0], [-3.0, 2.0], [3.0, 1.0], [1.0, 0.0], [0.0, -3.0], [2.0, 3.0], [2.0, 1.0], [2.0, -1.0], [-2.0, 0.0], [2.0, 0.0], [0.0, 1.0], [3.0, 0.0], [-3.0, -3.0], [-2.0, 0.0], [2.0, -3.0], [2.0, 1.0], [1.0, 1.0], [-2.0, 1.0], [-3.0, 3.0], [-1.0, 1.0], [-3.0, -2.0], [3.0, 3.0], [2.0, -1.0], [2.0, -3.0], [-3.0, -1.0], [-2.0, 1.0], [1.0, 2.0], [-1.0, -1.0], [0.0, -3.0], [1.0, 0.0], [3.0, -2.0]],
    'p360_Y9': [[[0.0, -1.0], [0.0, -1.0], [0.0, -1.0], [0.0, -1.0], [0.0, -1.0], [0.0, -1.0]], [[-0.0, 0.0], [-0.0, 0.0], [-0.0, 0.0], [-0.0, 0.0], [-0.0, 0.0], [-0.0, 0.0]], [[-0.0, 3.0], [-0.0, 3.0], [-0.0, 3.0], [-0.0, 3.0], [-0.0, 3.0], [-0.0, 3.0]], [[-0.0, 5.0], [-0.0, 5.0], [-0.0, 5.0], [-0.0, 5.0], [-0.0, 5.0], [-0.0, 5.0]], [[-0.0, 11.0], [-0.0, 11.0], [-0.0, 11.0], [-0.0, 11.0], [-0.0, 11.0], [-0.0, 11.0]], [[-0.0, 14.0], [-0.0, 14.0], [-0.0, 14.0], [-0.0, 14.0], [-0.0, 14.0], [-0.0, 14.0]], [[-0.0, 23.0], [-0.0, 23.0], [-0.0, 23.0], [-0.0, 23.0], [-0.0, 23.0], [-0.0, 23.0]], [[-0.0, 27.0], [-0.0, 27.0], [-0.0, 27.0], [-0.0, 27.0], [-0.0, 27.0], [-0.0, 27.0]]],
    'p360_Y10': [-0.0, -0.0, -0.0, 0.0, 1.0, 9.0, -9.0, -6.0, -9.0, 1.0, -4.0, 8.0, 12.0, 8.0, 1.0, -6.0, 6.0, 2.0, 0.0, 1.0, 16.0, -16.0, 16.0, 0.0, 1.0, 0.0, -3.0, 1.0, 1.0, 1.0, 17.0, -34.0, 51.0, -17.0, 1.0, -2.0, 1.0, -1.0, 0.0, 1.0],
    'p360_Y11': [[[-0.0, -0.0, -0.0, 0.0, 1.0], [9.0, -9.0, -6.0, -9.0, 1.0]], [[-4.0, 8.0, 12.0, 8.0, 1.0], [-6.0, 6.0, 2.0, 0.0, 1.0]], [[16.0, -16.0, 16.0, 0.0, 1.0], [0.0, -3.0, 1.0, 1.0, 1.0]], [[17.0, -34.0, 51.0, -17.0, 1.0], [-2.0, 1.0, -1.0, 0.0, 1.0]]],
    'p360_Y12': [[-3], [-3], [-3], [-3], [-3], [-3], [-3], [-3]],
}
EXPECTED_MESH = {'q': 4, 'a': 2}
EXPECTED_COMM_RECEIVED = [[0, 20, 0, 20, 0, 20, 0, 20], [20, 20, 20, 20, 20, 20, 20, 20]]
OBSERVED = ' 579, in lower_with_context\n    return stock(func_or_mod, *args, **kw)\n           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  File "/work/wt/i26/.venv/lib/python3.11/site-packages/tilelang/engine/lower.py", line 165, in lower_with_context\n    return _lower_with_context_impl(\n           ^^^^^^^^^^^^^^^^^^^^^^^^^\n  File "/work/wt/i26/.venv/lib/python3.11/site-packages/tilelang/engine/lower.py", line 184, in _lower_with_context_impl\n    host_mod, device_mod, params, target, target_host = lower_to_host_device_ir(\n                                                        ^^^^^^^^^^^^^^^^^^^^^^^^\n  File "/work/wt/i26/.venv/lib/python3.11/site-packages/tilelang/engine/lower.py", line 136, in lower_to_host_device_ir\n    mod = context.lower(mod)\n          ^^^^^^^^^^^^^^^^^^\n  File "/work/wt/i26/.venv/lib/python3.11/site-packages/tilelang/backend/module.py", line 214, in lower\n    return self.module.lower(mod, self.target)\n           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  File "/work/wt/i26/.venv/lib/python3.11/site-packages/tilelang/backend/module.py", line 115, in lower\n    return self.get_pipeline(target).lower(mod, target)\n           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  File "/work/wt/i26/.venv/lib/python3.11/site-packages/tilelang/backend/pass_pipeline/pipeline.py", line 31, in lower\n    return self._lower(mod, target)\n           ^^^^^^^^^^^^^^^^^^^^^^^^\n  File "/work/wt/i26/.venv/lib/python3.11/site-packages/tilelang/cpu/pipeline.py", line 85, in CPUPassPipelineBody\n    mod = tilelang.transform.SplitHostDevice()(mod)\n          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  File "/work/wt/i26/.venv/lib/python3.11/site-packages/tilelang/3rdparty/tvm/python/tvm/ir/transform.py", line 171, in __call__\n    return _ffi_transform_api.RunPass(self, mod)\n           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  File "python/tvm_ffi/cython/function.pxi", line 968, in tvm_ffi.core.Function.__call__\n  File "<unknown>", line 0, in tvm::transform::Pass::operator()(tvm::IRModule) const\n  File "<unknown>", line 0, in tvm::transform::Pass::operator()(tvm::IRModule, tvm::transform::PassContext const&) const\n  File "<unknown>", line 0, in tvm::transform::ModulePassNode::operator()(tvm::IRModule, tvm::transform::PassContext const&) const\n  File "<unknown>", line 0, in tvm::tl::SplitHostDevice(tvm::tirx::PrimFunc, tvm::IRModule*, std::function<tvm::GlobalVar ()>)\n  File "<unknown>", line 0, in tvm::tirx::StmtMutator::VisitStmt(tvm::tirx::Stmt const&)\n  File "<unknown>", line 0, in tvm::NodeFunctor<tvm::tirx::Stmt (tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*)>::operator()(tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*) const\n  File "<unknown>", line 0, in tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>::InitVTable()::{lambda(tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*)#2}::_FUN(tvm::ffi::ObjectRef const&, tvm::tirx::StmtFunctor<tvm::tirx::Stmt (tvm::tirx::Stmt const&)>*)\n  File "<unknown>", line 0, in tvm::tl::HostDeviceSplitter::VisitStmt_(tvm::tirx::AttrStmtNode const*)\n  File "<unknown>", line 0, in tvm::tl::HostDeviceSplitter::SplitDeviceFunc(tvm::tirx::Stmt, tvm::Target)\n  File "<unknown>", line 0, in tvm::tl::HostDeviceSplitter::SplitDeviceFunc(tvm::tirx::Stmt, tvm::Target)::{lambda()#1}::operator()() const\n  File "<unknown>", line 0, in tvm::tirx::StmtVisitor::VisitStmt_(tvm::tirx::SeqStmtNode const*)\n  File "<unknown>", line 0, in tvm::tirx::StmtVisitor::VisitStmt_(tvm::tirx::SeqStmtNode const*)\n  File "<unknown>", line 0, in tvm::tirx::VarUseDefAnalyzer::VisitBufferDef(tvm::tirx::Buffer const&, bool)\n  File "/project/3rdparty/tvm/src/tirx/analysis/var_use_def_analysis.cc", line 167, in void tvm::tirx::VarUseDefAnalyzer::HandleDef(const tvm::tirx::Buffer&)\ntvm.error.InternalError: Check failed: (!buffer_def_count_.count(ptr)) is false: buffer p360_V8 has already been defined, the Stmt is not SSA\n'
MUST_REFUSE = ''  # why the layer must refuse the kernel ("": valid)
CHECK_RACES = True  # compiled with check_races=True


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
