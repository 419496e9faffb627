"""`python -m vfcheck` is the `vfcheck` command."""

import sys

from vfcheck.frontends.cli import main

sys.exit(main())
