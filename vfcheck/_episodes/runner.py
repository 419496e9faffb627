"""The minimal in-process runner: real episodes of a real env against the scripted model.

It uses verifiers' own machinery end to end: `resolve_env_config` -> `load_environment` ->
`async with env.serving()` -> `env.run_slot(slot, ctx, on_trace=...)`. Only the model
endpoint is mocked (respx intercepts verifiers' upstream `httpx` client in this process),
unless a real `base_url` is given. Episodes run under bounded concurrency; each finished one
is handed to `on_result` at once, so a caller can persist it before the next ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vfcheck._episodes.harness_deps import HarnessDependencyError, dependency_problem
from vfcheck._episodes.load_errors import (
    EnvArgError,
    EnvLoadError,
    env_site,
    id_hint,
    load_error_cause,
    rejected_args,
)
from vfcheck._episodes.offline import (
    DEFAULT_API_KEY_VAR,
    MOCK_API_KEY_VAR,
    offline_env_config,
    prepare_process_env,
)
from vfcheck._episodes.recorder import STAGES, TraceLog, TraceRecorder, stage_times
from vfcheck._episodes.runtime_fit import stand_in
from vfcheck._episodes.task_loading import load_tasks
from vfcheck._episodes.tiers import HarnessTier, RoleTier, role_tiers
from vfcheck._episodes.warm_scope import settle_tool_zygote, warm_starts_if
from vfcheck._host.library_import import import_verifiers
from vfcheck._host.tool_servers import DeadToolServer, until_dead_server
from vfcheck._model import (
    DEFAULT_BASE_URL,
    DEFAULT_MODEL_ID,
    EpisodeRef,
    ScriptedModel,
    TaskRef,
    episode_scope,
)
from vfcheck._shared.env_ids import mentions
from vfcheck._shared.error_text import condense

REAL_MODEL_DEFAULT = "gpt-4.1-mini"
"""The model name sent to a real `base_url` when none is given."""


@dataclass(frozen=True)
class TaskInfo:
    index: int
    key: str
    hash: str


@dataclass
class EpisodeResult:
    """One played episode: verifiers' `Episode`, the notify logs of its traces, and what
    the runner itself saw (a deadline, a cancel, a crash outside verifiers' boundaries)."""

    task: TaskInfo
    rollout: int
    episode: Any | None
    logs: list[TraceLog] = field(default_factory=list)
    runner_error: str | None = None
    unfinished: bool = False
    """The runner's deadline ended the episode: its traces stop wherever it hung."""
    dead_tool_server: DeadToolServer | None = None
    """A tool server of the episode exited before it served: the runner ended the episode
    then (`vfcheck._host.tool_servers`)."""
    duration: float = 0.0
    scope: EpisodeRef | None = None
    """The play's `episode_scope` (its task, the trace ids minted): the scripted model's
    judge calls of this episode are the ones whose `request.episode` is it."""

    @property
    def traces(self) -> list[Any]:
        if self.episode is not None:
            return list(self.episode.traces)
        return [log.trace for log in self.logs]

    @property
    def ok(self) -> bool:
        return self.runner_error is None and self.episode is not None and bool(self.episode.ok)

    @property
    def reward(self) -> float | None:
        traces = self.traces
        return float(traces[0].reward) if traces else None

    def errors(self, line: Callable[[Any], str] | None = None) -> list[str]:
        """Every error recorded anywhere on the episode, as `Type: message` lines (a
        traceback in a message condensed to its exception line; the traces keep it whole),
        or as `line` writes each recorded error (`vfcheck._host.crash_site.located_error`)."""
        line = line or (lambda e: f"{e.type}: {condense(e.message)}")
        found = [f"runner: {self.runner_error}"] if self.runner_error else []
        if self.episode is not None:
            found += [line(e) for e in self.episode.errors]
        for trace in self.traces:
            found += [line(e) for e in trace.errors]
        return found

    def record(self, env_id: str) -> dict[str, Any]:
        """The JSON line `vfcheck run` writes: the trace dumps plus the notify logs."""
        by_id = {log.trace.id: log for log in self.logs}
        traces = []
        for trace in self.traces:
            log = by_id.get(trace.id)
            traces.append(
                {
                    "trace": trace.to_record(),
                    "notify": [e.as_dict() for e in log.events] if log else [],
                }
            )
        reward = self.reward
        return {
            "env": env_id,
            "task": {"index": self.task.index, "key": self.task.key},
            "rollout": self.rollout,
            "ok": self.ok,
            "reward": reward if reward is None or math.isfinite(reward) else str(reward),
            "errors": self.errors(),
            "duration": round(self.duration, 3),
            "traces": traces,
        }


def load_env(
    env_id: str,
    env_args: Mapping[str, Any] | None = None,
    *,
    harness: HarnessTier = "fast",
    script_tools: frozenset[str] = frozenset(),
    real_model: bool = False,
    fast_settings: Mapping[str, Any] | None = None,
) -> tuple[Any, list[RoleTier]]:
    """Load `env_id` with verifiers' own loader, offline, and apply the harness tier
    (`role_tiers`: `script_tools`, `real_model`). `fast_settings` go to every fast role's
    harness config (`FastChatConfig`, e.g. the fault probes' `max_retries`).

    Raises `EnvLoadError` with one line naming the env and the cause."""
    vf = import_verifiers()

    try:
        config = offline_env_config(env_id, env_args)
        env = vf.load_environment(config)
        tiers = role_tiers(env, harness, script_tools=script_tools, real_model=real_model)
        pins = {t.role: {"id": t.harness, **t.settings, **(fast_settings or {})}
                for t in tiers if t.tier == "fast"}
        if pins:
            config = offline_env_config(env_id, env_args, harness=pins)
            env = vf.load_environment(config)
    except Exception as e:
        if (rejected := rejected_args(env_id, env_args, e)) is not None:
            raise EnvArgError(rejected) from e
        raise EnvLoadError(f"env {env_id!r} failed to load: {load_error_cause(e)}"
                           f"{env_site(e)}{id_hint(env_id)}") from e
    return env, tiers


def task_info(task: Any) -> TaskInfo:
    return TaskInfo(index=task.data.idx, key=str(task.key), hash=task.hash)


class EnvRunner:
    """A loaded env inside `env.serving()`, with the scripted model bound to it.

    Use `async with EnvRunner.open(...) as runner:` then `await runner.play(task)`."""

    def __init__(self, env_id: str, env: Any, tiers: list[RoleTier], model: Any,
                 ctx: Any) -> None:
        self.env_id = env_id
        self.env = env
        self.tiers = tiers
        self.model = model
        self.ctx = ctx

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls,
        env_id: str,
        *,
        env_args: Mapping[str, Any] | None = None,
        harness: HarnessTier = "fast",
        model: Any | None = None,
        base_url: str | None = None,
        api_key_var: str = DEFAULT_API_KEY_VAR,
        model_name: str | None = None,
        paths: Sequence[str] = (),
        loaded: tuple[Any, list[RoleTier]] | None = None,
        start_mock: bool = True,
        wheels: str | None = None,
        script_tools: frozenset[str] = frozenset(),
        fast_settings: Mapping[str, Any] | None = None,
        warm_starts: bool | None = None,
    ) -> AsyncIterator[EnvRunner]:
        """Load `env_id` (or take the `loaded` env and tiers), route its model calls to
        `model` (a `ScriptedModel`; a default one if None) or to a real `base_url`, and
        hold `env.serving()` open. `start_mock=False` when another runner of the same
        process already intercepts for this model (respx patches process-wide); `wheels`
        is a folder the harness programs resolve their dependencies from; `script_tools` and
        `fast_settings` go to `load_env`. `warm_starts`: this process starts a warm
        interpreter for the processes verifiers starts (`vfcheck._host.warm_starts`;
        a check worker starts its own)."""
        prepare_process_env(paths, wheels=wheels)
        async with warm_starts_if(warm_starts, lambda: mentions(env_id, paths, "toolset")):
            vf = import_verifiers()
            env, tiers = loaded if loaded is not None else load_env(
                env_id, env_args, harness=harness, script_tools=script_tools,
                real_model=base_url is not None, fast_settings=fast_settings)
            if warm_starts:
                settle_tool_zygote(env)
            mock: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
            if base_url is None:
                if model is None:
                    model = ScriptedModel()
                ctx = vf.ModelContext(
                    model=model_name or DEFAULT_MODEL_ID,
                    client=vf.EvalClientConfig(base_url=DEFAULT_BASE_URL,
                                               api_key_var=MOCK_API_KEY_VAR),
                )
                if start_mock:
                    mock = model.mock(DEFAULT_BASE_URL)
            else:
                model = None
                ctx = vf.ModelContext(
                    model=model_name or REAL_MODEL_DEFAULT,
                    client=vf.EvalClientConfig(base_url=base_url, api_key_var=api_key_var),
                )
            with mock:
                async with env.serving():
                    yield cls(env_id, env, tiers, model, ctx)

    async def play(
        self,
        task: Any,
        *,
        rollout: int = 0,
        timeout: float | None = None,
        on_trace: Callable[[Any], None] | None = None,
    ) -> EpisodeResult:
        """One episode of `task`. A runner deadline (`timeout`) cancels the episode and is
        recorded as the runner's error; the traces minted so far stay in `logs`. Raises
        `HarnessDependencyError` (carrying the result) when the harness program could not
        resolve its dependencies: vfcheck's environment failed, not the env.

        The play runs in an `episode_scope`: the judge calls env code makes while scoring it
        (no `X-Session-ID`, from tasks `run_slot` creates, which copy this context) are
        attributed to this episode and its traces."""
        info = task_info(task)
        ref = TaskRef(index=info.index, key=info.key)
        live: list[Any] = []
        scope = EpisodeRef(task=ref, stage=lambda: episode_stage(live))

        def minted(trace: Any) -> None:
            live.append(trace)
            scope.trace_ids.append(trace.id)
            if self.model is not None:
                self.model.bind(trace.id, ref, episode=scope)
            if on_trace is not None:
                on_trace(trace)

        recorder = TraceRecorder(on_mint=minted)
        result = EpisodeResult(task=info, rollout=rollout, episode=None, scope=scope)
        start = time.perf_counter()
        slot = self.env.slots(stand_in(task), 1)[0]  # vfcheck._episodes.runtime_fit
        from vfcheck._shared.compat import episode_hooks_missing

        # verifiers without the lifecycle hooks: play blind (no notify log, no task binding)
        hooks = {} if episode_hooks_missing() else {"on_trace": recorder.on_trace}
        try:
            with episode_scope(scope):
                result.episode, result.dead_tool_server = await until_dead_server(
                    asyncio.wait_for(self.env.run_slot(slot, self.ctx, **hooks), timeout))
            if result.dead_tool_server is not None:
                result.runner_error = f"{result.dead_tool_server.message()}, so vfcheck " \
                    "ended the episode"
        except TimeoutError:
            result.unfinished = True
            result.runner_error = (f"episode exceeded the runner's {timeout:g}s deadline"
                                   + awaited_tools([log.trace for log in recorder.logs.values()]))
        except Exception as e:  # noqa: BLE001 - a crash outside verifiers' boundaries is data
            result.runner_error = f"{type(e).__name__}: {e}"
        result.duration = time.perf_counter() - start
        result.logs = list(recorder.logs.values())
        if (problem := dependency_problem(result.errors())) is not None:
            result.runner_error = problem
            raise HarnessDependencyError(problem, result)
        return result


