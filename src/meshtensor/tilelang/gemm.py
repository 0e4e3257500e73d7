"""Old path of :mod:`meshtensor.tilelang.kernels.gemm` (the GEMM kernels; the README
named ``meshtensor.tilelang.gemm`` before the package was laid out in layers):
importing it gives that module itself."""

import sys

from .kernels import gemm as _module

sys.modules[__name__] = _module
