"""`hygiene.processes`: a process env code leaves running is reported by command line and pid,
and killed; the well-behaved envs (whose harness programs and tool servers verifiers stops
itself) pass."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from support import check_report

from vfcheck.checks import BY_ID

LEAK = "sleep 3600"


def live_pids_running(command: str) -> list[int]:
    """Every live (not zombie) process on the machine whose command line is `command`."""
    from vfcheck._host.processes import cmdline

    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and cmdline(int(entry.name)) == command:
            found.append(int(entry.name))
    return found


def check(tmp_path: Path, envs: list[str], paths: list[Path], *args: str) -> tuple[int, Any]:
    done = check_report(*envs, *[w for p in paths for w in ("--path", str(p))], *args,
                        cwd=tmp_path)
    return done.returncode, done.report


@pytest.mark.slow
def test_an_orphan_is_adopted_reported_and_killed() -> None:
    """`sh -c 'sleep 3600 &'`: sh exits at once, and the orphaned sleep would belong to init;
    a subreaper keeps it in view (`leftovers`), and `stop` kills it. sh may exit before its
    child has exec'd `sleep` (on a loaded machine it does), so the script waits for the exec
    before it looks."""
    script = textwrap.dedent(f"""
        import json, os, subprocess, time
        from vfcheck._host.leftovers import leftovers, stop
        from vfcheck._host.processes import become_subreaper
        assert become_subreaper()
        subprocess.run(["sh", "-c", "{LEAK} >/dev/null 2>&1 &"], check=True)
        deadline = time.monotonic() + 10
        found = leftovers(os.getpid())
        while time.monotonic() < deadline and [p.cmdline for p in found] != ["{LEAK}"]:
            time.sleep(0.05)
            found = leftovers(os.getpid())
        stop(found)
        print(json.dumps({{"found": [[p.pid, p.cmdline] for p in found],
                          "after": [p.pid for p in leftovers(os.getpid())]}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=True)
    result = json.loads(done.stdout)
    assert [line for _, line in result["found"]] == [LEAK]
    assert result["after"] == []
    assert result["found"][0][0] not in live_pids_running(LEAK)



@pytest.mark.slow
def test_a_tool_server_left_running_is_named_as_verifiers_tool_server() -> None:
    """A leftover started the way verifiers' subprocess runtime starts a toolset's server
    (`python -m <module>`, `VF_CONFIG` and `VF_STATE_URL` in its environment) is named as
    a tool server pointing at a blocking tool; a plain leftover stays env code's."""
    import os

    from vfcheck._host.leftovers import leftovers
    from vfcheck.checks import hygiene

    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "0"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "VF_CONFIG": "{}", "VF_STATE_URL": ""})
    plain = subprocess.Popen(LEAK.split())
    try:
        found = leftovers(os.getpid())
        assert {(p.pid, p.tool_server) for p in found} >= {(server.pid, True),
                                                           (plain.pid, False)}
        mine = [p for p in found if p.pid in (server.pid, plain.pid)]
        finding = hygiene.processes_finding("vfc-x", mine)
    finally:
        for proc in (server, plain):
            proc.kill()
            proc.wait()
    assert finding.outcome == "failed"
    assert f"1 process(es) started by env code were still running after every hook and " \
           f"episode had finished (vfcheck killed them): `{LEAK}` (pid {plain.pid})" \
           in finding.message
    assert f"1 tool server(s) that verifiers started for the env's toolsets (one per " \
           f"rollout) outlived their episodes (vfcheck killed them): `{sys.executable} -m " \
           f"http.server 0` (pid {server.pid}); verifiers stops them with SIGTERM" \
           in finding.message
    assert "look for a tool that blocks or never returns" in finding.message
    assert finding.details["tool_servers"] == [server.pid]