def episode_stage(traces: Sequence[Any]) -> str:
    """`the scoring stage of an episode`: the stage the latest trace is in (started, not
    ended), read off its timing spans."""
    if not traces:
        return "an episode, before its first trace"
    try:
        spans = stage_times(traces[-1])
    except AttributeError:  # a trace shape this reading does not know
        return "an episode"
    started = [name for name in STAGES if spans[name][0]]
    if not started:
        return "an episode, before boot"
    name = started[-1]
    return f"the {name} stage of an episode" + (", after it ended" if spans[name][1] else "")


def awaited_tools(traces: Sequence[Any]) -> str:
    """`, waiting for the result of tool call calc_add`: the last model turn's tool calls that
    got no result. A tool that blocks runs in its tool server's process, not this one, so
    the episode just waits there; nothing else names the tool."""
    names: list[str] = []
    for trace in traces:
        try:
            turns = trace.assistant_messages
            answered = {m.tool_call_id for m in trace.tool_messages}
            calls = (turns[-1].tool_calls or []) if turns else []
            names += [c.name for c in calls if c.id not in answered]
        except (AttributeError, TypeError):  # a trace shape this reading does not know
            continue
    if not names:
        return ""
    return f", waiting for the result of tool call{'s' if len(names) > 1 else ''} " \
           f"{', '.join(names)}"


