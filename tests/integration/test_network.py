"""Env code's own HTTP requests, offline: refused in the user's terms (what, where, that
vfcheck runs offline, how to serve it), logged for `hygiene.network`, and answered by a
script's `[[http]]` entries, so an env with a remote grader can be checked offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import FIXTURES, by_unit, check_report
from unit.test_network import RUBRIC

from vfcheck.checks import BY_ID

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


def check(tmp_path: Path, *extra: str, env: str = "vfc-broken-reward-network",
          ) -> dict[str, Any]:
    [env] = check_report(env, "--path", str(FIXTURES), *extra, cwd=tmp_path).report["envs"]
    return by_unit(env)


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