@pytest.mark.slow
def test_without_a_subreaper_the_finding_names_what_it_could_not_see() -> None:
    """Where the worker is no subreaper (macOS; here: before it asks), orphans leave its tree
    unseen: the verdict says so instead of passing silently, and says nothing once it is."""
    script = textwrap.dedent("""
        import json
        from vfcheck.checks import hygiene
        from vfcheck._host.processes import become_subreaper
        before = hygiene.processes_finding("vfc-x", [])
        assert become_subreaper()
        after = hygiene.processes_finding("vfc-x", [])
        print(json.dumps([[f.outcome, f.message, f.details["subreaper"]] for f in (before, after)]))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=True)
    from vfcheck.checks.hygiene import UNSEEN

    before, after = json.loads(done.stdout)
    assert before == ["passed", "env 'vfc-x': no process left running after the hooks and "
                      f"episodes. {UNSEEN}", False]
    assert "re-parents them away from the worker" in UNSEEN and "\n" not in before[1]
    assert after == ["passed", "env 'vfc-x': no process left running after the hooks and "
                     "episodes", True]


@pytest.mark.slow
def test_a_leaked_process_fails_hygiene_by_name_and_pid_and_is_killed(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    code, report = check(tmp_path, ["vfc-broken-leak"], [fixtures_dir],
                         "--checks", "setup,episode,hygiene")
    assert code == 1
    (env,) = report["envs"]
    bad = [f for f in env["findings"] if f["outcome"] in ("failed", "error")]
    assert [f["check"] for f in bad] == ["hygiene.processes"]
    (finding,) = bad
    leaked = finding["details"]["leftovers"]
    assert len(leaked) == 2  # task 1's setup ran for the setup check and for its episode
    message = finding["message"]
    assert message.startswith("env 'vfc-broken-leak': hygiene.processes failed — ")
    assert f"`{LEAK}` (pids " in message and "\n" not in message
    assert all(str(p["pid"]) in message and p["cmdline"] == LEAK for p in leaked)
    assert BY_ID["hygiene.processes"].contract in message
    assert live_pids_running(LEAK) == []


@pytest.mark.slow
def test_well_behaved_envs_leave_no_process(
    fixtures_dir: Path, verifiers_fixtures: Path, tmp_path: Path
) -> None:
    """The env tier's harness programs and tool servers (vfc-tool, echo-tool-v1) and the fast
    tier (echo-v1), through happy, failing, hung and cancelled episodes."""
    envs = ["vfc-tool", "echo-v1", "echo-tool-v1"]
    code, report = check(tmp_path, envs, [fixtures_dir, verifiers_fixtures],
                         "--checks", "episode,preview,hygiene", "--sample", "1")
    verdicts = {(e["id"], f["check"]): f["outcome"] for e in report["envs"]
                for f in e["findings"] if f["check"] == "hygiene.processes"}
    assert verdicts == {(env, "hygiene.processes"): "passed" for env in envs}
    assert code == 0


@pytest.mark.slow
def test_a_file_left_in_the_temp_dir_fails_only_its_env_by_path_and_hook(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    """vfc-broken-tmp-leak beside vfc-echo and a tool fixture, two workers at once: each
    worker's TMPDIR is its own, so only the leaking env's `hygiene.files` fails, naming each
    file and the hook, task and line that wrote it."""
    envs = ["vfc-broken-tmp-leak", "vfc-echo", "vfc-tool"]
    code, report = check(tmp_path, envs, [fixtures_dir], "--checks", "setup,episode,hygiene",
                         "-n", "2")
    assert code == 1
    bad = {(e["id"], f["check"]) for e in report["envs"] for f in e["findings"]
           if f["outcome"] in ("failed", "error")}
    assert bad == {("vfc-broken-tmp-leak", "hygiene.files")}
    envs_by_id = {e["id"]: e for e in report["envs"]}
    (finding,) = [f for f in envs_by_id["vfc-broken-tmp-leak"]["findings"]
                  if f["check"] == "hygiene.files"]
    left = finding["details"]["files"]
    assert len(left) == 2  # task 1's setup ran for the setup check and for its episode
    assert all(f["path"].startswith("<temp dir>/vfc-scratch-") and f["index"] == 1
               and f["hook"] == "VfcBrokenTmpLeakTask.setup"
               and f["at"].startswith("vfc_broken_tmp_leak.py:") for f in left)
    message = finding["message"]
    assert message.startswith("env 'vfc-broken-tmp-leak': hygiene.files failed — 2 file(s) ")
    assert all(f"`{f['path']}` (made by VfcBrokenTmpLeakTask.setup of task 1 at {f['at']})"
               in message for f in left)
    assert BY_ID["hygiene.files"].contract in message and "\n" not in message


@pytest.mark.slow
def test_a_tool_env_leaves_no_port_file_and_nothing_in_the_temp_dir(
    verifiers_fixtures: Path, tmp_path: Path
) -> None:
    """echo-tool-v1: verifiers 0.4.0 writes `/tmp/vf-port-<uuid>` per tool-server start and
    never removes it; vfcheck removes those of its run (listed in the report), and
    everything else it writes goes to TMPDIR (here a folder of the test's), which holds no
    file afterwards. /tmp itself is not compared: other runs on the machine write there."""
    temp = tmp_path / "temp"
    temp.mkdir()
    done = check_report("echo-tool-v1", "--path", str(verifiers_fixtures), "--checks",
                        "episode,hygiene", "--sample", "1", cwd=tmp_path,
                        env={"TMPDIR": str(temp)})
    (env,) = done.report["envs"]
    removed = env["starts"]["port_files"]
    assert removed and all(p.startswith("/tmp/vf-port-") for p in removed)
    assert [p for p in removed if Path(p).exists()] == []
    assert [p for p in temp.rglob("*") if not p.is_dir()] == []
    verdicts = {f["check"]: f["outcome"] for f in env["findings"]
                if f["check"].startswith("hygiene.")}
    assert verdicts == {"hygiene.processes": "passed", "hygiene.network": "passed",
                        "hygiene.files": "passed"}
    assert done.returncode == 0
