"""`python -m adjoint`: the command line (see `adjoint.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
