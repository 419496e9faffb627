"""`served`'s pure parts: how the served task's data is compared with the in-process one and
how a message says what differs, on plain pydantic models (no verifiers, no episode)."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from vfcheck.checks._lab import starts_processes
from vfcheck.checks._wire_changes import (
    ABSENT,
    JSON_EQUIVALENT,
    SHOWN_CHANGES,
    Change,
    config_changes,
    data_changes,
    describe,
    episode_verdict,
    run_problem,
    same,
    validation_problems,
)
from vfcheck.checks.served import group_size


class Data(BaseModel):
    model_config = ConfigDict(frozen=True)
    prompt: str
    answer: str = ""


class AliasData(Data):
    aliases: list[str] = []


class HiddenData(Data):
    secret: str = Field("", exclude=True)


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    prompt: str


class Anything(BaseModel):
    value: Any = None


def test_equal_data_has_no_change() -> None:
    assert data_changes(Data(prompt="p", answer="a"), Data(prompt="p", answer="a")) == []


def test_a_field_the_declared_type_lacks_vanishes_and_the_types_are_named() -> None:
    changes = data_changes(AliasData(prompt="p", aliases=["pong"]), Data(prompt="p"))
    assert changes == [
        Change("data type", "AliasData", "Data",
               "the server builds the taskset's declared data type"),
        Change("data.aliases", "['pong']", ABSENT, "Data has no such field"),
    ]


def test_an_excluded_field_is_named_with_both_values_and_why() -> None:
    (change,) = data_changes(HiddenData(prompt="p", secret="s3"), HiddenData(prompt="p"))
    assert change == Change("data.secret", "'s3'", "''", "excluded from the dump: exclude=True")


def test_a_long_prompt_shows_a_window_around_the_first_difference() -> None:
    base = "Answer directly without using tools. Your reply must contain: ping"
    (change,) = data_changes(Data(prompt=base + " Lowercase."),
                             Data(prompt=base + " Lowercase. Lowercase."))
    assert change.path == "data.prompt"
    assert change.before == '…"ain: ping Lowercase."'
    assert change.after == '…"ain: ping Lowercase. Lowercase."'


def test_a_tuple_served_as_a_list_where_the_declared_type_is_any_is_json_equivalent() -> None:
    (change,) = data_changes(Anything(value=(1, 2)), Anything(value=[1, 2]))
    assert change == Change("data.value", "(1, 2) (tuple)", "[1, 2] (list)", JSON_EQUIVALENT,
                            equivalent=True)


class Entry(BaseModel):
    entry: dict[str, Any] = {}
    pair: tuple[int, int] | list[int] = (0, 0)


def test_a_nested_difference_is_named_by_its_path_with_both_values_and_their_types() -> None:
    before = Entry(entry={"metadata": {"size": (10, 30), "tag": "a"}, "n": 1, "gone": 2})
    after = Entry(entry={"metadata": {"size": [10, 30], "tag": "b"}, "n": 1.0, "new": 3})
    changes = data_changes(before, after)
    assert changes == [
        Change("data.entry.metadata.size", "(10, 30) (tuple)", "[10, 30] (list)",
               JSON_EQUIVALENT, equivalent=True),
        Change("data.entry.metadata.tag", "'a'", "'b'"),
        Change("data.entry.n", "1 (int)", "1.0 (float)"),
        Change("data.entry.gone", "2 (int)", ABSENT),
        Change("data.entry.new", ABSENT, "3 (int)"),
    ]


def test_a_tuple_served_as_a_list_is_a_difference_where_the_declared_type_names_a_tuple(
) -> None:
    (change,) = data_changes(Entry(pair=(1, 2)), Entry(pair=[1, 2]))
    assert change == Change("data.pair", "(1, 2) (tuple)", "[1, 2] (list)")
    assert not change.equivalent
    (inner, outer) = data_changes(Entry(entry={"k": (1, 2)}), Entry(entry={"k": [1, 3]}))
    assert inner == Change("data.entry.k[1]", "2 (int)", "3 (int)")
    assert outer.path == "data.entry.k" and not outer.equivalent


def test_extras_appear_and_vanish() -> None:
    (gone,) = data_changes(Loose(prompt="p", hint="h"), Loose(prompt="p"))
    assert gone.path == "data.hint" and gone.after == ABSENT
    (came,) = data_changes(Loose(prompt="p"), Loose(prompt="p", hint="h"))
    assert came == Change("data.hint", ABSENT, "'h'")


def test_nan_equals_nan_but_not_none() -> None:
    assert same(math.nan, math.nan) and same([math.nan], [math.nan])
    assert not same(math.nan, None) and not same(1, 1.0) and not same((1,), [1])


def test_config_changes_name_the_config_field() -> None:
    (change,) = config_changes({"max_turns": 3, "rewards": []}, {"max_turns": 1, "rewards": []})
    assert change.path == "config.max_turns" and (change.before, change.after) == ("3", "1")
    assert "config.task" in change.why


def test_describe_names_each_change_and_counts_the_rest() -> None:
    changes = [Change(f"data.f{i}", str(i), ABSENT) for i in range(SHOWN_CHANGES + 2)]
    text = describe(changes)
    assert text.startswith("data.f0 0 in-process, (absent) served; data.f1 1 in-process")
    assert text.endswith("; +2 more (details.changes)") and "\n" not in text
    assert describe([Change("key", "'a'", "'b'", "why")]) == "key 'a' in-process, 'b' served (why)"


def test_a_validation_error_names_each_field_and_what_was_sent() -> None:
    try:
        Data.model_validate({"answer": 3})
    except Exception as e:  # noqa: BLE001 - the error under test
        text = validation_problems(e, {"answer": 3})
    assert "data.prompt: Field required (sent: (absent))" in text
    assert "data.answer: Input should be a valid string (sent: 3)" in text
    assert validation_problems(ValueError("plain"), None) == "plain"


def test_how_a_cancelled_run_was_answered() -> None:
    assert run_problem("cancelled", 15) is None
    assert "finished episode instead of the cancellation" in (run_problem("episode", 15) or "")
    assert run_problem("error: TaskError: boom", 15) == (
        "the run was answered with an error instead of the cancellation: TaskError: boom")
    assert run_problem("no reply within 15s", 15) == (
        "the rollout had not ended 15s after the cancel (no reply within 15s)")


def trace(reward: float, **extra: Any) -> list[dict[str, Any]]:
    return [{"rewards": {"echoed": {"score": reward}}, "ok": True, **extra}]


def test_an_equal_served_play_passes() -> None:
    outcome, observed, diff = episode_verdict(trace(1.0), trace(1.0), trace(1.0), [], 1)
    assert (outcome, diff) == ("passed", [])
    assert observed == "the episode equals the in-process one (1 trace(s), normalised)"


def test_a_served_play_that_differs_or_errs_fails_naming_the_field_and_the_error() -> None:
    outcome, observed, diff = episode_verdict(trace(1.0), trace(1.0), trace(0.0, ok=False),
                                              ["TaskError: boom"], 1)
    assert outcome == "failed" and diff
    assert observed.startswith("the served rollout recorded TaskError: boom, which the "
                               "in-process play did not; the served trace differs")
    assert "traces[0].rewards.echoed.score: 1.0 -> 0.0" in observed
    assert "traces[0].ok: true -> false" in observed


def test_what_moves_between_in_process_plays_is_not_compared() -> None:
    outcome, observed, diff = episode_verdict(trace(1.0, metrics={"r": 0.1}),
                                              trace(1.0, metrics={"r": 0.7}),
                                              trace(1.0, metrics={"r": 0.4}), [], 2)
    assert (outcome, diff) == ("passed", [])
    assert observed.endswith("; not compared: traces[0].metrics.r, which differ between two "
                             "in-process plays)")
    outcome, observed, diff = episode_verdict(trace(1.0, metrics={"r": 0.1}),
                                              trace(1.0, metrics={"r": 0.7}),
                                              trace(0.0, metrics={"r": 0.4}), [], 2)
    assert outcome == "skipped" and diff == ["traces[0].rewards.echoed.score: 1.0 -> 0.0"]
    assert "two in-process plays differ at traces[0].metrics.r" in observed
    assert observed.endswith("(see determinism.replay[2])")
    outcome, observed, _ = episode_verdict(trace(1.0, metrics={"r": 0.1}),
                                           trace(1.0, metrics={"r": 0.7}),
                                           trace(0.0, metrics={"r": 0.4}), ["EnvError: x"], 2)
    assert outcome == "failed"
    assert observed.startswith("the served rollout recorded EnvError: x, which the in-process "
                               "play did not; the served trace differs")


def test_a_served_error_is_written_as_the_in_process_play_writes_it() -> None:
    """A harness exit with its stderr's traceback is the same line on both sides, so the
    served rollout is not said to record an error the in-process play did not."""
    from types import SimpleNamespace

    from vfcheck._shared.error_text import condense
    from vfcheck.checks._wire_changes import served_errors

    stderr = ("harness 'vfcheck-chat' exited 1:  |            ^^^^^^^^^^^^^^^^^^^^^\n"
              "    |   File \"/venv/httpx2/_client.py\", line 1, in send\n"
              "    |     response = await self.send(\n"
              "    | httpx2.ConnectError: [Errno 111] vfcheck runs offline\n"
              "    +------------------------------------")
    error = SimpleNamespace(type="HarnessError", message=stderr)
    episode = SimpleNamespace(errors=[], traces=[SimpleNamespace(errors=[error])])
    in_process = f"HarnessError: {condense(stderr)}"  # `EpisodeResult.errors`' line
    assert served_errors(episode) == [in_process] == [
        "HarnessError: harness 'vfcheck-chat' exited 1: ... httpx2.ConnectError: [Errno 111] "
        "vfcheck runs offline"]


def tier(tier: str, tools: bool = False) -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(tier=tier, tools=tools)


def test_a_pooled_group_is_two_rollouts_per_worker_unless_each_starts_an_interpreter() -> None:
    """The pool's workers start tool servers and harness programs cold (an interpreter each,
    seconds): then one rollout per worker, still one on each."""
    from types import SimpleNamespace

    chat = SimpleNamespace(tiers=[tier("fast")])
    tools = SimpleNamespace(tiers=[tier("fast", tools=True)])
    harness = SimpleNamespace(tiers=[tier("fast"), tier("env")])
    assert [group_size(ctx, 2) for ctx in (chat, tools, harness)] == [4, 2, 2]  # type: ignore[arg-type]
    assert [starts_processes(ctx.tiers) for ctx in (chat, tools, harness)] == [
        None, "tool servers", "a harness program"]
