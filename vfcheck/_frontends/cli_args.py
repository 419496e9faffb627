"""What the `vfcheck` subcommands share to read their arguments: the options as resolved from
the command line and `[tool.vfcheck]`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vfcheck._options.resolved import Resolved


def resolved(args: argparse.Namespace, *, pyproject: bool = True) -> Resolved:
    """The options of `args.command`, checked (`vfcheck._options.resolved.resolve`):
    `[tool.vfcheck]` of the nearest pyproject.toml (`vfcheck check`), overridden by the command
    line."""
    from vfcheck._frontends.step_summary import check_step_summary
    from vfcheck._options.resolved import resolve
    from vfcheck._options.table import cli_given

    found = resolve(Path.cwd(), cli_given(args, args.command), front="cli", pyproject=pyproject)
    if args.command in SUMMARY_COMMANDS:
        check_step_summary()
    if args.command == "check":
        from vfcheck._frontends.registry_names import check_registry_names

        check_registry_names(found)
        found.find_envs()
    return found


SUMMARY_COMMANDS = ("check", "library", "merge")
"""The subcommands that append to `$GITHUB_STEP_SUMMARY` at their end."""
