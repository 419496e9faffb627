"""The episode lab: plays the sample's episodes for the episode-playing families.

One `EpisodeLab` holds the env runner(s) and a policy router: each episode the lab plays
gets its own policy (the default script, or a fault), assigned to its trace id at mint
(`on_trace` fires before the first model request), so fault episodes run concurrently with
happy ones on the same mock. Happy plays are memoised: `episode`, `lifecycle`,
`determinism.replay` and `golden` share them.

Episodes play at once, as a trainer plays them. Two other ways are for the checks that
must tell what episodes at once do to an env (docs/training-scale.md): a *group* holds as
many of the lab's episode slots as it has episodes, so that all of them are in flight
together (`play_group`); a play *alone* holds every slot, so that nothing else of the env
is in flight (`alone_plays`, memoised by name: the `concurrency` family and the probes'
second look share them).

A play that ends before its first model request asks nothing of its policy: once two of a
task's did so alike, its later plays get the first (`vfcheck.checks._blocked_plays`).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vfcheck._host.attempts import deadline_hit
from vfcheck._host.crash_site import located_error
from vfcheck._host.floor import FLOOR
from vfcheck._host.queue_clock import QUEUE_CLOCK
from vfcheck.checks._blocked_plays import BlockedPlays

if TYPE_CHECKING:
    from vfcheck.checks._context import CheckContext

ENV_CODE_ERRORS = frozenset({"TaskError", "EnvError", "ToolsetError"})
"""Errors verifiers records at the boundaries of env-authored code (`verifiers/v1/errors.py`)."""
AGENT_TIMEOUT = 2.0
"""The agent deadline of the `preview` hang scenario on the env tier, seconds: the harness
program must start and send its first request within it."""
FAST_AGENT_TIMEOUT = 0.5
"""The same on the fast tier, where the first request leaves within milliseconds."""
FAST_TOOLS_AGENT_TIMEOUT = 1.0
"""The same on the fast tier when the tasks offer tools: the loop first lists the tools of
the env's tool servers (an MCP handshake each)."""
FAULT_SETTINGS = {"max_retries": 1}
"""The fast harness's config for fault episodes: one SDK (and stream) retry, not the SDK's
two. A fault repeats on every attempt; the first retry shows what env code does when a call
is retried (a `@vf.stop` hook runs before it and sees the failed call: vfc-broken-preview),
the second only adds the longest backoff (~0.9 of the ~1.4 s the two cost)."""
CANCEL_SETTLE = 5.0
"""Seconds a cancelled episode's previews get to be abandoned before `preview` judges."""
EPISODES_AT_ONCE = max(1, min(4, os.cpu_count() or 1))
"""Episodes in flight in one worker when a role plays on the env tier or its tasks offer
tools, when the front end did not size it (`vfcheck._isolation.capacity`): one per core, at
most 4. Such episodes start harness programs or tool servers, an interpreter each whose
import (~4.5 s of CPU for verifiers) is CPU-bound; more of them than cores only stretches
every episode towards its timeout (4 at once on 2 cores: 12 s an episode of vfc-tool
instead of 6)."""
FAST_EPISODES_AT_ONCE = 16
"""The same when every role plays on the fast tier: in-process episodes cost ~0.07 s of CPU
each and spend most of their time waiting (the harness's retry backoff after a fault, the
agent timeout), so a narrow gate would only queue the waits."""


@dataclass
class GoldenPlan:
    """What the `golden` family needs besides the plays: the env's golden folder, each
    task's identity `(identity, source)` by index, and the header shared by its files."""

    book: Any
    """A `vfcheck._traces.golden.GoldenBook`."""
    identities: dict[int, tuple[str, str]]
    header: dict[str, Any]


def agent_fault(reply: Any) -> Any:
    """`reply` (a `vfcheck._model.Reply`) to every agent turn of an episode; its judge calls
    are left to the script's answer, else the default verdict, since a fault meant for the
    agent must not also break the judge that scores it."""
    from vfcheck._model import agent_only, fixed

    return agent_only(fixed(reply))


def normalized_views(result: Any) -> list[dict[str, Any]]:
    """Each trace of an episode, normalised with its notify log (`vfcheck._traces.normalize`)."""
    from vfcheck._traces.normalize import normalize_trace

    by_id = {log.trace.id: log for log in result.logs}
    views = []
    for trace in result.traces:
        log = by_id.get(trace.id)
        views.append(normalize_trace(
            trace.to_record(), [e.as_dict() for e in log.events] if log else None))
    return views


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


