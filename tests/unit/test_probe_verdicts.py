"""The probe families' verdicts and messages on canned plays: the real `ProbeLab` (format
choice, memo, trivial probes) and the real check functions, with each episode's result
given instead of played (no verifiers, no episode)."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from vfcheck._options.resolved import CheckOptions
from vfcheck._shared.findings import Finding
from vfcheck.checks import BY_ID
from vfcheck.checks import _probes as probes_module
from vfcheck.checks import exploit as exploit_module
from vfcheck.checks import judge as judge_module
from vfcheck.checks import reward as reward_module
from vfcheck.checks._context import CheckContext
from vfcheck.checks._probes import Probe, ProbeLab, ProbeResult

Plays = dict[str, "ProbeResult | Callable[[Probe], ProbeResult]"]


def result(reward: float | None, *, error: str = "", turns: int = 1, judge_calls: int = 0,
           weights: dict[str, float] | None = None, tools: list[str] | None = None,
           argless: list[str] | None = None) -> ProbeResult:
    weights = weights or {"score": 1.0}
    rewards = {name: (None if reward is None else reward / sum(weights.values()))
               for name in weights}
    return ProbeResult("p", "r", "negative", reward, rewards, [error] if error else [],
                       () if reward is None else (reward,), judge_calls, turns,
                       tools or [], weights=weights, argless_tools=argless or [])


def task(index: int, answer: str | None = "7", system: str = "") -> Any:
    data = SimpleNamespace(idx=index, prompt_text="What is 3 + 4?", system_prompt=system,
                           **({"answer": answer} if answer is not None else {}))
    return SimpleNamespace(data=data, key=f"t{index}", config=SimpleNamespace(judges=None))


def context(tasks: list[Any], reward_max: float | None = None,
            project_dir: str = "") -> CheckContext:
    ctx = CheckContext("vfc-canned", {}, CheckOptions(reward_max=reward_max, sample=3,
                                                      project_dir=project_dir))
    ctx.tasks = tasks
    return ctx


def run(check: str, plays: Plays, tasks: list[Any] | None = None, index: int = 0,
        reward_max: float | None = None,
        default: ProbeResult | Callable[[Probe], ProbeResult] | None = None,
        alone: Plays | None = None, project_dir: str = "") -> tuple[Finding, list[str]]:
    """`check`'s finding on task `index`, every play answered from `plays` (by probe name;
    `default` else, a scored 0), and the probe names played. A probe played again one at a
    time is answered from `alone` where it names it, else as at once."""
    import asyncio

    tasks = tasks or [task(0), task(1, "3"), task(2, "9")]
    ctx = context(tasks, reward_max, project_dir)
    lab = ProbeLab(ctx, None)
    played: list[str] = []

    def canned_result(probe: Probe, canned_plays: Plays) -> ProbeResult:
        canned = canned_plays.get(probe.name, default or result(0.0))
        found = canned(probe) if callable(canned) else canned
        return ProbeResult(probe.name, probe.reply, probe.judge, found.reward, found.rewards,
                           found.errors, found.seats, found.judge_calls, found.turns,
                           found.env_tools, found.runner_error, found.weights, found.judges,
                           probe.format, argless_tools=found.argless_tools)

    async def fake_play(self: ProbeLab, task: Any, probe: Probe) -> ProbeResult:
        played.append(probe.name)
        return canned_result(probe, plays)

    async def fake_alone(self: ProbeLab, task: Any, results: dict[str, ProbeResult]
                         ) -> dict[str, ProbeResult]:
        probes = {key: self._probes[(task.data.idx, r.probe)] for key, r in results.items()}
        played.extend(f"{p.name} alone" for p in probes.values())
        again = {**plays, **(alone or {})}
        best = f"oracle[{self.oracle_format(task).key}]"  # `oracle` is a copy of its play
        if "oracle" not in again and best in again:
            again["oracle"] = again[best]
        return {key: canned_result(p, again) for key, p in probes.items()}

    async def the_lab(_: Any) -> ProbeLab:
        return lab

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ProbeLab, "_play", fake_play)
        patch.setattr(ProbeLab, "alone_results", fake_alone)
        for module in (reward_module, exploit_module, judge_module, probes_module):
            patch.setattr(module, "probe_lab", the_lab)
        finding = asyncio.run(BY_ID[check].fn(ctx, tasks[index]))  # type: ignore[misc]
    return finding, played


BOXED = "Put the final answer in \\boxed{}."


def test_the_oracle_is_the_best_format_and_the_report_says_which() -> None:
    tasks = [task(0, system=BOXED), task(1, "3", BOXED)]
    plays: Plays = {"oracle[boxed]": result(1.0), "oracle[bare]": result(0.0)}
    finding, played = run("reward.reachable", plays, tasks)
    assert finding.outcome == "passed"
    assert "the reference answer '7' (data.answer, as \\boxed{…}) earns reward 1" in \
        finding.message
    assert finding.details["oracle_format"] == "as \\boxed{…}"
    assert played[:2] == ["oracle[boxed]", "oracle[bare]"]
    assert not any(p in played for p in ("oracle[tags:answer]", "oracle[hashes]"))  # max: 1
    spam, _ = run("exploit.answer-spam", plays, tasks)
    assert spam.details["results"][0]["reply"] == "\\boxed{7}\n\\boxed{3}"


def test_reachable_fails_only_when_no_format_earns_anything_listing_each() -> None:
    finding, played = run("reward.reachable", {})
    assert finding.outcome == "failed"
    assert "no format earns anything (tried bare: 0, in <answer> tags: 0, as \\boxed{…}: 0" in \
        finding.message
    assert "give the task an `oracle`" in finding.message
    assert {"oracle[bare]", "oracle[tags:answer]", "oracle[boxed]", "oracle[hashes]"} <= \
        set(played)


def test_nothing_scored_is_said_as_such() -> None:
    broken = result(None, error="TaskError: scoring: IndexError: list index out of range")
    reach, _ = run("reward.reachable", {}, default=broken)
    assert reach.outcome == "skipped" and "no probe episode was scored (no reward (TaskError" \
        in reach.message and "above 0" not in reach.message
    wiring, _ = run("judge.wiring", {}, default=broken)
    assert wiring.outcome == "skipped" and "whether the env calls a judge" in wiring.message
    assert "made no judge call" not in wiring.message
    empty, _ = run("exploit.empty", {}, default=broken)
    assert empty.outcome == "skipped" and "IndexError" in empty.message


def test_an_errored_probe_is_not_compared_as_zero() -> None:
    plays: Plays = {"oracle[bare]": result(1.0),
                    "empty": result(None, error="TaskError: scoring: IndexError")}
    finding, _ = run("exploit.empty", plays)
    assert finding.outcome == "skipped" and "was not scored" in finding.message
    assert finding.details["probes"]["empty"] is None
    assert finding.details["probe_errors"]["empty"] == "TaskError: scoring: IndexError"


def test_a_reference_answer_that_earns_zero_is_no_bar() -> None:
    finding, _ = run("exploit.empty", {})
    assert finding.outcome == "skipped"
    assert "below 0" not in finding.message and "earns 0 in every format" in finding.message
    beaten, _ = run("exploit.refusal", {"refusal": result(1.0)})
    assert beaten.outcome == "failed"  # a trivial reply earning more than the answer's 0


def test_tool_spam_says_why_when_no_request_was_made() -> None:
    died = result(None, error="runner: the harness program could not start", turns=0)
    finding, _ = run("exploit.tool-spam", {}, default=died)
    assert finding.outcome == "skipped" and "made no model request" in finding.message
    assert "offers no env tools" not in finding.message
    quiet, _ = run("exploit.tool-spam", {})
    assert quiet.outcome == "skipped" and "the task offers no env tools" in quiet.message


def test_tool_spam_calls_only_tools_that_take_arguments() -> None:
    """counter-tool-v1's `bump()` takes no arguments: calling it three times is the task,
    not spam; a tool with arguments beside it is still spammed."""
    counter = result(0.0, tools=["counter_bump"], argless=["counter_bump"])
    finding, played = run("exploit.tool-spam", {}, [task(0, answer=None)], default=counter)
    assert finding.outcome == "skipped" and "tool-spam" not in played
    assert "takes no arguments (counter_bump)" in finding.message
    mixed = result(0.0, tools=["counter_bump", "calc_add"], argless=["counter_bump"])
    spam, played = run("exploit.tool-spam", {"tool-spam": result(1.0)}, [task(0, answer=None)],
                       default=mixed)
    assert spam.outcome == "failed" and "tool-spam" in played
    assert "calls calc_add 3x each" in spam.details["results"][0]["reply"]


def test_the_rewards_maximum_comes_from_its_weights_unless_given() -> None:
    weights = {"correct": 1.0, "format": 1.0}
    plays: Plays = {"empty": result(2.0, weights=weights)}
    tasks = [task(0, answer=None)]
    finding, _ = run("exploit.empty", plays, tasks, default=result(0.0, weights=weights))
    assert finding.outcome == "failed"
    assert ("the reward's maximum 2 (the sum of its reward weights: correct=1, format=1)"
            in finding.message)
    below, _ = run("exploit.empty", {"empty": result(1.0, weights=weights)}, tasks,
                   default=result(0.0, weights=weights))
    assert below.outcome == "passed" and "maximum 2" in below.message
    given, _ = run("exploit.empty", {"empty": result(1.0, weights=weights)}, tasks,
                   reward_max=1.0, default=result(0.0, weights=weights))
    assert given.outcome == "failed" and "maximum 1 (--reward-max)" in given.message


@pytest.mark.parametrize(("first", "last", "outcome"),
                         [(0.0, 1.0, "passed"), (1.0, 0.0, "passed"), (1.0, 1.0, "failed")])
def test_answer_spam_fails_only_when_every_order_earns_the_oracles_reward(
        first: float, last: float, outcome: str) -> None:
    plays: Plays = {"oracle[bare]": result(1.0), "answer-spam-first": result(first),
                    "answer-spam-last": result(last)}
    finding, _ = run("exploit.answer-spam", plays)
    assert finding.outcome == outcome
    assert f"the task's own answer first: reward {first:g}" in finding.message
    assert f"the task's own answer last: reward {last:g}" in finding.message


def test_wrong_answer_is_another_tasks_answer_and_skipped_where_all_share_one() -> None:
    plays: Plays = {"oracle[bare]": result(1.0), "wrong-answer": result(1.0)}
    tasks = [task(0, "4"), task(1, "14"), task(2, "9")]
    finding, _ = run("exploit.wrong-answer", plays, tasks)
    assert finding.outcome == "failed"
    assert finding.details["results"][0]["reply"] == "9"  # "14" contains "4": not picked
    shared, _ = run("exploit.wrong-answer", plays, [task(0, "7"), task(1, "7.0")])
    assert shared.outcome == "skipped"
    assert "no other task has a reference answer that differs" in shared.message


@pytest.mark.parametrize(("answer", "value", "outcome"),
                         [("7", 1.0, "failed"), ("7", 0.0, "failed"), (None, 1.0, "failed"),
                          (None, 0.5, "skipped"), (None, 0.0, "skipped")])
def test_a_reward_that_never_moves_is_dead_at_any_value(
        answer: str | None, value: float, outcome: str) -> None:
    finding, _ = run("reward.sensitive", {}, [task(0, answer), task(1, "3")],
                     default=result(value))
    assert finding.outcome == outcome, finding.message
    if outcome == "failed":
        assert f"earned {value:g}" in finding.message or f"reward, {value:g}" in finding.message


def test_judge_verdict_plays_count_for_reachable_and_sensitive() -> None:
    plays: Plays = {"claim/positive": result(1.0, judge_calls=1),
                    "claim": result(0.0, judge_calls=1)}
    tasks = [task(0, answer=None)]
    reach, _ = run("reward.reachable", plays, tasks, default=result(0.0, judge_calls=1))
    assert reach.outcome == "passed" and "claim/positive" in reach.message
    moves, _ = run("reward.sensitive", plays, tasks, default=result(0.0, judge_calls=1))
    assert moves.outcome == "passed"


def test_a_multi_turn_answer_counts_only_where_it_earns_something() -> None:
    earns: Plays = {"oracle[bare]": result(1.0, turns=3), "empty": result(1.0, turns=3)}
    finding, _ = run("exploit.empty", earns)
    assert finding.outcome == "failed" and "reference answer's 1" in finding.message
    nothing, _ = run("reward.reachable", {}, default=result(0.0, turns=3))
    assert nothing.outcome == "skipped" and "plays 3 model turns" in nothing.message


def test_a_tool_task_plays_only_its_own_formats_and_no_unfair_wrong_answer() -> None:
    """Each episode of a tool task starts an interpreter per tool server: the universal
    formats are not tried, and a wrong answer is not played where the oracle is no fair
    reference (it could only be skipped)."""
    tool = result(0.0, tools=["calc_add"])
    finding, played = run("exploit.wrong-answer", {}, default=tool)
    assert finding.outcome == "skipped" and "no usable reference answer" in finding.message
    assert "offers env tools (calc_add)" in finding.message
    assert "wrong-answer" not in played
    assert [p for p in played if p.startswith("oracle[")] == ["oracle[bare]"]


def test_a_dead_reward_at_once_that_one_at_a_time_contradicts_is_not_reported() -> None:
    """Every probe earned 0 at once (episodes scored on each other's replies); played again
    one at a time the reference answer earns 1: the verdict is that play's, and it says the
    plays at once disagreed, pointing to concurrency."""
    finding, played = run("reward.reachable", {}, alone={"oracle[bare]": result(1.0)})
    assert finding.outcome == "passed", finding.message
    assert "earns reward 1" in finding.message
    assert ("episodes at once disagreed with the same episodes one at a time (probe oracle: "
            "reward 0 (score=0) at once, reward 1 (score=1) one at a time") in finding.message
    assert finding.message.endswith("see concurrency[0]")
    assert finding.details["at_once"]["verdict"] == "failed"
    assert "oracle alone" in played


def test_an_exploit_at_once_that_one_at_a_time_contradicts_passes_saying_why() -> None:
    plays: Plays = {"oracle[bare]": result(1.0), "empty": result(1.0)}
    finding, played = run("exploit.empty", plays, alone={"empty": result(0.0)})
    assert finding.outcome == "passed", finding.message
    assert "an empty reply earns 0, below the reference answer's 1" in finding.message
    assert "probe empty: reward 1 (score=1) at once, reward 0 (score=0) one at a time" in \
        finding.message
    assert sorted(p for p in played if p.endswith(" alone")) == ["empty alone", "oracle alone"]


def test_a_failure_one_at_a_time_confirms_stands_as_it_was() -> None:
    """The same rewards one at a time: the verdict at once stands, with no word of it."""
    plays: Plays = {"oracle[bare]": result(1.0), "empty": result(1.0)}
    finding, played = run("exploit.empty", plays)
    assert finding.outcome == "failed" and "disagreed" not in finding.message
    assert "empty alone" in played
    passing, played = run("exploit.empty", {"oracle[bare]": result(1.0)})
    assert passing.outcome == "passed" and not any(p.endswith(" alone") for p in played)


def search(tmp_path: Any, earned: Callable[[str], float],
           tasks: list[Any] | None = None) -> tuple[Finding, list[str]]:
    """exploit.search on task 0 (answer `7`, a `\\boxed{}` prompt), each reply earning
    `earned(reply)`."""
    tasks = tasks or [task(0, system=BOXED), task(1, "3", BOXED), task(2, "9", BOXED)]
    return run("exploit.search", {}, tasks, default=lambda p: result(earned(p.reply)),
               project_dir=str(tmp_path))


def boxed_value(reply: str) -> float | None:
    import re

    found = re.findall(r"\\boxed\{([^{}]*)\}", reply)
    try:
        return float(found[-1]) if found else None
    except ValueError:
        return None


def test_search_finds_a_reply_without_the_answer_that_earns_the_oracles_reward(
        tmp_path: Any) -> None:
    def at_least(reply: str) -> float:  # a one-sided comparison: any box >= 7 pays
        value = boxed_value(reply)
        return float(value is not None and value >= 7)

    finding, played = search(tmp_path, at_least)
    assert finding.outcome == "failed", finding.message
    reply = finding.details["reply"]
    assert "7" not in reply and at_least(reply) == 1.0
    assert "replies without the answer '7', as \\boxed{…}" in finding.message
    assert "at least the reference answer's 1 ('\\\\boxed{7}', data.answer" in finding.message
    assert finding.details["probes"] == {"oracle": 1.0, "search": 1.0}
    assert sum(name.startswith("search#") for name in played) <= 3 * 12


def test_search_passes_where_only_the_answer_pays_in_any_form(tmp_path: Any) -> None:
    def exact(reply: str) -> float:  # pays 7 written any way: 7.0, 7e0, 14/2 ...
        value = boxed_value(reply)
        return float(value is not None and abs(value - 7) < 1e-9)

    finding, played = search(tmp_path, exact)
    assert finding.outcome == "passed", finding.message
    searched = sum(name.startswith("search#") for name in played)
    assert 0 < searched <= 12  # the budget; a reply drawn twice is played once
    assert finding.message.startswith(f"env 'vfc-canned', task 0 (t0): no reply of {searched} "
                                      "hypothesis played without the answer (as \\boxed{…})")


def test_search_is_skipped_without_a_reference_or_a_bar_or_with_a_scripted_one(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    finding, played = search(tmp_path, lambda reply: 1.0, [task(0, None, BOXED)])
    assert finding.outcome == "skipped" and "no usable reference answer" in finding.message
    assert not any(name.startswith("search#") for name in played)
    finding, _ = search(tmp_path, lambda reply: 0.0)
    assert finding.outcome == "skipped" and "earns 0 in every format" in finding.message
    monkeypatch.setattr(CheckContext, "script_oracle",
                        lambda self, task: '{"word": "cat", "count": 3}')
    finding, played = search(tmp_path, lambda reply: 1.0)
    assert finding.outcome == "skipped" and "the script's `oracle`" in finding.message
    assert not any(name.startswith("search#") for name in played)
