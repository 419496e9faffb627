"""`vfcheck run | mock-server` (and the check front end): thin over the library.

Exit codes: 0 done; 1 a failure (an env that does not load, an episode the runner could
not finish); 2 usage error; 130 interrupted (SIGINT); 143 terminated (SIGTERM).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_SIGINT, EXIT_SIGTERM = 0, 1, 2, 130, 143


class Terminated(Exception):
    """SIGTERM, turned into an exception so `finally` blocks run and files are closed."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated()


def _env_args(pairs: Sequence[str]) -> dict[str, Any]:
    from vfcheck.episodes.offline import parse_env_arg

    return dict(parse_env_arg(p) for p in pairs)


def _add_env_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="env config value (dotted into the env config; bare keys go to the "
                        "taskset), e.g. num_tasks=5; VALUE is JSON when it parses")
    p.add_argument("--path", action="append", default=[], metavar="DIR",
                   help="folder holding env modules, put on sys.path and PYTHONPATH")
    p.add_argument("--harness", choices=("env", "fast"), default="fast",
                   help="harness tier: the env's own harness, or vfcheck's in-process chat "
                        "loop where it applies (default: fast)")
    p.add_argument("--script", type=Path, help="the user's script file (TOML)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the default script (default: the script file's, else 0)")
    p.add_argument("--wheels", metavar="DIR",
                   help="folder of wheels the harness programs resolve their dependencies "
                        "from, with no package index (fill it with: vfcheck wheels DIR ENV)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vfcheck", description="Offline conformance kit for verifiers.v1 environments."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="play episodes of an env against the scripted model")
    run.add_argument("env", help="env id, e.g. echo-v1")
    run.add_argument("-n", "--num-tasks", type=int, help="tasks to load (needed if infinite)")
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
    _add_env_options(run)

    check = sub.add_parser(
        "check", help="run the conformance checks on envs (CI-grade exit codes)")
    check.add_argument("envs", nargs="*", metavar="ENV", help="env ids")
    check.add_argument("--from-validate", type=Path, metavar="RUN_DIR",
                       help="grade an existing vf-validate run directory instead")
    check.add_argument("-n", "--num-tasks", type=int, help="tasks to load (needed if infinite)")
    check.add_argument("--checks", help="families to run, comma-separated (exact names)")
    check.add_argument("--sample", type=int, help="tasks sampled by the episode families (3)")
    check.add_argument("--timeout", type=float, help="timeout per check, seconds (60)")
    check.add_argument("--json", type=Path, metavar="FILE", help="write the JSON report")
    check.add_argument("--junit-xml", type=Path, metavar="FILE", help="write JUnit XML")
    check.add_argument("--golden-dir", metavar="DIR",
                       help="where golden traces live (default: golden/ beside pyproject.toml)")
    check.add_argument("--golden-update", action="store_true", default=None,
                       help="write golden traces (and remove unused ones)")
    check.add_argument("--golden-strict", action="store_true", default=None,
                       help="a missing or unused golden trace fails (CI, once recorded)")
    _add_env_options(check)
    check.set_defaults(harness=None)

    library = sub.add_parser(
        "library", help="hold the installed verifiers to the contracts vfcheck relies on")
    library.add_argument("--json", type=Path, metavar="FILE", help="write the JSON report")
    library.add_argument("--junit-xml", type=Path, metavar="FILE", help="write JUnit XML")
    library.add_argument("--no-baseline", action="store_true",
                         help="report known behaviours of this verifiers as failed, not expected")

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
    wheels.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE",
                        help="env config value, as for run")
    wheels.add_argument("--path", action="append", default=[], metavar="DIR",
                        help="folder holding env modules")

    mock = sub.add_parser("mock-server", help="serve the scripted model on 127.0.0.1")
    mock.add_argument("--port", type=int, default=8000)
    mock.add_argument("--script", type=Path, help="the user's script file (TOML)")
    mock.add_argument("--seed", type=int, default=None)
    return parser


def _scripted_model(script: Path | None, seed: int | None) -> Any:
    """The mock's model: the user's script if any (its own seed unless `seed` is given),
    else the built-in default policy."""
    from vfcheck.model import ScriptedModel
    from vfcheck.script import Script

    if script is None:
        return ScriptedModel(seed=seed or 0)
    loaded = Script.load(script)
    return ScriptedModel(loaded.policy(seed), seed=loaded.seed if seed is None else seed)