def starts_processes(tiers: Any) -> str | None:
    """What each episode of the env starts besides env code in this process (a harness
    program on the env tier, the tasks' tool servers), if anything: an interpreter each,
    a second or more."""
    if any(t.tier != "fast" for t in tiers):
        return "a harness program"
    if any(t.tools for t in tiers):
        return "tool servers"
    return None


def env_code_errors(result: Any) -> list[str]:
    """The errors env code raised in the episode, each with where (`crash_site`)."""
    found = []
    for trace in result.traces:
        found += [located_error(e) for e in trace.errors if e.type in ENV_CODE_ERRORS]
    if result.episode is not None:
        found += [located_error(e) for e in result.episode.errors]
    return found


def noted(result: Any) -> Any:
    """`result`, its deadline noted on the current unit's attempt when the runner's
    deadline ended it: the unit's failure is confirmed before it is reported."""
    if result.unfinished:
        deadline_hit(result.runner_error or "the episode's deadline")
    return result


def unfinished_plays(results: Sequence[Any], index: int) -> str | None:
    """Why plays cannot be compared, when the runner's deadline ended one of them (a hung
    tool, a hook that never returns): where it stopped is no behaviour to hold an env to,
    nor to record as its golden trace; `episode` reports the cause."""
    for result in results:
        if result.unfinished:
            return (f"blocked: the episode did not finish ({result.runner_error}), so "
                    f"there is nothing to compare (episode[{index}] reports it)")
    return None


def dead_server_block(results: Sequence[Any], index: int) -> str | None:
    """Why an episode check has nothing to judge when a tool server of the task exited
    before it served (`vfcheck._host.tool_servers`): `episode` reports it."""
    for result in results:
        if (dead := getattr(result, "dead_tool_server", None)) is not None:
            return f"blocked — {dead.short()}; see episode[{index}]"
    return None


def blocked_before_model(result: Any) -> str | None:
    """Why an episode never reached the model, when it ended with an error before its first
    request: env code failed first (a `@vf.stop` returning a non-bool), or the harness did
    (it could not reach the task's remote tool server offline, and exited). The preview
    scenarios then have nothing to judge, and `episode` reports the cause. Not an episode
    the runner's deadline ended: a hang is the preview check's own to confirm."""
    if result.unfinished or any(t.calls or t.pending for t in result.traces):
        return None
    if errors := env_code_errors(result):
        return f"env code failed before the first model request ({errors[0]})"
    errors = [e for e in result.errors(located_error) if not e.startswith("runner:")]
    if errors:
        return f"the episode ended before the first model request ({errors[0]})"
    return None


