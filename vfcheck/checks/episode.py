"""`episode`: one episode against the default script is clean."""

from __future__ import annotations

import json
from typing import Any

from vfcheck._host.crash_site import located_error
from vfcheck._shared.findings import Finding
from vfcheck.checks._context import CheckContext, task_id
from vfcheck.checks._judge_calls import judge_exchanges
from vfcheck.checks._lab import env_code_errors, episode_lab, non_finite
from vfcheck.checks._registry import check, family, spec_of

family("episode", order=60, summary="an episode against a well-behaved model records no error and "
       "survives a JSON round trip.")


def where(env_id: str, task: Any) -> str:
    return f"env {env_id!r}, {task_id(task).label()}"


@check(
    "episode", family="episode", scope="sample", budget=2.5,
    contract="one episode against the default script records no env or task error, finite "
    "rewards and metrics, and a trace that survives a JSON round trip",
    fails_when="one episode against the default script records an error, a non-finite reward or "
    "metric, a `@vf.reward`/`@vf.metric` hook returns a non-number or a `@vf.stop` hook a "
    "non-bool (the message names the hook and what it returned), or the trace does not survive a "
    "JSON round trip (`to_record` → JSON → `WireTrace`)",
    why="an episode that breaks on a well-behaved model breaks on every model",
)
async def episode(ctx: CheckContext, task: Any) -> Finding:
    from vfcheck.checks._hook_types import explain_error, probe

    result = await (await episode_lab(ctx)).first_play(task)
    probed: list[str] = []
    # Hooks are called again only when verifiers' own error says one returned the wrong
    # type (a reward may call a judge, and a healthy episode must not pay for a probe).
    if any(explain_error(e) for e in env_code_errors(result)):
        for trace in result.traces:  # on copies: the play is shared with other families
            probed += [p for p in await probe(task, trace) if p not in probed]
    return episode_finding(ctx.env_id, task, result, probed)


def episode_finding(env_id: str, task: Any, result: Any,
                    probed: list[str] | None = None) -> Finding:
    """`probed`: hooks that returned the wrong type (`hook_types.probe`), named first."""
    from vfcheck.checks._hook_types import rules_of

    problems = list(probed or [])
    if result.runner_error:
        problems.append(f"the runner could not finish the episode ({result.runner_error})")
    problems += [f"it recorded {e}" for e in result.errors(located_error)
                 if not e.startswith("runner:")]
    for trace in result.traces:
        problems += [f"{item} is not finite" for item in non_finite(trace)]
        if (why := round_trip_problem(trace)) is not None:
            problems.append(f"the trace does not survive a JSON round trip ({why})")
    details: dict[str, Any] = {"episode": result.record(env_id)}
    if exchanges := judge_exchanges(result.traces):
        details["judge_exchanges"] = exchanges
    if problems:
        rule = rules_of(probed or [])  # a hook's own rule, quoted after the contract
        message = (f"{where(env_id, task)}: episode failed — {'; '.join(problems)}. Contract: "
                   f"{spec_of('episode').contract}{f'; {rule}' if rule else ''}.")
        return Finding("episode", "episode", task_id(task), "failed", message, details)
    rewards = ", ".join(f"{t.reward:g}" for t in result.traces)
    return Finding("episode", "episode", task_id(task), "passed",
                   f"{where(env_id, task)}: episode ok (reward {rewards})", details)


def round_trip_problem(trace: Any) -> str | None:
    """Why the trace does not survive `to_record()` -> JSON -> `WireTrace` -> record.

    `WireTrace` is verifiers' reader for consumers without the run's packages (a trainer);
    a bare `Trace` drops task-specific data fields by design (`verifiers/v1/trace.py`)."""
    import verifiers.v1 as vf

    reader = getattr(vf, "WireTrace", type(trace))
    try:
        record = trace.to_record()
        text = json.dumps(record, allow_nan=False)
        again = reader.model_validate(json.loads(text)).to_record()
    except Exception as e:  # noqa: BLE001 - any failure is the observation
        return f"{type(e).__name__}: {e}"
    if again != record:
        changed = sorted(k for k in record if record.get(k) != again.get(k))
        return f"fields changed by the round trip: {', '.join(changed)}"
    return None
