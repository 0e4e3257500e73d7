"""A random mesh-kernel fuzzer for ``meshtensor.tilelang``.

``program`` holds the typed program (expressions, statements, one ``Program`` per
sub-program, one ``Batch`` per compiled kernel) and writes it as TileLang source;
``generate`` draws random programs; ``model`` runs a program per core in NumPy with
``meshtensor.collectives`` for the comm ops; ``runner`` compiles batches in worker
processes and classifies every program as equal, refused, wrong or crashed;
``reproducer`` writes a standalone script for a wrong or crashed program. The CLI is
``tools/fuzz_kernels.py``; docs/fuzzing.md says what is covered.
"""
