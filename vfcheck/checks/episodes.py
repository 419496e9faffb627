"""The episode-playing families: `episode`, `lifecycle`, `preview`, `robustness`,
`determinism.replay`. They run on a sample of tasks, against the scripted model.

One `EpisodeLab` holds the env runner(s) and a policy router (`vfcheck.model.PolicyRouter`):
each episode the lab plays gets its own policy (the default script, or a fault), assigned to
its trace id at mint (`on_trace` fires before the first model request), so fault episodes
run concurrently with happy ones on the same mock.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vfcheck.checks import BY_ID
from vfcheck.findings import Finding, Outcome, TaskId
from vfcheck.model import HARNESS_BUILTIN_TOOLS, Policy, PolicyRouter, Reply, agent_only, fixed

ENV_CODE_ERRORS = frozenset({"TaskError", "EnvError", "ToolsetError"})
"""Errors verifiers records at the boundaries of env-authored code (`verifiers/v1/errors.py`)."""
AGENT_TIMEOUT = 2.0
"""The agent deadline of the `preview` hang scenario, seconds."""
CANCEL_SETTLE = 5.0
"""Seconds a cancelled episode's previews get to be abandoned before `preview` judges."""
EPISODES_AT_ONCE = 4
"""Episodes in flight in one worker when a role plays on the env tier: env-tier episodes
start harness programs and tool servers, and a 2-core CI machine must not be asked for
dozens at once."""
FAST_EPISODES_AT_ONCE = 16
"""The same when every role plays on the fast tier: in-process episodes cost ~0.07 s of CPU
each and spend most of their time waiting (the harness's retry backoff after a fault, the
agent timeout), so a narrow gate would only queue the waits."""


@dataclass
class GoldenPlan:
    """What the `golden` family needs besides the plays: the env's golden folder, each
    task's identity `(identity, source)` by index, and the header shared by its files."""

    book: Any
    """A `vfcheck.traces.golden.GoldenBook`."""
    identities: dict[int, tuple[str, str]]
    header: dict[str, Any]


def agent_fault(reply: Reply) -> Policy:
    """`reply` to every agent turn of an episode; its judge calls keep the default verdict,
    since a fault meant for the agent must not also break the judge that scores it."""
    return agent_only(fixed(reply))


def normalized_views(result: Any) -> list[dict[str, Any]]:
    """Each trace of an episode, normalised with its notify log (`vfcheck.traces.normalize`)."""
    from vfcheck.traces.normalize import normalize_trace

    by_id = {log.trace.id: log for log in result.logs}
    views = []
    for trace in result.traces:
        log = by_id.get(trace.id)
        views.append(normalize_trace(
            trace.to_record(), [e.as_dict() for e in log.events] if log else None))
    return views


def task_id(task: Any) -> TaskId:
    return TaskId(index=task.data.idx, key=str(task.key))


def where(env_id: str, task: Any) -> str:
    return f"env {env_id!r}, {task_id(task).label()}"


def non_finite(trace: Any) -> list[str]:
    """Names of rewards and metrics whose value is not a finite number."""
    bad = []
    for name, reward in trace.rewards.items():
        if reward is not None and not math.isfinite(reward.score):
            bad.append(f"reward {name}={reward.score}")
    for name, value in trace.metrics.items():
        if value is not None and not math.isfinite(value):
            bad.append(f"metric {name}={value}")
    return bad


def env_code_errors(result: Any) -> list[str]:
    found = []
    for trace in result.traces:
        found += [f"{e.type}: {e.message}" for e in trace.errors if e.type in ENV_CODE_ERRORS]
    if result.episode is not None:
        found += [f"{e.type}: {e.message}" for e in result.episode.errors]
    return found


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


def blocked_before_model(result: Any) -> str | None:
    """Why an episode never reached the model, when env code failed first (a `@vf.stop`
    returning a non-bool): the preview scenarios then have nothing to judge, and `episode`
    reports the cause."""
    errors = env_code_errors(result)
    if not errors or any(t.calls for t in result.traces):
        return None
    return f"env code failed before the first model request ({errors[0]})"


def _finding(check: str, env_id: str, task: Any, outcome: Outcome, observed: str,
             **details: Any) -> Finding:
    spec = BY_ID[check]
    if outcome == "failed":
        message = f"{where(env_id, task)}: {check} failed — {observed}. Contract: {spec.contract}."
    else:
        message = f"{where(env_id, task)}: {observed}"
    return Finding(check, spec.family, task_id(task), outcome, message, details)


