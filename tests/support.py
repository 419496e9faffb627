"""What the test tiers share: where the project's parts live, the one way to run the `vfcheck`
command and read its report, and a cache of check reports.

The cache keys a `vfcheck check` run by its arguments and environment, so tests that read the
same run (its exit code, output, JSON, JUnit and step summary) share one process per test
session. Under pytest-xdist the workers share it too: the folder is the session's base
temp folder, and a file lock per key makes the first worker run it while the others wait."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SOURCE = ROOT / "vfcheck"
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def vfcheck(*args: str, cwd: Path, env: dict[str, str] | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """`python -m vfcheck ARGS` as a user runs it: its own process, no stdin."""
    return subprocess.run(
        [sys.executable, "-m", "vfcheck", *args], cwd=cwd, capture_output=True, text=True,
        timeout=timeout, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
    )


@dataclass(frozen=True)
class CheckRun:
    """One `vfcheck check ... --json report.json` run: what it printed and wrote."""

    returncode: int
    stdout: str
    stderr: str
    folder: Path

    @property
    def report(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.folder / "report.json").read_text())
        return data

    @property
    def envs(self) -> dict[str, dict[str, Any]]:
        return {env["id"]: env for env in self.report["envs"]}


def check_report(*args: str, cwd: Path, env: dict[str, str] | None = None,
                 timeout: float = 600) -> CheckRun:
    """`vfcheck check ARGS --json report.json` in `cwd`; the report must be written."""
    done = vfcheck("check", *args, "--json", str(cwd / "report.json"), cwd=cwd, env=env,
                   timeout=timeout)
    assert (cwd / "report.json").exists(), done.stdout[-2000:] + done.stderr[-2000:]
    return CheckRun(done.returncode, done.stdout, done.stderr, cwd)


@dataclass
class PluginRun:
    """`pytest --vf-env ...` run as a user runs it, in a folder of its own."""

    ret: int
    stdout: str
    envs: dict[str, Any]

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()


def run_plugin(cwd: Path, fixtures_dir: Path, envs: list[str], *extra: str) -> PluginRun:
    """`pytest --vf-env ENV... --vf-path FIXTURES --vf-json vfcheck.json EXTRA` in `cwd`."""
    report = cwd / "vfcheck.json"
    args = [a for env in envs for a in ("--vf-env", env)]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args, f"--vf-path={fixtures_dir}",
         "--vf-json", str(report), "-p", "no:cacheprovider", "-rA", *extra],
        cwd=cwd, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
    )
    return PluginRun(done.returncode, done.stdout, _envs_of(report))


def _envs_of(report: Path) -> dict[str, Any]:
    return {env["id"]: env for env in json.loads(report.read_text())["envs"]}


def by_unit(env: dict[str, Any]) -> dict[tuple[str, int | None], dict[str, Any]]:
    """An env's findings by (check, task index)."""
    return {(f["check"], f["task"]["index"] if f["task"] else None): f
            for f in env["findings"]}


class CheckCache:
    """Check reports keyed by (arguments, environment), each run once per test session.

    A run happens in a folder of its own, its working directory, so relative output paths
    (`--junit-xml report.xml`, a `GITHUB_STEP_SUMMARY` of `summary.md`) land beside its
    `report.json`; `cwd=ROOT` runs it in this project instead (its pyproject.toml and golden
    traces), its output files still in the folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def check(self, *args: str, env: dict[str, str] | None = None,
              cwd: Path | None = None) -> CheckRun:
        def run(folder: Path) -> list[Any]:
            out = {**(env or {})}
            given = args
            if cwd is not None:  # relative outputs still go to the folder
                out = {k: str(folder / v) if k == "GITHUB_STEP_SUMMARY" else v
                       for k, v in out.items()}
                given = tuple(str(folder / a) if i and args[i - 1] in OUTPUT_FLAGS else a
                              for i, a in enumerate(args))
            done = vfcheck("check", *given, "--json", str(folder / "report.json"),
                           cwd=cwd or folder, env=out)
            return [done.returncode, done.stdout, done.stderr]

        folder, (returncode, stdout, stderr) = self.once(
            ["check", args, sorted((env or {}).items()), str(cwd)], run)
        assert (folder / "report.json").exists(), stdout[-2000:] + stderr[-2000:]
        return CheckRun(returncode, stdout, stderr, folder)

    def plugin(self, envs: list[str], *extra: str, fixtures: Path = FIXTURES) -> PluginRun:
        """`run_plugin` in a folder of its own, once per session: the module fixtures that
        read one plugin run get the same one on every xdist worker their tests land on."""
        def run(folder: Path) -> list[Any]:
            done = run_plugin(folder, fixtures, envs, *extra)
            return [done.ret, done.stdout]

        folder, (ret, stdout) = self.once(["plugin", envs, extra, str(fixtures)], run)
        return PluginRun(ret, stdout, _envs_of(folder / "vfcheck.json"))

    def once(self, key_of: list[Any], run: Callable[[Path], list[Any]]) -> tuple[Path, Any]:
        """`run(folder)`'s JSON result, run in the folder of `key_of` by the first worker to
        ask while the others wait; theirs is the one it wrote."""
        key = hashlib.sha256(json.dumps(key_of).encode()).hexdigest()[:16]
        folder = self.root / key
        with FileLock(str(self.root / f"{key}.lock")):
            done = folder / "done.json"
            if not done.exists():
                folder.mkdir(parents=True, exist_ok=True)
                done.write_text(json.dumps(run(folder)))
            return folder, json.loads(done.read_text())


OUTPUT_FLAGS = {"--junit-xml", "--html"}

def basic_check(env: str) -> tuple[str, ...]:
    """`vfcheck check ENV` of the families vf-validate also has, and one episode: the run
    that the agreement tests and the CLI's tests read (vfc-echo's once per session)."""
    return (env, "--path", str(FIXTURES), "--checks", "setup,gold,noop,episode")


BROKEN_GOLD = ("vfc-broken-gold", "--path", str(FIXTURES), "--checks", "gold",
               "--junit-xml", "report.xml")
"""The gold family on vfc-broken-gold (gold[1] fails, gold[2] skips), with a JUnit file and a
step summary: what the CLI and terminal-report tests read."""
BROKEN_GOLD_ENV = {"COLUMNS": "100", "GITHUB_STEP_SUMMARY": "step-summary.md"}


def check_cache_root(base: Path) -> Path:
    """Where a session's cache lives: the base temp folder, which pytest-xdist's workers
    share as the parent of their own."""
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / "vfcheck-checked"
    folder.mkdir(exist_ok=True)
    return folder
