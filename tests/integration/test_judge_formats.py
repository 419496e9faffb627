"""A judge is answered in its own format (issue #35 item 1): a JSON-verdict judge and a
score-in-tags judge whose parsers raise on `yes` are clean on every family, judge.wiring and
reward.reachable passing and the format shown; a judge whose prompt states no format vfcheck
can read, and whose parser refuses every reply tried, is never a failure of the env: what
needs its verdict skips, naming the judge class, its prompt's line and what was tried.
Driven through the pytest plugin on every family, as an env author runs it."""

from __future__ import annotations

import pytest
from support import CheckCache, PluginRun

from .test_checks import units_with

SAMPLED = range(3)
FORMATS = {
    "vfc-judge-json": ('answered in {"faithful": true, "covered": 3}/{"faithful": false, '
                       '"covered": 0} (a JSON object (faithful: bool, covered: int), read from '
                       "its prompt: 'Reply with one JSON object and nothing else, in the form "
                       '{"faithful": true, "covered": 2}\')'),
    "vfc-judge-tags": ("answered in <score>10</score>/<score>1</score> (a score in <score> "
                       "tags, 1 to 10, read from its prompt: 'Think it over, then put the score "
                       "in <score></score> tags.')"),
}
UNREADABLE = "vfc-judge-unreadable"
NEEDS_VERDICT = {"gold", "episode", "robustness", "reward.reachable", "judge.wiring",
                 "judge.garbage"}
"""Checks that fail on vfc-judge-unreadable when its judge is answered `yes`/`no` (today's
main: gold, episode, robustness and judge.wiring failed on every task)."""


@pytest.fixture(scope="module")
def formats_run(checked: CheckCache) -> PluginRun:
    return checked.plugin([*FORMATS, UNREADABLE])


@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(FORMATS))
def test_a_judge_answered_in_its_own_format_is_clean(env_id: str,
                                                     formats_run: PluginRun) -> None:
    env = formats_run.envs[env_id]
    bad = [(f["check"], f["message"]) for f in env["findings"]
           if f["outcome"] not in {"passed", "skipped"}]
    assert bad == []
    passed = units_with(env, {"passed"})
    assert {(c, i) for c in ("judge.wiring", "judge.garbage", "reward.reachable", "gold",
                             "episode", "robustness") for i in SAMPLED} <= passed
    wiring = [f for f in env["findings"] if f["check"] == "judge.wiring"]
    assert all(FORMATS[env_id] in f["message"] for f in wiring), wiring
    assert f"judge 'vfc-judge' {FORMATS[env_id]}" in formats_run.stdout


@pytest.mark.slow
def test_a_judge_that_reads_no_format_found_skips_what_needs_it_and_never_fails(
        formats_run: PluginRun) -> None:
    env = formats_run.envs[UNREADABLE]
    bad = [(f["check"], f["message"]) for f in env["findings"]
           if f["outcome"] not in {"passed", "skipped"}]
    assert bad == []
    skipped = {(f["check"], f["task"]["index"]): f["message"] for f in env["findings"]
               if f["outcome"] == "skipped" and f["task"]}
    for check in NEEDS_VERDICT:
        for i in SAMPLED:
            message = skipped[check, i]
            assert f"env {UNREADABLE!r}, task {i} (" in message
            if check.startswith("reward."):
                continue  # skipped by its own rule: the reference's episode was not scored
            assert f"{check} needs the judge's verdict" in message
            assert "judge vfc_judge_unreadable.ProtocolJudge (" in message
            assert "vfc_judge_unreadable.py:" in message
            assert "('Assess whether the response gives the reference answer" in message
            assert "labels yes/no" in message and "not a verdict on the env" in message
    assert "judge 'vfc-judge' answered in no format its parser reads (" in formats_run.stdout
