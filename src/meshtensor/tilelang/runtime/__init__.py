"""Runtimes of kernels that need more than TileLang's C back end: ``T.dist`` kernels
(:mod:`.dist_kernel`, :mod:`.dist_rank`, :mod:`.shim`)."""