def episode_finding(env_id: str, task: Any, result: Any,
                    probed: list[str] | None = None) -> Finding:
    """`probed`: hooks that returned the wrong type (`hook_types.probe`), named first."""
    from vfcheck.checks.hook_types import rules_of

    problems = list(probed or [])
    if result.runner_error:
        problems.append(f"the runner could not finish the episode ({result.runner_error})")
    problems += [f"it recorded {e}" for e in result.errors() if not e.startswith("runner:")]
    for trace in result.traces:
        problems += [f"{item} is not finite" for item in non_finite(trace)]
        if (why := round_trip_problem(trace)) is not None:
            problems.append(f"the trace does not survive a JSON round trip ({why})")
    details = {"episode": result.record(env_id)}
    if problems:
        rule = rules_of(probed or [])  # a hook's own rule, quoted after the contract
        message = (f"{where(env_id, task)}: episode failed — {'; '.join(problems)}. Contract: "
                   f"{BY_ID['episode'].contract}{f'; {rule}' if rule else ''}.")
        return Finding("episode", "episode", task_id(task), "failed", message, details)
    rewards = ", ".join(f"{t.reward:g}" for t in result.traces)
    return _finding("episode", env_id, task, "passed", f"episode ok (reward {rewards})", **details)


def lifecycle_finding(env_id: str, task: Any, result: Any) -> Finding:
    from vfcheck.checks.lifecycle import describe_log, lifecycle_violations

    violations = []
    logs = []
    for log in result.logs:
        for v in lifecycle_violations(log.events, log.trace):
            violations.append(v)
        logs.append(describe_log(log.events))
    details = {
        "violations": [{"rule": v.rule, "message": v.message, "event": v.event}
                       for v in violations],
        "notify_log": logs,
    }
    if result.runner_error and not result.logs:
        return _finding("lifecycle", env_id, task, "failed",
                        f"no trace was minted ({result.runner_error})", **details)
    if violations:
        first = violations[0]
        observed = f"[{first.rule}] {first.message}" + (
            f" (+{len(violations) - 1} more)" if len(violations) > 1 else ""
        )
        return _finding("lifecycle", env_id, task, "failed",
                        observed + "\nnotify log:\n" + "\n".join(logs), **details)
    return _finding("lifecycle", env_id, task, "passed",
                    f"{sum(len(log.events) for log in result.logs)} notifies in order", **details)