async def play_cancelled(runner: EnvRunner, task: Any, on_trace: Callable[[Any], None], *,
                         wait: float, settle: float) -> tuple[list[Any], bool]:
    """Play `task`, cancel the episode once a request is previewed (or after `wait` s), then
    give verifiers `settle` s to abandon the request. Returns the traces minted and whether a
    preview was seen. The interception server abandons a request when its handler sees the
    client go away, which can come after the episode's own teardown (a multi-agent env's
    gather unwinds later), hence the settling. The episode is `runner.play`'s, so it runs in
    an `episode_scope` of its own like any other play."""
    traces: list[Any] = []

    def minted(trace: Any) -> None:
        traces.append(trace)
        on_trace(trace)

    episode = asyncio.ensure_future(runner.play(task, timeout=None, on_trace=minted))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    seen = False
    while loop.time() < deadline and not episode.done():
        if any(t.pending for t in traces):
            seen = True
            break
        await asyncio.sleep(0.02)
    episode.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await episode
    until = loop.time() + settle
    while loop.time() < until and any(t.pending for t in traces):
        await asyncio.sleep(0.05)
    return traces, seen


@dataclass
class RunSummary:
    env_id: str
    tiers: list[RoleTier]
    tasks: list[TaskInfo]
    results: list[EpisodeResult]
    output: Path | None = None
    starts: dict[str, Any] = field(default_factory=dict)
    """How the processes verifiers asked for started (`WarmStarts.summary`)."""


