"""Transformations of mesh kernels: comm-op lowering and global-view spmdization."""