class EpisodeLab:
    """Plays the sample's episodes: happy ones (memoised: `episode`, `lifecycle` and
    `determinism.replay` share the first play), fault ones, and cancelled ones."""

    def __init__(self, env_id: str, runner: Any, router: PolicyRouter,
                 open_timeout_runner: Callable[[], Any], timeout: float,
                 at_once: int = EPISODES_AT_ONCE) -> None:
        self.env_id = env_id
        self.runner = runner
        self.router = router
        self._open_timeout_runner = open_timeout_runner
        self._timeout_runner: Any = None
        self._timeout_lock = asyncio.Lock()
        self.timeout = timeout
        self._plays: dict[int, asyncio.Future[Any]] = {}
        self._second_plays: dict[int, asyncio.Future[Any]] = {}
        self.goldens: GoldenPlan | None = None
        self._gate = asyncio.Semaphore(at_once)

    async def play(self, task: Any, policy: Callable[[Any], Any] | None = None,
                   runner: Any = None) -> Any:
        def assign(trace: Any) -> None:
            if policy is not None:
                self.router.assigned[trace.id] = policy

        runner = runner or self.runner
        async with self._gate:
            return await runner.play(task, timeout=self.timeout, on_trace=assign)

    async def first_play(self, task: Any) -> Any:
        index = task.data.idx
        if index not in self._plays:
            self._plays[index] = asyncio.ensure_future(self.play(task))
        return await asyncio.shield(self._plays[index])

    async def timeout_runner(self) -> Any:
        async with self._timeout_lock:
            if self._timeout_runner is None:
                self._timeout_runner = await self._open_timeout_runner()
        return self._timeout_runner

    # -- families

    async def episode(self, task: Any) -> Finding:
        from vfcheck.checks.hook_types import explain_error, probe

        result = await self.first_play(task)
        probed: list[str] = []
        # Hooks are called again only when verifiers' own error says one returned the wrong
        # type: a reward may call a judge, and a healthy episode must not pay for a probe.
        if any(explain_error(e) for e in env_code_errors(result)):
            for trace in result.traces:  # on copies: the play is shared with other families
                probed += [p for p in await probe(task, trace) if p not in probed]
        return episode_finding(self.env_id, task, result, probed)

    async def lifecycle(self, task: Any) -> Finding:
        return lifecycle_finding(self.env_id, task, await self.first_play(task))

    async def both_plays(self, task: Any) -> tuple[Any, Any]:
        """The task's two happy plays (memoised: `determinism.replay` and `golden` share
        them; the first is also `episode`'s and `lifecycle`'s), played concurrently."""
        index = task.data.idx
        if index not in self._second_plays:
            self._second_plays[index] = asyncio.ensure_future(self.play(task))
        first, second = await asyncio.gather(
            self.first_play(task), asyncio.shield(self._second_plays[index]))
        return first, second

    async def replay(self, task: Any) -> Finding:
        from vfcheck.traces.normalize import trace_diff

        a, b = (normalized_views(r) for r in await self.both_plays(task))
        if len(a) != len(b):
            return _finding("determinism.replay", self.env_id, task, "failed",
                            f"the two plays minted {len(a)} and {len(b)} trace(s)")
        diff = [line for x, y in zip(a, b, strict=True) for line in trace_diff(x, y)]
        if diff:
            return _finding(
                "determinism.replay", self.env_id, task, "failed",
                "two plays against the same script differ after normalisation: "
                + "; ".join(diff[:5]) + (f" (+{len(diff) - 5} more)" if len(diff) > 5 else ""),
                diff=diff,
            )
        return _finding("determinism.replay", self.env_id, task, "passed",
                        "two plays normalise identically")

    async def golden(self, task: Any) -> Finding:
        """Compare the task's normalised trace with its golden file (see `vfcheck.traces.golden`);
        an env whose two plays differ is reported non-deterministic instead."""
        from vfcheck.traces.golden import golden_diff, golden_document, hide_content_hash

        assert self.goldens is not None, "the golden family needs a GoldenPlan"
        plan = self.goldens
        identity, source = plan.identities[task.data.idx]
        spec = BY_ID["golden"]
        path = plan.book.path_of(identity)
        clash = [i for i, (other, _) in plan.identities.items()
                 if i != task.data.idx and plan.book.path_of(other) == path]
        if clash:
            return _finding("golden", self.env_id, task, "failed",
                            f"tasks {task.data.idx} and {clash[0]} map to the same golden file "
                            f"{path.name}; give the tasks distinct keys or data.id")
        first, second = await self.both_plays(task)
        header = {**plan.header, "task": identity, "task_from": source}
        documents = [
            golden_document(header, hide_content_hash(normalized_views(r), source),
                            r.runner_error)
            for r in (first, second)
        ]
        moved = golden_diff(documents[0], documents[1])
        if moved:
            return _finding(
                "golden", self.env_id, task, "failed",
                "the env is not deterministic: two plays against the same script differ "
                f"after normalisation ({'; '.join(moved[:3])}"
                f"{f' (+{len(moved) - 3} more)' if len(moved) > 3 else ''}), so no golden "
                f"comparison was made (see determinism.replay[{task.data.idx}])",
                golden={"action": "nondeterministic", "path": str(path)}, diff=moved)
        settled = plan.book.settle(identity, documents[0])
        details = {"golden": {"action": settled.action, "path": str(path)},
                   "diff": settled.diff}
        if settled.outcome == "failed":
            message = (f"{where(self.env_id, task)}: golden failed — {settled.observed}\n"
                       f"Contract: {spec.contract}.")
            return Finding("golden", spec.family, task_id(task), "failed", message, details)
        return _finding("golden", self.env_id, task, settled.outcome, settled.observed,
                        **details)

    async def preview(self, task: Any) -> Finding:
        problems: list[str] = []
        scenarios: dict[str, Any] = {}
        # the three scenarios are independent episodes: played at once, the preview check
        # costs the longest of them (the agent timeout), not their sum
        failed, hung, (cancelled, seen_preview) = await asyncio.gather(
            self.play(task, agent_fault(Reply.fault("status", status=500))),
            self.play_hang(task),
            self.cancel_mid_request(task),
        )
        if (blocked := blocked_before_model(failed)) is not None:
            return _finding("preview", self.env_id, task, "skipped",
                            f"blocked — {blocked}, so no request was left to preview (see "
                            f"episode[{task.data.idx}])")
        # 1. an upstream 500 on every request
        calls = [c for t in failed.traces for c in t.calls]
        errored = [c for c in calls if c.error is not None]
        pending = sum(len(t.pending) for t in failed.traces)
        scenarios["upstream_500"] = {"calls": len(calls), "errored_calls": len(errored),
                                     "pending": pending}
        if failed.runner_error:
            problems.append(f"after an upstream 500 the runner failed ({failed.runner_error})")
        if not errored:
            problems.append(f"after an upstream 500 no failed call is recorded ({len(calls)} "
                            "call(s) on the trace)")
        if pending:
            problems.append(f"after an upstream 500, {pending} previewed message(s) remain "
                            "(trace.pending)")
        # 2. a hang ended by the agent timeout
        stops = [t.stop_condition for t in hung.traces]
        pending = sum(len(t.pending) for t in hung.traces)
        scenarios["hang_agent_timeout"] = {"stops": stops, "pending": pending,
                                           "runner_error": hung.runner_error}
        if hung.runner_error:
            problems.append(f"a hang was not ended by the agent timeout ({hung.runner_error})")
        elif not any(s == "agent_timeout" for s in stops):
            problems.append(f"after a hang the stop is {stops}, not the agent timeout")
        if pending:
            problems.append(f"after a hang ended by the agent timeout, {pending} previewed "
                            "message(s) remain (trace.pending)")
        # 3. the caller cancels mid-request
        pending = sum(len(t.pending) for t in cancelled)
        scenarios["cancel"] = {"traces": len(cancelled), "saw_preview": seen_preview,
                               "pending": pending}
        if not seen_preview:
            problems.append("no request was previewed before the cancel (the harness made no "
                            f"model request within {self.timeout:g}s)")
        if pending:
            problems.append(f"after a cancel mid-request, {pending} previewed message(s) "
                            "remain (trace.pending)")
        if problems:
            return _finding("preview", self.env_id, task, "failed", "; ".join(problems),
                            scenarios=scenarios)
        return _finding("preview", self.env_id, task, "passed",
                        "no preview left after a 500, a timeout and a cancel",
                        scenarios=scenarios)

    async def play_hang(self, task: Any) -> Any:
        """Play against a model that never answers, on the runner whose roles have the short
        agent timeout (`AGENT_TIMEOUT`)."""
        return await self.play(task, agent_fault(Reply.fault("hang")), await self.timeout_runner())

    async def cancel_mid_request(self, task: Any) -> tuple[list[Any], bool]:
        """Play with a hanging model, cancel once a request is previewed; the traces."""
        from vfcheck.episodes.runner import play_cancelled

        hang = agent_fault(Reply.fault("hang"))

        def assign(trace: Any) -> None:
            self.router.assigned[trace.id] = hang

        async with self._gate:
            return await play_cancelled(self.runner, task, assign, wait=self.timeout,
                                        settle=CANCEL_SETTLE)

    async def robustness(self, task: Any) -> Finding:
        def bad_tool_call(request: Any) -> Any:
            if request.turn > 0:
                return None
            offered = [t.get("function", {}).get("name") for t in request.tools]
            names = [n for n in offered if n and n not in HARNESS_BUILTIN_TOOLS]
            return Reply.tool(names[0] if names else "vfcheck_probe", "{bad json")

        faults: dict[str, Callable[[Any], Any]] = {
            "empty reply": agent_fault(Reply.fault("empty")),
            "whitespace reply": agent_fault(Reply.text(" \n\t ")),
            "100 kB reply": agent_fault(Reply.fault("huge")),
            "malformed body": agent_fault(Reply.fault("malformed")),
            "cut stream": agent_fault(Reply.fault("cut")),
            "invalid tool-call JSON": agent_only(bad_tool_call),
        }
        names = list(faults)
        results = await asyncio.gather(*(self.play(task, faults[n]) for n in names))
        problems = []
        observed: dict[str, Any] = {}
        for name, result in zip(names, results, strict=True):
            found = env_code_errors(result)
            found += [f"{x} is not finite" for t in result.traces for x in non_finite(t)]
            if result.runner_error:
                found.append(f"the runner failed: {result.runner_error}")
            observed[name] = {"errors": result.errors(), "rewards": [
                t.reward for t in result.traces]}
            if found:
                problems.append(f"{name}: {found[0]}")
        if problems:
            return _finding("robustness", self.env_id, task, "failed",
                            "env code broke on " + "; ".join(problems), faults=observed)
        return _finding("robustness", self.env_id, task, "passed",
                        f"env code survived {len(names)} kinds of bad model output",
                        faults=observed)
