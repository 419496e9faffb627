"""`vfcheck record`: cassettes of real replies, scrubbed, replayed offline
(`vfcheck._frontends.cassette`).

The end-to-end tests record from `vfcheck mock-server` serving a script of its own (every
reply says SERVER), in another process on a free port, so what the cassette holds provably
came from the endpoint; the replays then run with no endpoint at all.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import vfcheck
from unit.test_record import API_KEY, TOKEN

SERVER_SCRIPT = f"""
[[default.turn]]
reply = "SERVER: {{last_user}} Bearer abc.def-123456 {TOKEN}"
"""
TOOL_SERVER_SCRIPT = """
[[default.turn]]
reply = "SERVER adds"
tool = "calc_add"
arguments = { a = 2, b = 3 }
[[default.turn]]
reply = "SERVER says {last_tool_result}"
"""


# ------------------------------------------------------------------ end to end


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    """`serve(script_text)`: `vfcheck mock-server --port 0` on that script, in another
    process; returns its base URL. Stopped (SIGINT) at teardown."""
    started: list[subprocess.Popen[str]] = []

    def start(text: str) -> str:
        script = tmp_path / f"server-{len(started)}.toml"
        script.write_text(text)
        proc = subprocess.Popen(
            [sys.executable, "-m", "vfcheck", "mock-server", "--port", "0", "--script",
             str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        started.append(proc)
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), (url, proc.stderr and proc.stderr.read())
        return url

    yield start
    for proc in started:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)


def assistant_turns(episodes: Path) -> dict[str, list[Any]]:
    """Per task key, the assistant messages (content, tool call names) of its first trace."""
    found: dict[str, list[Any]] = {}
    for line in episodes.read_text().splitlines():
        record = json.loads(line)
        nodes = record["traces"][0]["trace"]["nodes"]
        found[record["task"]["key"]] = [
            (m["content"], [c["name"] for c in m.get("tool_calls") or []])
            for m in (node["message"] for node in nodes) if m["role"] == "assistant"
        ]
    return found


@pytest.mark.slow
def test_record_from_a_server_then_replay_offline(
    serve: Any, fixtures_dir: Path, tmp_path: Path
) -> None:
    url = serve(SERVER_SCRIPT)
    key_env = {"VFC_RECORD_KEY": API_KEY}
    echo, multi = tmp_path / "echo.toml", tmp_path / "multi.toml"
    # vfc-echo in a project whose [tool.vfcheck] gives the path and the sample (2 tasks)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        f"[tool.vfcheck]\npaths = [{json.dumps(str(fixtures_dir))}]\nsample = 2\n")
    for env_id, cassette, where, extra in (
            ("vfc-echo", echo, project, []),
            ("vfc-multiturn", multi, tmp_path, ["--path", str(fixtures_dir), "-n", "2"])):
        done = vfcheck("record", env_id, "--base-url", url, "--api-key-var", "VFC_RECORD_KEY",
                       *extra, "-o", str(cassette), cwd=where, env=key_env)
        assert done.returncode == 0, done.stderr[-2000:]
        assert f"replay it offline: vfcheck check {env_id} --script {cassette}" in done.stderr
        text = cassette.read_text()
        assert API_KEY not in text and TOKEN not in text and "abc.def-123456" not in text
    script = tomllib.loads(echo.read_text())
    assert script["fallback"] == "error"
    # the mock replied: the header names it, not the model a real endpoint gets by default
    assert "replies of model vfcheck-scripted at 127.0.0.1" in echo.read_text()
    assert [t["key"] for t in script["task"]] == ["vfc-echo:hello world", "vfc-echo:ping"]
    assert script["task"][0]["turn"] == [{
        "reply": "SERVER: Answer directly without using tools or running code. Your reply must "
                 "contain this exact phrase: hello world Bearer <secret> <secret>"}]
    # multi-turn: the server's one scripted turn, then its default policy (the echo)
    multi_turns = [t["turn"] for t in tomllib.loads(multi.read_text())["task"]]
    assert multi_turns == [
        [{"reply": "SERVER: hello world Bearer <secret> <secret>"}, {"reply": "goodbye world"}],
        [{"reply": "SERVER: ping Bearer <secret> <secret>"}, {"reply": "pong"}],
    ]

    # replay with no endpoint: `vfcheck run` gives the recorded replies back ...
    done = vfcheck("run", "vfc-multiturn", "--script", str(multi), "--path", str(fixtures_dir),
                   "-o", "replay.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert assistant_turns(tmp_path / "replay.jsonl") == {
        "vfc-multiturn:hello world|goodbye world": [
            ("SERVER: hello world Bearer <secret> <secret>", []), ("goodbye world", [])],
        "vfc-multiturn:ping|pong": [("SERVER: ping Bearer <secret> <secret>", []),
                                    ("pong", [])],
    }
    # a cassette of the first 2 of vfc-echo's 3 tasks: `vfcheck run` plays those 2, as
    # recorded, instead of failing on the third (issue 24, item 6)
    done = vfcheck("run", "vfc-echo", "--script", str(echo), "--path", str(fixtures_dir),
                   "-o", "echo.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "echo.toml holds 2 of the 3 tasks: playing those (-n N plays the first N)" in (
        done.stderr)
    assert sorted(assistant_turns(tmp_path / "echo.jsonl")) == [
        "vfc-echo:hello world", "vfc-echo:ping"]
    # ... and golden traces hold them (`vfcheck check --golden-update`, then compare)
    golden = tmp_path / "golden"
    for extra in (["--golden-update"], ["--golden-strict"]):
        done = vfcheck("check", "vfc-echo", "--script", str(echo), "--path", str(fixtures_dir),
                       "--sample", "2", "--checks", "golden", "--golden-dir", str(golden),
                       *extra, cwd=tmp_path)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    stored = (golden / "vfc-echo" / "vfc-echo_hello_world.json").read_text()
    assert "SERVER: Answer directly" in stored and API_KEY not in stored

    # a turn the cassette does not hold: one line naming the task and the turn, exit 1
    multi.write_text(multi.read_text().replace("\n[[task.turn]] # turn 1\nreply = 'pong'\n", ""))
    done = vfcheck("run", "vfc-multiturn", "--script", str(multi), "--path", str(fixtures_dir),
                   "-o", "miss.jsonl", cwd=tmp_path)
    assert done.returncode == 1
    assert ("vfcheck: the script holds no turn 1 of task 'vfc-multiturn:ping|pong' (index 1) "
            "(it holds 1 turn of it)") in done.stderr


@pytest.mark.slow
def test_record_a_tool_env(serve: Any, fixtures_dir: Path, tmp_path: Path) -> None:
    url = serve(TOOL_SERVER_SCRIPT)
    cassette = tmp_path / "tool.toml"
    done = vfcheck("record", "vfc-tool", "--base-url", url, "--path", str(fixtures_dir),
                   "-n", "1", "-o", str(cassette), cwd=tmp_path, env={"OPENAI_API_KEY": ""})
    assert done.returncode == 0, done.stderr[-2000:]
    (task,) = tomllib.loads(cassette.read_text())["task"]
    assert task["turn"] == [
        {"reply": "SERVER adds", "tool": "calc_add", "raw_arguments": '{"a":2,"b":3}'},
        {"reply": "SERVER says 5 [calc-9d2]"},
    ]
    done = vfcheck("run", "vfc-tool", "--script", str(cassette), "--path", str(fixtures_dir),
                   "-n", "1", "-o", "replay.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert assistant_turns(tmp_path / "replay.jsonl") == {
        "vfc-tool:2+3": [("SERVER adds", ["calc_add"]), ("SERVER says 5 [calc-9d2]", [])]}
    line = json.loads((tmp_path / "replay.jsonl").read_text())
    assert line["reward"] == 1.0  # the tool really ran on the replayed call


@pytest.mark.slow
def test_an_endpoint_that_only_fails_records_nothing(
    serve: Any, fixtures_dir: Path, tmp_path: Path
) -> None:
    """A wrong key (every call a 401) must not leave a cassette of faults behind."""
    url = serve('[[default.turn]]\nfault = "status"\nstatus = 401\n')
    done = vfcheck("record", "vfc-echo", "--base-url", url, "--path", str(fixtures_dir),
                   "-n", "1", "-o", "c.toml", cwd=tmp_path, env={"OPENAI_API_KEY": API_KEY})
    assert done.returncode == 1
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("vfcheck:")]
    assert line.startswith(f"vfcheck: env 'vfc-echo': no model reply was recorded from "
                           f"{url.split('//')[1].split('/')[0]} (")
    assert "401" in line and API_KEY not in done.stderr
    assert not (tmp_path / "c.toml").exists()


@pytest.mark.slow
def test_record_needs_the_key_of_a_remote_endpoint(fixtures_dir: Path, tmp_path: Path) -> None:
    done = vfcheck("record", "vfc-echo", "--path", str(fixtures_dir),
                   "--base-url", "https://api.example.invalid/v1",
                   "--api-key-var", "VFC_NO_SUCH_KEY", "-o", "c.toml", cwd=tmp_path,
                   env={"VFC_NO_SUCH_KEY": ""})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "vfcheck: $VFC_NO_SUCH_KEY is not set: export the endpoint's API key in it, or name "
        "another variable with --api-key-var VAR (a loopback endpoint needs none)"]
    assert not (tmp_path / "c.toml").exists()
