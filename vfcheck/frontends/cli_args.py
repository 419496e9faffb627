"""What the `vfcheck` subcommands share to read their arguments: the options as resolved from
the command line and `[tool.vfcheck]`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vfcheck.options import Resolved


def resolved(args: argparse.Namespace, *, pyproject: bool = True) -> Resolved:
    """The options of `args.command`, checked (`vfcheck.options.resolve`): `[tool.vfcheck]`
    of the nearest pyproject.toml (`vfcheck check`), overridden by the command line."""
    from vfcheck.frontends.step_summary import check_step_summary
    from vfcheck.option_table import cli_given
    from vfcheck.options import resolve

    found = resolve(Path.cwd(), cli_given(args, args.command), front="cli", pyproject=pyproject)
    if args.command in SUMMARY_COMMANDS:
        check_step_summary()
    if args.command == "check":
        found.find_envs()
    return found


SUMMARY_COMMANDS = ("check", "library", "merge")
"""The subcommands that append to `$GITHUB_STEP_SUMMARY` at their end."""
