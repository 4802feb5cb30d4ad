"""The cross-backend conformance suite: real kernels checked against NumPy on every runtime present."""
from .kernels_basic import CASES as _BASIC
from .kernels_bf16 import CASES as _BF16
from .kernels_matrix import CASES as _MATRIX
from .kernels_parallel import CASES as _PARALLEL
from .kernels_subgroups import CASES as _SUBGROUPS

ALL_CASES = _BASIC + _BF16 + _PARALLEL + _SUBGROUPS + _MATRIX
