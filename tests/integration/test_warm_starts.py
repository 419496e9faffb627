"""Warm starts (`vfcheck._host.warm_starts`): a forked child is an ordinary process to
whoever started it, and episodes played warm and cold give the same normalised traces."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import psutil
import pytest

from vfcheck._host.processes import become_subreaper
from vfcheck._host.warm_starts import WARM

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="warm starts adopt children as a Linux subreaper")
PIPE = asyncio.subprocess.PIPE


@pytest.fixture
def warm(tmp_path: Path):
    """This process with a zygote (and a guard log for its children's connections)."""
    from vfcheck._host.child_sockets import guarded_environ

    assert become_subreaper()
    log = tmp_path / "child-sockets.jsonl"
    log.touch()
    env = guarded_environ(os.environ, log)
    WARM.reset()
    WARM.start(env)
    yield env, log
    WARM.close()
    WARM.reset()


async def start(env: dict[str, str], *argv: str, **kwargs):
    return await asyncio.create_subprocess_exec(sys.executable, *argv, env=env,
                                                start_new_session=True, **kwargs)


async def test_a_warm_child_is_what_a_cold_one_would_be(warm, tmp_path: Path) -> None:
    env, _ = warm
    code = ("import os, sys, json; print(json.dumps([os.getpid(), os.getpgid(0), os.getsid(0),"
            " os.getppid(), os.getcwd(), os.environ.get('ASKED'), sys.argv, sys.path[0],"
            " sys.stdin.read()])); print('to stderr', file=sys.stderr); sys.exit(3)")
    proc = await start({**env, "ASKED": "yes"}, "-c", code, "arg", cwd=tmp_path,
                       stdin=PIPE, stdout=PIPE, stderr=PIPE)
    out, err = await proc.communicate(b"from stdin")
    pid, pgid, sid, ppid, cwd, asked, argv, path0, stdin = json.loads(out)
    assert (pid, pgid, sid) == (proc.pid, proc.pid, proc.pid)  # its own session and group
    assert ppid == os.getpid()  # adopted: this process waits for it
    assert (cwd, asked, argv, path0, stdin) == (str(tmp_path), "yes", ["-c", "arg"], "",
                                                "from stdin")
    assert err == b"to stderr\n"
    assert proc.returncode == 3
    assert WARM.counts["warm"] == 1 and WARM.counts["cold"] == 0


async def test_a_module_runs_as_main_and_an_uncaught_error_exits_1(warm, tmp_path: Path) -> None:
    env, _ = warm
    (tmp_path / "mod_main.py").write_text(
        "import sys\nprint(__name__, __spec__.name, sys.argv[1:])\nraise ValueError('boom')\n")
    proc = await start(env, "-m", "mod_main", "x", cwd=tmp_path, stdout=PIPE, stderr=PIPE)
    out, err = await proc.communicate()
    assert out == b"__main__ mod_main ['x']\n"
    assert proc.returncode == 1
    assert err.decode().startswith("Traceback (most recent call last):\n  File \"<frozen runpy>\"")
    assert "zygote" not in err.decode() and err.decode().endswith("ValueError: boom\n")


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
async def test_signalling_its_group_stops_it_and_what_it_started(warm, how) -> None:
    env, _ = warm
    proc = await start(env, "-c", "import subprocess, time; subprocess.Popen(['sleep', '60']);"
                       " print('up', flush=True); time.sleep(60)", stdout=PIPE)
    assert proc.stdout is not None
    assert await asyncio.wait_for(proc.stdout.readline(), 60) == b"up\n"
    below = [p.pid for p in psutil.Process(proc.pid).children()]
    os.killpg(os.getpgid(proc.pid), how)
    assert await asyncio.wait_for(proc.wait(), 10) == -how
    await asyncio.sleep(0.2)
    assert not [pid for pid in below if psutil.pid_exists(pid)
                and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]


async def test_hygiene_names_a_leftover_warm_tool_server(warm) -> None:
    from vfcheck._host.leftovers import leftovers, stop

    env, _ = warm
    server = {**env, "VF_CONFIG": "{}", "VF_STATE_URL": ""}
    proc = await start(server, "-c", "import time; time.sleep(60)")
    await asyncio.sleep(0.2)
    (found,) = [p for p in leftovers(os.getpid()) if p.pid == proc.pid]
    assert found.tool_server is False  # `-c`, not a toolset's `-m` module
    assert found.cmdline.startswith(f"{sys.executable} -c import time")
    stop([found])
    proc2 = await start(server, "-m", "http.server", "0", stdout=PIPE, stderr=PIPE)
    await asyncio.sleep(0.2)
    (found,) = [p for p in leftovers(os.getpid()) if p.pid == proc2.pid]
    assert found.tool_server and found.cmdline == f"{sys.executable} -m http.server 0"
    stop([found])


async def test_the_socket_guard_names_a_warm_childs_connection(warm) -> None:
    env, log = warm
    server = {**env, "VF_CONFIG": "{}", "VF_STATE_URL": ""}
    (Path(log).parent / "net_tool.py").write_text(
        "import socket\ntry:\n    socket.create_connection(('example.org', 443), timeout=2)\n"
        "except OSError as e:\n    print(type(e).__name__)\n")
    proc = await start(server, "-m", "net_tool", cwd=Path(log).parent, stdout=PIPE)
    out, _ = await proc.communicate()
    assert out.strip(), "the connection was refused with an OSError"
    (entry,) = [json.loads(line) for line in Path(log).read_text().splitlines()]
    assert (entry["host"], entry["port"], entry["pid"]) == ("example.org", 443, proc.pid)
    assert entry["process"] == "the tool server python -m net_tool"
    assert entry["code"].startswith("<module> at net_tool.py:")


async def test_a_dead_zygote_means_cold_starts(warm) -> None:
    env, _ = warm
    assert WARM.zygote is not None
    await asyncio.to_thread(WARM.zygote.ready.wait, 300)
    WARM.zygote.proc.kill()
    WARM.zygote.proc.wait()
    proc = await start(env, "-c", "print('cold')", stdout=PIPE)
    out, _ = await proc.communicate()
    assert out == b"cold\n" and proc.returncode == 0
    assert WARM.counts["cold"] == 1 and WARM.counts["warm"] == 0
    assert "the warm interpreter is not usable" in WARM.why_cold


async def test_other_programs_start_cold(warm) -> None:
    proc = await asyncio.create_subprocess_exec("echo", "hi", stdout=PIPE,
                                                start_new_session=True)
    assert (await proc.communicate())[0] == b"hi\n"
    assert WARM.counts == {"cold": 1} and WARM.reasons == {"not a python -m/-c command": 1}


def views(results) -> list[tuple]:
    from vfcheck.checks._lab import normalized_views

    return [(r.task.index, r.rollout, r.reward, r.runner_error, r.errors(),
             normalized_views(r)) for r in results]


PARITY = [
    ("echo-tool-v1", "verifiers", {}),
    ("counter-tool-v1", "verifiers", {}),
    ("vfc-tool", "ours", {}),  # one toolset, two tools
    ("vfc-two-toolsets", "ours", {}),  # two toolsets: two servers per rollout
    ("vfc-broken-tool-net", "ours", {}),
    # task 2 hangs to its deadline, which must come after its tool call even cold on a
    # loaded machine (a cold tool server took 15 s there); tasks 0 and 1 must not reach
    # theirs (the first warm episode also waits for the zygote's imports)
    ("vfc-broken-tool-block", "ours", {0: 45.0, 1: 45.0, 2: 25.0}),
]


async def play_all(env_id: str, path: str, deadlines: dict[int, float], *, warm: bool):
    """Every task of `env_id` played once, at the same time, each with its deadline (none
    when `deadlines` is empty): the results and how the processes started."""
    from vfcheck._episodes.runner import EnvRunner
    from vfcheck._episodes.task_loading import load_tasks
    from vfcheck._host.warm_starts import WARM

    async with EnvRunner.open(env_id, paths=[path], warm_starts=warm) as runner:
        tasks = load_tasks(runner.env, None)
        results = await asyncio.gather(*(runner.play(
            task, timeout=deadlines.get(task.data.idx, 300.0) if deadlines else 300.0)
            for task in tasks))
        return sorted(results, key=lambda r: r.task.index), WARM.summary()


@pytest.mark.slow
@pytest.mark.parametrize(("env_id", "where", "deadlines"), PARITY, ids=[p[0] for p in PARITY])
async def test_warm_and_cold_episodes_give_the_same_traces(
        env_id, where, deadlines, fixtures_dir: Path, verifiers_fixtures: Path) -> None:
    path = str(verifiers_fixtures if where == "verifiers" else fixtures_dir)
    played = {warm: await play_all(env_id, path, deadlines, warm=warm) for warm in (True, False)}
    assert played[True][1]["warm"] > 0, played[True][1]
    assert played[False][1]["warm"] == 0, played[False][1]
    assert views(played[True][0]) == views(played[False][0])


@pytest.mark.parametrize(("env_id", "tools"), [("vfc-echo", False), ("vfc-tool", True)])
async def test_a_runner_keeps_the_tool_servers_zygote_only_for_an_env_with_tools(
        env_id, tools, fixtures_dir: Path) -> None:
    """`vfcheck run` starts the tool servers' zygote on the env's hint (its source names a
    toolset) and keeps it once loaded only if the env has tool servers: a chat env's would
    only import verifiers beside the episodes."""
    from vfcheck._episodes.runner import EnvRunner
    from vfcheck._host.warm_starts import NO_TOOL_SERVERS

    async with EnvRunner.open(env_id, paths=[str(fixtures_dir)], warm_starts=True):
        assert (WARM.zygote is not None) is tools
        assert WARM.scripts_on  # harness programs may start warm either way
        if not tools:
            assert WARM.why_cold == NO_TOOL_SERVERS
