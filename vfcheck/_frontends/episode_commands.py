"""The `vfcheck` commands that play episodes outside a check run: `run` (against the scripted
model or a real endpoint), `record` (a cassette of a real endpoint's replies) and
`mock-server` (the scripted model on 127.0.0.1); `init`, which sets a package up."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from vfcheck._frontends.cli_args import resolved
from vfcheck._shared.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from vfcheck._shared.paths import shown_path


def _load_script(script: str | None) -> Any:
    """The user's `--script` (a `vfcheck._model.script.Script`), read once, or None."""
    from vfcheck._model.script import Script

    return None if script is None else Script.load(Path(script))


def _scripted_model(script: Any, seed: int) -> Any:
    """The mock's model: the user's loaded script if any, else the built-in default policy;
    `seed` is the one that plays (`CheckOptions.played_seed`)."""
    from vfcheck._model import ScriptedModel

    if script is None:
        return ScriptedModel(seed=seed)
    return ScriptedModel(script.policy(seed), seed=seed, http=script.http_answers())


def check_output_and_url(output: Path, base_url: str | None) -> None:
    """The output file is writable and the endpoint is a URL, or a one-line usage error."""
    from vfcheck._options.table import OptionError
    from vfcheck._shared.paths import unwritable

    if (why := unwritable(output.absolute())) is not None:
        raise OptionError(f"-o/--output: cannot write {output.absolute()}: {why}")
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise OptionError(f"--base-url: {base_url!r} is not an http:// or https:// URL "
                          "(e.g. http://127.0.0.1:8000/v1)")


