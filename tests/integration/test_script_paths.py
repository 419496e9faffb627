"""A script's judge reply is honoured on every path (issue #35 item 2).

The field saw a script's `judge_reply` honoured by noop and episode while robustness and
judge.wiring still answered `yes`, and the served path ignored it: the served rollout
recorded a `TaskError` the in-process play did not, and vfcheck's own inconsistency was
reported as a serving defect of the env. Here one script, `fixtures/scripts/judge-json.toml`,
is played on vfc-judge-scripted (a JSON-verdict judge whose prompt states no format and
whose parser raises on anything else) through every family, the served path, the printed
rerun line and a deadline's confirmation run, and what the judge was asked and answered
(each finding's `judge_exchanges`: the trace's `info["judge_calls"]`, or for vf-validate's
checks the scripted model's record) is compared. On main before the fix robustness,
judge.*, reward.*, exploit.* and served.episode were skipped on every task (the served
judge and the probes got a reply the parser refused) and no finding said what the judge was
answered.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from support import FIXTURES, ROOT, CheckCache, CheckRun, check_report, vfcheck

ENV = "vfc-judge-scripted"
SCRIPT = FIXTURES / "scripts" / "judge-json.toml"
REPLY = '{"faithful": true, "covered": 3}'
NEGATIVE = '{"faithful": false, "covered": 0}'
ASKED = "You grade a response against a reference answer for the grading service.\n"
SAMPLED = range(3)
DEFAULT_PLAYS = ("episode", "served.episode", "gold")
"""Checks that play the task as the script says, judge included."""
UNIT = tuple[str, int | None]


@pytest.fixture(scope="module")
def scripted(checked: CheckCache) -> CheckRun:
    return checked.check(ENV, "--path", str(FIXTURES), "--script", str(SCRIPT), cwd=ROOT)


def by_unit(run: CheckRun) -> dict[UNIT, dict[str, Any]]:
    return {(f["check"], f["task"]["index"] if f["task"] else None): f
            for f in run.envs[ENV]["findings"]}


def exchanges(finding: dict[str, Any]) -> list[dict[str, Any]]:
    """What the judge was asked and answered in the plays `finding` rests on."""
    details = finding["details"]
    found = list(details.get("judge_exchanges") or [])
    for fault in (details.get("faults") or {}).values():
        found += fault.get("judge_exchanges") or []
    for result in details.get("results") or []:
        found += result.get("judge_exchanges") or []
    return found


def not_clean(findings: dict[UNIT, dict[str, Any]]) -> list[tuple[UNIT, str]]:
    return [(unit, f["message"]) for unit, f in findings.items()
            if f["outcome"] not in ("passed", "skipped")
            or "needs the judge's verdict" in f["message"]]


@pytest.mark.slow
def test_every_play_of_the_task_answers_the_judge_with_the_scripts_reply(
        scripted: CheckRun) -> None:
    findings = by_unit(scripted)
    for check in (*DEFAULT_PLAYS, "robustness"):
        for index in SAMPLED:
            said = exchanges(findings[check, index])
            assert said, (check, index, findings[check, index]["message"])
            assert {e["answered"] for e in said} == {REPLY}, (check, index, said)
            assert all(e["asked"].startswith(ASKED) for e in said), (check, index)
    for index in SAMPLED:  # the served rollout's judge was asked and answered as in-process
        served = exchanges(findings["served.episode", index])
        assert served == exchanges(findings["episode", index])
        assert findings["served.episode", index]["outcome"] == "passed"


@pytest.mark.slow
def test_the_checks_that_play_verdicts_say_them_in_the_scripts_format(
        scripted: CheckRun) -> None:
    """judge.wiring plays a positive and a negative verdict on purpose: in the format of the
    script's reply (its JSON object, its fields set to say each), never `yes`/`no`."""
    findings = by_unit(scripted)
    for index in SAMPLED:
        wiring = findings["judge.wiring", index]
        assert wiring["outcome"] == "passed", wiring["message"]
        assert (f"answered in {REPLY}/{NEGATIVE} (a JSON object (faithful: bool, covered: int), "
                f"in the format of the script's judge_reply {REPLY!r})") in wiring["message"]
        answers = {r["probe"]: {e["answered"] for e in r["judge_exchanges"]}
                   for r in wiring["details"]["results"]}
        assert answers == {"oracle": {REPLY}, "oracle/negative": {NEGATIVE}}
        probes = exchanges(findings["reward.reachable", index])
        assert probes and all(json.loads(e["answered"]).keys() == {"faithful", "covered"}
                              for e in probes), probes
        assert findings["judge.garbage", index]["outcome"] == "passed"


@pytest.mark.slow
def test_no_finding_blames_the_env_or_skips_for_want_of_a_verdict(scripted: CheckRun) -> None:
    findings = by_unit(scripted)
    assert not_clean(findings) == []
    passed = {unit for unit, f in findings.items() if f["outcome"] == "passed"}
    assert {(c, i) for c in ("robustness", "served.episode", "judge.wiring", "judge.garbage",
                             "reward.reachable", "reward.sensitive", "exploit.claim", "fuzz")
            for i in SAMPLED} <= passed
    assert scripted.returncode == 0, scripted.stdout[-3000:]


@pytest.mark.slow
def test_the_printed_rerun_line_plays_the_same_script(scripted: CheckRun,
                                                      tmp_path: Path) -> None:
    line = next(text for text in scripted.stdout.splitlines() if text.startswith("rerun: "))
    argv = shlex.split(line.removeprefix("rerun: "))
    assert argv[:3] == ["vfcheck", "check", ENV] and "--script" in argv, line
    done = vfcheck(*argv[1:], "--json", str(tmp_path / "report.json"), cwd=ROOT)
    again = CheckRun(done.returncode, done.stdout, done.stderr, tmp_path)
    assert not_clean(by_unit(again)) == []
    for check in (*DEFAULT_PLAYS, "robustness", "judge.wiring"):
        for index in SAMPLED:
            assert exchanges(by_unit(again)[check, index]) == exchanges(
                by_unit(scripted)[check, index]), (check, index)


@pytest.mark.slow
def test_a_check_run_again_alone_after_a_deadline_plays_the_script_too(tmp_path: Path) -> None:
    """vfc-judge-scripted's grading service is slow to answer its first call (3 s): at
    `--timeout 2` the first check to score hits its deadline and runs again alone, with the
    script's reply."""
    run = check_report(ENV, "--path", str(FIXTURES), "--script", str(SCRIPT), "--timeout", "2",
                       "--checks", "setup,gold,noop,episode", cwd=tmp_path, timeout=900)
    findings = by_unit(run)
    assert not_clean(findings) == []
    # the first check to ask the judge (gold or episode: noop scores an empty reply, with
    # no judge call) hits the deadline; a loaded machine may make others run again too
    again = [f for f in findings.values()
             if "first_attempt" in f["details"] and f["check"] in ("gold", "episode")]
    assert again, "the slow first judge call hit no deadline"
    for finding in again:
        said = exchanges(finding)
        assert said and {e["answered"] for e in said} == {REPLY}, finding
