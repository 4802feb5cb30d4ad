"""The kernel language: the decorator, the builtins and the AST -> IR frontend."""
from .builtins import BUILTINS, Builtin  # noqa: F401
from .kernel import Kernel, kernel  # noqa: F401
