"""The polykern IR: typed, structured kernel functions (see nodes.py for semantics)."""
from . import nodes, types  # noqa: F401
from .nodes import *  # noqa: F401,F403
from .printer import function_str  # noqa: F401
from .verifier import verify  # noqa: F401
