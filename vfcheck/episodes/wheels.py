"""Harness programs' dependencies from a local wheel folder, for machines with no package index.

verifiers 0.4 runs its harness programs (the `null`/`bash` chat program, and the programs
of other harnesses) as PEP 723 uv scripts: `Runtime.prepare_uv_script`
(`verifiers/v1/runtimes/base.py`) runs `uv sync --script P -q --no-config` with
`UV_OFFLINE=false` forced, once per process that plays an episode on the env tier. With no
index reachable uv gives up after three retries and every episode ends in `HarnessError:
harness setup: RuntimeError: failed to prepare uv script: error: Request failed after 3
retries ... Failed to fetch: https://pypi.org/simple/<package>/ ... Connection refused`.

`--wheels DIR` (`use_wheels`) makes uv resolve from DIR alone: `UV_FIND_LINKS=DIR` and
`UV_CONFIG_FILE` = `uv_wheels.toml` beside this module (`no-index`: this uv has no
environment variable for `--no-index`, and a config file named explicitly is still read
under `--no-config`), with the programs pinned to this interpreter (`UV_PYTHON`), the one
`vfcheck wheels DIR` (`fill`) downloads for. `dependency_problem` turns uv's failure into
one line that says so and names the option.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WHEELS_VAR = "VFCHECK_WHEELS"
"""Set to the wheel folder in every process of a `--wheels` run (the diagnosis reads it)."""
CONFIG_FILE = Path(__file__).with_name("uv_wheels.toml")
CHAT_PROGRAM = "verifiers' chat program (harnesses null, bash)"

_PREPARE = "failed to prepare uv script"
_NETWORK = ("Failed to fetch", "error sending request", "Request failed after", "dns error",
            "failed to lookup address", "tcp connect error", "Connection refused",
            "Network is unreachable", "tunnel error", "operation timed out")
_PEP723 = re.compile(r"(?m)^# /// script\s*$\n(?P<body>(?:^#(?: .*)?$\n)+?)^# ///\s*$")


class HarnessDependencyError(Exception):
    """An episode could not start because its harness program's dependencies did not
    resolve: vfcheck's own environment, never a verdict on the env. Carries the episode."""

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result


class WheelsError(Exception):
    """Filling a wheel folder failed: one line saying what and where."""


def use_wheels(folder: str | Path) -> None:
    """Make every uv this process starts (and its children) resolve from `folder` only."""
    resolved = str(Path(folder).resolve())
    os.environ.update({
        WHEELS_VAR: resolved,
        "UV_FIND_LINKS": resolved,
        "UV_CONFIG_FILE": str(CONFIG_FILE),
        "UV_PYTHON": sys.executable,
        "UV_PYTHON_DOWNLOADS": "never",
    })


# -- the diagnosis


def dependency_problem(errors: Sequence[str]) -> str | None:
    """One line for an episode whose harness program could not resolve its dependencies
    because no index was reachable (or, under `--wheels`, the folder lacked one); None for
    any other error (a broken dependency of the env's own harness stays the env's)."""
    text = next((e for e in errors if _PREPARE in e), None)
    if text is None:
        return None
    uv = uv_summary(text.split(_PREPARE, 1)[1])
    wheels = os.environ.get(WHEELS_VAR)
    if wheels:
        return (f"the harness program could not resolve its dependencies from the wheel "
                f"folder {wheels} (uv: {uv}); refill it with: vfcheck wheels {wheels} ENV")
    if not any(marker in text for marker in _NETWORK):
        return None
    return ("the harness program could not resolve its dependencies: no package index is "
            f"reachable (uv: {uv}); give it a local wheel folder with --wheels DIR (pytest: "
            "--vf-wheels DIR; [tool.vfcheck] wheels), filled by: vfcheck wheels DIR ENV")


def uv_summary(output: str) -> str:
    """uv's headline and its most telling cause, on one line."""
    parts = [re.sub(r"^(error|cause):\s*", "", line.strip()).rstrip(":")
             for line in output.lstrip(": ").splitlines() if line.strip()]
    if not parts:
        return "no output"
    fetch = next((p for p in parts if p.startswith("Failed to fetch")), None)
    head = fetch or parts[0]
    tail = parts[-1] if fetch else next((p for p in parts if p.startswith("Because")),
                                        parts[-1])
    joined = head if tail == head else f"{head} — {tail}"
    return textwrap.shorten(joined, width=400, placeholder=" …")


# -- filling a folder


