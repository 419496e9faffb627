"""Harness programs' dependencies: where uv resolves them from, and what a failure means.

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
`vfcheck wheels DIR` (`vfcheck._episodes.wheels_command`) downloads for.
`dependency_problem` turns uv's failure into one line that says so and names the option.
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

WHEELS_VAR = "VFCHECK_WHEELS"
"""Set to the wheel folder in every process of a `--wheels` run (the diagnosis reads it)."""
CONFIG_FILE = Path(__file__).with_name("uv_wheels.toml")

_PREPARE = "failed to prepare uv script"
_NETWORK = ("Failed to fetch", "error sending request", "Request failed after", "dns error",
            "failed to lookup address", "tcp connect error", "Connection refused",
            "Network is unreachable", "tunnel error", "operation timed out")


class HarnessDependencyError(Exception):
    """An episode could not start because its harness program's dependencies did not
    resolve: vfcheck's own environment, never a verdict on the env. Carries the episode."""

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result


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
