"""`python -m vfcheck.library [--json FILE] [--no-baseline]` is `vfcheck library`."""

import sys

from vfcheck.frontends.cli import main

sys.exit(main(["library", *sys.argv[1:]]))