def cmd_run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from vfcheck.episodes.harness_deps import wheel_folder
    from vfcheck.episodes.runner import EnvLoadError, EpisodeResult, run_episodes
    from vfcheck.frontends.run_report import episode_table
    from vfcheck.isolation.workdirs import owned
    from vfcheck.script import ScriptError

    console = Console(stderr=True)
    try:
        env_args = _env_args(args.env_arg)
        model = None if args.base_url else _scripted_model(args.script, args.seed)
        wheels = str(wheel_folder(args.wheels, Path.cwd(), "--wheels")) if args.wheels else None
    except (ValueError, ScriptError) as e:
        print(f"vfcheck: error: {e}", file=sys.stderr)
        return EXIT_USAGE
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
                args.env, num_tasks=args.num_tasks, rollouts=args.rollouts,
                concurrency=args.concurrency, harness=args.harness, env_args=env_args,
                model=model, base_url=args.base_url, timeout=args.timeout, paths=args.path,
                output=output, wheels=wheels, on_start=started, on_result=finished,
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
    from vfcheck.script import ScriptError

    try:
        model = _scripted_model(args.script, args.seed)
    except ScriptError as e:
        print(f"vfcheck: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    serve_forever(model, args.port)
    return EXIT_OK


def check_options(args: argparse.Namespace) -> Any:
    """`[tool.vfcheck]` of the nearest pyproject.toml, overridden by the command line."""
    from vfcheck.options import resolve_options

    return resolve_options(
        Path.cwd(), env_args=args.env_arg, paths=args.path, checks=args.checks,
        num_tasks=args.num_tasks, sample=args.sample, timeout=args.timeout,
        harness=args.harness, script=args.script, seed=args.seed,
        golden_dir=args.golden_dir, golden_update=args.golden_update,
        golden_strict=args.golden_strict, wheels=args.wheels,
    )


def cmd_check(args: argparse.Namespace) -> int:
    import importlib.metadata
    import shutil
    import tempfile

    from rich.console import Console

    from vfcheck.findings import EnvReport
    from vfcheck.isolation.supervisor import EnvCheck
    from vfcheck.script import ScriptError

    console = Console()
    if args.from_validate is not None:
        from vfcheck.frontends.from_validate import RunDirError, grade

        try:
            graded = [grade(args.from_validate)]
        except RunDirError as e:
            print(f"vfcheck: error: {e}", file=sys.stderr)
            return EXIT_USAGE
        return _conclude(console, graded, args, seed=None, verifiers=None)
    if not args.envs:
        print("vfcheck: error: name at least one env (or --from-validate RUN_DIR)",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        options = check_options(args)
    except (ValueError, ScriptError) as e:
        print(f"vfcheck: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    verifiers = importlib.metadata.version("verifiers")
    console.print(
        f"vfcheck {_version()} · verifiers {verifiers} · envs {', '.join(args.envs)} · "
        f"harness {options.harness} · seed {options.seed if options.seed is not None else 0}"
    )
    run_dir = Path(tempfile.mkdtemp(prefix="vfcheck-check-"))
    checks = [EnvCheck(env, options, run_dir) for env in args.envs]
    reports: list[EnvReport] = []
    try:
        for check in checks:
            check.start()
        for check in checks:
            _follow(console, check)
            reports.append(check.report())
    except (KeyboardInterrupt, Terminated):
        for check in checks:
            check.stop()
        reports = [check.report() for check in checks]
        _conclude(console, reports, args, seed=options.seed, verifiers=verifiers)
        raise
    finally:
        from vfcheck.isolation.workdirs import sweep

        sweep()  # work dirs of workers killed at a hard deadline or by an interrupt
        shutil.rmtree(run_dir, ignore_errors=True)  # the event logs, read into `reports`
    return _conclude(console, reports, args, seed=options.seed, verifiers=verifiers)


def _follow(console: Any, check: Any) -> None:
    """Print each finding of `check` as it arrives, one line, until the run is final."""
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
        if check.log.final:
            return
        check.join(timeout=0.2)


def _conclude(console: Any, reports: list[Any], args: argparse.Namespace, *,
              seed: int | None, verifiers: str | None) -> int:
    from vfcheck.frontends.report import (
        failure_text,
        findings_table,
        golden_summary,
        json_report,
        write_json,
        write_junit,
    )

    for report in reports:
        console.print(findings_table(report))
        for text in failure_text(report):
            console.print(text, highlight=False, markup=False, soft_wrap=True)
        if (golden := golden_summary(report)) is not None:
            console.print(golden, highlight=False, markup=False, soft_wrap=True)
    if args.json is not None:
        write_json(args.json, json_report(reports, verifiers=verifiers, seed=seed))
    if args.junit_xml is not None:
        write_junit(args.junit_xml, reports)
    bad = any(report.bad for report in reports)
    if bad:
        failing = [f for r in reports for f in r.findings if f.bad]
        console.print(f"[bold red]{len(failing)} finding(s) failed or errored[/]")
    return EXIT_FAILED if bad else EXIT_OK


def _version() -> str:
    from vfcheck import __version__

    return __version__


def cmd_library(args: argparse.Namespace) -> int:
    """The library suite in this process (it imports verifiers: `vfcheck library` asked)."""
    import importlib.metadata

    from rich.console import Console

    from vfcheck.episodes.offline import prepare_process_env
    from vfcheck.findings import EnvReport
    from vfcheck.library import library_findings

    prepare_process_env()
    console = Console()
    verifiers = importlib.metadata.version("verifiers")
    console.print(f"vfcheck {_version()} · library suite · verifiers {verifiers} · baseline "
                  f"{'off' if args.no_baseline else 'on'}")
    env_id, findings = library_findings(baseline=not args.no_baseline)
    report = EnvReport(id=env_id, harness="-", findings=findings)
    return _conclude(console, [report], args, seed=None, verifiers=verifiers)


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

    try:
        env_args = _env_args(args.env_arg)
    except ValueError as e:
        print(f"vfcheck: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    prepare_process_env(args.path)
    try:
        programs = programs_of(args.envs, env_args)
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
    args = build_parser().parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("vfcheck: interrupted", file=sys.stderr)
        return EXIT_SIGINT
    except Terminated:
        print("vfcheck: terminated", file=sys.stderr)
        return EXIT_SIGTERM
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
