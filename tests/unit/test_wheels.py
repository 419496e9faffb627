"""`--wheels`: what is read from pyproject.toml and which failures are diagnosed."""

from __future__ import annotations

from pathlib import Path

import pytest

from vfcheck._episodes.harness_deps import dependency_problem
from vfcheck._options.resolved import resolve_options

NO_INDEX = "the harness program could not resolve its dependencies: no package index is reachable"


def test_wheels_in_pyproject_are_relative_to_it_and_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "wheelhouse").mkdir()
    (tmp_path / "sub").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.vfcheck]\nwheels = "wheelhouse"\n')
    monkeypatch.chdir(tmp_path / "sub")
    options = resolve_options(tmp_path / "sub")
    assert options.wheels == str(tmp_path / "wheelhouse")
    # one word for pytest: it would take a second one for a test path (its rootdir moves)
    assert options.replay_args(pytest=True)[-1:] == [f"--vf-wheels={tmp_path / 'wheelhouse'}"]
    (tmp_path / "pyproject.toml").write_text('[tool.vfcheck]\nwheels = "gone"\n')
    with pytest.raises(ValueError, match=r"pyproject.toml: \[tool.vfcheck\] wheels: the wheel "
                                         r"folder .*gone does not exist"):
        resolve_options(tmp_path / "sub")


def test_only_an_unreachable_index_is_diagnosed(monkeypatch: pytest.MonkeyPatch) -> None:
    """uv's output as verifiers wraps it (`runtimes/base.py:prepare_uv_script`)."""
    monkeypatch.delenv("VFCHECK_WHEELS", raising=False)
    head = "HarnessError: harness setup: RuntimeError: failed to prepare uv script: error: "
    offline = head + ("Request failed after 3 retries in 5.3s\n  cause: Failed to fetch: "
                      "https://pypi.org/simple/httpx2/\n  cause: tcp connect error\n"
                      "  cause: Connection refused (os error 111)")
    unsatisfiable = head + ("No solution found when resolving script dependencies:\n  cause: "
                            "Because there is no version of nope==9 ...")
    problem = dependency_problem(["AgentError: unrelated", offline])
    assert problem is not None and problem.startswith(
        f"{NO_INDEX} (uv: Failed to fetch: https://pypi.org/simple/httpx2/ — Connection "
        "refused (os error 111)); give it a local wheel folder with --wheels DIR")
    assert dependency_problem([unsatisfiable]) is None  # the env's own harness: its finding
    monkeypatch.setenv("VFCHECK_WHEELS", "/w")
    under_wheels = dependency_problem([unsatisfiable])
    assert under_wheels is not None and under_wheels.startswith(
        "the harness program could not resolve its dependencies from the wheel folder /w "
        "(uv: No solution found when resolving script dependencies — Because there is no ")
