"""Old path of :mod:`meshtensor.tilelang.language.tilelang_mesh`, which the README names
and kernels import (``import meshtensor.tilelang.tilelang_mesh as tm``): importing it
gives that module itself (one ``enable`` state), not a copy."""

import sys

from .language import tilelang_mesh as _module

sys.modules[__name__] = _module