class EpisodeLab:
    """Plays the sample's episodes: happy ones (memoised: `episode`, `lifecycle` and
    `determinism.replay` share the first play), fault ones, and cancelled ones."""

    def __init__(self, env_id: str, runner: Any, router: Any,
                 open_timeout_runner: Callable[[], Any], timeout: float,
                 at_once: int = EPISODES_AT_ONCE,
                 open_fault_runner: Callable[[], Any] | None = None) -> None:
        self.env_id = env_id
        self.runner = runner
        self.router = router
        self._openers: dict[str, Callable[[], Any]] = {"timeout": open_timeout_runner}
        if open_fault_runner is not None:
            self._openers["fault"] = open_fault_runner
        self._extra_runners: dict[str, Any] = {}
        self._runner_lock = asyncio.Lock()
        self.timeout = timeout
        self._plays: dict[int, asyncio.Future[Any]] = {}
        self._second_plays: dict[int, asyncio.Future[Any]] = {}
        self._alone: dict[tuple[int, str], asyncio.Future[Any]] = {}
        self._queued: list[tuple[Any, Callable[[Any], Any] | None, asyncio.Future[Any]]] = []
        self._alone_hold: asyncio.Future[None] | None = None
        self.played = 0
        """Episodes the lab has played to their end, for every check (`soak.memory` tells its
        own from the others that ran meanwhile)."""
        self.goldens: GoldenPlan | None = None
        self.at_once = at_once
        self._gate = asyncio.Semaphore(at_once)
        self._line = asyncio.Lock()
        """The gate's queue: slots go to takers in the order they came, so that a group or a
        play alone (several slots) is not passed by the plays that came after it, nor are two
        takers of several left holding part each."""
        self.dead_servers: dict[int, Any] = {}
        """Per task, a tool server of its that exited unserved (`DeadToolServer`): its later
        plays are not played (each would start the same server)."""
        self.blocked = BlockedPlays(blocked_before_model)
        """The plays that ended before the model, which answer the task's later ones."""

    async def play(self, task: Any, policy: Callable[[Any], Any] | None = None,
                   runner: Any = None, *, fresh: bool = False) -> Any:
        """One episode of `task` under `policy` (None: the run's script) on `runner` (the
        main one). `fresh`: played even when the task's plays end before the model
        (`vfcheck.checks._blocked_plays`): `soak` measures what each episode leaves, and
        those run env code too."""
        runner = runner or self.runner
        if (unplayed := self.unplayed(task, runner, fresh)) is not None:
            return unplayed
        async with QUEUE_CLOCK.slot(self._gate, FLOOR.shared(), line=self._line):
            return await self._played(task, policy, runner, fresh=fresh)

    async def _played(self, task: Any, policy: Callable[[Any], Any] | None,
                      runner: Any, *, fresh: bool = False) -> Any:
        """One episode of `task` under `policy` (None: the run's script), in a slot the
        caller holds."""
        def assign(trace: Any) -> None:
            if policy is not None:
                self.router.assigned[trace.id] = policy

        if (unplayed := self.unplayed(task, runner, fresh)) is not None:
            return unplayed  # decided while this play waited for its slot
        result = noted(await runner.play(task, timeout=self.timeout, on_trace=assign))
        self.played += 1
        if result.dead_tool_server is not None:
            self.dead_servers.setdefault(task.data.idx, result.dead_tool_server)
        self.blocked.note(task.data.idx, runner, result, getattr(self.runner, "model", None))
        return result

    @contextlib.asynccontextmanager
    async def holding(self, slots: int) -> AsyncIterator[None]:
        """`slots` of the lab's episode slots at once (all of them: nothing else of the env
        is in flight), the time waited for them counted as queue time."""
        async with QUEUE_CLOCK.slot(self._gate, FLOOR.shared(), slots=min(slots, self.at_once),
                                    line=self._line):
            yield

    async def play_group(self, task: Any, policies: Sequence[Callable[[Any], Any] | None]
                         ) -> list[Any]:
        """One episode of `task` per policy, all in flight together, as a trainer plays a
        group of rollouts: the group holds a slot per episode (within the lab's capacity; a
        group larger than it still starts whole, so it is at once)."""
        async with self.holding(len(policies)):
            return list(await asyncio.gather(*(self._played(task, policy, self.runner)
                                               for policy in policies)))

    async def alone_plays(self, task: Any, policies: Mapping[str, Callable[[Any], Any] | None]
                          ) -> dict[str, Any]:
        """One episode of `task` per named policy, each played with nothing else of the env
        in flight (memoised by name: the same name is the same policy). Plays asked for while
        the lab is held for them join the same hold, one after another: each hold waits for
        every episode in flight to end, so the tasks' plays share it."""
        index = task.data.idx
        for name, policy in policies.items():
            if (index, name) not in self._alone:
                future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
                self._alone[(index, name)] = future
                self._queued.append((task, policy, future))
        if self._queued and (self._alone_hold is None or self._alone_hold.done()):
            self._alone_hold = asyncio.ensure_future(self._one_at_a_time())
        return {name: noted(await asyncio.shield(self._alone[(index, name)]))
                for name in policies}

    async def _one_at_a_time(self) -> None:
        """Play the queued plays alone, under one hold of every slot, until none is left."""
        try:
            async with self.holding(self.at_once):
                while self._queued:
                    task, policy, future = self._queued.pop(0)
                    try:
                        result = await self._played(task, policy, self.runner)
                    except Exception as e:  # noqa: BLE001 - the asker's to raise
                        future.set_exception(e)
                    else:
                        future.set_result(result)
        finally:
            if self._queued:  # asked for while the hold ended: another hold
                self._alone_hold = asyncio.ensure_future(self._one_at_a_time())

    def unplayed(self, task: Any, runner: Any, fresh: bool = False) -> Any:
        """The result that stands for `task`'s next play on `runner` without playing it:
        a dead tool server's (`not_served`), or, unless `fresh`, the first of its plays
        that ended before the model (`BlockedPlays`); None: play it."""
        if (blocked := self.not_served(task)) is not None:
            return blocked
        return None if fresh else self.blocked.answer(task.data.idx, runner)

    def not_served(self, task: Any) -> Any:
        """An unplayed `EpisodeResult` of `task` when one of its tool servers died unserved."""
        from vfcheck._episodes.runner import EpisodeResult, task_info

        dead = self.dead_servers.get(task.data.idx)
        if dead is None:
            return None
        return EpisodeResult(task=task_info(task), rollout=0, episode=None,
                             runner_error=f"not played: {dead.short()} (see "
                                          f"episode[{task.data.idx}])",
                             dead_tool_server=dead)

    def slot(self) -> contextlib.AbstractAsyncContextManager[None]:
        """One of the lab's episode slots, for an episode played by other means (through an
        env server): it counts against the same cores and stops the same deadlines."""
        return QUEUE_CLOCK.slot(self._gate, line=self._line)

    async def first_play(self, task: Any) -> Any:
        index = task.data.idx
        if index not in self._plays:
            self._plays[index] = asyncio.ensure_future(self.play(task))
        return noted(await asyncio.shield(self._plays[index]))

    def forget(self, index: int) -> None:
        """Drop the memoised plays of task `index`: its checks run again
        (`vfcheck._host.attempts`) and play anew."""
        self._plays.pop(index, None)
        self._second_plays.pop(index, None)
        self.blocked.forget(index)
        for key in [k for k in self._alone if k[0] == index and self._alone[k].done()]:
            del self._alone[key]

    async def extra_runner(self, name: str) -> Any:
        """The runner `name` (`timeout`: the hang's short agent timeout; `fault`: no
        retries), opened on first use; the main runner when there is no such opener."""
        if name not in self._openers:
            return self.runner
        async with self._runner_lock:
            if name not in self._extra_runners:
                self._extra_runners[name] = await self._openers[name]()
        return self._extra_runners[name]

    async def timeout_runner(self) -> Any:
        return await self.extra_runner("timeout")

    async def play_fault(self, task: Any, policy: Callable[[Any], Any]) -> Any:
        """Play `task` under a fault `policy` on the runner whose fast roles do not retry."""
        return await self.play(task, policy, await self.extra_runner("fault"))

    async def both_plays(self, task: Any) -> tuple[Any, Any]:
        """The task's two happy plays (memoised: `determinism.replay` and `golden` share
        them; the first is also `episode`'s and `lifecycle`'s), played concurrently."""
        index = task.data.idx
        done = self._plays.get(index)
        if done is not None and done.done() and not done.cancelled() and (
                done.exception() is None and done.result().unfinished):
            # a first play the deadline ended leaves nothing to compare (`unfinished_plays`),
            # whatever the second does: a check run again alone does not wait out another
            first = noted(done.result())
            return first, first
        if index not in self._second_plays:
            self._second_plays[index] = asyncio.ensure_future(self.play(task))
        first, second = await asyncio.gather(
            self.first_play(task), asyncio.shield(self._second_plays[index]))
        return first, noted(second)

    async def both_alone(self, task: Any) -> tuple[Any, Any]:
        """The task's two happy plays, each one at a time (`alone_plays`, named as the
        `concurrency` family names the run's script): what `determinism.replay`, `golden`
        and `served.episode` judge by when the plays at once would fail them."""
        plays = await self.alone_plays(task, {"default": None, "default again": None})
        return plays["default"], plays["default again"]

    async def play_hang(self, task: Any) -> Any:
        """Play against a model that never answers, on the runner whose roles have the short
        agent timeout (`AGENT_TIMEOUT`)."""
        from vfcheck._model import Reply

        return await self.play(task, agent_fault(Reply.fault("hang")), await self.timeout_runner())

    async def cancel_mid_request(self, task: Any) -> tuple[list[Any], bool]:
        """Play with a hanging model, cancel once a request is previewed; the traces."""
        from vfcheck._episodes.runner import play_cancelled
        from vfcheck._model import Reply

        hang = agent_fault(Reply.fault("hang"))
        if self.not_served(task) is not None:
            return [], False

        def assign(trace: Any) -> None:
            self.router.assigned[trace.id] = hang

        async with QUEUE_CLOCK.slot(self._gate, FLOOR.shared(), line=self._line):
            started = asyncio.get_running_loop().time()
            traces, seen = await play_cancelled(self.runner, task, assign, wait=self.timeout,
                                                settle=CANCEL_SETTLE)
            waited = asyncio.get_running_loop().time() - started
        # a deadline only when the wait ran out: an episode that ended on its own before
        # its first request (a harness that exited) hit none
        if not seen and waited >= self.timeout and task.data.idx not in self.dead_servers:
            deadline_hit(f"no model request within the {self.timeout:g}s deadline")
        return traces, seen


