"""The `served` family at library level: verifiers' own serve path on the probe env, with
nothing of an env's own in the way.

- `served.build`: `EnvServer._build_task` rebuilds a task as the taskset's declared types
  do (`task_type()(data_type().model_validate(wire), config.taskset.task)`), the
  construction `served.data` falls back to when a server refuses the taskset;
- `served.parity`: a happy episode played through `EnvServer`/`EnvClient` on loopback
  equals the in-process play after normalisation;
- `served.cancel.replied`, `.ended`, `.assembled`: a run cancelled mid-request with a
  `CancelRequest` is answered, ends with the cancellation, and leaves no preview in what the
  client assembled. The env suite's `served.cancel` names the last one when an env meets
  it, as the library's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vfcheck._library.result import finding, verdict
from vfcheck._shared.findings import Finding

SERVED_CHECKS = ("served.build", "served.parity", "served.cancel.replied",
                 "served.cancel.ended", "served.cancel.assembled")
PLAY_TIMEOUT = 60.0
"""Seconds a served play (and the wait for a request to cancel) may take."""


async def served_findings(env_id: str, paths: Sequence[Path], gap: str | None) -> list[Finding]:
    """Every `served` finding; all skipped with `gap` when this verifiers lacks a part."""
    if gap:
        return [finding(c, "skipped", gap) for c in SERVED_CHECKS]
    try:
        return await _serve_probe(env_id, [str(p) for p in paths])
    except Exception as e:  # noqa: BLE001 - vfcheck could not run them: error, not a verdict
        reason = f"vfcheck could not serve {env_id!r}: {type(e).__name__}: {e}"
        return [finding(c, "error", reason) for c in SERVED_CHECKS]


async def _serve_probe(env_id: str, folders: list[str]) -> list[Finding]:
    from vfcheck._episodes.runner import EnvRunner
    from vfcheck._episodes.served import ServedEnv, declared_types, through_the_wire
    from vfcheck._episodes.task_loading import load_tasks
    from vfcheck._model import PolicyRouter, Reply, ScriptedModel, TaskRef, fixed

    router = PolicyRouter()
    model = ScriptedModel(router)

    def bind(trace_id: str, task: Any, policy: Any) -> None:
        model.bind(trace_id, TaskRef(task.data.idx, str(task.key)))
        if policy is not None:
            router.assigned[trace_id] = policy

    async with contextlib.AsyncExitStack() as stack:
        runner = await stack.enter_async_context(
            EnvRunner.open(env_id, paths=folders, model=model))
        task = load_tasks(runner.env, 1)[0]
        served = await stack.enter_async_context(ServedEnv.open(runner.env))
        trip = through_the_wire(task, served.server, runner.env)
        task_cls, data_cls, config = declared_types(runner.env)
        built = build_finding(trip, task_cls(data_cls.model_validate(trip.sent), config))
        local = await runner.play(task, timeout=PLAY_TIMEOUT)
        play = await served.play(runner, bind, task, timeout=PLAY_TIMEOUT)
        cancel = await served.cancel_mid_request(runner, bind, task, fixed(Reply.fault("hang")),
                                                 wait=PLAY_TIMEOUT)
    return [built, parity_finding(local, play), *cancel_findings(cancel)]


def build_finding(trip: Any, declared: Any) -> Finding:
    if trip.task is None:
        return finding("served.build", "failed", f"EnvServer._build_task failed on the probe "
                       f"task's wire data: {trip.error}", observed=f"raised at {trip.step}")
    same = type(trip.task) is type(declared) and trip.task.data == declared.data and \
        trip.task.config == declared.config
    return finding(
        "served.build", verdict(same),
        "EnvServer._build_task builds the declared Task class around the declared data "
        "type's model_validate, with the taskset's task config" if same else
        f"EnvServer._build_task builds {type(trip.task).__name__}({trip.task.data!r}), the "
        f"declared types {type(declared).__name__}({declared.data!r})",
        observed="as declared" if same else "differs from the declared types")


def parity_finding(local: Any, play: Any) -> Finding:
    from vfcheck._episodes.served import as_streamed
    from vfcheck._traces.normalize import normalize_trace, trace_diff

    if play.error is not None or play.episode is None:
        return finding("served.parity", "failed", f"the probe task played through EnvServer "
                       f"failed: {play.error}", observed="served run failed")
    ours = [normalize_trace(as_streamed(t)) for t in local.traces]
    theirs = [normalize_trace(t.to_record()) for t in play.episode.traces]
    diff = trace_diff({"traces": ours}, {"traces": theirs})
    return finding(
        "served.parity", verdict(not diff),
        "a happy episode played through EnvServer/EnvClient equals the in-process play "
        "(normalised)" if not diff else
        f"a happy episode played through EnvServer/EnvClient differs from the in-process play: "
        f"{'; '.join(diff[:6])}", observed="equal" if not diff else "differs", diff=diff,
        unbound=play.unbound)


def cancel_findings(result: Any) -> list[Finding]:
    if result.finished_first is not None or not result.saw_preview:
        reason = (f"the probe's served run was answered ({result.finished_first}) before a "
                  "request was previewed" if result.finished_first is not None else
                  f"no request was previewed within {PLAY_TIMEOUT:g}s")
        return [finding(c, "error", f"{reason}: nothing to cancel mid-request")
                for c in SERVED_CHECKS[2:]]
    replied = result.cancel_reply == "cancelled"
    ended = result.run_reply == "cancelled"
    kept = result.pending
    return [
        finding("served.cancel.replied", verdict(replied),
                "EnvServer answers a CancelRequest for a run mid-request (cancelled=True)"
                if replied else f"EnvServer answered a CancelRequest with: "
                f"{result.cancel_reply}", observed=result.cancel_reply),
        finding("served.cancel.ended", verdict(ended),
                "the cancelled run is answered with the cancellation ('Cancelled: rollout "
                "aborted')" if ended else f"the cancelled run was answered with: "
                f"{result.run_reply}", observed=result.run_reply),
        finding("served.cancel.assembled", verdict(not kept),
                "once the cancelled run is answered, the client's assembly holds no preview"
                if not kept else
                f"once the cancelled run is answered, the client's assembly still shows the "
                f"{kept} previewed message(s) of the cancelled request: "
                f"{result.deltas_after_cancel} delta(s) came after the cancel",
                observed="no preview" if not kept else (
                    "preview kept: no delta after the cancel" if not result.deltas_after_cancel
                    else "preview kept after a delta"),
                pending=kept, deltas_after_cancel=result.deltas_after_cancel),
    ]
