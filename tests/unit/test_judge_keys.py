"""A judge the reward skips (issue #35 item 5), as `judge.skipped` reads it from the env's
code: the judges a task declares, the task played with a key, and the `if` that returns
before the judge call (pure functions on stand-ins with verifiers' names; the real fixture,
vfc-judge-keyless, is played in tests/integration/test_reward_probes.py)."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from vfcheck.checks._judge_keys import (
    KEYED_VAR,
    declared_judges,
    keyed_task,
    skip_site,
    skip_sites,
)
from vfcheck.checks.judge import with_key


class Judge:
    """verifiers' `vf.Judge`, by name."""


class JudgeConfig(BaseModel):
    api_key_var: str = "PRIME_API_KEY"
    model: str = "judge"


class ThemeJudge(Judge):
    async def evaluate(self, **fields: Any) -> Any:
        return fields


class Inner(BaseModel):
    grader: JudgeConfig = JudgeConfig(api_key_var="GRADER_KEY")


class TaskConfig(BaseModel):
    judge: JudgeConfig = JudgeConfig(api_key_var="THEME_KEY")
    nested: Inner = Inner()
    judges: list[JudgeConfig] = [JudgeConfig(api_key_var="PLUGGED")]  # run whatever the key


class Task:
    """curators-eye's `theme`, and rewards that skip nothing or guard on something else."""

    def __init__(self) -> None:
        self.config = TaskConfig()

    def judge_available(self) -> bool:
        return False

    async def intruders(self, trace: Any) -> float:
        return 1.0

    async def theme(self, trace: Any) -> float:
        if not self.judge_available():
            return await self.intruders(trace)
        stated = str(trace)
        if not stated:
            return 0.0
        result = await ThemeJudge().evaluate(response=stated)
        return float(bool(result))

    async def always(self, trace: Any) -> float:
        return float(bool(await ThemeJudge().evaluate(response=trace)))

    async def empty_first(self, trace: Any) -> float:
        if not trace:
            return 0.0
        return float(bool(await ThemeJudge().evaluate(response=trace)))

    def hooks(self, attr: str) -> list[Any]:
        return [self.theme, self.always, self.empty_first, self.intruders]


def verifiers_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """verifiers' judge modules as far as `declared_judges` reads them (names only), set
    in the test's body (the tier's guard hides `verifiers.*` from a test's call phase)."""
    judge = types.ModuleType("verifiers.v1.judge")
    judge.Judge = Judge  # type: ignore[attr-defined]
    configs = types.ModuleType("verifiers.v1.configs.judge")
    configs.JudgeConfig = JudgeConfig  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "verifiers.v1.judge", judge)
    monkeypatch.setitem(sys.modules, "verifiers.v1.configs.judge", configs)


def line_of(text: str) -> int:
    source = Path(__file__).read_text().splitlines()
    return next(n for n, line in enumerate(source, 1) if line.strip().startswith(text))


def test_the_if_that_returns_before_the_judge_call_is_named_with_its_lines() -> None:
    task = Task()
    site = skip_site(task.theme, "theme", Task)
    assert site is not None
    here = "tests/unit/test_judge_keys.py"
    assert site.reward_at == f"{here}:{line_of('async def theme(')}"
    assert site.at == f"{here}:{line_of('if not self.judge_available():')}"
    assert site.condition == "not self.judge_available()"
    assert site.returns == "await self.intruders(trace)"
    assert site.helper == f"judge_available at {here}:{line_of('def judge_available(')}"
    assert site.describe().startswith(
        f"reward theme ({here}:{line_of('async def theme(')}) returns "
        "`await self.intruders(trace)` before its judge call when `not self.judge_available()`")


def test_a_reward_that_guards_on_something_else_or_calls_no_judge_has_no_site() -> None:
    task = Task()
    assert skip_site(task.always, "always", Task) is None
    assert skip_site(task.empty_first, "empty_first", Task) is None  # `if not trace`: no key
    assert skip_site(task.intruders, "intruders", Task) is None  # calls no judge
    assert [s.reward for s in skip_sites(task)] == ["theme"]
    assert skip_sites(task, ["always"]) == []


def test_the_judges_a_task_declares_leave_the_plugged_ones_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    verifiers_names(monkeypatch)
    declared = declared_judges(Task())
    assert declared.classes == [ThemeJudge]
    assert list(declared.configs) == ["judge", "nested.grader"]
    assert declared.key_vars() == "GRADER_KEY, THEME_KEY"
    assert declared.plugged == ["JudgeConfig"]  # named by its id where it has one
    assert declared.named().startswith(
        f"judge {__name__}.ThemeJudge (tests/unit/test_judge_keys.py:")


def test_a_keyed_task_reads_its_judges_keys_from_vfchecks_variable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    verifiers_names(monkeypatch)
    task = Task()
    keyed = keyed_task(task, declared_judges(task).configs)
    assert keyed.config.judge.api_key_var == KEYED_VAR == "VFCHECK_API_KEY"
    assert keyed.config.nested.grader.api_key_var == KEYED_VAR
    assert keyed.config.judges[0].api_key_var == "PLUGGED"
    assert keyed.config.judge.model == "judge"
    assert task.config.judge.api_key_var == "THEME_KEY"  # the task itself is untouched
    assert type(keyed) is Task and keyed is not task


def test_a_keyed_plays_probe_keeps_its_verdict_after_the_slash() -> None:
    assert [with_key(n) for n in ("oracle", "oracle/negative", "claim/positive")] == [
        "oracle+key", "oracle+key/negative", "claim+key/positive"]
