"""The `vfcheck` command: `check` (the check front end), `run`, `library`, `list-checks`,
`wheels`, `mock-server`; thin over the library. Exit codes are `vfcheck.exits`'.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vfcheck.exits import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Terminated,
    interrupt_code,
    raise_terminated,
)

if TYPE_CHECKING:
    from vfcheck.findings import EnvReport
    from vfcheck.options import Resolved, RunOptions


def build_parser() -> argparse.ArgumentParser:
    """The subcommands; options shared with the check run come from the option table
    (`vfcheck.option_table.OPTIONS`), flags of one subcommand only are written here."""
    from vfcheck.option_table import add_cli_options

    parser = argparse.ArgumentParser(
        prog="vfcheck", description="Offline conformance kit for verifiers.v1 environments."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="play episodes of an env against the scripted model")
    run.add_argument("env", help="env id, e.g. echo-v1")
    run.add_argument("-r", "--rollouts", type=int, default=1, help="episodes per task")
    run.add_argument("-c", "--concurrency", type=int, default=4, help="episodes at once")
    run.add_argument("--base-url", help="a real OpenAI-compatible endpoint instead of the mock")
    run.add_argument("--api-key-var", default="OPENAI_API_KEY",
                     help="env var holding the key for --base-url")
    run.add_argument("--model", help="model name sent upstream")
    run.add_argument("--timeout", type=float, default=300.0,
                     help="deadline per episode, seconds (default 300)")
    run.add_argument("-o", "--output", type=Path,
                     help="episodes JSONL (default vfcheck-runs/<env>/episodes.jsonl)")
    add_cli_options(run, "run")

    check = sub.add_parser(
        "check", help="run the conformance checks on envs (CI-grade exit codes)")
    add_cli_options(check, "check")

    library = sub.add_parser(
        "library", help="hold the installed verifiers to the contracts vfcheck relies on")
    add_cli_options(library, "library")

    list_checks = sub.add_parser("list-checks", help="print the check catalogue")
    list_checks.add_argument("--markdown", action="store_true",
                             help="print it as the README's Markdown table")

    wheels = sub.add_parser(
        "wheels", help="download the harness programs' dependencies into a wheel folder, "
                       "for --wheels on a machine with no package index")
    wheels.add_argument("folder", type=Path, metavar="DIR", help="the wheel folder")
    wheels.add_argument("envs", nargs="*", metavar="ENV",
                        help="env ids whose harnesses' programs to add (verifiers' chat "
                             "program is always in)")
    add_cli_options(wheels, "wheels")

    mock = sub.add_parser("mock-server", help="serve the scripted model on 127.0.0.1")
    mock.add_argument("--port", type=int, default=8000)
    add_cli_options(mock, "mock-server")
    return parser


def resolved(args: argparse.Namespace, *, pyproject: bool = True) -> Resolved:
    """The options of `args.command`, checked (`vfcheck.options.resolve`): `[tool.vfcheck]`
    of the nearest pyproject.toml (`vfcheck check`), overridden by the command line."""
    from vfcheck.option_table import cli_given
    from vfcheck.options import resolve

    return resolve(Path.cwd(), cli_given(args, args.command), front="cli",
                   pyproject=pyproject)


def _scripted_model(script: str | None, seed: int | None) -> Any:
    """The mock's model: the user's script if any (its own seed unless `seed` is given),
    else the built-in default policy."""
    from vfcheck.model import ScriptedModel
    from vfcheck.script import Script

    if script is None:
        return ScriptedModel(seed=seed or 0)
    loaded = Script.load(Path(script))
    return ScriptedModel(loaded.policy(seed), seed=loaded.seed if seed is None else seed)


def _script_tools(script: str | None) -> frozenset[str]:
    from vfcheck.script import Script

    return frozenset() if script is None else Script.load(Path(script)).tool_names()


def cmd_run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from vfcheck.episodes.runner import EnvLoadError, EpisodeResult, run_episodes
    from vfcheck.frontends.run_report import episode_table
    from vfcheck.isolation.workdirs import owned

    console = Console(stderr=True)
    options = resolved(args, pyproject=False).check  # `vfcheck run` reads no pyproject.toml
    model = None if args.base_url else _scripted_model(options.script, options.seed)
    output = args.output or Path("vfcheck-runs") / args.env / "episodes.jsonl"
    progress = Progress(
        "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=console, transient=False,
    )
    bar = progress.add_task(f"{args.env} (loading)", total=None)

    def started(total: int) -> None:
        progress.update(bar, total=total, description=args.env)

    def finished(result: EpisodeResult) -> None:
        progress.advance(bar)

    try:
        with owned(), progress:  # HOME: a work dir of this run's own (vfcheck.isolation.workdirs)
            summary = asyncio.run(run_episodes(
                args.env, num_tasks=options.num_tasks, rollouts=args.rollouts,
                concurrency=args.concurrency, harness=options.harness,
                env_args=options.env_args, model=model, base_url=args.base_url,
                timeout=args.timeout, paths=options.paths, output=output,
                wheels=options.wheels, script_tools=_script_tools(options.script),
                on_start=started, on_result=finished,
            ))
    except EnvLoadError as e:
        print(f"vfcheck: {e}", file=sys.stderr)  # one line, never wrapped
        return EXIT_FAILED
    for tier in summary.tiers:
        console.print(f"role {tier.role!r}: {tier.tier} tier ({tier.harness}: {tier.reason})")
    Console().print(episode_table(summary))
    console.print(f"episodes: {output}")
    failed = [r.runner_error for r in summary.results if r.runner_error]
    for error in dict.fromkeys(failed):  # one line each, never wrapped
        print(f"vfcheck: {failed.count(error)} episode(s): {error}", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK


def cmd_mock_server(args: argparse.Namespace) -> int:
    from vfcheck.model import serve_forever

    options = resolved(args, pyproject=False).check
    serve_forever(_scripted_model(options.script, options.seed), args.port)
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from rich.console import Console

    from vfcheck.frontends.run import CheckRun

    console = Console()
    options, run = (found := resolved(args)).check, found.run
    if run.from_validate is not None:
        from vfcheck.frontends.from_validate import RunDirError, grade

        try:
            graded = [grade(Path(run.from_validate))]
        except RunDirError as e:
            print(f"vfcheck: error: {e}", file=sys.stderr)
            return EXIT_USAGE
        return _conclude(console, graded, run, seed=None, verifiers=None)
    if not run.envs:
        print("vfcheck: error: name at least one env (or --from-validate RUN_DIR)",
              file=sys.stderr)
        return EXIT_USAGE
    with CheckRun(run.envs, options, run, front="cli") as check_run:
        for line in check_run.header():
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        try:
            check_run.start()
            for check in check_run.checks.values():
                _follow(console, check, check_run.checkpoint)
        except KeyboardInterrupt as interrupt:  # and SIGTERM's `Terminated`
            check_run.interrupted(interrupt)
            _show(console, check_run.finish())
            raise
        reports = check_run.finish()
    _show(console, reports)
    return check_run.exit_code(reports)


def _follow(console: Any, check: Any, checkpoint: Callable[[], None]) -> None:
    """Print each finding of `check` as it arrives, one line, until the run is final;
    `checkpoint` after new ones (the JSON report of what was found so far)."""
    shown: set[Any] = set()
    style = {"passed": "green", "failed": "red", "error": "magenta", "skipped": "yellow"}
    while True:
        check.log.poll()
        for unit, finding in list(check.log.findings.items()):
            if unit not in shown:
                shown.add(unit)
                where = "" if finding.task is None else f"[{finding.task.index}]"
                console.print(f"  {check.env_id} {finding.check}{where} "
                              f"[{style.get(finding.outcome, 'white')}]{finding.outcome}[/]",
                              highlight=False)
        checkpoint()
        if check.log.final:
            return
        check.join(timeout=0.2)


def _show(console: Any, reports: list[EnvReport]) -> None:
    """A table per env, the whole message of each failure below it, the golden summary."""
    from vfcheck.frontends.probe_table import probe_table
    from vfcheck.frontends.report import (
        failure_text,
        findings_table,
        golden_summary,
        tier_summary,
    )

    for report in reports:
        console.print(findings_table(report))
        for text in failure_text(report):
            console.print(text, highlight=False, markup=False, soft_wrap=True)
        if (tiers := tier_summary(report)) is not None:
            console.print(tiers, highlight=False, markup=False, soft_wrap=True)
        if (golden := golden_summary(report)) is not None:
            console.print(golden, highlight=False, markup=False, soft_wrap=True)
        if (probes := probe_table(report)) is not None:
            for line in probes.lines():
                console.print(line, highlight=False, markup=False, soft_wrap=True)
    failing = [f for r in reports for f in r.findings if f.bad]
    if failing:
        console.print(f"[bold red]{len(failing)} finding(s) failed or errored[/]")


def _conclude(console: Any, reports: list[EnvReport], run: RunOptions, *,
              seed: int | None, verifiers: str | None) -> int:
    """Findings made in this process (`--from-validate`, `vfcheck library`): shown, written
    to the reports asked for; the exit code."""
    from vfcheck.frontends.report import json_report, write_json, write_junit

    _show(console, reports)
    if run.json is not None:
        write_json(Path(run.json), json_report(reports, verifiers=verifiers, seed=seed))
    if run.junit_xml is not None:
        write_junit(Path(run.junit_xml), reports)
    return EXIT_FAILED if any(report.bad for report in reports) else EXIT_OK


def cmd_library(args: argparse.Namespace) -> int:
    """The library suite in this process (it imports verifiers: `vfcheck library` asked)."""

    from rich.console import Console

    from vfcheck import __version__
    from vfcheck.episodes.offline import prepare_process_env
    from vfcheck.findings import EnvReport
    from vfcheck.frontends.run import verifiers_version
    from vfcheck.library import library_findings

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
    from rich.console import Console
    from rich.table import Table

    from vfcheck.checks import CATALOGUE

    if args.markdown:
        from vfcheck.checks.catalogue import markdown_table

        print(markdown_table(CATALOGUE))
        return EXIT_OK
    table = Table(title="vfcheck checks")
    for column in ("family", "id", "per"):
        table.add_column(column, no_wrap=True)
    for column in ("fails when", "why it matters"):
        table.add_column(column, overflow="fold")
    for spec in CATALOGUE:
        table.add_row(spec.family, spec.id, spec.scope, spec.fails_when, spec.why)
    Console().print(table)
    return EXIT_OK


def cmd_wheels(args: argparse.Namespace) -> int:
    """Fill a wheel folder for `--wheels`: the dependencies of verifiers' chat program and
    of the named envs' harness programs, for this interpreter, proven to resolve offline."""
    from vfcheck.episodes.offline import prepare_process_env
    from vfcheck.episodes.runner import EnvLoadError
    from vfcheck.episodes.wheels_command import WheelsError, fill, programs_of

    options = resolved(args, pyproject=False).check
    prepare_process_env(options.paths)
    try:
        programs = programs_of(args.envs, options.env_args)
        wheels = fill(args.folder.resolve(), programs)
    except (EnvLoadError, WheelsError) as e:
        print(f"vfcheck: {e}", file=sys.stderr)
        return EXIT_FAILED
    print(f"{len(wheels)} wheel(s) in {args.folder}; use: --wheels {args.folder}")
    return EXIT_OK


COMMANDS = {"run": cmd_run, "check": cmd_check, "library": cmd_library,
            "list-checks": cmd_list_checks, "mock-server": cmd_mock_server,
            "wheels": cmd_wheels}


def main(argv: Sequence[str] | None = None) -> int:
    from vfcheck.option_table import OptionError

    args = build_parser().parse_args(argv)
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