def cmd_run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from vfcheck._episodes.load_errors import EnvArgError, EnvLoadError
    from vfcheck._episodes.runner import EpisodeResult, run_episodes
    from vfcheck._frontends.cassette import misses
    from vfcheck._frontends.run_report import episode_table
    from vfcheck._host.warm_plan import starts_line
    from vfcheck._isolation.workdirs import owned
    from vfcheck._model.script import ScriptError
    from vfcheck._options.resolved import check_env_ids

    console = Console(stderr=True)
    found = resolved(args, pyproject=False)  # `vfcheck run` reads no pyproject.toml
    options, play = found.check, found.episodes
    output = Path(play.output) if play.output else (
        Path("vfcheck-runs") / args.env / "episodes.jsonl")
    check_output_and_url(output, play.base_url)
    check_env_ids([args.env], options.paths)
    script = _load_script(options.script)
    model = None if play.base_url else _scripted_model(script, options.played_seed)
    progress = Progress(
        "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=console, transient=False,
    )
    bar = progress.add_task(f"{args.env} (loading)", total=None)

    def started(total: int) -> None:
        progress.update(bar, total=total, description=args.env)

    def finished(result: EpisodeResult) -> None:
        progress.advance(bar)

    def follows_script(tasks: list[Any]) -> list[Any] | None:
        """A script entry that matches no task is the user's mistake: stop before playing.
        A cassette (`fallback = "error"`: it answers only what it holds) plays the tasks it
        holds, as `vfcheck record` recorded them, not the env's others."""
        if options.script is None or options.num_tasks is not None:
            return None
        from vfcheck._model import TaskRef

        refs = [TaskRef(t.data.idx, str(t.key)) for t in tasks]
        strays = script.unmatched(refs)
        if strays:
            raise ScriptError(f"{shown_path(Path(options.script))}: {' and '.join(strays)} "
                              f"match{'es' if len(strays) == 1 else ''} no task of env "
                              f"{args.env!r} ({len(tasks)} task(s), indices 0-"
                              f"{len(tasks) - 1})")
        if script.fallback != "error":
            return None
        held = [t for t, ref in zip(tasks, refs, strict=True) if script.listed(ref)]
        if len(held) < len(tasks):
            console.print(f"{shown_path(Path(options.script))} holds {len(held)} of the "
                          f"{len(tasks)} tasks: playing those (-n N plays the first N)",
                          highlight=False, markup=False)
        return held

    try:
        with owned(), progress:  # HOME: a work dir of this run's own (vfcheck._isolation.workdirs)
            summary = asyncio.run(run_episodes(
                args.env, num_tasks=options.num_tasks, rollouts=play.rollouts,
                concurrency=play.concurrency, harness=options.harness,
                env_args=options.env_args, model=model, base_url=play.base_url,
                api_key_var=play.api_key_var, model_name=play.model, timeout=play.episode_timeout,
                paths=options.paths, output=output,
                wheels=options.wheels, script_tools=script.tool_names() if script else frozenset(),
                on_start=started, on_result=finished,
                on_tasks=follows_script, warm_starts=not options.cold_starts,
            ))
    except EnvArgError as e:
        print(f"vfcheck: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except EnvLoadError as e:
        print(f"vfcheck: {e}", file=sys.stderr)  # one line, never wrapped
        return EXIT_FAILED
    except ScriptError as e:
        print(f"vfcheck: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    for tier in summary.tiers:
        console.print(f"role {tier.role!r}: {tier.tier} tier ({tier.harness}: {tier.reason})")
    Console().print(episode_table(summary))
    console.print(f"episodes: {args.output or output}")
    console.print(starts_line(summary.starts), highlight=False, soft_wrap=True)
    failed = [r.runner_error for r in summary.results if r.runner_error]
    for error in dict.fromkeys(failed):  # one line each, never wrapped
        print(f"vfcheck: {failed.count(error)} episode(s): {error}", file=sys.stderr)
    missed = [] if model is None else misses(model.requests)  # a cassette's unheld turns
    for miss in missed:
        print(f"vfcheck: {miss}", file=sys.stderr)
    errored = [r.errors() for r in summary.results]
    # e.g. --base-url at a port nothing listens on (a runner error was said above already)
    if not failed and summary.results and all(errored):
        first = errored[0][0]
        where = f" (endpoint {play.base_url})" if play.base_url else ""
        print(f"vfcheck: every episode ({len(errored)}) recorded an error{where}; the first: "
              f"{' '.join(first.split())[:300]}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_FAILED if failed or missed else EXIT_OK


def cmd_record(args: argparse.Namespace) -> int:
    """Record a cassette (`vfcheck._frontends.cassette`): the first `-n` tasks (default: the tasks a
    check run samples, `--sample`) against `--base-url`, written to `-o`.
    It reads `[tool.vfcheck]` as `vfcheck check` does (paths, env args, harness)."""
    from rich.console import Console

    from vfcheck._episodes.load_errors import EnvArgError, EnvLoadError
    from vfcheck._frontends.cassette import ApiKeyMissing, RecordError, record, write_cassette
    from vfcheck._isolation.workdirs import owned
    from vfcheck._options.resolved import check_env_ids

    console = Console(stderr=True)
    found = resolved(args)
    options, play = found.check, found.episodes
    assert play.output is not None and play.base_url is not None  # required by argparse
    output = Path(play.output)
    check_output_and_url(output, play.base_url)  # before any (paid) model call
    check_env_ids([args.env], options.paths)
    num_tasks = options.sample  # what a check run plays; a pyproject's `num_tasks` is what
    if args.num_tasks is not None and options.num_tasks is not None:  # it loads: not it
        num_tasks = options.num_tasks
    try:
        with owned():  # HOME: a work dir of this run's own, as `vfcheck run`
            recording = asyncio.run(record(
                args.env, base_url=play.base_url, api_key_var=play.api_key_var,
                model_name=play.model, num_tasks=num_tasks, harness=options.harness,
                env_args=options.env_args, paths=options.paths, wheels=options.wheels,
                timeout=play.episode_timeout, concurrency=play.concurrency,
            ))
    except (EnvLoadError, RecordError) as e:
        said = "error: " if isinstance(e, EnvArgError) else ""
        print(f"vfcheck: {said}{e}", file=sys.stderr)  # one line, never wrapped
        return EXIT_USAGE if isinstance(e, ApiKeyMissing | EnvArgError) else EXIT_FAILED
    write_cassette(output, recording.text)
    for tier in recording.tiers:
        console.print(f"role {tier.role!r}: {tier.tier} tier ({tier.harness}: {tier.reason})",
                      highlight=False, markup=False)
    for task in recording.tasks:
        console.print(f"  [{task.index}] {task.key}: {len(task.turns)} turn(s)",
                      highlight=False, markup=False)
        for note in task.notes:
            print(f"vfcheck: task {task.key!r}: {note}", file=sys.stderr)
    recorded = sum(1 for task in recording.tasks if task.turns)
    shown = args.output  # as the user wrote it
    console.print(f"cassette: {shown} ({recorded} task(s)); replay it offline: "
                  f"vfcheck check {args.env} --script {shown}",
                  highlight=False, markup=False, soft_wrap=True)
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    """`vfcheck._frontends.scaffold`: plan (refusing conflicts, writing nothing), then carry
    it out."""
    from vfcheck._frontends.scaffold import InitError, init_package, plan_init
    from vfcheck._options.resolved import resolve

    root = Path.cwd()
    try:
        plan = plan_init(root, args.envs, args.init_paths,
                         lambda: Path(resolve(root).check.golden_dir), install=args.install)
    except InitError as e:
        print(f"vfcheck: init: {e}", file=sys.stderr)
        return EXIT_USAGE if e.usage else EXIT_FAILED
    if not plan.changes:
        init_package(plan, echo=print)
        print("nothing to change: vfcheck is set up here. Run: "
              f"pytest {' '.join('--vf-env ' + env for env in plan.envs)}")
        return EXIT_OK
    if not init_package(plan, echo=print):
        return EXIT_FAILED
    print(f"next: pytest {' '.join('--vf-env ' + env for env in plan.envs)}  (or: vfcheck "
          "check); then commit pyproject.toml, .github/workflows/vfcheck.yml and the golden "
          "traces")
    return EXIT_OK


def cmd_mock_server(args: argparse.Namespace) -> int:
    from vfcheck._model import serve_forever
    from vfcheck._shared.paths import shown_path

    found = resolved(args, pyproject=False)
    options, port = found.check, found.episodes.port
    script = _load_script(options.script)
    if script is not None and (why := script.unservable_apart()) is not None:
        print(f"vfcheck: error: {shown_path(Path(str(options.script)))}: {why}",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        serve_forever(_scripted_model(script, options.played_seed), port)
    except OSError as e:  # the port is taken, or not ours to bind
        print(f"vfcheck: error: mock-server cannot listen on 127.0.0.1:{port}: "
              f"{e.strerror or e} (use another --port, or --port 0 for a free one)",
              file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK
