"""The `concurrency` family's comparison on canned normalised traces: an episode played at
once against the same policy's episode one at a time, and the message that names the
episode, its reply, the field and both values (`vfcheck.checks._interference`)."""

from __future__ import annotations

from typing import Any

from vfcheck.checks._interference import (
    Played,
    as_rows,
    changes,
    compare,
    described,
    label_of,
    whose,
)


def view(reply: str, score: float, *, chars: float | None = None, stop: str | None = None,
         extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A normalised trace of one single-turn episode that replied `reply`."""
    return {
        "messages": [{"role": "user", "content": "Say ping"},
                     {"role": "assistant", "content": reply}],
        "rewards": {"echoed": {"score": score, "weight": 1.0}},
        "metrics": {"reply_chars": float(len(reply)) if chars is None else chars},
        "stop_condition": stop,
        "errors": [],
        **(extra or {}),
    }


ALONE = {"oracle": Played("oracle", [view("ping", 1.0)]),
         "empty": Played("empty", [view("", 0.0)])}


def test_labels_name_rewards_metrics_and_the_stop_condition() -> None:
    assert label_of("rewards.echoed.score") == "reward echoed"
    assert label_of("metrics.reply_chars") == "metric reply_chars"
    assert label_of("stop_condition") == "stop condition"
    assert label_of("messages[1].content") == "messages[1].content"
    assert label_of("rewards.echoed.weight") == "rewards.echoed.weight"


def test_the_same_episode_at_once_and_alone_has_no_change() -> None:
    group = [Played("oracle", [view("ping", 1.0)]), Played("empty", [view("", 0.0)])]
    assert compare(group, ALONE) == []


def test_a_reward_scored_on_another_reply_is_named_with_both_values_and_whose_reply() -> None:
    """The empty reply's episode earned what the reference answer earns alone: the message
    names the episode, its reply, the reward and both values, and the reply it matches."""
    group = [Played("oracle", [view("ping", 1.0)]), Played("empty", [view("", 1.0)]),
             Played("oracle", [view("ping", 1.0)]), Played("empty", [view("", 0.0)])]
    found = compare(group, ALONE)
    assert [(n, c.label, c.at_once, c.alone) for n, c in found] == [
        (1, "reward echoed", "1.0", "0.0")]
    assert whose(found[0][1], "empty", ALONE) == "oracle"
    message = described(group, ALONE, found)
    assert message.startswith("episodes at once score differently from one at a time: state "
                              "shared between episodes? Of 4 episodes of the task played at "
                              "once (replies 'ping', '', 'ping', ''), ")
    assert ("episode 1 of the group (policy empty, reply '') got reward echoed 1.0 at once, "
            "0.0 one at a time (1.0 is what reply 'ping' earns one at a time: scored on "
            "another episode's reply?)") in message
    assert as_rows(found) == [{"episode": 1, "field": "reward echoed", "at_once": "1.0",
                               "alone": "0.0"}]


def test_scores_come_first_then_how_it_ended_then_the_rest() -> None:
    at_once = Played("oracle", [view("ping", 0.0, chars=9.0, stop="max_turns",
                                     extra={"info": {"seen": 2}})])
    alone = Played("oracle", [view("ping", 1.0, extra={"info": {"seen": 1}})])
    labels = [c.label for c in changes(at_once, alone)]
    assert labels == ["reward echoed", "metric reply_chars", "stop condition", "info.seen"]


def test_more_differences_than_shown_are_counted_and_traces_are_numbered() -> None:
    two = Played("oracle", [view("ping", 0.0), view("ping", 0.0)])
    alone = {"oracle": Played("oracle", [view("ping", 1.0), view("ping", 1.0)])}
    found = compare([two, two], alone)
    assert [c.label for _, c in found[:2]] == ["traces[0] reward echoed",
                                                "traces[1] reward echoed"]
    assert described([two, two], alone, found).endswith("(+1 more differences)")
    minted = changes(Played("oracle", [view("ping", 1.0)]), alone["oracle"])
    assert [(c.label, c.at_once, c.alone) for c in minted] == [("traces minted", "1", "2")]


def test_a_long_reply_is_cut_and_an_episode_without_one_says_none() -> None:
    long = Played("default", [view("x" * 200, 1.0)])
    assert long.reply == "x" * 200
    silent = Played("default", [{"messages": [{"role": "user", "content": "hi"}]}])
    assert silent.reply is None
    message = described([long, silent], {"default": silent},
                        compare([long, silent], {"default": silent}))
    assert f"'{'x' * 59}…'" in message and "none" in message
