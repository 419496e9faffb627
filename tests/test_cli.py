"""The `vfcheck` command, run as a user runs it (a separate process)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def vfcheck(*args: str, cwd: Path, env: dict[str, str] | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vfcheck", *args], cwd=cwd, capture_output=True, text=True,
        timeout=timeout, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
    )


def test_run_plays_the_sample_and_writes_episodes(fixtures_dir: Path, tmp_path: Path) -> None:
    done = vfcheck("run", "vfc-echo", "--path", str(fixtures_dir), "-n", "2", "-r", "2",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "vfcheck-runs" / "vfc-echo" / "episodes.jsonl"
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 4 and {line["reward"] for line in lines} == {1.0}
    assert "vfc-echo: 4 episode(s)" in done.stdout
    assert "role 'agent': fast tier" in done.stderr


def test_run_of_an_unknown_env_fails_in_one_line(tmp_path: Path) -> None:
    done = vfcheck("run", "no-such-env-v9", cwd=tmp_path)
    assert done.returncode == 1
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("vfcheck:")]
    assert line.startswith("vfcheck: env 'no-such-env-v9' failed to load: ModuleNotFoundError")


def test_run_with_a_broken_script_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[[task]]\nindex = 0\n[[task.turn]]\nanswer = 'x'\n")
    done = vfcheck("run", "vfc-echo", "--script", str(bad), cwd=tmp_path)
    assert done.returncode == 2
    assert "bad.toml" in done.stderr and "answer" in done.stderr


def test_run_of_an_infinite_taskset_without_n(fixtures_dir: Path, tmp_path: Path) -> None:
    done = vfcheck("run", "vfc-infinite", "--path", str(fixtures_dir), cwd=tmp_path)
    assert done.returncode == 1
    assert "is infinite" in done.stderr and "-n N" in done.stderr


@pytest.fixture
def mock_server(tmp_path: Path) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "vfcheck", "mock-server", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    try:
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)


@pytest.mark.slow
def test_mock_server_answers_the_real_vf_eval(
    mock_server: str, fixtures_dir: Path, tmp_path: Path
) -> None:
    """vf-eval runs in another process: the loopback server is its model."""
    done = subprocess.run(
        [str(BIN / "vf-eval"), "vfc-echo", "-n", "2", "--push", "false",
         "--client.base-url", mock_server, "--client.api-key-var", "VFCHECK_API_KEY",
         "--env.agent.harness.id", "null", "--env.agent.runtime.type", "subprocess",
         "--model", "vfcheck-scripted", "-o", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, cwd=tmp_path,
        env={**os.environ, "VFCHECK_API_KEY": "x", "PYTHONPATH": str(fixtures_dir),
             "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (traces,) = (tmp_path / "out").rglob("traces.jsonl")
    rewards = [json.loads(line)["traces"][0]["rewards"] for line in traces.read_text().splitlines()]
    assert len(rewards) == 2
    assert all(r["echoed"]["score"] == 1.0 for r in rewards), rewards
