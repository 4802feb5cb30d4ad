"""`bazel run //tools:inspect -- k.kbin [--source FMT] [--json]`: describe an artifact, no runtime."""
import os
import sys

from polykern.cli import main

if __name__ == "__main__":
    # `bazel run` starts in the runfiles tree; resolve paths against where the user ran bazel.
    os.chdir(os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd()))
    sys.exit(main(["inspect", *sys.argv[1:]]))
