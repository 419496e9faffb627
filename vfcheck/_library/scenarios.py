"""The `lifecycle` and `preview` families at library level: verifiers' own notify behaviour
on the probe env, played in-process against the scripted model, with nothing of an env's
own in the way.

Four episodes: a happy one (the notify order the env suite's lifecycle rules assume), an
upstream 500 on every request, a hang ended by the agent timeout, and a cancel while a
request hangs. For each fault: is the preview cleared (`trace.pending == []`), is a watcher
told (a notify after the clearing, so its last view has no preview), and at which notify
and stage. Findings state what was seen; the baseline says which are known 0.4.0 behaviour.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vfcheck._episodes.recorder import STAGES, NotifyEvent, TraceLog, TraceRecorder
from vfcheck._library.result import finding, verdict
from vfcheck._shared.findings import Finding

HAPPY_ORDER: tuple[str, ...] = (
    "boot.start", "boot.end+setup.start", "setup.end+agent.start", "preview", "call #1 ok",
    "agent.end", "finalize.start+finalize.end+scoring.start", "scoring.end",
)
"""The notify log of a one-request episode, as the recorder labels it (`finalize.start` is
stamped silently and shows with the next notify)."""
AGENT_TIMEOUT = 3.0
"""The agent deadline of the hang scenario, seconds: long enough that a loaded 2-core CI
machine has the hung request in flight (previewed) when the deadline fires."""
PLAY_TIMEOUT = 60.0
"""The runner's deadline per episode: a library that hangs here gives an error finding."""
SETTLE = 5.0
"""Seconds a cancelled request gets to clear its preview before it is judged."""
LATE_NOTIFY = 0.3
"""Grace after the clearing, for a notify that follows it."""

LIFECYCLE_CHECKS = ("lifecycle.mint", "lifecycle.order", "lifecycle.rules")
PREVIEW_CHECKS = (
    "preview.upstream_500.recorded", "preview.upstream_500.cleared",
    "preview.upstream_500.notified", "preview.agent_timeout.stop",
    "preview.agent_timeout.cleared", "preview.agent_timeout.agent_end",
    "preview.agent_timeout.notified", "preview.cancel.cleared", "preview.cancel.notified",
)


@dataclass
class Played:
    """One scenario: the notify logs of its traces and what the runner saw."""

    logs: list[TraceLog] = field(default_factory=list)
    runner_error: str | None = None
    saw_preview: bool = True

    @property
    def events(self) -> list[NotifyEvent]:
        return [e for log in self.logs for e in log.events]

    @property
    def traces(self) -> list[Any]:
        return [log.trace for log in self.logs]

    def pending(self) -> int:
        return sum(len(t.pending) for t in self.traces)

    def log_dump(self) -> list[dict[str, Any]]:
        return [{"label": e.label, "pending": e.pending, "calls": e.calls,
                 "stage": stage_at(e)} for e in self.events]


def stage_at(event: NotifyEvent) -> str:
    """The stage a notify belongs to: the latest one started by then."""
    for name in reversed(STAGES):
        start, _ = event.stages.get(name, (0.0, 0.0))
        if start:
            return name
    return "before boot"


def clearing(events: Sequence[NotifyEvent]) -> dict[str, Any] | None:
    """The first notify after the last preview that shows no preview: where a watcher
    learns the preview went (None: it never does)."""
    shown = [i for i, e in enumerate(events) if e.pending > 0]
    if not shown:
        return None
    for i in range(shown[-1] + 1, len(events)):
        if events[i].pending == 0:
            return {"event": i, "label": events[i].label, "stage": stage_at(events[i])}
    return None


def _at(where: dict[str, Any] | None) -> str:
    if where is None:
        return "never"
    return f"at event {where['event']} ({where['label']!r}, {where['stage']} stage)"


async def play(runner: Any, task: Any, assign: Callable[[Any], None]) -> Played:
    recorder = TraceRecorder(on_mint=assign)
    result = await runner.play(task, timeout=PLAY_TIMEOUT, on_trace=recorder.on_trace)
    return Played(list(recorder.logs.values()), result.runner_error)


async def play_cancelled(runner: Any, task: Any, assign: Callable[[Any], None]) -> Played:
    """Play with a hanging model; cancel once a request is previewed; let it settle."""
    from vfcheck._episodes.runner import play_cancelled

    recorder = TraceRecorder(on_mint=assign)
    _, seen = await play_cancelled(runner, task, recorder.on_trace, wait=PLAY_TIMEOUT,
                                   settle=SETTLE)
    await asyncio.sleep(LATE_NOTIFY)
    return Played(saw_preview=seen, logs=list(recorder.logs.values()))


