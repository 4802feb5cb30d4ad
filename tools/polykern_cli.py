"""Entry point of //:compiler (the `polykern` command)."""
import os
import sys

from polykern.cli import main

if __name__ == "__main__":
    if "BUILD_WORKING_DIRECTORY" in os.environ:  # `bazel run`: paths are relative to the user's cwd
        os.chdir(os.environ["BUILD_WORKING_DIRECTORY"])
    sys.exit(main())
