"""The `vfcheck` command: `check` (the check front end), `merge`, `run`, `record`, `init`,
`library`, `list-checks`, `wheels`, `mock-server`; thin over the library. Exit codes are
`vfcheck._shared.exits`'.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vfcheck._frontends.cli_args import resolved
from vfcheck._frontends.episode_commands import (
    cmd_init,
    cmd_mock_server,
    cmd_record,
    cmd_run,
)
from vfcheck._shared.exits import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Terminated,
    interrupt_code,
    raise_terminated,
    signal_name,
)

if TYPE_CHECKING:
    from vfcheck._options.resolved import CheckOptions, RunOptions
    from vfcheck._shared.findings import EnvReport



class UsageInput(Exception):
    """An env cannot take the user's input (a script entry, an env arg): a usage error."""


def build_parser() -> argparse.ArgumentParser:
    """The subcommands; every option with a value comes from the option table
    (`vfcheck._options.table.OPTIONS`), with its default; positional words are written here."""
    from vfcheck._options.table import add_cli_options
    from vfcheck._version import __version__

    parser = argparse.ArgumentParser(
        prog="vfcheck", description="Offline conformance kit for verifiers.v1 environments."
    )
    parser.add_argument("--version", action="version", version=f"vfcheck {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="play episodes of an env against the scripted model")
    run.add_argument("env", help="env id, e.g. echo-v1")
    add_cli_options(run, "run")

    check = sub.add_parser(
        "check", help="run the conformance checks on envs (CI-grade exit codes)")
    add_cli_options(check, "check")

    library = sub.add_parser(
        "library", help="hold the installed verifiers to the contracts vfcheck relies on")
    add_cli_options(library, "library")

    list_checks = sub.add_parser("list-checks", help="print the check catalogue")
    list_checks.add_argument("--markdown", action="store_true",
                             help="print it as the docs' Markdown table")
    list_checks.add_argument("--all", "-v", "--verbose", action="store_true", dest="all",
                             help="print what fails each check and why it matters (the "
                                  "default: a line per check, its contract cut to fit)")

    wheels = sub.add_parser(
        "wheels", help="download the harness programs' dependencies into a wheel folder, "
                       "for --wheels on a machine with no package index")
    wheels.add_argument("folder", type=Path, metavar="DIR", help="the wheel folder")
    wheels.add_argument("envs", nargs="*", metavar="ENV",
                        help="env ids whose harnesses' programs to add (verifiers' chat "
                             "program is always in)")
    add_cli_options(wheels, "wheels")

    record = sub.add_parser(
        "record", help="play an env against a real endpoint and write the replies as a script "
                       "(a cassette) that --script replays offline")
    record.add_argument("env", help="env id, e.g. vfc-echo")
    add_cli_options(record, "record")

    init = sub.add_parser(
        "init", help="add vfcheck to the env package in this folder: [tool.vfcheck], a CI "
                     "workflow, golden traces")
    init.add_argument("envs", nargs="*", metavar="ENV",
                      help="env ids (default: [tool.vfcheck] envs, else the project's name)")
    init.add_argument("--path", action="append", default=[], metavar="DIR", dest="init_paths",
                      help="folder holding the env modules, relative to the package "
                           "(default: . or src if the module is there)")
    init.add_argument("--install", metavar="SOURCE",
                      help="where the CI workflow installs vfcheck from: index (the package "
                           "index), a git URL (git+https://...), a path in the package, or a "
                           "pip requirement (default: how this vfcheck was installed, if CI "
                           "can reach it, else the package index)")

    merge = sub.add_parser(
        "merge", help="join the JSON reports of a run's shards (--shard K/N) into one, "
                      "with check's verdict and exit code")
    merge.add_argument("reports", nargs="+", type=Path, metavar="REPORT",
                       help="JSON reports written by vfcheck check --json (or pytest --vf-json)")
    add_cli_options(merge, "merge")

    mock = sub.add_parser("mock-server", help="serve the scripted model on 127.0.0.1")
    add_cli_options(mock, "mock-server")
    return parser


def cmd_check(args: argparse.Namespace) -> int:
    from rich.console import Console

    from vfcheck._frontends.report import show_reports
    from vfcheck._frontends.run import CheckRun

    console = Console()
    options, run = (found := resolved(args)).check, found.run
    if run.from_validate is not None:
        from vfcheck._frontends.from_validate import RunDirError, grade

        try:
            graded = [grade(Path(run.from_validate))]
        except RunDirError as e:
            print(f"vfcheck: error: {e}", file=sys.stderr)
            return EXIT_USAGE
        return _conclude(console, graded, run, seed=None, verifiers=None, options=options)
    if not run.envs:
        print("vfcheck: error: name at least one env (or set envs in [tool.vfcheck], or give "
              "--from-validate RUN_DIR)", file=sys.stderr)
        return EXIT_USAGE
    envs = run.envs if run.shard is None else run.shard.pick(run.envs)
    if not envs and run.shard is not None:  # more shards than envs: this one passes, saying so
        from vfcheck._shared.compat import verifiers_version

        console.print(f"vfcheck: {run.shard.empty_note(run.envs)}", highlight=False,
                      soft_wrap=True)
        return _conclude(console, [], run, seed=options.played_seed,
                         verifiers=verifiers_version(), options=options)
    with CheckRun(envs, options, run, front="cli") as check_run:
        for line in check_run.header():
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        try:
            check_run.start()
            for check in check_run.checks.values():
                _follow(console, check, check_run.checkpoint, verbose=run.verbose)
        except KeyboardInterrupt as interrupt:  # and SIGTERM's `Terminated`
            check_run.interrupted(interrupt)
            show_reports(console, check_run.finish(), verbose=run.verbose,
                         allow_from=options.allow_from,
                         interrupted=signal_name(check_run.interrupt))
            raise
        except UsageInput as e:  # what was found so far is written; nothing more runs
            check_run.finish()
            print(f"vfcheck: error: {e}", file=sys.stderr)
            return EXIT_USAGE
        reports = check_run.finish()
    show_reports(console, reports, verbose=run.verbose, allow_from=options.allow_from)
    close_run(console, reports, options, run)
    return check_run.exit_code(reports)


def close_run(console: Any, reports: list[EnvReport], options: CheckOptions,
              run: RunOptions) -> None:
    """The families' loud warnings (golden traces not found), then what to do next
    (`vfcheck._frontends.next_steps`)."""
    from vfcheck._frontends.next_steps import closing_lines
    from vfcheck._frontends.views import warnings

    for report in reports:
        for warning in warnings(report, options):
            console.print(warning, style="bold yellow", highlight=False, markup=False)
    for line in closing_lines(reports, options, run):
        console.print(line, highlight=False, markup=False)


def _follow(console: Any, check: Any, checkpoint: Callable[[], None], *,
            verbose: bool) -> None:
    """Show each finding of `check` as it arrives until the run is final: a pytest mark
    on the env's one line, or (`verbose`) a line each; `checkpoint` after new ones (the
    JSON report of what was found so far)."""
    from rich.markup import escape

    from vfcheck._frontends.outcome_grid import MARKS
    from vfcheck._frontends.report import OUTCOME_STYLE

    shown: set[Any] = set()
    margin = len(check.env_id) + 1
    column = margin  # where the next mark lands: a full line goes on below, indented
    if not verbose:
        console.print(f"{check.env_id} ", end="", highlight=False, markup=False, soft_wrap=True)
    try:
        while True:
            check.log.poll()
            for unit, finding in list(check.log.findings.items()):
                if unit in shown:
                    continue
                shown.add(unit)
                if finding.usage:
                    raise UsageInput(finding.message)
                style = OUTCOME_STYLE.get(finding.outcome, "white")
                if not verbose:
                    if column >= max(margin + 10, console.width):
                        console.print("\n" + " " * margin, end="", soft_wrap=True)
                        column = margin
                    console.print(f"[{style}]{MARKS.get(finding.outcome, '?')}[/]", end="",
                                  highlight=False, soft_wrap=True)
                    column += 1
                    continue
                where = "" if finding.task is None else f"[{finding.task.index}]"
                console.print(f"  {escape(check.env_id)} {escape(finding.check)}{where} "
                              f"[{style}]{finding.outcome}[/]", highlight=False)
            checkpoint()
            if check.log.final:
                return
            check.join(timeout=0.2)
    finally:
        if not verbose:
            console.print()


def _conclude(console: Any, reports: list[EnvReport], run: RunOptions, *,
              seed: int | None, verifiers: str | None,
              options: CheckOptions | None = None) -> int:
    """Findings made in this process (`--from-validate`, `vfcheck library`): shown, written
    to the reports asked for; the exit code."""
    from vfcheck._frontends.report import show_reports
    from vfcheck._frontends.report_files import write_reports
    from vfcheck._options.resolved import CheckOptions

    options = options or CheckOptions()
    show_reports(console, reports, verbose=run.verbose, allow_from=options.allow_from)
    write_reports(reports, run, verifiers=verifiers, seed=seed)
    close_run(console, reports, options, run)
    return EXIT_FAILED if any(report.bad for report in reports) else EXIT_OK


def cmd_merge(args: argparse.Namespace) -> int:
    """The shards' reports as one run's (`vfcheck._frontends.merge`)."""
    from rich.console import Console

    from vfcheck._frontends.merge import MergeError, merge

    run = resolved(args, pyproject=False).run
    try:
        merged = merge(args.reports)
    except MergeError as e:
        print(f"vfcheck: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    console = Console()
    console.print(f"vfcheck merge · {len(merged.sources)} report(s) · {len(merged.reports)} "
                  f"env(s) · verifiers {merged.verifiers} · seed {merged.seed}",
                  highlight=False)
    for report in merged.reports:
        console.print(f"  {report.id}: checked by {report.worker}"
                      + (f" on {report.host}" if report.host else ""), highlight=False)
    return _conclude(console, merged.reports, run, seed=merged.seed, verifiers=merged.verifiers)


def cmd_library(args: argparse.Namespace) -> int:
    """The library suite in this process (it imports verifiers: `vfcheck library` asked)."""

    from rich.console import Console

    from vfcheck._episodes.offline import prepare_process_env
    from vfcheck._library import library_findings
    from vfcheck._shared.compat import verifiers_version
    from vfcheck._shared.findings import EnvReport
    from vfcheck._version import __version__

    run = resolved(args, pyproject=False).run
    prepare_process_env()
    console = Console()
    verifiers = verifiers_version()
    console.print(f"vfcheck {__version__} · library suite · verifiers {verifiers} · baseline "
                  f"{'off' if run.no_baseline else 'on'}")
    env_id, findings = library_findings(baseline=not run.no_baseline)
    report = EnvReport(id=env_id, harness="-", findings=findings)
    return _conclude(console, [report], run, seed=None, verifiers=verifiers)


def cmd_list_checks(args: argparse.Namespace) -> int:
    """The registered checks; a check plug-in that failed to import is said after them, on
    stderr, and the exit code is a usage error's (a user testing their own plug-in runs
    this first)."""
    from vfcheck.checks import REGISTRY

    list_checks(args)
    for error in REGISTRY.plugin_errors:
        print(f"vfcheck: error: {error}", file=sys.stderr)
    return EXIT_USAGE if REGISTRY.plugin_errors else EXIT_OK


def list_checks(args: argparse.Namespace) -> None:
    from rich.console import Console
    from rich.table import Table

    from vfcheck.checks import CATALOGUE

    if args.markdown:
        from vfcheck.checks._catalogue import markdown_table

        print(markdown_table(CATALOGUE))
        return
    console = Console()
    if not args.all:  # one screen: a line per check, its contract cut to the width
        from vfcheck._frontends.report import table_cell

        id_width = max(len(spec.id) for spec in CATALOGUE)
        room = max(20, console.width - id_width - 10)
        lines = [f"vfcheck checks ({len(CATALOGUE)}): check, per, contract",
                 *(f"{spec.id:<{id_width}}  {spec.scope:<6}  "
                   f"{table_cell(spec.contract.replace('`', ''), room)}" for spec in CATALOGUE),
                 "--all: what fails each check and why it matters; --markdown: the docs' table"]
        for line in lines:
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        return
    table = Table(title="vfcheck checks")
    for column in ("family", "id", "per"):
        table.add_column(column, no_wrap=True)
    for column in ("fails when", "why it matters"):
        table.add_column(column, overflow="fold")
    for spec in CATALOGUE:
        table.add_row(spec.family, spec.id, spec.scope, spec.fails_when, spec.why)
    console.print(table)


def cmd_wheels(args: argparse.Namespace) -> int:
    """Fill a wheel folder for `--wheels`: the dependencies of verifiers' chat program and
    of the named envs' harness programs, for this interpreter, proven to resolve offline."""
    from vfcheck._episodes.load_errors import EnvLoadError
    from vfcheck._episodes.offline import prepare_process_env
    from vfcheck._episodes.wheels_command import WheelsError, fill, programs_of
    from vfcheck._options.table import OptionError
    from vfcheck._shared.paths import unwritable

    options = resolved(args, pyproject=False).check
    if (why := unwritable(args.folder.absolute(), folder=True)) is not None:
        raise OptionError(f"DIR: cannot fill {args.folder.absolute()}: {why}")
    prepare_process_env(options.paths)
    try:
        programs = programs_of(args.envs, options.env_args)
        wheels = fill(args.folder.resolve(), programs)
    except (EnvLoadError, WheelsError) as e:
        print(f"vfcheck: {e}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as e:  # the folder cannot be made or written after all (/proc, a full disk)
        print(f"vfcheck: error: cannot fill {args.folder}: {e.strerror or e}", file=sys.stderr)
        return EXIT_FAILED
    print(f"{len(wheels)} wheel(s) in {args.folder}; use: --wheels {args.folder}")
    return EXIT_OK


COMMANDS = {"run": cmd_run, "check": cmd_check, "merge": cmd_merge, "library": cmd_library,
            "list-checks": cmd_list_checks, "mock-server": cmd_mock_server, "record": cmd_record,
            "init": cmd_init,
            "wheels": cmd_wheels}


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None
               ) -> argparse.Namespace:
    """`parser.parse_args`, but a word no subcommand flag takes is that subcommand's usage
    error (argparse leaves it to the top-level parser, whose usage names no flag)."""
    import difflib

    args, extra = parser.parse_known_args(argv)
    if extra:
        subcommands = next(a for a in parser._actions
                           if isinstance(a, argparse._SubParsersAction))
        command: argparse.ArgumentParser = subcommands.choices[args.command]
        flags = [f for a in command._actions for f in a.option_strings]
        close = difflib.get_close_matches(extra[0].split("=", 1)[0], flags, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        command.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    from vfcheck._options.table import OptionError

    args = parse_args(build_parser(), argv)
    # the process's entry point: SIGTERM unwinds as Ctrl-C does, for the process's whole
    # life (no handler to restore: restoring the default on the way out would let a late
    # SIGTERM kill the process before it returns the code of the interrupt it handled)
    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        return COMMANDS[args.command](args)
    except OptionError as e:  # a bad option value, found before any work started
        print(f"vfcheck: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as interrupt:  # and SIGTERM's `Terminated`
        terminated = isinstance(interrupt, Terminated)
        print(f"vfcheck: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        return interrupt_code(interrupt)


if __name__ == "__main__":
    sys.exit(main())
