"""The runner on real fixture envs: both harness tiers, tools, roles, every mock fault."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from vfcheck._episodes.runner import EnvLoadError, EnvRunner, run_episodes
from vfcheck._episodes.task_loading import load_tasks
from vfcheck._model import Reply, ScriptedModel, fixed
from vfcheck._model.script import Script

HAPPY = [
    "boot.start",
    "boot.end+setup.start",
    "setup.end+agent.start",
    "preview",
    "call #1 ok",
    "agent.end",
    "finalize.start+finalize.end+scoring.start",
    "scoring.end",
]
"""The notify log of a one-request episode (DESIGN.md, "Trace lifecycle")."""


@pytest.mark.parametrize("tier", ["fast", pytest.param("env", marks=pytest.mark.slow)])
async def test_echo_episodes_are_solved_and_notify_in_stage_order(
    fixtures_dir: Path, tier: str
) -> None:
    summary = await run_episodes("vfc-echo", harness=tier, paths=[str(fixtures_dir)])  # type: ignore[arg-type]
    assert [t.tier for t in summary.tiers] == [tier]
    assert [r.task.index for r in summary.results] == [0, 1, 2]
    for result in summary.results:
        assert result.errors() == []
        assert result.reward == 1.0
        (log,) = result.logs
        assert log.labels == HAPPY


async def test_run_writes_one_json_line_per_episode(fixtures_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "episodes.jsonl"
    summary = await run_episodes(
        "vfc-echo", rollouts=2, concurrency=3, paths=[str(fixtures_dir)], output=out
    )
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == len(summary.results) == 6
    first = lines[0]
    assert first["env"] == "vfc-echo" and first["reward"] == 1.0
    (trace,) = first["traces"]
    assert trace["trace"]["task"]["key"].startswith("vfc-echo:")
    assert [e["label"] for e in trace["notify"]] == HAPPY


async def test_model_knows_the_task_of_each_request(fixtures_dir: Path) -> None:
    model = ScriptedModel()
    summary = await run_episodes("vfc-echo", model=model, paths=[str(fixtures_dir)])
    keys = sorted(str(r.request.task.key) for r in model.requests if r.request.task)
    assert keys == sorted(r.task.key for r in summary.results)


@pytest.mark.slow
async def test_tool_env_uses_the_fast_tier_and_default_policy_calls_the_tools(
    fixtures_dir: Path,
) -> None:
    """A tool env plays on the fast tier (the loop in-process, the tools in verifiers' own
    tool server); the harness is mirrored, so the model is offered bash's tools too."""
    model = ScriptedModel()
    summary = await run_episodes("vfc-tool", num_tasks=1, model=model, paths=[str(fixtures_dir)])
    (tier,) = summary.tiers
    assert (tier.tier, tier.harness, tier.tools) == ("fast", "vfcheck-chat", True)
    assert tier.reason == "replaces 'bash'; the tools run in the env's tool servers"
    (result,) = summary.results
    assert result.errors() == []
    (trace,) = result.traces
    called = [c.name for m in trace.assistant_messages for c in (m.tool_calls or [])]
    assert called == ["calc_add", "calc_multiply"]
    assert len(trace.tool_messages) == 2
    offered = next(r.request.tool_parameters for r in model.requests)
    assert list(offered) == ["bash", "edit", "calc_add", "calc_multiply"]


@pytest.mark.slow
async def test_a_tool_env_trace_is_the_same_on_both_tiers(fixtures_dir: Path) -> None:
    """Only the harness id tells the tiers apart: messages, tools, calls, notifies, rewards."""
    from vfcheck.checks._lab import normalized_views

    views = {}
    for tier in ("fast", "env"):
        summary = await run_episodes("vfc-tool", num_tasks=1, harness=tier,  # type: ignore[arg-type]
                                     paths=[str(fixtures_dir)])
        (result,) = summary.results
        (view,) = normalized_views(result)
        views[tier] = view
    assert views["fast"]["agent"] == {"harness": "vfcheck-chat", "name": "agent"}
    assert views["env"]["agent"] == {"harness": "bash", "name": "agent"}
    assert {k: v for k, v in views["fast"].items() if k != "agent"} == {
        k: v for k, v in views["env"].items() if k != "agent"}