async def run_episodes(
    env_id: str,
    *,
    num_tasks: int | None = None,
    rollouts: int = 1,
    concurrency: int = 4,
    harness: HarnessTier = "fast",
    env_args: Mapping[str, Any] | None = None,
    model: Any | None = None,
    base_url: str | None = None,
    api_key_var: str = DEFAULT_API_KEY_VAR,
    model_name: str | None = None,
    timeout: float | None = 300.0,
    paths: Sequence[str] = (),
    output: Path | None = None,
    wheels: str | None = None,
    script_tools: frozenset[str] = frozenset(),
    on_start: Callable[[int], None] | None = None,
    on_result: Callable[[EpisodeResult], Awaitable[None] | None] | None = None,
    on_tasks: Callable[[list[Any]], list[Any] | None] | None = None,
    warm_starts: bool | None = None,
) -> RunSummary:
    """Play `rollouts` episodes of each of the first `num_tasks` tasks, `concurrency` at
    a time. With `output`, each episode's JSON line is appended (and flushed) as soon as
    it finishes, so an interrupted run keeps every finished episode. An episode whose
    harness program could not resolve its dependencies keeps that as its runner error.
    `on_tasks` sees the loaded tasks before any is played (and may raise to stop, or return
    the tasks to play: those a cassette holds). With a
    real `base_url`, the key is read from `$api_key_var` and `model_name` is sent.
    `script_tools`: the tools the script calls (`role_tiers`). `warm_starts`: fork the
    `python -m`/`-c` processes verifiers starts from a warm interpreter
    (`vfcheck._host.warm_starts`)."""
    from vfcheck._host.warm_starts import WARM

    async with EnvRunner.open(
        env_id, env_args=env_args, harness=harness, model=model, base_url=base_url, paths=paths,
        wheels=wheels, api_key_var=api_key_var, model_name=model_name,
        script_tools=script_tools, warm_starts=warm_starts,
    ) as runner:
        tasks = load_tasks(runner.env, num_tasks)
        if on_tasks is not None:
            tasks = on_tasks(tasks) or tasks
        plan = [(task, r) for task in tasks for r in range(rollouts)]
        if on_start is not None:
            on_start(len(plan))
        gate = asyncio.Semaphore(max(1, concurrency))
        results: list[EpisodeResult] = []
        sink = None
        if output is not None:
            output.parent.mkdir(parents=True, exist_ok=True)
            sink = output.open("w", encoding="utf-8")

        async def one(task: Any, rollout: int) -> None:
            async with gate:
                try:
                    result = await runner.play(task, rollout=rollout, timeout=timeout)
                except HarnessDependencyError as e:
                    result = e.result
            results.append(result)
            if sink is not None:
                sink.write(json.dumps(result.record(env_id), default=str) + "\n")
                sink.flush()
            if on_result is not None:
                maybe = on_result(result)
                if maybe is not None:
                    await maybe

        try:
            await asyncio.gather(*(one(task, r) for task, r in plan))
        finally:
            if sink is not None:
                sink.close()
        results.sort(key=lambda r: (r.task.index, r.rollout))
        return RunSummary(env_id, runner.tiers, [task_info(t) for t in tasks], results, output,
                          WARM.summary())