async def episode_lab(ctx: CheckContext) -> EpisodeLab:
    """The env run's episode lab, shared by every episode-playing check."""
    return await ctx.shared("episode_lab", open_lab)


async def play_reply(ctx: CheckContext, task: Any, reply: str | None = None) -> Any:
    """Play `task` once against the scripted model, every agent turn answered with `reply`
    (None: the run's script, or the default policy), through the run's episode lab: an
    `EpisodeResult` (`.reward`, `.traces`, `.ok`). The public way for a check of one's own
    to play an episode (`vfcheck.checks.play_reply`); its judge calls get the script's
    answer, else the default verdict."""
    from vfcheck._model import Reply

    lab = await episode_lab(ctx)
    return await lab.play(task, None if reply is None else agent_fault(Reply.text(reply)))


async def open_lab(ctx: CheckContext, stack: contextlib.AsyncExitStack) -> EpisodeLab:
    """The lab of `ctx`'s env: its runner (and, on first use, the short-agent-timeout runner
    of the `preview` hang) entered on `stack`, the scripted model routed per episode."""
    from vfcheck._episodes.runner import EnvRunner
    from vfcheck._host.warm_starts import WARM
    from vfcheck._model import PolicyRouter, ScriptedModel

    router = PolicyRouter(base=ctx.base_policy())
    model = ScriptedModel(router, seed=ctx.seed, http=ctx.http_answers())
    runner = await stack.enter_async_context(
        EnvRunner.open(ctx.env_id, model=model, loaded=(ctx.env, ctx.tiers)))

    def open_runner(env_args: dict[str, Any]) -> Callable[[], Any]:
        async def opener() -> Any:
            return await stack.enter_async_context(EnvRunner.open(
                ctx.env_id, env_args={**ctx.env_args, **env_args}, harness=ctx.harness,
                model=model, start_mock=False, script_tools=ctx.script_tools,
                fast_settings=FAULT_SETTINGS))
        return opener

    roles = {f"{t.role}.timeout.rollout": hang_timeout(t) for t in ctx.tiers}
    fast = all(t.tier == "fast" for t in ctx.tiers)
    # in-process episodes of tool-less roles are cheap; a tool server is an interpreter each,
    # unless it is forked warm (a fraction of a second of CPU: `vfcheck._host.warm_starts`)
    wide = fast and (not any(t.tools for t in ctx.tiers) or WARM.on)
    capacity = ctx.spec.get("capacity") or {}
    at_once = (capacity.get("chat_episodes", FAST_EPISODES_AT_ONCE) if wide
               else capacity.get("interpreter_episodes", EPISODES_AT_ONCE))
    lab = EpisodeLab(ctx.env_id, runner, router, open_runner(roles), ctx.timeout,
                     at_once=int(at_once),
                     open_fault_runner=open_runner({}) if any(
                         t.tier == "fast" for t in ctx.tiers) else None)
    lab.goldens = golden_plan(ctx)
    return lab