async def test_a_script_that_calls_a_harness_built_in_keeps_the_role_on_the_env_tier(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    """bash's `bash` tool runs in the harness's runtime: only the env tier runs it there."""
    from vfcheck._episodes.offline import prepare_process_env
    from vfcheck._episodes.runner import load_env

    script = tmp_path / "bash.toml"
    script.write_text('[[task]]\nindex = 0\n[[task.turn]]\ntool = "bash"\n'
                      'arguments = { command = "ls" }\n')
    tools = Script.load(script).tool_names()
    assert tools == frozenset({"bash"})
    prepare_process_env([str(fixtures_dir)])
    _, (tier,) = load_env("vfc-tool", script_tools=tools)
    assert (tier.tier, tier.harness) == ("env", "bash")
    assert tier.reason == ("the script calls bash, a built-in tool of harness 'bash' that "
                           "only runs in the harness's runtime")
    _, (tier,) = load_env("vfc-tool", script_tools=frozenset({"calc_add"}))
    assert tier.tier == "fast"
    _, (tier,) = load_env("vfc-tool", {"agent.harness.id": "null"},
                          script_tools=frozenset({"bash"}))
    assert (tier.tier, tier.settings) == ("fast", {"mirrors": "null"})  # null offers no bash


@pytest.mark.slow
async def test_a_user_script_solves_the_tool_env(fixtures_dir: Path, tmp_path: Path) -> None:
    script = tmp_path / "calc.toml"
    script.write_text(
        '[[task]]\nindex = 0\n[[task.turn]]\ntool = "calc_add"\narguments = { a = 2, b = 3 }\n'
        '[[task.turn]]\nreply = "{last_tool_result}"\n'
    )
    model = ScriptedModel(Script.load(script).policy())
    summary = await run_episodes("vfc-tool", num_tasks=1, model=model, paths=[str(fixtures_dir)])
    (result,) = summary.results
    assert result.reward == 1.0, result.errors()


@pytest.mark.parametrize("env_id", ["vfc-multiturn", "vfc-duet"])
async def test_multi_turn_and_two_role_envs_run_on_the_fast_tier(
    fixtures_dir: Path, env_id: str
) -> None:
    summary = await run_episodes(env_id, paths=[str(fixtures_dir)])
    assert summary.tiers and all(t.tier == "fast" for t in summary.tiers)
    for result in summary.results:
        assert result.errors() == [], result.errors()
        assert result.reward is not None and math.isfinite(result.reward)
        assert all(log.labels[0] == "boot.start" for log in result.logs)


@pytest.mark.slow
async def test_multi_turn_env_on_the_env_tier(fixtures_dir: Path) -> None:
    summary = await run_episodes("vfc-multiturn", num_tasks=1, harness="env",
                                 paths=[str(fixtures_dir)])
    (result,) = summary.results
    assert result.errors() == [] and result.reward == 1.0
    (trace,) = result.traces
    assert len(trace.assistant_messages) == 2  # two user turns, two replies


@pytest.mark.slow
async def test_two_role_env_on_the_env_tier(fixtures_dir: Path) -> None:
    summary = await run_episodes("vfc-duet", num_tasks=1, harness="env", paths=[str(fixtures_dir)])
    assert {t.role for t in summary.tiers} == {"a", "b"}
    (result,) = summary.results
    assert result.errors() == [] and len(result.traces) == 2


FAULTS = {
    "status-500": (Reply.fault("status", status=500), "ProviderError"),
    "status-429": (Reply.fault("status", status=429), "ProviderError"),
    "status-503": (Reply.fault("status", status=503), "ProviderError"),
    "malformed": (Reply.fault("malformed"), "ProviderError"),
    "cut": (Reply.fault("cut"), "ProviderError"),
}


@pytest.mark.parametrize("name", sorted(FAULTS))
async def test_each_model_fault_is_recorded_and_the_run_goes_on(
    fixtures_dir: Path, name: str
) -> None:
    reply, error_type = FAULTS[name]
    model = ScriptedModel(fixed(reply))
    summary = await run_episodes("vfc-echo", model=model, paths=[str(fixtures_dir)])
    assert len(summary.results) == 3  # every episode ran to an end
    for result in summary.results:
        (trace,) = result.traces
        assert result.runner_error is None
        assert trace.ok is False
        assert error_type in {e.type for e in trace.errors}, trace.errors


@pytest.mark.parametrize("reply", [Reply.fault("empty"), Reply.fault("huge")])
async def test_empty_and_huge_replies_are_scored(fixtures_dir: Path, reply: Reply) -> None:
    summary = await run_episodes(
        "vfc-echo", model=ScriptedModel(fixed(reply)), paths=[str(fixtures_dir)]
    )
    for result in summary.results:
        assert result.errors() == []
        assert result.reward == 0.0


async def test_a_hang_ends_at_the_agent_timeout(fixtures_dir: Path) -> None:
    summary = await run_episodes(
        "vfc-echo", num_tasks=1, model=ScriptedModel(fixed(Reply.fault("hang"))),
        env_args={"agent.timeout.rollout": 1.0}, paths=[str(fixtures_dir)],
    )
    (result,) = summary.results
    (trace,) = result.traces
    assert trace.is_timeout and trace.stop_condition == "agent_timeout"
    assert trace.pending == []


async def test_a_runner_deadline_cancels_a_hanging_episode(fixtures_dir: Path) -> None:
    summary = await run_episodes(
        "vfc-echo", num_tasks=2, model=ScriptedModel(fixed(Reply.fault("hang"))),
        timeout=1.0, paths=[str(fixtures_dir)],
    )
    assert [r.runner_error for r in summary.results] == [
        "episode exceeded the runner's 1s deadline"
    ] * 2
    assert all(r.logs for r in summary.results)  # the traces minted so far are kept


async def test_an_infinite_taskset_needs_num_tasks(fixtures_dir: Path) -> None:
    async with EnvRunner.open("vfc-infinite", paths=[str(fixtures_dir)]) as runner:
        with pytest.raises(EnvLoadError, match=r"infinite .*-n N"):
            load_tasks(runner.env, None)
        assert len(load_tasks(runner.env, 4)) == 4


async def test_an_unknown_env_is_a_one_line_load_error(fixtures_dir: Path) -> None:
    with pytest.raises(EnvLoadError) as caught:
        async with EnvRunner.open("no-such-env-v9", paths=[str(fixtures_dir)]):
            pass
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("env 'no-such-env-v9' failed to load: ModuleNotFoundError")


@pytest.mark.slow
async def test_verifiers_echo_v1_runs(verifiers_fixtures: Path) -> None:
    summary = await run_episodes("echo-v1", num_tasks=3, paths=[str(verifiers_fixtures)])
    assert [r.reward for r in summary.results] == [1.0, 1.0, 1.0]


@pytest.mark.slow
async def test_verifiers_echo_tool_v1_default_and_user_script(
    verifiers_fixtures: Path, tmp_path: Path
) -> None:
    model = ScriptedModel()
    summary = await run_episodes("echo-tool-v1", model=model, paths=[str(verifiers_fixtures)])
    (result,) = summary.results
    (trace,) = result.traces
    assert [c.name for m in trace.assistant_messages for c in (m.tool_calls or [])] == [
        "echo_back"
    ]
    assert trace.tool_messages, "the tool's result lands on the trace"
    script = tmp_path / "echo.toml"
    script.write_text(
        '[[task]]\nindex = 0\n[[task.turn]]\ntool = "echo_back"\n'
        'arguments = { message = "hello world" }\n'
        '[[task.turn]]\nreply = "<answer>{last_tool_result}</answer>"\n'
    )
    model = ScriptedModel(Script.load(script).policy())
    summary = await run_episodes("echo-tool-v1", model=model, paths=[str(verifiers_fixtures)])
    assert summary.results[0].reward == 1.0