@dataclass(frozen=True)
class Program:
    """A harness program (a PEP 723 script) and the dependencies it declares."""

    name: str
    dependencies: tuple[str, ...]


def script_dependencies(source: str) -> tuple[str, ...] | None:
    """The `dependencies` of a PEP 723 script's `script` block; None without a block."""
    found = _PEP723.search(source)
    if found is None:
        return None
    toml = "".join(line[2:] if line.startswith("# ") else line[1:]
                   for line in found.group("body").splitlines(keepends=True))
    return tuple(str(d) for d in tomllib.loads(toml).get("dependencies", []))


def harness_programs(harness_id: str, config: Mapping[str, Any]) -> list[Program]:
    """The PEP 723 programs a harness module holds as module-level strings, with
    `{field}` placeholders (`mini-swe-agent=={version}`) filled from the harness config."""
    from verifiers.v1.utils.loaders import harness_class

    module = sys.modules[harness_class(harness_id).__module__]
    programs = []
    for name, value in vars(module).items():
        if not isinstance(value, str) or (deps := script_dependencies(value)) is None:
            continue
        filled = tuple(_fill_placeholders(d, config) for d in deps)
        label = CHAT_PROGRAM if value == _chat_program() else f"harness {harness_id!r} {name}"
        programs.append(Program(label, filled))
    return programs


def _fill_placeholders(requirement: str, config: Mapping[str, Any]) -> str:
    def field(match: re.Match[str]) -> str:
        value = config.get(match.group(1))
        if value is None:
            raise WheelsError(f"cannot fill {match.group(0)} in the requirement "
                              f"{requirement!r} from the harness config")
        return str(value)

    return re.sub(r"\{(\w+)\}", field, requirement)


def _chat_program() -> str:
    from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE

    return str(CHAT_PROGRAM_SOURCE)


def programs_of(env_ids: Sequence[str], env_args: Mapping[str, Any] | None = None) -> list[Program]:
    """verifiers' chat program, plus the programs of every role's harness of `env_ids` (as
    the env tier runs them). Raises `EnvLoadError` for an env that does not load."""
    from vfcheck.episodes.runner import load_env

    chat = script_dependencies(_chat_program()) or ()
    programs = [Program(CHAT_PROGRAM, chat)]
    for env_id in env_ids:
        env, _ = load_env(env_id, env_args, harness="env")
        for harness in env.config.agent_harnesses().values():
            programs += harness_programs(harness.id, harness.model_dump())
    unique: dict[tuple[str, ...], Program] = {}
    for program in programs:
        unique.setdefault(program.dependencies, program)
    return list(unique.values())


def uv_executable() -> str:
    from vfcheck.episodes.offline import uv_bin_dir

    folder = uv_bin_dir()
    found = str(folder / "uv") if folder is not None else shutil.which("uv")
    if found is None:
        raise WheelsError("no uv found (vfcheck installs it: pip install uv)")
    return found


def fill(folder: Path, programs: Sequence[Program],
         say: Callable[[str], None] = print) -> list[Path]:
    """Download every dependency of `programs` (wheels only, for this interpreter) into
    `folder`, then prove each program resolves from `folder` alone, offline, the way
    `--wheels` makes uv resolve it. Returns the wheels in the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    requirements = sorted({d for p in programs for d in p.dependencies})
    pip = ([sys.executable, "-m", "pip"] if importlib.util.find_spec("pip") is not None
           else [uv_executable(), "tool", "run", "--python", sys.executable, "--from", "pip",
                 "pip"])
    say(f"downloading {len(requirements)} requirement(s) of {len(programs)} program(s) "
        f"for python {sys.version.split()[0]} into {folder}")
    done = subprocess.run(
        [*pip, "download", "--only-binary=:all:", "--disable-pip-version-check", "--quiet",
         "--dest", str(folder), *requirements],
        capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise WheelsError(f"pip download into {folder} failed: {_last_line(done.stderr)}")
    for program in programs:
        check = subprocess.run(
            [uv_executable(), "pip", "compile", "--no-config", "--no-index", "--offline",
             "--find-links", str(folder), "--python", sys.executable, "--quiet", "-"],
            input="\n".join(program.dependencies), capture_output=True, text=True,
        )
        if check.returncode != 0:
            raise WheelsError(f"{program.name} does not resolve from {folder} alone: "
                              f"{uv_summary(check.stderr)}")
        say(f"  {program.name}: resolves offline from the folder")
    return sorted(folder.glob("*.whl"))


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
