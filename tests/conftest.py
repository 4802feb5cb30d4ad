import os
import sys

# The conformance suite is a package inside tests/; make it importable as `conformance`.
sys.path.insert(0, os.path.dirname(__file__))

# tests/bazel/ holds checks that run only under `bazel test` (they read Bazel-made files).
collect_ignore = ["bazel"]
