"""Run verifiers' own console scripts offline and keep what they did (exit code, output,
the files they wrote), so the `usage` and `api` checks judge real behaviour, not source.

Each run gets a fresh working folder in a scratch dir. Every run is offline: the probe env
comes from a folder on PYTHONPATH, runtimes are `subprocess`, `--push false`, the model is
`vfcheck mock-server` on 127.0.0.1, uv is on PATH (the null harness is a uv script). A
script is started through its entry point (`module:attr` from the distribution metadata),
exactly what the installed `vf-*` wrapper does, so no PATH lookup can pick another one.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vfcheck._episodes.offline import MOCK_API_KEY_VAR, OFFLINE_ENV, uv_bin_dir
from vfcheck._model import DEFAULT_MODEL_ID

CLI_TIMEOUT = 120.0
"""Seconds one CLI run may take (vf-eval with the null harness takes ~15 s)."""
MOCK_START_TIMEOUT = 120.0
INIT_PROBE = "vfc-init-probe"
"""The env name the `vf-init` runs scaffold (in scratch folders only)."""


def console_scripts() -> dict[str, str]:
    """`vf-*` console scripts of the installed verifiers distribution: name -> `module:attr`."""
    try:
        dist = importlib.metadata.distribution("verifiers")
    except importlib.metadata.PackageNotFoundError:
        return {}
    return {
        ep.name: ep.value for ep in dist.entry_points if ep.group == "console_scripts"
    }


@dataclass
class CliRun:
    """One CLI invocation and what it left behind."""

    label: str
    script: str
    args: list[str]
    cwd: Path
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    problem: str | None = None
    """Why the run produced no verdict (the script is missing, it timed out)."""
    timed_out: bool = False
    first_attempt: str | None = None
    """What the first attempt met when this is a confirming second run (`confirm_alone`)."""
    run_glob: str | None = None
    """Where, relative to `cwd`, the command puts its run directory (`out/*`)."""

    @property
    def shown(self) -> str:
        """The command as a user would type it (relative paths only)."""
        return " ".join([self.script, *self.args])

    def run_dir(self) -> Path | None:
        """The one run directory the command created (None: none, or several)."""
        if self.run_glob is None:
            return None
        found = [p for p in self.cwd.glob(self.run_glob) if p.is_dir()]
        return found[0] if len(found) == 1 else None

    def outcome(self) -> str:
        """`exit 0`, or `exit 1: <the error it printed>`, or why it did not run."""
        if self.problem:
            return self.problem
        if self.returncode == 0:
            return "exit 0"
        return f"exit {self.returncode}: {error_summary(self)}"

    def tail(self, lines: int = 8) -> str:
        text = (self.stderr.strip() or self.stdout.strip()).splitlines()
        return "\n".join(text[-lines:])

    def files(self, under: Path | None = None) -> list[str]:
        """Every file and symlink written under `under` (default: the run's folder),
        relative, sorted; the run's own stdout/stderr captures excluded."""
        base = under or self.cwd
        found = []
        for folder, dirs, names in os.walk(base):
            for name in [*names, *(d for d in dirs if Path(folder, d).is_symlink())]:
                rel = Path(folder, name).relative_to(base).as_posix()
                if not rel.startswith(".vfcheck-"):
                    found.append(rel)
        return sorted(found)


def command(target: str, script: str) -> list[str]:
    """The argv that runs entry point `module:attr` the way its console script does."""
    module, _, attr = target.partition(":")
    code = (f"import sys; from {module} import {attr} as main; sys.argv[0] = {script!r}; "
            "sys.exit(main())")
    return [sys.executable, "-c", code]


def cli_environment(paths: Sequence[Path]) -> dict[str, str]:
    """The process environment of an offline CLI run: offline flags, the mock's API key
    variable, uv and this interpreter's scripts on PATH, the env folders on PYTHONPATH."""
    env = dict(os.environ)
    for key, value in OFFLINE_ENV.items():
        env.setdefault(key, value)
    env[MOCK_API_KEY_VAR] = env.get(MOCK_API_KEY_VAR) or "vfcheck-offline"
    uv_dir = uv_bin_dir()
    bins = [str(d) for d in (uv_dir, Path(sys.executable).parent) if d is not None]
    env["PATH"] = os.pathsep.join([*bins, env.get("PATH", "")])
    extra = [str(p.resolve()) for p in paths]
    env["PYTHONPATH"] = os.pathsep.join([*extra, *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("COLUMNS", "120")
    return env


async def run_cli(run: CliRun, target: str | None, env: dict[str, str],
                  timeout: float = CLI_TIMEOUT) -> CliRun:
    """Run `run` (its script resolved to `target`) to completion or `timeout`; output is
    captured through files, so a chatty CLI never blocks on a full pipe."""
    if target is None:
        run.problem = f"verifiers installs no console script {run.script!r}"
        return run
    run.cwd.mkdir(parents=True, exist_ok=True)
    out_path = run.cwd / f".vfcheck-{run.label}.out"
    err_path = run.cwd / f".vfcheck-{run.label}.err"
    start = time.perf_counter()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        try:
            proc = await asyncio.create_subprocess_exec(
                *command(target, run.script), *run.args, cwd=run.cwd, env=env,
                stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=err,
            )
        except OSError as e:
            run.problem = f"could not start {run.script}: {e}"
            return run
        try:
            run.returncode = await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            run.timed_out = True
            run.problem = f"{run.shown} did not finish within {timeout:g}s"
            if run.first_attempt is not None:
                run.problem += ", twice, the second time alone"
            await _stop(proc)
        except BaseException:
            await _stop(proc)
            raise
    run.seconds = time.perf_counter() - start
    run.stdout = out_path.read_text(encoding="utf-8", errors="replace")
    run.stderr = err_path.read_text(encoding="utf-8", errors="replace")
    return run


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """End a process this module started: SIGTERM, then SIGKILL after 5 s."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), 5.0)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


@contextlib.asynccontextmanager
async def mock_server(cwd: Path, env: dict[str, str]) -> AsyncIterator[str]:
    """`vfcheck mock-server --port 0` in a child process; yields the URL it prints first."""
    cwd.mkdir(parents=True, exist_ok=True)
    out_path, err_path = cwd / ".vfcheck-mock.out", cwd / ".vfcheck-mock.err"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "vfcheck", "mock-server", "--port", "0",
            cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=err,
        )
        try:
            deadline = time.monotonic() + MOCK_START_TIMEOUT
            url = ""
            while not url:
                first = out_path.read_text(encoding="utf-8").splitlines()[:1]
                url = first[0].strip() if first and first[0].startswith("http") else ""
                if url:
                    break
                if proc.returncode is not None or time.monotonic() > deadline:
                    why = (f"exit {proc.returncode}" if proc.returncode is not None
                           else f"nothing in {MOCK_START_TIMEOUT:g}s")
                    tail = err_path.read_text(errors="replace").strip().splitlines()[-1:]
                    raise RuntimeError(f"vfcheck mock-server printed no URL ({why}"
                                       + (f": {tail[0]}" if tail else "") + ")")
                if not url:
                    await asyncio.sleep(0.1)
            yield url
        finally:
            await _stop(proc)


@dataclass
class CliRuns:
    """Every CLI run the library suite made, by label, and the scripts it found."""

    runs: dict[str, CliRun] = field(default_factory=dict)
    scripts: dict[str, str] = field(default_factory=dict)

    def get(self, label: str) -> CliRun | None:
        return self.runs.get(label)


EVAL_OUT = "out"
"""The `-o` folder (relative to the run's cwd) of the vf-eval and vf-validate runs."""
DEFAULT_OUT = "outputs/*/*"
"""Where vf-debug and vf-replay put a run without `-o` (`outputs/<name>--<cli>/<uuid>`)."""


async def observe_clis(env_id: str, paths: Sequence[Path], scratch: Path) -> CliRuns:
    """Run every console script the suite can run offline, each in its own folder of
    `scratch`: vf-validate, vf-debug, two vf-init scaffolds, a refused `vf-eval --serve.*`,
    and vf-eval against the mock, then vf-replay on that eval's run dir (as its USAGE
    says, and once more with `--rich false`)."""
    scripts = console_scripts()
    env = cli_environment(paths)
    result = CliRuns(scripts=scripts)

    def plan(label: str, script: str, *args: str, run_glob: str | None = None) -> CliRun:
        run = CliRun(label, script, list(args), scratch / label, run_glob=run_glob)
        result.runs[label] = run
        return run

    now = [
        plan("validate", "vf-validate", env_id, "--runtime.type", "subprocess",
             "-o", EVAL_OUT, run_glob=f"{EVAL_OUT}/*"),
        plan("debug", "vf-debug", env_id, "--command", "true", "--runtime.type", "subprocess",
             run_glob=DEFAULT_OUT),
        # --dry-run: should a later verifiers accept the flag, nothing may run for real.
        plan("serve-flag", "vf-eval", env_id, "--serve.foo", "1", "--push", "false",
             "--dry-run", "true"),
        plan("init-path", "vf-init", INIT_PROBE, "--path", "custom"),
        plan("init-default", "vf-init", INIT_PROBE),
    ]
    eval_run = plan("eval", "vf-eval", env_id, "-o", EVAL_OUT, run_glob=f"{EVAL_OUT}/*")
    replays = [plan("replay-usage", "vf-replay", run_glob=DEFAULT_OUT),
               plan("replay", "vf-replay", run_glob=DEFAULT_OUT)]
    eval_args = list(eval_run.args)

    async def evaluate_then_replay() -> None:
        eval_run.args = list(eval_args)
        if scripts.get("vf-eval") is None:
            await run_cli(eval_run, None, env)
        else:
            try:
                async with mock_server(scratch / "mock", env) as url:
                    eval_run.args += [
                        "--client.base-url", url, "--client.api-key-var", MOCK_API_KEY_VAR,
                        "--env.agent.harness.id", "null",
                        "--env.agent.runtime.type", "subprocess",
                        "--push", "false", "-n", "1", "--model", DEFAULT_MODEL_ID,
                    ]
                    await run_cli(eval_run, scripts["vf-eval"], env)
            except RuntimeError as e:
                eval_run.problem = str(e)
        source = eval_run.run_dir()
        if source is None:
            for run in replays:
                run.problem = f"no vf-eval run dir to replay ({eval_run.outcome()})"
            return
        relative = os.path.relpath(source, replays[0].cwd)  # same depth for both
        replays[0].args = [relative]
        replays[1].args = [relative, "--rich", "false"]
        await asyncio.gather(*(run_cli(r, scripts.get(r.script), env) for r in replays))

    await asyncio.gather(
        evaluate_then_replay(), *(run_cli(r, scripts.get(r.script), env) for r in now)
    )
    # A CLI that timed out while the others ran is run again alone before its timeout
    # counts: on a loaded machine several interpreters importing verifiers at once are
    # slow, and a verdict must not depend on that.
    for run in now:
        if run.timed_out:
            await run_cli(fresh_attempt(run), scripts.get(run.script), env)
    if eval_run.timed_out or any(r.timed_out for r in replays):
        for run in [eval_run, *replays]:
            fresh_attempt(run)
        await evaluate_then_replay()
    return result


def fresh_attempt(run: CliRun) -> CliRun:
    """`run` made ready to run again in an empty folder, noting what its first attempt met."""
    run.first_attempt = run.outcome() if run.timed_out else None
    run.returncode, run.problem, run.timed_out = None, None, False
    run.stdout = run.stderr = ""
    shutil.rmtree(run.cwd, ignore_errors=True)
    return run


_BOX = str.maketrans("", "", "│╭╮╰╯─┃━")


def error_summary(run: CliRun) -> str:
    """The one line a CLI's failure says: a pydantic validation error's field and
    message (`--serve: Extra inputs are not permitted`), else the last output line."""
    text = (run.stdout + "\n" + run.stderr).translate(_BOX)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    lines = [line for line in lines if line]
    for i, line in enumerate(lines):
        if "validation error" in line and i + 2 < len(lines):
            return f"{lines[i + 1]}: {lines[i + 2]}"
    return lines[-1] if lines else "(no output)"
