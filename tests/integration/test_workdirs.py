"""Work dirs vfcheck owns (`vfcheck._isolation.workdirs`): HOME of a process that plays episodes is
a dir of its own under `<tempdir>/vfcheck-work/<pid>/`, gone when it ends; what a SIGKILLed run left
there (the dir, harness programs and tool servers still running from inside it)
is removed by the next run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from vfcheck._host.processes import descendants
from vfcheck._isolation import workdirs


def alive(pid: int) -> bool:
    return workdirs.start_time(pid) is not None


@pytest.fixture
def work_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`<tempdir>/vfcheck-work` with this test's own temp dir."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path / workdirs.ROOT_NAME


def sleeper(cwd: Path | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], cwd=cwd,
                            start_new_session=True)


@pytest.mark.slow
def test_owned_moves_home_keeps_the_real_caches_and_leaves_nothing(work_root: Path) -> None:
    home = os.environ.get("HOME")
    with workdirs.owned() as folder:
        assert folder == work_root / str(os.getpid())
        assert Path.home() == folder and os.environ[workdirs.DIR_VAR] == str(folder)
        assert os.environ[workdirs.REAL_HOME_VAR] == home
        for key in ("UV_CACHE_DIR", "UV_PYTHON_INSTALL_DIR", "XDG_CACHE_HOME", "XDG_DATA_HOME",
                    "XDG_CONFIG_HOME", "PYTHONUSERBASE"):
            assert not os.environ[key].startswith(str(folder)), key
        marker = json.loads((folder / workdirs.OWNER_FILE).read_text())
        assert marker["pid"] == os.getpid() and marker["start"] == workdirs.start_time(os.getpid())
        left = sleeper(cwd=folder)  # a program still running from inside at exit
        with workdirs.owned() as nested:  # a process below the owner reuses its dir
            assert nested == folder
        assert folder.is_dir()
    assert not folder.exists()
    assert left.wait(timeout=10) == -signal.SIGKILL
    assert os.environ.get("HOME") == home and workdirs.DIR_VAR not in os.environ


@pytest.mark.slow
def test_sweep_releases_dead_owners_dirs_and_spares_live_ones(work_root: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = work_root / str(gone.pid)
    (dead / "run").mkdir(parents=True)
    (dead / workdirs.OWNER_FILE).write_text(json.dumps({"pid": gone.pid, "start": "1"}))
    inside = sleeper(cwd=dead / "run")
    live = sleeper()
    reused = work_root / str(live.pid)  # a live pid, but not the process that made the dir
    reused.mkdir()
    (reused / workdirs.OWNER_FILE).write_text(json.dumps({"pid": live.pid, "start": "0"}))
    other = sleeper()
    owned = work_root / str(other.pid)
    owned.mkdir()
    (owned / workdirs.OWNER_FILE).write_text(
        json.dumps({"pid": other.pid, "start": workdirs.start_time(other.pid)}))
    try:
        assert workdirs.sweep() == sorted([dead, reused])
        assert inside.wait(timeout=10) == -signal.SIGKILL
        assert not dead.exists() and not reused.exists()
        assert owned.is_dir() and alive(live.pid) and alive(other.pid)
    finally:
        for proc in (inside, live, other):
            proc.kill()
            proc.wait()


def inside_processes(root: Path) -> dict[Path, list[int]]:
    found = {}
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        found[folder] = workdirs.processes_inside(folder)
    return found


def program_environments(folder: Path) -> list[Path]:
    """The environments uv made for the harness program copies under `folder`."""
    from vfcheck._episodes.offline import uv_executable

    found = []
    for program in (folder / workdirs.PROGRAMS).glob("*.py"):
        out = subprocess.run([uv_executable(), "python", "find", "--script", str(program),
                              "--no-config"], capture_output=True, text=True).stdout.split()
        if out and Path(out[-1]).parent.parent.parent.name.startswith("environments"):
            found.append(Path(out[-1]).parent.parent)
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


@pytest.mark.slow
def test_a_sigkilled_check_leaves_work_that_the_next_run_removes(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    root = temp / workdirs.ROOT_NAME
    # cold starts: a tool server still importing verifiers when its worker is killed has not
    # asked to die with its parent yet and outlives it; a warm one has (it dies with it)
    front = subprocess.Popen(
        [sys.executable, "-m", "vfcheck", "check", "vfc-tool", "--path", str(fixtures_dir),
         "--harness", "env", "--checks", "episode", "--sample", "1", "--cold-starts"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        server: tuple[Path, int] | None = None
        while server is None and time.monotonic() < deadline and front.poll() is None:
            for folder, pids in inside_processes(root).items():
                server = next(((folder, p) for p in pids if "vfc_tool" in cmdline(p)), server)
            time.sleep(0.2)
        assert server is not None, "the episode's tool server never ran in a work dir"
        folder, _ = server
        workers = [p for p in descendants(front.pid) if "vfcheck._isolation.worker" in cmdline(p)]
        assert [str(p) for p in workers] == [folder.name]  # the worker owns the dir
        for pid in [front.pid, *workers]:  # mid-episode: no finally, no atexit runs
            os.kill(pid, signal.SIGKILL)
    finally:
        front.kill()
        front.wait()
    time.sleep(0.5)
    left = workdirs.processes_inside(folder)
    print(f"left behind: {folder} holding",
          sorted(p.name for p in (folder / ".cache/verifiers/runtimes").rglob("*"))[:8])
    for pid in left:
        print(f"  still running inside: {pid} {cmdline(pid)[:150]}")
    assert folder.is_dir() and any("vfc_tool" in cmdline(p) for p in left)
    environments = program_environments(folder)  # uv's, keyed by the copies' paths
    locks = [temp / f"uv-{e.name.rsplit('-', 1)[-1]}.lock" for e in environments]
    print("  uv environments of its program copies:", environments, locks)
    before = set(temp.iterdir())

    done = subprocess.run(
        [sys.executable, "-m", "vfcheck", "check", "vfc-echo", "--path", str(fixtures_dir),
         "--checks", "setup", "-n", "1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert not folder.exists()
    assert [p for p in left if alive(p)] == []
    assert [e for e in [*environments, *locks] if e.exists()] == []
    assert list(root.iterdir()) == []  # nothing of the new run either
    assert set(temp.iterdir()) - before == set()
    assert workdirs.processes_inside(root) == []
