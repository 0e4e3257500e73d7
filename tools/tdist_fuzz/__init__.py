"""A random multi-rank ``T.dist`` program generator and its runner (``tools/fuzz_tdist.py``,
``docs/tdist.md``): :mod:`.program` writes programs and their NumPy model, :mod:`.runner`
runs them and classifies each."""