def lifecycle_findings(happy: Played) -> list[Finding]:
    from vfcheck.checks.lifecycle import describe_log, lifecycle_violations

    events = happy.events
    labels = [e.label for e in events]
    log = {"notify_log": happy.log_dump(), "runner_error": happy.runner_error}
    first = labels[0] if labels else None
    mint = finding(
        "lifecycle.mint", verdict(first == "boot.start"),
        "on_trace fires at mint: the watcher's first notify is boot.start" if first ==
        "boot.start" else f"the watcher's first notify is {first!r}, not boot.start: on_trace "
        "fires too late to see every notify", observed=f"first notify {first}", **log)
    same = tuple(labels) == HAPPY_ORDER
    order = finding(
        "lifecycle.order", verdict(same),
        f"a happy one-request episode notifies {' ; '.join(labels)}" if same else
        f"a happy one-request episode notifies {' ; '.join(labels) or 'nothing'}; expected "
        f"{' ; '.join(HAPPY_ORDER)}", observed=" ; ".join(labels), expected=list(HAPPY_ORDER),
        **log)
    violations = [v for lg in happy.logs for v in lifecycle_violations(lg.events, lg.trace)]
    rules = finding(
        "lifecycle.rules", verdict(not violations and bool(events)),
        "the env suite's lifecycle rules hold on verifiers' own happy episode" if not violations
        else f"verifiers' own happy episode breaks the env suite's lifecycle rules: "
        f"[{violations[0].rule}] {violations[0].message}\n"
        + "\n".join(describe_log(lg.events) for lg in happy.logs),
        observed="; ".join(sorted({v.rule for v in violations})) or "no violation",
        violations=[{"rule": v.rule, "message": v.message} for v in violations], **log)
    return [mint, order, rules]


def _cleared(check: str, scenario: str, played: Played) -> Finding:
    left = played.pending()
    return finding(
        check, verdict(not left),
        f"after {scenario}, trace.pending is empty" if not left else
        f"after {scenario}, {left} previewed message(s) remain on the trace (trace.pending)",
        observed="pending empty" if not left else f"{left} pending", notify_log=played.log_dump())


def _notified(check: str, scenario: str, played: Played) -> Finding:
    events = played.events
    where = clearing(events)
    if not any(e.pending for e in events):
        return finding(check, "error", f"{scenario} showed no preview: nothing to judge",
                       notify_log=played.log_dump())
    last = events[-1]
    ok = last.pending == 0
    if ok:
        message = f"after {scenario}, watchers are told the preview is gone {_at(where)}"
    else:
        message = (f"after {scenario}, trace.pending is "
                   f"{'empty' if not played.pending() else 'not empty'} but no notify follows "
                   f"the clearing: the watcher's last view (event {len(events) - 1}, "
                   f"{last.label!r}, {stage_at(last)} stage) shows {last.pending} previewed "
                   "message(s) for good")
    return finding(check, verdict(ok), message,
                   observed=f"cleared {where['label']}" if ok and where else
                   "no notify after the clear", cleared_at=where, notify_log=played.log_dump())


def upstream_500_findings(played: Played) -> list[Finding]:
    scenario = "an upstream 500 on every request"
    calls = [c for t in played.traces for c in t.calls]
    errored = [c for c in calls if c.error is not None]
    recorded = finding(
        "preview.upstream_500.recorded", verdict(bool(errored)),
        f"after {scenario}, {len(errored)} failed call(s) are recorded with their error"
        if errored else f"after {scenario}, no failed call is recorded ({len(calls)} call(s))",
        observed="failed calls recorded" if errored else "no failed call",
        runner_error=played.runner_error)
    return [recorded, _cleared("preview.upstream_500.cleared", scenario, played),
            _notified("preview.upstream_500.notified", scenario, played)]


def agent_timeout_findings(played: Played) -> list[Finding]:
    scenario = f"a hang ended by the agent timeout ({AGENT_TIMEOUT:g}s)"
    stops = [t.stop_condition for t in played.traces]
    ok = played.runner_error is None and "agent_timeout" in stops
    stop = finding(
        "preview.agent_timeout.stop", verdict(ok),
        f"a hang is ended by the agent timeout (stop {stops})" if ok else
        f"a hang is not ended by the agent timeout (stop {stops}, runner: "
        f"{played.runner_error})", observed=f"stop {stops}")
    events = played.events
    ends = [e for e in events if "agent.end" in e.boundaries]
    if not ends:
        agent_end = finding("preview.agent_timeout.agent_end", "failed",
                            f"after {scenario}, no notify shows agent.end",
                            observed="no agent.end", notify_log=played.log_dump())
    else:
        stale = ends[0].pending
        where = clearing(events)
        agent_end = finding(
            "preview.agent_timeout.agent_end", verdict(not stale),
            f"after {scenario}, the agent.end notify shows no preview" if not stale else
            f"after {scenario}, the agent.end notify still shows {stale} previewed message(s) "
            f"of the hung request; watchers see it cleared only {_at(where)}",
            observed="no preview at agent.end" if not stale else "stale preview at agent.end",
            cleared_at=where, notify_log=played.log_dump())
    return [stop, _cleared("preview.agent_timeout.cleared", scenario, played), agent_end,
            _notified("preview.agent_timeout.notified", scenario, played)]


