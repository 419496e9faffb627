"""Ctrl-C and SIGTERM in the middle of `vfcheck check` and `pytest --vf-env`: the findings made
so far are in the JSON report, the exit code says interrupted, and no worker or harness
process is left."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


OUTPUT: dict[int, queue.Queue[str]] = {}
"""Each started run's output lines not read yet, by pid (its stdout is read by a thread)."""


def rest_of_output(proc: subprocess.Popen[str]) -> list[str]:
    """The lines `proc` printed after `start_until` returned (it has exited: its reader
    thread puts the last of them within moments)."""
    rest: list[str] = []
    with contextlib.suppress(queue.Empty):
        while True:
            rest.append(OUTPUT[proc.pid].get(timeout=2))
    return rest


def start_until(args: list[str], cwd: Path, marker: str, *,
                tmpdir: Path | None = None) -> tuple[subprocess.Popen[str], list[int]]:
    """Start `args` and return once a line of its output contains `marker` (the findings
    the test expects to survive are made), with the processes below it at that moment.
    `tmpdir`: the run's TMPDIR, to see what it leaves there."""
    proc = subprocess.Popen(
        args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1",
             **({"TMPDIR": str(tmpdir)} if tmpdir is not None else {})},
    )
    lines: queue.Queue[str] = OUTPUT.setdefault(proc.pid, queue.Queue())
    seen: list[str] = []
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout or []],
                     daemon=True).start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            seen.append(lines.get(timeout=1))
        except queue.Empty:
            continue
        if marker in seen[-1]:
            break
    from vfcheck._host.processes import descendants

    children = descendants(proc.pid)  # the worker, its runtimes' programs
    assert children, "the check ran in a worker process: " + "".join(seen)[-2000:]
    return proc, children


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupting_check_keeps_findings_and_leaves_no_process(
    fixtures_dir: Path, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    """Every report says the run was cut short: the JSON report is not `complete`, names the
    signal and lists the checks not run; the JUnit XML has a skipped testcase for each, so
    its counts add up to a whole run's; the summary line counts them; the next step is to
    run again; and the run leaves no temp dir behind."""
    report, junit, tmpdir = tmp_path / "report.json", tmp_path / "junit.xml", tmp_path / "tmp"
    tmpdir.mkdir()
    # a hanging setup keeps the run busy long enough to interrupt it mid-way
    proc, children = start_until(
        [sys.executable, "-m", "vfcheck", "check", "vfc-broken-setup-hang", "-v", "--path",
         str(fixtures_dir), "--timeout", "120", "--json", str(report), "--junit-xml",
         str(junit)],
        tmp_path, "setup[0] passed", tmpdir=tmpdir)
    proc.send_signal(sig)
    proc.wait(timeout=60)
    err = proc.stderr.read() if proc.stderr else ""
    assert proc.returncode == code, err[-2000:]
    data = json.loads(report.read_text())
    env = data["envs"][0]
    outcomes = {(f["check"], (f["task"] or {}).get("index")): f["outcome"]
                for f in env["findings"]}
    assert outcomes[("load", None)] == "passed"
    assert outcomes[("setup", 0)] == "passed"
    name = signal.Signals(sig).name
    assert (data["complete"], data["interrupted"]) == (False, name)
    assert "setup[1]" in env["not_run"] and "gold[2]" in env["not_run"]
    assert not {f"{c}[{i}]" if i is not None else c for c, i in outcomes} & set(env["not_run"])
    xml = junit.read_text()
    assert f'<property name="interrupted" value="{name}" />' in xml
    assert xml.count(f"not run: the run was interrupted ({name})") == len(env["not_run"])
    out = rest_of_output(proc)
    summary = next(line for line in out if line.startswith("vfcheck: "))
    assert f"{len(env['not_run'])} not run (1 env); interrupted ({name})" in summary, summary
    time.sleep(0.5)
    assert [pid for pid in children if alive(pid)] == []
    assert [p.name for p in tmpdir.iterdir() if p.name.startswith("vfcheck-cli")] == []


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupting_pytest_vf_env_keeps_reports_and_leaves_no_process(
    fixtures_dir: Path, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    """The same through the plugin: the `--vf-json` report and pytest's JUnit file hold the
    items that ran, and the exit code says interrupted (130) or terminated (143)."""
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    proc, children = start_until(
        [sys.executable, "-m", "pytest", "--vf-env", "vfc-broken-setup-hang",
         f"--vf-path={fixtures_dir}", "--vf-timeout", "120", "--vf-json", str(report),
         f"--junit-xml={junit}", "-p", "no:cacheprovider", "-v"],
        tmp_path, "vfc-broken-setup-hang::setup[0] PASSED")
    proc.send_signal(sig)
    proc.wait(timeout=60)
    assert proc.returncode == code, (proc.stderr.read() if proc.stderr else "")[-2000:]
    env = json.loads(report.read_text())["envs"][0]
    outcomes = {(f["check"], (f["task"] or {}).get("index")): f["outcome"]
                for f in env["findings"]}
    assert outcomes[("load", None)] == "passed"
    assert outcomes[("setup", 0)] == "passed"
    assert 'name="setup[0]"' in junit.read_text()
    data = json.loads(report.read_text())
    assert (data["complete"], data["interrupted"]) == (False, signal.Signals(sig).name)
    assert "setup[1]" in data["envs"][0]["not_run"]
    time.sleep(1)
    assert [pid for pid in children if alive(pid)] == []


def check_run(fixtures_dir: Path, report: Path) -> list[str]:
    """`-v`: a line per finding as it arrives, which `start_until` waits for (without it,
    `vfcheck check` prints a mark per finding on the env's one line, as pytest does)."""
    return [sys.executable, "-m", "vfcheck", "check", "vfc-broken-setup-hang", "-v", "--path",
            str(fixtures_dir), "--timeout", "120", "--json", str(report)]


def outcomes_in(report: Path) -> dict[tuple[str, int | None], str]:
    env = json.loads(report.read_text())["envs"][0]
    return {(f["check"], (f["task"] or {}).get("index")): f["outcome"]
            for f in env["findings"]}


@pytest.mark.slow
def test_a_second_interrupt_does_not_cut_the_report_short(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    """Ctrl-C twice (and SIGTERM) while the run stops its workers and writes its reports:
    they wait until the findings are written."""
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    proc, children = start_until([*check_run(fixtures_dir, report), "--junit-xml", str(junit)],
                                 tmp_path, "setup[0] passed")
    for sig in (signal.SIGINT, signal.SIGINT, signal.SIGTERM):
        proc.send_signal(sig)
        time.sleep(0.05)
    proc.wait(timeout=60)
    err = proc.stderr.read() if proc.stderr else ""
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    found = outcomes_in(report)
    assert found[("load", None)] == "passed" and found[("setup", 0)] == "passed"
    assert 'name="setup[0]"' in junit.read_text()  # written once, at the end
    time.sleep(1)
    assert [pid for pid in children if alive(pid)] == []


@pytest.mark.slow
def test_a_killed_front_end_leaves_what_it_had_found(fixtures_dir: Path, tmp_path: Path) -> None:
    """SIGKILL cannot be caught: the JSON report is written as findings arrive."""
    from vfcheck._host.processes import kill_pids
    from vfcheck._isolation.workdirs import sweep

    report = tmp_path / "report.json"
    proc, children = start_until(check_run(fixtures_dir, report), tmp_path, "setup[0] passed")
    time.sleep(2)  # the report is rewritten at most once a second
    proc.kill()
    proc.wait(timeout=30)
    kill_pids(children)  # the worker outlives its supervisor: this test stops it
    sweep()
    found = outcomes_in(report)
    assert found[("load", None)] == "passed" and found[("setup", 0)] == "passed"
