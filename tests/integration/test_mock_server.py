"""`vfcheck mock-server --script`: it serves what `check` plays, or refuses the script.

In another process the mock sees only verifiers' `X-Session-ID` (a fresh trace id that names
no task), so a script's `[[task]]` turns and judges cannot be matched there, and env code's
own requests never reach it. Such a script is refused at start, in one line; the rest
(`[[default.turn]]`, the top-level `judge`, a `[[task]]` holding only an `oracle`) is served,
to the openai SDK and to the real `vf-eval`.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .test_cli import vf_eval_traces

SERVED = """
judge = "negative"
[[task]]
index = 0
oracle = "hello world"
[[default.turn]]
reply = "scripted one"
[[default.turn]]
reply = "scripted two"
"""


def start(script: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "vfcheck", "mock-server", "--port", "0", "--script", str(script)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=script.parent,
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """`vfcheck mock-server --port 0 --script` on `SERVED`; its base URL."""
    script = tmp_path / "served.toml"
    script.write_text(SERVED)
    proc = start(script)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    try:
        assert url.startswith("http://127.0.0.1:"), (url, proc.stderr and proc.stderr.read())
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)


@pytest.mark.slow
@pytest.mark.parametrize(("text", "named"), [
    ("[[task]]\nkey = 'vfc-echo:ping'\n[[task.turn]]\nreply = 'pong'\n",
     "its 1 task entry ([[task]] 1 (key 'vfc-echo:ping'))"),
    ("[[default.turn]]\nreply = 'x'\n[[task]]\nindex = 2\njudge = 'negative'\n",
     "its 1 task entry ([[task]] 1 (index 2))"),
    ("fallback = 'error'\n" + "".join(
        f"[[task]]\nindex = {i}\n[[task.turn]]\nreply = 'r{i}'\n" for i in range(5)),
     "its 5 task entries ([[task]] 1 (index 0), [[task]] 2 (index 1), [[task]] 3 (index 2), "
     "...)"),
    ("[[http]]\nurl = 'https://grader.example.org/v1'\njson = { score = 1 }\n",
     "its 1 [[http]] entry"),
])
def test_a_script_it_cannot_serve_is_refused_in_one_line(
    tmp_path: Path, text: str, named: str
) -> None:
    script = tmp_path / "cassette.toml"
    script.write_text(text)
    proc = start(script)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()  # it served after all: stop it (a no-op once it has exited)
    assert proc.returncode == 2, (out, err)
    assert out == ""  # no URL: nothing is served
    (line,) = err.strip().splitlines()
    assert line.startswith(f"vfcheck: error: cassette.toml: mock-server cannot serve {named}")
    assert "X-Session-ID" in line and "vfcheck check/run --script" in line


@pytest.mark.slow
def test_the_openai_sdk_gets_the_scripted_turns_and_verdict(served: str) -> None:
    from openai import OpenAI

    agent = OpenAI(base_url=served, api_key="x", default_headers={"X-Session-ID": "trace-1"})
    asked = [{"role": "user", "content": "hello"}]
    first = agent.chat.completions.create(model="m", messages=asked)  # type: ignore[arg-type]
    chunks = agent.chat.completions.create(model="m", messages=asked,  # type: ignore[arg-type]
                                           stream=True)
    second = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert (first.choices[0].message.content, second) == ("scripted one", "scripted two")
    judge = OpenAI(base_url=served, api_key="x")  # no session header: a judge call
    verdict = judge.chat.completions.create(model="m", messages=[  # type: ignore[list-item]
        {"role": "user", "content": 'Is the answer right? Reply "yes" or "no".'}])
    assert verdict.choices[0].message.content == "no"


@pytest.mark.slow
def test_vf_eval_plays_the_served_script(
    served: str, fixtures_dir: Path, tmp_path: Path
) -> None:
    """vf-eval's episodes get the script's replies, not the default echo (reward 0)."""
    records = vf_eval_traces(served, fixtures_dir, tmp_path)
    replies = [[n["message"]["content"] for n in t["nodes"]
                if n["message"]["role"] == "assistant"] for t in records]
    assert len(replies) == 2 and all(r == ["scripted one"] for r in replies), replies
    assert all(t["rewards"]["echoed"]["score"] == 0.0 for t in records)