def cancel_findings(played: Played) -> list[Finding]:
    scenario = "a cancel mid-request"
    if not played.saw_preview:
        return [finding(c, "error", f"no request was previewed within {PLAY_TIMEOUT:g}s: "
                        "nothing to cancel mid-request", notify_log=played.log_dump())
                for c in ("preview.cancel.cleared", "preview.cancel.notified")]
    return [_cleared("preview.cancel.cleared", scenario, played),
            _notified("preview.cancel.notified", scenario, played)]


def skipped(checks: Sequence[str], reason: str) -> list[Finding]:
    return [finding(c, "skipped", reason) for c in checks]


async def scenario_findings(env_id: str, paths: Sequence[Path],
                            missing: dict[str, str]) -> list[Finding]:
    """Every lifecycle/preview finding; checks whose hooks are `missing` are skipped."""
    from vfcheck._library.api import LIFECYCLE_NEEDS, PREVIEW_NEEDS

    lifecycle_gap = next((missing[c] for c in LIFECYCLE_NEEDS if c in missing), None)
    preview_gap = next((missing[c] for c in PREVIEW_NEEDS if c in missing), None)
    if lifecycle_gap and preview_gap:
        return [*skipped(LIFECYCLE_CHECKS, lifecycle_gap), *skipped(PREVIEW_CHECKS, preview_gap)]
    try:
        findings = await _play_all(env_id, paths, lifecycle_gap is None, preview_gap is None)
    except Exception as e:  # noqa: BLE001 - vfcheck could not run them: error, not a verdict
        reason = f"vfcheck could not play {env_id!r}: {type(e).__name__}: {e}"
        findings = [finding(c, "error", reason) for c in (*LIFECYCLE_CHECKS, *PREVIEW_CHECKS)]
    if lifecycle_gap:
        findings = [f for f in findings if f.family != "lifecycle"]
        findings = skipped(LIFECYCLE_CHECKS, lifecycle_gap) + findings
    if preview_gap:
        findings = [f for f in findings if f.family != "preview"]
        findings += skipped(PREVIEW_CHECKS, preview_gap)
    return findings


async def _play_all(env_id: str, paths: Sequence[Path], lifecycle: bool,
                    preview: bool) -> list[Finding]:
    from vfcheck._episodes.runner import EnvRunner
    from vfcheck._episodes.task_loading import load_tasks
    from vfcheck._model import PolicyRouter, Reply, ScriptedModel, fixed

    router = PolicyRouter()
    model = ScriptedModel(router)
    folders = [str(p) for p in paths]

    def assign(policy: Callable[[Any], Any] | None) -> Callable[[Any], None]:
        def minted(trace: Any) -> None:
            if policy is not None:
                router.assigned[trace.id] = policy
        return minted

    async with contextlib.AsyncExitStack() as stack:
        runner = await stack.enter_async_context(
            EnvRunner.open(env_id, paths=folders, model=model))
        task = load_tasks(runner.env, 1)[0]
        hang = fixed(Reply.fault("hang"))
        jobs: dict[str, Any] = {}
        if lifecycle:
            jobs["happy"] = play(runner, task, assign(None))
        if preview:
            roles = {f"{t.role}.timeout.rollout": AGENT_TIMEOUT for t in runner.tiers}
            timed = await stack.enter_async_context(EnvRunner.open(
                env_id, paths=folders, model=model, env_args=roles, start_mock=False))
            jobs["500"] = play(runner, task, assign(fixed(Reply.fault("status", status=500))))
            jobs["timeout"] = play(timed, task, assign(hang))
            jobs["cancel"] = play_cancelled(runner, task, assign(hang))
        done = dict(zip(jobs, await asyncio.gather(*jobs.values()), strict=True))
    findings: list[Finding] = []
    if "happy" in done:
        findings += lifecycle_findings(done["happy"])
    if preview:
        findings += upstream_500_findings(done["500"])
        findings += agent_timeout_findings(done["timeout"])
        findings += cancel_findings(done["cancel"])
    return findings
