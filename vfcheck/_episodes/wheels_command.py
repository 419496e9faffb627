"""`vfcheck wheels DIR ENV...`: fill a wheel folder for `--wheels` on a machine with an index.

The folder holds every dependency of verifiers' chat program and of the named envs' harness
programs (PEP 723 scripts the harness modules hold as strings), as wheels for this
interpreter; `fill` then proves each program resolves from the folder alone, offline, the
way `--wheels` (`vfcheck._episodes.harness_deps.use_wheels`) makes uv resolve it.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vfcheck._episodes.harness_deps import uv_summary
from vfcheck._episodes.offline import uv_executable

CHAT_PROGRAM = "verifiers' chat program (harnesses null, bash)"

_PEP723 = re.compile(r"(?m)^# /// script\s*$\n(?P<body>(?:^#(?: .*)?$\n)+?)^# ///\s*$")


class WheelsError(Exception):
    """Filling a wheel folder failed: one line saying what and where."""


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
    from vfcheck._episodes.runner import load_env

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


def _uv() -> str:
    try:
        return uv_executable()
    except FileNotFoundError as e:
        raise WheelsError(str(e)) from None


def fill(folder: Path, programs: Sequence[Program],
         say: Callable[[str], None] = print) -> list[Path]:
    """Download every dependency of `programs` (wheels only, for this interpreter) into
    `folder`, then prove each program resolves from `folder` alone, offline, the way
    `--wheels` makes uv resolve it. Returns the wheels in the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    requirements = sorted({d for p in programs for d in p.dependencies})
    pip = ([sys.executable, "-m", "pip"] if importlib.util.find_spec("pip") is not None
           else [_uv(), "tool", "run", "--python", sys.executable, "--from", "pip",
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
            [_uv(), "pip", "compile", "--no-config", "--no-index", "--offline",
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
