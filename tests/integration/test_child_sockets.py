"""The socket guard in the Python processes below the check worker (tool servers): its
startup hook refuses connections to other hosts there too and logs them for
`hygiene.network`, keeps this machine reachable, runs the `sitecustomize` it hides, and
leaves a process that cannot import vfcheck as it was."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from vfcheck._host.child_sockets import (
    CHILD_LOG_VAR,
    STARTUP_DIR,
    guard_children,
    read_child_attempts,
)

CHILD = '''
import socket, urllib.request

def fetch():
    try:
        urllib.request.urlopen("https://bignum.example.org/v1/add", timeout=5)
    except OSError as e:
        print("refused:", e)

fetch()
server = socket.create_server(("127.0.0.1", 0))
socket.create_connection(server.getsockname()).close()
print("this machine: reachable")
'''


@pytest.fixture
def guarded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process's environment as the worker sets it for its children (restored after)."""
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    log = tmp_path / "run" / "env.jsonl.child-sockets.jsonl"
    guard_children(log)
    monkeypatch.setenv(CHILD_LOG_VAR, str(log))
    (tmp_path / "child_env.py").write_text(CHILD)
    return log


def run_child(python: str, cwd: Path, extra_path: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    env["PYTHONPATH"] = os.pathsep.join(p for p in [env["PYTHONPATH"], extra_path] if p)
    return subprocess.run([python, "-m", "child_env"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.slow
def test_a_child_process_is_refused_other_hosts_and_its_attempts_are_logged(
        guarded: Path, tmp_path: Path) -> None:
    done = run_child(sys.executable, tmp_path, str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "refused: <urlopen error [Errno 111] vfcheck runs offline: the process python -m " \
           "child_env (pid " in done.stdout, done.stdout
    assert "this machine: reachable" in done.stdout
    [attempt] = read_child_attempts(guarded)
    assert (attempt.host, attempt.port, attempt.code, attempt.process) == (
        "bignum.example.org", 443, "fetch at child_env.py:6", "the process python -m child_env")


@pytest.mark.slow
def test_the_hidden_sitecustomize_still_runs(guarded: Path, tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import builtins\nbuiltins.THEIRS = 'ran'\n")
    (tmp_path / "child_env.py").write_text("import builtins\nprint(builtins.THEIRS)\n")
    done = run_child(sys.executable, tmp_path, os.pathsep.join([str(tmp_path), str(theirs)]))
    assert (done.returncode, done.stdout.strip()) == (0, "ran"), done.stderr


@pytest.mark.slow
def test_a_python_without_vfcheck_starts_as_it_would_have(guarded: Path,
                                                          tmp_path: Path) -> None:
    """A harness program's own environment: the hook cannot guard it, and says nothing."""
    venv.create(tmp_path / "bare", with_pip=False)
    bare = tmp_path / "bare" / "bin" / "python"
    (tmp_path / "child_env.py").write_text("print('started')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHOME"}
    env["PYTHONPATH"] = os.pathsep.join([str(STARTUP_DIR), str(tmp_path)])
    done = subprocess.run([str(bare), "-m", "child_env"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "started", "")
    assert read_child_attempts(guarded) == []


