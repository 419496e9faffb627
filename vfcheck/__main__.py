"""`python -m vfcheck` is the `vfcheck` command."""

import sys

from vfcheck._frontends.cli import main

sys.exit(main())
