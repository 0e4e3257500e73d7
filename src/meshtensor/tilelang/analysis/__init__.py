"""Analyses of mesh kernels: copy verification and communication traffic."""
