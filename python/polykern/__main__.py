"""``python -m polykern`` is the ``polykern`` command line."""
import sys

from polykern.cli import main

if __name__ == "__main__":
    sys.exit(main())
