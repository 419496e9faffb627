"""`--wheels DIR`: verifiers' real harness programs resolve their dependencies from a local
wheel folder when no package index is reachable, and without it the run says so in one line.

The network is cut for the vfcheck processes the way a CI box without an index sees it: every
proxy variable points at a closed 127.0.0.1 port (loopback traffic, the model endpoint and
the tool servers, stays direct), and uv gets a fresh, empty cache, so nothing it downloaded
before can help."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path

import pytest
from support import vfcheck
from unit.test_wheels import NO_INDEX


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory, fixtures_dir: Path) -> Path:
    """A wheel folder filled by `vfcheck wheels` for vfc-tool's harness (the chat program)."""
    try:
        urllib.request.urlopen("https://pypi.org/simple/certifi/", timeout=15).close()
    except OSError as e:
        pytest.skip(f"the package index is not reachable to fill a wheel folder: {e}")
    folder = tmp_path_factory.mktemp("wheels")
    done = vfcheck("wheels", str(folder), "vfc-tool", "--path", str(fixtures_dir),
                   cwd=folder.parent)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "verifiers' chat program (harnesses null, bash): resolves offline" in done.stdout
    assert any(folder.glob("openai-*.whl")), sorted(p.name for p in folder.iterdir())
    return folder


@pytest.fixture
def no_index(tmp_path: Path) -> dict[str, str]:
    """Environment of a machine where no package index answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = f"http://127.0.0.1:{port}"  # closed once the socket is: connection refused
    env = {name: dead for base in ("http_proxy", "https_proxy", "all_proxy")
           for name in (base, base.upper())}
    loopback = "127.0.0.1,localhost"
    return {**env, "NO_PROXY": loopback, "no_proxy": loopback,
            "UV_CACHE_DIR": str(tmp_path / "empty-uv-cache")}


def episode_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_an_env_tier_episode_resolves_from_the_wheel_folder_with_no_index(
    fixtures_dir: Path, tmp_path: Path, wheels: Path, no_index: dict[str, str]
) -> None:
    done = vfcheck("run", "vfc-tool", "--path", str(fixtures_dir), "--harness", "env", "-n", "1",
                   "--wheels", str(wheels), "-o", "episodes.jsonl", cwd=tmp_path, env=no_index)
    assert done.returncode == 0, done.stderr[-3000:]
    (record,) = episode_lines(tmp_path / "episodes.jsonl")
    assert record["ok"] is True and record["errors"] == [], record["errors"]
    trace = record["traces"][0]["trace"]  # type: ignore[index]
    assert trace["agent"]["config"]["harness"]["id"] == "bash"  # verifiers' chat program ran
    assert trace["metrics"]["tool_calls"] >= 1  # ... and called the env's tool server
    assert (tmp_path / "empty-uv-cache").is_dir()  # uv did resolve, into the empty cache


@pytest.mark.slow
def test_without_wheels_the_run_fails_in_one_line_that_names_the_option(
    fixtures_dir: Path, tmp_path: Path, no_index: dict[str, str]
) -> None:
    done = vfcheck("run", "vfc-tool", "--path", str(fixtures_dir), "--harness", "env", "-n", "1",
                   "-o", "episodes.jsonl", cwd=tmp_path, env=no_index)
    assert done.returncode == 1, done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if line.startswith("vfcheck: ")]
    assert len(said) == 1, done.stderr[-3000:]
    assert said[0].startswith(f"vfcheck: 1 episode(s): {NO_INDEX} (uv: Failed to fetch: "), said
    assert "--wheels DIR" in said[0] and "vfcheck wheels DIR" in said[0]
    (record,) = episode_lines(tmp_path / "episodes.jsonl")  # the episode is kept, with both
    errors = record["errors"]
    assert isinstance(errors, list)
    assert errors[0] == f"runner: {said[0].split(': ', 2)[2]}"
    assert any(e.startswith("HarnessError: harness setup: RuntimeError: failed to prepare uv "
                            "script") for e in errors)  # verifiers' own error, untouched


@pytest.mark.slow
def test_check_takes_wheels_from_pyproject_and_without_them_errors_in_one_line(
    fixtures_dir: Path, tmp_path: Path, wheels: Path, no_index: dict[str, str]
) -> None:
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "wheelhouse").symlink_to(wheels)
    (project / "pyproject.toml").write_text(
        f'[tool.vfcheck]\npaths = ["{fixtures_dir}"]\nwheels = "wheelhouse"\nharness = "env"\n'
        'checks = ["episode"]\nsample = 1\n')
    # run from a subfolder: the wheel folder is relative to the pyproject.toml
    done = vfcheck("check", "vfc-echo", "--json", "r.json", cwd=project / "sub", env=no_index)
    findings = json.loads((project / "sub" / "r.json").read_text())["envs"][0]["findings"]
    assert [(f["check"], f["outcome"]) for f in findings] == [
        ("load", "passed"), ("episode", "passed")], done.stdout[-3000:]
    assert done.returncode == 0

    bare = vfcheck("check", "vfc-echo", "--path", str(fixtures_dir), "--harness", "env",
                   "--checks", "episode", "--sample", "1", "--json", "r.json", cwd=tmp_path,
                   env=no_index)
    assert bare.returncode == 1
    findings = json.loads((tmp_path / "r.json").read_text())["envs"][0]["findings"]
    episode = findings[1]
    assert (episode["check"], episode["outcome"]) == ("episode", "error")  # not the env's fault
    assert episode["message"].startswith(
        f"vfcheck could not run episode: HarnessDependencyError: {NO_INDEX} (uv: ")
    assert "\n" not in episode["message"] and "--wheels DIR" in episode["message"]


@pytest.mark.slow
def test_a_missing_wheel_folder_is_a_usage_error_in_one_line(tmp_path: Path) -> None:
    for command in ("run", "check"):
        done = vfcheck(command, "vfc-echo", "--wheels", "nowhere", cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines() == [
            f"vfcheck: error: --wheels: the wheel folder {tmp_path / 'nowhere'} does not exist "
            f"(fill it with: vfcheck wheels {tmp_path / 'nowhere'})"]


