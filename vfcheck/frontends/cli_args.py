"""What the `vfcheck` subcommands share to read their arguments: bounded numbers, and the
options as resolved from the command line and `[tool.vfcheck]`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vfcheck.options import Resolved


def bounded(kind: type[int] | type[float], low: float, high: float | None = None
            ) -> Callable[[str], Any]:
    """An argparse type: a finite `kind` in [low, high], else argparse's one-line usage
    error (exit 2) saying what is allowed."""
    import math

    allowed = f"{'an integer' if kind is int else 'a number'} >= {low:g}" + (
        f" and <= {high:g}" if high is not None else "")

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}") from None
        if not math.isfinite(value) or value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}")
        return value

    return parse


def resolved(args: argparse.Namespace, *, pyproject: bool = True) -> Resolved:
    """The options of `args.command`, checked (`vfcheck.options.resolve`): `[tool.vfcheck]`
    of the nearest pyproject.toml (`vfcheck check`), overridden by the command line."""
    from vfcheck.frontends.step_summary import check_step_summary
    from vfcheck.option_table import cli_given
    from vfcheck.options import resolve

    found = resolve(Path.cwd(), cli_given(args, args.command), front="cli", pyproject=pyproject,
                    find_envs=args.command == "check")
    if args.command in SUMMARY_COMMANDS:
        check_step_summary()
    return found


SUMMARY_COMMANDS = ("check", "library", "merge")
"""The subcommands that append to `$GITHUB_STEP_SUMMARY` at their end."""
