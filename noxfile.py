"""nox sessions: tests on 3.11/3.12/3.13, unit (the inner loop), docs, lint (ruff), types
(mypy), library, bench."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import nox

nox.options.sessions = ["tests", "lint", "types"]
nox.options.reuse_existing_virtualenvs = True

PYTHONS = ["3.11", "3.12", "3.13"]


def _expose_pyenv_pythons() -> None:
    """pyenv installs each Python under its root without a `python3.X` on PATH unless it
    is `pyenv global`; put their bin folders on PATH so nox finds 3.11-3.13."""
    pyenv = shutil.which("pyenv")
    if pyenv is None:
        return
    root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
    bins = sorted(str(p) for p in Path(root, "versions").glob("3.1[1-3]*/bin"))
    os.environ["PATH"] = os.pathsep.join([*bins, os.environ.get("PATH", "")])


_expose_pyenv_pythons()


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The project's tests, two xdist workers (as CI runs them)."""
    session.install("-e", ".[dev]")
    session.run("pytest", "-n", "2", "-q", *session.posargs)


@nox.session(python="3.11")
def unit(session: nox.Session) -> None:
    """The inner loop: tests/unit (no process started, no verifiers imported)."""
    session.install("-e", ".[dev]")
    session.run("pytest", "tests/unit", "-q", *session.posargs)


@nox.session(python="3.11")
def docs(session: nox.Session) -> None:
    """The docs site, as CI builds it: a broken link or a page left out of the nav fails."""
    session.install("-e", ".[docs]")
    session.run("mkdocs", "build", "--strict", "--site-dir", str(Path(session.create_tmp(),
                "site")), env={"NO_MKDOCS_2_WARNING": "1"})


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "vfcheck", "vfcheck_chat", "tests", "fixtures", "noxfile.py")


@nox.session(python="3.11")
def types(session: nox.Session) -> None:
    session.install("-e", ".[dev]")
    session.run("mypy", "vfcheck")


@nox.session(python="3.11")
def library(session: nox.Session) -> None:
    """The library suite on the installed verifiers, then on 0.3.1 (the oldest with
    `verifiers.v1`) installed over it: there the missing hooks are findings (exit 1 is
    expected) and the env suite degrades to skips that name them (exit 0)."""
    tmp = session.create_tmp()
    session.install("-e", ".")
    session.run("vfcheck", "library", "--json", f"{tmp}/library-installed.json")
    session.install("verifiers==0.3.1")
    session.run("vfcheck", "library", "--json", f"{tmp}/library-0.3.1.json",
                success_codes=[0, 1])
    session.run("vfcheck", "check", "vfc-echo", "--path", "fixtures",
                "--json", f"{tmp}/env-suite-0.3.1.json")


@nox.session(python="3.11")
def bench(session: nox.Session) -> None:
    """Side-by-side timings against vf-validate / vf-eval, as ratios of medians (never
    asserted). `nox -s bench -- --quick` for a smoke run."""
    session.install("-e", ".[dev]")
    session.run("python", "bench/bench.py", *session.posargs)