def hang_timeout(tier: Any) -> float:
    """The agent timeout of the `preview` hang for a role on `tier` (a `RoleTier`)."""
    if tier.tier != "fast":
        return AGENT_TIMEOUT
    return FAST_TOOLS_AGENT_TIMEOUT if tier.tools else FAST_AGENT_TIMEOUT


def golden_plan(ctx: CheckContext) -> GoldenPlan:
    script = ctx.script
    header = {
        "env": ctx.env_id,
        "tier": {t.role: t.tier for t in ctx.tiers},
        "script": Path(script).name if script else "default",
        "seed": ctx.seed,
        "verifiers": ctx.verifiers_version,
    }
    return GoldenPlan(ctx.golden_book, ctx.identities, header)


def episode_skip_reason(ctx: CheckContext, task: Any) -> str | None:
    """Why vfcheck cannot play `task`'s episodes offline, if it cannot (the message follows
    `env 'x', task i (key): `)."""
    from vfcheck._shared.compat import episode_hooks_missing, lacks_message
    from vfcheck.checks._validate import needs_container

    if episode_hooks_missing():
        return f"{lacks_message(episode_hooks_missing())}, which the episode checks need"
    if ctx.container_roles:
        return (f"{'; '.join(ctx.container_roles)} — vfcheck plays episodes "
                "offline in the subprocess runtime")
    if needs_container(task):
        from vfcheck._episodes.runtime_fit import container_reason

        return container_reason(task, (getattr(ctx.env, "taskset", None),))
    return None
