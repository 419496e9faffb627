"""Env code's own HTTP requests, offline: refused in the user's terms (what, where, that
vfcheck runs offline, how to serve it), logged for `hygiene.network`, and answered by a
script's `[[http]]` entries, so an env with a remote grader can be checked offline."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from support import FIXTURES

from vfcheck.checks import BY_ID
from vfcheck.model import EpisodeRef, ScriptedModel, TaskRef, episode_scope
from vfcheck.model.offline_http import OfflineRequestError, http_answer
from vfcheck.script import Script, ScriptError

RUBRIC = "https://rubrics.example.org/v1/echo.json"
SCORING = ("setup", "gold", "noop", "episode")
Unit = tuple[str, int | None]

BREAKS: dict[str, set[Unit]] = {
    "vfc-broken-reward-network": {("hygiene.network", None)} | {
        (check, i) for check in ("gold", "noop", "episode") for i in range(3)},
    "vfc-broken-reward-socket": {("hygiene.network", None)},
    "vfc-broken-tool-net": {("hygiene.network", None)},
}
"""The fixtures whose reward (or tool) reaches for the network, and what fails on them
(under `--checks setup,gold,noop,episode,hygiene`): a reward with httpx, every scoring and
`hygiene.network`; a reward or a tool with urllib behind an `except OSError`,
`hygiene.network` alone."""


def get(model: ScriptedModel, url: str, method: str = "GET") -> httpx.Response:
    async def ask() -> httpx.Response:
        with model.mock():
            async with httpx.AsyncClient() as client:
                return await client.request(method, url)

    return asyncio.run(ask())


def test_a_request_nobody_serves_is_refused_in_the_users_terms_and_logged() -> None:
    model = ScriptedModel()
    ref = EpisodeRef(TaskRef(1, "k"), stage=lambda: "the scoring stage of an episode")

    async def ask() -> None:
        with model.mock(), episode_scope(ref):
            async with httpx.AsyncClient() as client:
                await client.post("https://grader.example.org/v1/grade?x=1", json={})

    with pytest.raises(OfflineRequestError) as raised:
        asyncio.run(ask())
    message = str(raised.value)
    assert message.startswith("vfcheck runs offline: env code requested POST "
                              "https://grader.example.org/v1/grade?x=1 (the scoring stage")
    assert '[[http]] url = "https://grader.example.org/v1/grade" method = "POST"' in message
    assert isinstance(raised.value, httpx.ConnectError)  # what env code gets with no route
    [refused] = model.http.taken()
    assert (refused.method, refused.task, refused.stage) == (
        "POST", TaskRef(1, "k"), "the scoring stage of an episode")


def test_http_answers_match_method_url_and_prefix_and_model_calls_still_reach_the_model(
        ) -> None:
    model = ScriptedModel(http=[
        http_answer(RUBRIC, method="GET", json_body={"ignore_case": True}),
        http_answer("https://svc.example.org/v2/*", text="pong", status=202),
    ])
    assert get(model, RUBRIC).json() == {"ignore_case": True}
    assert get(model, RUBRIC + "?v=3").json() == {"ignore_case": True}  # query ignored
    served = get(model, "https://svc.example.org/v2/a/b", "POST")
    assert (served.status_code, served.text) == (202, "pong")
    with pytest.raises(OfflineRequestError):
        get(model, RUBRIC, "POST")  # the entry says GET
    models = get(model, "http://scripted-model.vfcheck.invalid/v1/models")
    assert models.status_code == 200 and model.http.taken()[0].method == "POST"


@pytest.mark.parametrize(("text", "says"), [
    ('[[http]]\nurl = "ftp://x/y"', "http 1: `url` must be an http:// or https:// URL"),
    ('[[http]]\nurl = "https://x"\njson = 1\ntext = "a"', "takes `json` or `text`, not both"),
    ('[[http]]\nurl = "https://x"\nbody = 1', "unknown field `body` (allowed: url, method, "
     "status, json, text)"),
    ('[[http]]\nurl = "https://x"\nstatus = 99', "http 1, `status`: Input should be greater"),
    ('[[http]]\nmethod = "GET"', "http 1, `url`: Field required"),
])
def test_a_bad_http_entry_is_one_line_naming_it(text: str, says: str) -> None:
    with pytest.raises(ScriptError, match="http 1") as raised:
        Script.from_toml(text, source="s.toml")
    assert says in str(raised.value) and "\n" not in str(raised.value), str(raised.value)


def check(tmp_path: Path, *extra: str, env: str = "vfc-broken-reward-network",
          ) -> dict[str, Any]:
    report = tmp_path / "report.json"
    subprocess.run(
        [sys.executable, "-m", "vfcheck", "check", env, "--path",
         str(FIXTURES), "--json", str(report), *extra],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    [env] = json.loads(report.read_text())["envs"]
    return {(f["check"], f["task"]["index"] if f["task"] else None): f for f in env["findings"]}


@pytest.mark.slow
def test_a_reward_that_calls_a_remote_url_fails_naming_it_and_a_script_serves_it(
        tmp_path: Path) -> None:
    families = "setup,gold,noop,episode,hygiene"
    findings = check(tmp_path, "--checks", families)
    failed = {u for u, f in findings.items() if f["outcome"] != "passed"}
    assert failed == BREAKS["vfc-broken-reward-network"], failed
    for (name, _), finding in findings.items():
        message = finding["message"]
        assert "respx" not in message.lower() and "AllMocked" not in message
        if name in {"gold", "noop", "episode"}:
            assert f"vfcheck runs offline: env code requested GET {RUBRIC}" in message, message
    network = findings[("hygiene.network", None)]["message"]
    assert f"GET {RUBRIC}, 9 times (from tasks 0, 1, 2 in vf-validate's gold check; " \
           "tasks 0, 1, 2 in vf-validate's noop check; tasks 0, 1, 2 in the scoring stage of " \
           "an episode)" in network, network
    assert "vfcheck runs offline" in network and f'[[http]] url = "{RUBRIC}"' in network

    served = check(tmp_path, "--checks", families,
                   "--script", str(FIXTURES / "scripts" / "rubric.toml"))
    assert {f["outcome"] for f in served.values()} == {"passed"}, {
        u: f["message"] for u, f in served.items() if f["outcome"] != "passed"}


@pytest.mark.slow
def test_a_reward_that_connects_with_urllib_and_swallows_the_error_fails_hygiene_alone(
        tmp_path: Path) -> None:
    """Not httpx, so no script can serve it: refused at the socket, the reward's `except`
    falls back and scores, and only `hygiene.network` names the host, the reward and the
    line, the tasks and the stages."""
    env = "vfc-broken-reward-socket"
    findings = check(tmp_path, "--checks", "setup,gold,noop,episode,hygiene", env=env)
    failed = {u for u, f in findings.items() if f["outcome"] != "passed"}
    assert failed == BREAKS[env], failed
    message = findings[("hygiene.network", None)]["message"]
    source = (FIXTURES / "vfc_broken_reward_socket.py").read_text().splitlines()
    line = next(i + 1 for i, text in enumerate(source) if "urlopen(" in text)
    assert message.startswith(f"env {env!r}: hygiene.network failed — env code opened "), message
    assert (f"rubrics.example.org:443, 15 times (reward 'echoed' at "
            f"vfc_broken_reward_socket.py:{line}; tasks 0, 1, 2 in vf-validate's gold check; "
            "tasks 0, 1, 2 in vf-validate's noop check; tasks 0, 1, 2 in the scoring stage of "
            "an episode)") in message, message
    assert "make the call with httpx" in message and "vfcheck runs offline" in message
    assert BY_ID["hygiene.network"].contract in message


@pytest.mark.slow
def test_a_tool_that_connects_from_its_server_process_fails_hygiene_alone(
        tmp_path: Path) -> None:
    """The tool server is a process of its own: vfcheck's startup hook refuses the
    connection there, the tool's `except` falls back, and `hygiene.network` names the host,
    the tool and its line, and the tool server; vfc-tool, the same env without the call,
    stays clean."""
    env = "vfc-broken-tool-net"
    findings = check(tmp_path, "--checks", "setup,gold,noop,episode,hygiene", env=env)
    failed = {u for u, f in findings.items() if f["outcome"] != "passed"}
    assert failed == BREAKS[env], {u: findings[u]["message"] for u in failed}
    finding = findings[("hygiene.network", None)]
    source = (FIXTURES / "vfc_broken_tool_net.py").read_text().splitlines()
    line = next(i + 1 for i, text in enumerate(source) if "urlopen(" in text)
    message = finding["message"]
    assert message.startswith(f"env {env!r}: hygiene.network failed — env code in processes "
                              "of their own (tool servers) opened "), message
    assert f"bignum.example.org:443, 2 times (add at vfc_broken_tool_net.py:{line}; the tool " \
           "server python -m vfc_broken_tool_net, 2 processes)" in message, message
    assert "cannot serve a process of its own" in message
    [entry] = finding["details"]["processes"]
    assert entry["processes"] == {"the tool server python -m vfc_broken_tool_net": 2}

    clean = check(tmp_path, "--checks", "setup,gold,noop,episode,hygiene", env="vfc-tool")
    assert {f["outcome"] for f in clean.values()} == {"passed"}, {
        u: f["message"] for u, f in clean.items() if f["outcome"] != "passed"}
