"""The hygiene families' verdicts and messages, from values made here: what a leaked process
or a refused request is called, grouped and counted as a reader needs it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vfcheck._host.leftovers import Leftover
from vfcheck._model import TaskRef
from vfcheck.checks import hygiene
from vfcheck.checks._network import describe_connections, describe_refused, in_processes, in_worker
from vfcheck.checks.hygiene import listed, processes_finding

SCORING = "the scoring stage of an episode"
GOLD = "vf-validate's gold check"


def made(method: str, url: str, stage: str, task: int | None) -> SimpleNamespace:
    return SimpleNamespace(method=method, url=url, stage=stage,
                           task=None if task is None else TaskRef(task, f"k{task}"))


def test_a_leftover_command_line_is_named_once_with_all_its_pids() -> None:
    found = [Leftover(4, "sleep 3600"), Leftover(5, "sleep 3600"), Leftover(9, "python -m x")]
    assert listed(found) == "`sleep 3600` (pids 4, 5); `python -m x` (pid 9)"
    assert listed([Leftover(1, "y" * 200)]) == f"`{'y' * 120}` (pid 1)"


def test_env_code_and_tool_server_leftovers_get_their_own_words() -> None:
    found = [Leftover(4, "sleep 3600"), Leftover(7, "python -m my_env", tool_server=True)]
    finding = processes_finding("vfc-x", found)
    assert finding.outcome == "failed" and finding.task is None
    assert finding.message.startswith(
        "env 'vfc-x': hygiene.processes failed — 1 process(es) started by env code were still "
        "running after every hook and episode had finished (vfcheck killed them): "
        "`sleep 3600` (pid 4); and 1 tool server(s) that verifiers started")
    assert "look for a tool that blocks or never returns" in finding.message
    assert "Contract: env code leaves no process running" in finding.message
    assert finding.details["tool_servers"] == [7]
    assert finding.details["leftovers"] == [{"pid": 4, "cmdline": "sleep 3600"},
                                            {"pid": 7, "cmdline": "python -m my_env"}]


def test_without_a_subreaper_the_verdict_names_what_it_cannot_see(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hygiene, "is_subreaper", lambda: False)
    passed = processes_finding("vfc-x", [])
    assert passed.outcome == "passed" and passed.message.endswith(hygiene.UNSEEN)
    monkeypatch.setattr(hygiene, "is_subreaper", lambda: True)
    assert processes_finding("vfc-x", []).message == (
        "env 'vfc-x': no process left running after the hooks and episodes")


def test_refused_requests_are_grouped_by_method_and_url_with_their_tasks_and_stages() -> None:
    refused = [made("POST", "https://g.example.org/grade", SCORING, 1),
               made("POST", "https://g.example.org/grade", SCORING, 0),
               made("POST", "https://g.example.org/grade", GOLD, 2),
               made("GET", "https://files.example.org/a", "setup", None)]
    text, details = describe_refused(refused)
    assert text == ("POST https://g.example.org/grade, 3 times (from tasks 0, 1 in "
                    f"{SCORING}; task 2 in {GOLD}); GET https://files.example.org/a "
                    "(from no task in setup)")
    assert details[0] == {"method": "POST", "url": "https://g.example.org/grade", "count": 3,
                          "where": {SCORING: ["0", "1"], GOLD: ["2"]}}


def test_connections_name_host_port_the_code_and_where_they_were_made() -> None:
    attempts = [SimpleNamespace(host="bignum.example.org", port=443, code="add at my_env.py:32",
                                stage=SCORING, task=TaskRef(0, "k0"), pid=11,
                                process="the tool server python -m my_env"),
                SimpleNamespace(host="bignum.example.org", port=443, code="add at my_env.py:32",
                                stage=SCORING, task=TaskRef(1, "k1"), pid=12,
                                process="the tool server python -m my_env")]
    worker, _ = describe_connections(attempts, in_worker)
    assert worker == (f"bignum.example.org:443, 2 times (add at my_env.py:32; tasks 0, 1 in "
                      f"{SCORING})")
    children, details = describe_connections(attempts, in_processes)
    assert children == ("bignum.example.org:443, 2 times (add at my_env.py:32; the tool "
                        "server python -m my_env, 2 processes)")
    assert details[0]["processes"] == {"the tool server python -m my_env": 2}
