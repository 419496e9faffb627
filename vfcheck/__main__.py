"""`python -m vfcheck` is the `vfcheck` command."""

import sys

from vfcheck.cli import main

sys.exit(main())
