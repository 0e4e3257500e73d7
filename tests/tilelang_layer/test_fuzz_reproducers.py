"""Kernels the random-kernel fuzzer found wrong, kept as they were shrunk: each runs with
compile_mesh_kernel's default flags and equals the NumPy model, or is refused with a
ValueError (their scripts compare).

- o3_loop_distribution.py: a promoted T.alloc_var lost its value at gcc -O3 (loop
  distribution into memset/memcpy patterns reordered the core loop's stores);
- o3_strict_aliasing.py: a buffer written through float4* and read through float2* in
  TileLang's C code, reordered by -O3's type-based alias analysis;
- min_operand_reused_after_store.py: TVM's C code generator reused a min's operand,
  loaded before a store to the same element (SelectMinMax);
- unaligned_copy_between_core_views.py: a vectorised copy from a core's view at an
  offset the C code generator could not prove aligned became a gather it cannot print
  (per-core copies now start at aligned strides);
- let_scope_after_the_last_comm_op.py: a let every core shares split the code after
  the last comm op, ending a per-core let's scope (the C code did not compile);
- unaligned_copy_from_global_memory.py: a T.copy TileLang vectorizes into a gather its
  C vector type cannot build (stock TileLang too): refused at first, saying what to
  change; now compiled again with serial loops (decision 134);
- spmdize_shift_in_a_1d_launch.py (from ``--mode spmdize``): spmdize's load for a
  shift read in a 1-D launch reached TileLang's copy lowering as a mod nest it folded
  wrongly (spmdize now simplifies each mod before folding it);
- spmdize_permute_start_simplified_wrongly.py (``--mode spmdize``, seed 78): TVM's
  simplifier changed the value of a permute sender's start (a 1-D launch on a 3-axis
  mesh), so a core sent itself the wrong tile (spmdize now evaluates such starts per
  core before simplifying, and checks every folded start).
- narrow_root_in_a_loop.py (issue 26's fuzzer features, seed f4): a broadcast root
  ``(T.Cast("int8", k * 100 + 97) // 50) % 2`` reached TVM's simplifier unwrapped in
  the lowering, so the exchange used another root (WrapNarrowingCasts now runs first);
- checked_run_folded_store_index.py (seed g27): with ``check_races=True`` the shadow
  check of a store whose index TileLang folds used the folded element and reported a
  race between no cores (ProtectFoldedIndices now checks the shadow's reads in its
  conditions);
- two_shared_dyn_buffers.py: two ``T.alloc_shared`` buffers of the default scope in one
  superstep stopped TileLang ("Only one dynamic shared memory allocation", stock too);
  OneDynamicShared makes them ``shared`` on the C back end;
- wrapped_index_in_a_guarded_store.py (seed m27, in its batch of five): an index
  holding a narrowing cast's wrap (``bitwise_and``) reached TileLang's
  LegalizeSafeMemoryAccess, which stopped (``Check failed: combined.defined()``);
  ProtectFoldedIndices computes such an index into a cell.
- filled_buffer_with_a_view_across_comm_ops.py (seed p32, program 360): a ``T.fill``
  target that lives across comm ops and has a ``T.decl_buffer`` view became a private
  copy per segment, which declared the view twice (TileLang's host/device split:
  "the Stmt is not SSA"); such a buffer is read through its pointer again.
- index_vector_with_core_coordinates.py (seed p32, program 507): TileLang vectorized a
  two-element loop whose index holds the core coordinates and printed the index
  vector as ``int32_t2(a, b)``, which its C header cannot construct (gcc stopped);
  such a kernel is compiled again with its loops serial (decision 134).
"""
import pathlib
import runpy

import pytest

pytest.importorskip("tilelang")
HERE = pathlib.Path(__file__).parent / "fuzz_reproducers"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.stem for p in HERE.glob("*.py")))
def test_fuzz_reproducer_runs_equal_to_the_model(name, capsys, monkeypatch):
    monkeypatch.delenv("CFLAGS", raising=False)  # the default flags are the point
    module = runpy.run_path(str(HERE / f"{name}.py"))
    assert module["main"]() == 0, capsys.readouterr().out
