"""Kernels built on the mesh layer: GEMMs on an n x n mesh of cores."""
