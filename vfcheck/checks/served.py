"""`served.data`, `served.episode`, `served.cancel`: the env behaves the same when an env
server serves it as it does in-process.

Trainers serve envs (`verifiers.v1.serve`: `EnvServer`/`EnvClient`, what prime-rl scales
through), and the served path is other code: the server never calls `load()`, rebuilds each
task from its wire data into the taskset's declared types, and streams the traces back as
deltas. `served.data` sends every task through the wire as the server does (no episode);
`served.episode` plays the sample through a real server on loopback and compares the
assembled episode with the in-process play; `served.cancel` cancels a served run
mid-request. The server and its runs live in `vfcheck._episodes.served`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from typing import Any, NamedTuple

from vfcheck._host.attempts import deadline_hit
from vfcheck._shared.findings import Finding
from vfcheck.checks._alone_verdicts import note
from vfcheck.checks._context import CheckContext
from vfcheck.checks._judge_calls import judge_exchanges
from vfcheck.checks._lab import (
    agent_fault,
    dead_server_block,
    episode_lab,
    starts_processes,
    unfinished_plays,
)
from vfcheck.checks._registry import check, family
from vfcheck.checks._wire_changes import (
    Change,
    config_changes,
    data_changes,
    describe,
    episode_verdict,
    run_problem,
    served_errors,
    shown,
    validation_problems,
)

family("served", order=140, summary="each task survives the wire to an env server, and a served "
       "episode matches the in-process one.")

WHY = "training serves the env; a task that does not survive the wire trains on something else"
PLAYS = 2
"""Plays of a served run at most: a second one when the first's model requests were
answered before its trace was bound to the task (`ServedPlay.unbound`)."""


# -- the served env of a run, and each task through the wire


def missing_serve() -> str | None:
    """`verifiers X lacks Y`, when the served checks cannot run on this verifiers."""
    from vfcheck._episodes.served import serve_missing
    from vfcheck._shared.compat import lacks_message

    missing = serve_missing()
    return f"{lacks_message([missing])}, which the served checks need" if missing else None


async def served_env(ctx: CheckContext) -> Any:
    """The run's `ServedEnv`: verifiers' `EnvServer` for the loaded env (or its refusal)."""
    async def opener(ctx: CheckContext, stack: contextlib.AsyncExitStack) -> Any:
        from vfcheck._episodes.served import ServedEnv

        return await stack.enter_async_context(ServedEnv.open(ctx.env))

    return await ctx.shared("served_env", opener)


class WireVerdict(NamedTuple):
    problems: list[str]
    changes: list[Change]
    sent: dict[str, Any] | None


def wire_verdict(ctx: CheckContext, task: Any, served: Any) -> WireVerdict:
    """What goes wrong when `task` crosses the wire (memoised: `served.episode` skips a task
    whose data does not survive it)."""
    return ctx.memo(f"served.wire.{task.data.idx}", lambda: judge_wire(ctx, task, served))


def judge_wire(ctx: CheckContext, task: Any, served: Any) -> WireVerdict:
    from vfcheck._episodes.served import declared_types, one_line, through_the_wire

    try:
        task_cls, data_cls, _ = declared_types(ctx.env)
    except Exception as e:  # noqa: BLE001 - the reason is the finding
        return WireVerdict([f"the taskset's declared Task or data type cannot be had "
                            f"({type(ctx.env.taskset).__name__}.task_type().data_type() "
                            f"raised {one_line(e)}): the server rebuilds every task with them"],
                           [], None)
    problems = []
    if served.refusal:
        problems.append(f"the env server refuses the taskset: {served.refusal}")
    trip = through_the_wire(task, served.server, ctx.env)
    route = (f"model_dump(mode='json') → msgpack → {data_cls.__name__}.model_validate → "
             f"{task_cls.__name__} → msgpack back")
    if trip.error is not None:
        where = {"dump": "its data does not dump to JSON (model_dump(mode='json'))",
                 "encode": "verifiers' msgpack encoder refuses its dump",
                 "validate": f"its dump does not validate as the declared data type "
                             f"{data_cls.__name__}",
                 "build": f"the declared Task class {task_cls.__name__} cannot wrap it",
                 "stream": "the server cannot stream it back on the trace (`serve/delta.py` "
                           "dumps the task data in python mode, then verifiers' msgpack "
                           "encoder refuses it)"}
        said = validation_problems(trip.exception, trip.sent) if trip.step == "validate" \
            else trip.error
        problems.append(f"through the wire ({route}) {where[trip.step]}: {said}")
        return WireVerdict(problems, [], trip.sent)
    served_task: Any = trip.task
    changes = data_changes(task.data, served_task.data)
    if type(task) is not type(served_task):
        changes.insert(0, Change("Task class", type(task).__name__, type(served_task).__name__,
                                 f"the taskset declares {task_cls.__name__}"))
    with contextlib.suppress(Exception):  # a config that does not dump is the server's too
        changes += config_changes(task.config.model_dump(mode="json"),
                                  served_task.config.model_dump(mode="json"))
    try:
        keys = str(task.key), str(served_task.key)
    except Exception as e:  # noqa: BLE001 - a key that raises when served is a change
        keys = str(task.key), f"raises {one_line(e)}"
    if keys[0] != keys[1]:
        changes.append(Change("key", shown(keys[0]), shown(keys[1])))
    if different := [c for c in changes if not c.equivalent]:
        problems.append(f"through the wire ({route}) the task comes out different: "
                        f"{describe(different)}")
    return WireVerdict(problems, changes, trip.sent)


def blocked_by_wire(ctx: CheckContext, task: Any, served: Any) -> str | None:
    """Why a served episode of `task` shows nothing new: no server, or data that does not
    survive the wire (`served.data` reports it)."""
    if served.refusal:
        return (f"blocked — the env server refuses the taskset, so nothing was played "
                f"through it (see served.data[{task.data.idx}])")
    verdict = wire_verdict(ctx, task, served)
    if verdict.problems:
        return (f"blocked — the task does not survive the wire, so its served episode differs "
                f"for that cause (see served.data[{task.data.idx}])")
    return None


def bind_to(lab: Any) -> Any:
    """A `Bind` on the lab's scripted model and policy router."""
    from vfcheck._model import TaskRef

    model, router = lab.runner.model, lab.router

    def bind(trace_id: str, task: Any, policy: Any) -> None:
        if model is not None:
            model.bind(trace_id, TaskRef(task.data.idx, str(task.key)))
        if policy is not None:
            router.assigned[trace_id] = policy

    return bind


# -- the checks


@check(
    "served.data", family="served", scope="task", budget=1.0, runs=(),
    contract="the task survives the wire as an env server rebuilds it: its data, data type, "
    "Task class, config and key come out equal to the in-process task's",
    fails_when="the task's data sent as trainers send it (`model_dump(mode=\"json\")`, msgpack "
    "with verifiers' encoder) and rebuilt as `EnvServer` rebuilds it (the taskset's declared "
    "data type's `model_validate`, then its declared Task class) differs from the in-process "
    "task: a field changed, vanished or failed to validate (the message names each by its path "
    "down nested values, with both values and their types), or the data type, Task class, "
    "config or key differ; the server could not stream "
    "the data back on its traces (verifiers' encoder refuses a field: named); `EnvServer` "
    "refuses the taskset (its words: an `exclude=True` field); or the declared Task or data "
    "type cannot be had. A tuple that comes back a list where the declared type names no tuple "
    "is JSON-equivalent: named, not failed (`served.episode` compares the scores). No episode "
    "is played",
    why=WHY,
)
async def served_data(ctx: CheckContext, task: Any) -> Finding:
    if (missing := missing_serve()) is not None:
        return ctx.finding("served.data", task, "skipped", missing)
    served = await served_env(ctx)
    verdict = wire_verdict(ctx, task, served)
    details = {"changes": [list(c) for c in verdict.changes], "sent": verdict.sent}
    if verdict.problems:
        return ctx.finding("served.data", task, "failed", "; ".join(verdict.problems),
                           **details)
    said = "the task survives the wire: data, types, config and key unchanged"
    if equivalent := [c for c in verdict.changes if c.equivalent]:
        said += f" but for {describe(equivalent)}; served.episode compares the scores"
    return ctx.finding("served.data", task, "passed", said, **details)


@check(
    "served.episode", family="served", scope="sample", budget=3.5,
    contract="the task played through an env server gives the in-process play's trace "
    "(normalised) and records no error the in-process play did not",
    fails_when="played through verifiers' `EnvServer` on 127.0.0.1 with `EnvClient.run` (the "
    "same script, mock and offline config), the assembled `WireEpisode` differs from the "
    "in-process trace after normalisation (a diff names the message and field), the served "
    "rollout records an error the in-process one did not, the server answers the run with an "
    "error or the deltas do not assemble (its text), or no answer comes within the timeout. "
    "Skipped as blocked when `served.data` fails on the task. What differs between two "
    "in-process plays (a latency metric) is not compared. A difference is looked at again "
    "with every play one at a time, which decide if they agree",
    why="training plays the env through a server; an episode that differs there trains on "
    "something else",
)
async def served_episode(ctx: CheckContext, task: Any) -> Finding:
    if (missing := missing_serve()) is not None:
        return ctx.finding("served.episode", task, "skipped", missing)
    served = await served_env(ctx)
    if (blocked := blocked_by_wire(ctx, task, served)) is not None:
        return ctx.finding("served.episode", task, "skipped", blocked)
    lab = await episode_lab(ctx)
    local, again = await lab.both_plays(task)  # shared with determinism.replay and golden
    if (dead := dead_server_block([local, again], task.data.idx)) is not None:
        return ctx.finding("served.episode", task, "skipped", dead)
    if (stopped := unfinished_plays([local, again], task.data.idx)) is not None:
        return ctx.finding("served.episode", task, "failed", stopped)
    play = await play_served(ctx, lab, served, task)
    finding = served_verdict(ctx, task, served, (local, again), play)
    if finding.outcome != "failed" or play.unbound or play.error is not None:
        return finding
    # an env whose episodes share state may differ only because they played at once
    local, again = await lab.both_alone(task)
    if (dead_server_block([local, again], task.data.idx) is not None
            or unfinished_plays([local, again], task.data.idx) is not None):
        return finding
    alone = served_verdict(ctx, task, served, (local, again),
                           await play_served(ctx, lab, served, task, alone=True))
    if alone.outcome != "passed":
        return finding
    said = finding.details.get("diff") or ["the served rollout recorded an error"]
    return dataclasses.replace(alone, message=note(alone.message, said[:3], task.data.idx),
                               details={**alone.details, "at_once": {
                                   "message": finding.message, "diff": said}})


def served_verdict(ctx: CheckContext, task: Any, served: Any, plays: tuple[Any, Any],
                   play: Any) -> Finding:
    """The served play `play` against the task's two in-process plays."""
    from vfcheck._episodes.served import as_streamed
    from vfcheck._traces.normalize import normalize_trace

    local, again = plays
    where = "played through verifiers' EnvServer on loopback"
    if play.unbound:
        return ctx.finding("served.episode", task, "error",
                           f"{where}, the scripted model answered the run before its first "
                           f"delta tied it to the task, {PLAYS} times: nothing to compare")
    if play.error is not None:
        return ctx.finding("served.episode", task, "failed", f"{where}, the run failed: "
                           f"{play.error}", episode=local.record(ctx.env_id))
    ours, twice = ([normalize_trace(as_streamed(t)) for t in r.traces] for r in (local, again))
    theirs = [normalize_trace(t.to_record()) for t in play.episode.traces]
    known = {*local.errors(), *again.errors()}
    new_errors = [e for e in served_errors(play.episode) if e not in known]
    outcome, observed, diff = episode_verdict(ours, twice, theirs, new_errors, task.data.idx)
    if outcome == "failed":
        observed += json_note(ctx, task, served)
    exchanges = {"judge_exchanges": said} if (said := judge_exchanges(play.episode.traces)) \
        else {}
    return ctx.finding("served.episode", task, outcome, f"{where}, {observed}", diff=diff,
                       served=theirs, in_process=ours, address=served.address, **exchanges)


def json_note(ctx: CheckContext, task: Any, served: Any) -> str:
    """What a failed served play may owe to the wire: values JSON carries as it must
    (a tuple comes back a list), which the env's code may tell apart."""
    equivalent = [c for c in wire_verdict(ctx, task, served).changes if c.equivalent]
    if not equivalent:
        return ""
    return ("; the served task differs only in values JSON carries as it must, which the "
            f"env's code may tell apart: {describe(equivalent)}")


async def play_served(ctx: CheckContext, lab: Any, served: Any, task: Any,
                      alone: bool = False) -> Any:
    """The task's served play (a second one when the first was not bound in time); `alone`:
    with nothing else of the env in flight."""
    play = None
    for _ in range(PLAYS):
        async with lab.holding(lab.at_once) if alone else lab.slot():
            play = await served.play(lab.runner, bind_to(lab), task, timeout=lab.timeout)
        if not play.unbound:
            break
    return play


async def pooled_env(ctx: CheckContext, lab: Any) -> Any:
    """The run's `PooledEnv`: verifiers' env-server pool for the loaded env (`--pool-workers`
    workers), its workers reaching the lab's scripted model on loopback."""
    async def opener(ctx: CheckContext, stack: contextlib.AsyncExitStack) -> Any:
        from vfcheck._episodes.served_pool import PooledEnv

        return await stack.enter_async_context(PooledEnv.open_pool(
            ctx.env, lab.runner.model, workers=ctx.options.pool_workers))

    return await ctx.shared("served_pool", opener)


POOL_OFF = ("off: `--pool-workers 2` (pytest `--vf-pool-workers 2`, `[tool.vfcheck] pool_workers "
            "= 2`) plays it through verifiers' env-server pool as trainers do; each worker is "
            "an interpreter of its own, ~5 s of CPU")
"""Why `served.pool` is skipped by default."""


def group_size(ctx: CheckContext, workers: int) -> int:
    """Rollouts of a task played at once through the pool: two per worker, or one per worker
    when each episode starts an interpreter (a tool server, a harness program) the workers
    start cold; two at least (a group)."""
    return max(2, workers if starts_processes(ctx.tiers) else 2 * workers)


@check(
    "served.pool", family="served", scope="sample", budget=3.5, extra_seconds=60.0,
    contract="a group of the task's rollouts played at once through verifiers' env-server pool "
    "(`EnvServerPool`, worker processes running `serve_env`) each give the in-process play's "
    "trace (normalised) and record no error the in-process play did not",
    fails_when="a group of the task's rollouts (two per worker; one per worker when each "
    "episode starts a tool server or a harness program) sent at once through verifiers' "
    "`EnvServerPool` broker to `--pool-workers` (2) env-server worker processes (`serve_env`, "
    "spawned as trainers spawn them: they rebuild the env from its config and never call "
    "`load()`) comes back "
    "different from the in-process play after normalisation, records an error the in-process "
    "play did not (state that `load()` or a module left in the check worker's process, which "
    "the workers lack), is answered with an error, or gets no answer within the timeout; a "
    "worker that exits before it serves fails every task. Skipped as blocked when `served.data` "
    "fails on the task, on a verifiers without the pool, and unless `--pool-workers N` is "
    "given (off by default: each worker is an interpreter of its own)",
    why="trainers scale an env through a pool of env-server processes; what only works in the "
    "process that loaded the tasks trains on errors there",
)
async def served_pool(ctx: CheckContext, task: Any) -> Finding:
    from vfcheck._episodes.served_pool import pool_missing

    if (missing := missing_serve() or pool_missing()) is not None:
        from vfcheck._shared.compat import lacks_message

        return ctx.finding("served.pool", task, "skipped",
                           f"{lacks_message([missing])}, which served.pool needs")
    if ctx.options.pool_workers < 1:
        return ctx.finding("served.pool", task, "skipped", POOL_OFF)
    served = await served_env(ctx)
    if (blocked := blocked_by_wire(ctx, task, served)) is not None:
        return ctx.finding("served.pool", task, "skipped", blocked)
    lab = await episode_lab(ctx)
    pooled = await pooled_env(ctx, lab)
    async with pooled.used():  # the last check to use it stops the workers
        return await pooled_verdict(ctx, task, lab, served, pooled)


async def pooled_verdict(ctx: CheckContext, task: Any, lab: Any, served: Any,
                         pooled: Any) -> Finding:
    """`served.pool`'s verdict on `task`: its group played through `pooled` (a
    `PooledEnv`), each rollout compared with the task's two in-process plays."""
    from vfcheck._episodes.served import as_streamed
    from vfcheck._traces.normalize import normalize_trace

    starting = asyncio.ensure_future(pooled.start())  # the workers import while we play
    local, again = await lab.both_plays(task)  # shared with served.episode and golden
    size = group_size(ctx, pooled.workers)
    where = (f"{size} rollouts played at once through verifiers' env-server pool "
             f"({pooled.workers} worker process{'es' if pooled.workers > 1 else ''})")
    try:
        await starting
    except Exception as e:  # noqa: BLE001 - a pool that does not come up is the finding
        return ctx.finding("served.pool", task, "failed", f"{where}: {e}")
    if (dead := dead_server_block([local, again], task.data.idx)) is not None:
        return ctx.finding("served.pool", task, "skipped", dead)
    if (stopped := unfinished_plays([local, again], task.data.idx)) is not None:
        return ctx.finding("served.pool", task, "failed", stopped)
    plays = await asyncio.gather(*(play_served(ctx, lab, pooled, task) for _ in range(size)))
    if any(play.unbound for play in plays):
        return ctx.finding("served.pool", task, "error",
                           f"{where}: the scripted model answered a run before its first "
                           f"delta tied it to the task, {PLAYS} times: nothing to compare")
    ours, twice = ([normalize_trace(as_streamed(t)) for t in r.traces] for r in (local, again))
    known = {*local.errors(), *again.errors()}
    problems, diffs, passed = [], [], ""
    for number, play in enumerate(plays, 1):
        if play.error is not None:
            problems.append(f"rollout {number} failed: {play.error}")
            continue
        theirs = [normalize_trace(t.to_record()) for t in play.episode.traces]
        new_errors = [e for e in served_errors(play.episode) if e not in known]
        outcome, observed, diff = episode_verdict(ours, twice, theirs, new_errors,
                                                  task.data.idx)
        diffs.append(diff)
        if outcome == "failed":
            problems.append(f"rollout {number}: {observed}")
        elif outcome == "skipped":
            return ctx.finding("served.pool", task, "skipped", f"{where}, {observed}")
        else:
            passed = observed
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return ctx.finding("served.pool", task, "failed",
                           f"{where}, {len(problems)} of them differ from the in-process play: "
                           f"{problems[0]}{more}{json_note(ctx, task, served)}. A pool worker "
                           "rebuilds the env from its config and never calls `load()`: "
                           f"compare served.episode[{task.data.idx}], played by a server in "
                           "the process that loaded the tasks", problems=problems,
                           diffs=diffs, **pooled.where())
    return ctx.finding("served.pool", task, "passed", f"{where}, each: {passed}",
                       **pooled.where())


@check(
    "served.cancel", family="served", scope="sample", budget=2.0, extra_seconds=45.0,
    contract="a served run cancelled mid-request (`CancelRequest`) is answered, its rollout "
    "ends with the cancellation, and the env leaves the client no preview",
    fails_when="cancelled with a `CancelRequest` while a model request hangs, the server does "
    "not answer the cancel within 5 s, the run is not answered with the cancellation within "
    "15 s (the rollout goes on to a finished episode, ends in another error, or never ends), or "
    "a delta after the cancel still previews a message of the request it cancelled. A preview "
    "verifiers itself leaves (0.4.0 sends no delta after a cancelled rollout) is named in the "
    "message as the library's finding (`vfcheck library`: `served.cancel.assembled`)",
    why="trainers cancel served runs they no longer need; one that runs on holds the server's "
    "slot and its inference",
)
async def served_cancel(ctx: CheckContext, task: Any) -> Finding:
    from vfcheck._episodes.served import END_WAIT, REPLY_WAIT
    from vfcheck._model import Reply

    if (missing := missing_serve()) is not None:
        return ctx.finding("served.cancel", task, "skipped", missing)
    served = await served_env(ctx)
    if served.refusal:
        return ctx.finding("served.cancel", task, "skipped",
                           f"blocked — the env server refuses the taskset, so nothing was "
                           f"served to cancel (see served.data[{task.data.idx}])")
    lab = await episode_lab(ctx)
    first = await lab.first_play(task)  # shared with episode: a tool server that never serves
    if (dead := dead_server_block([first], task.data.idx)) is not None:  # would hang here
        return ctx.finding("served.cancel", task, "skipped", dead)
    hang = agent_fault(Reply.fault("hang"))
    result = None
    for _ in range(PLAYS):
        async with lab.slot():
            result = await served.cancel_mid_request(lab.runner, bind_to(lab), task, hang,
                                                     wait=lab.timeout)
        if not result.unbound:
            break
    assert result is not None
    where = "served by verifiers' EnvServer on loopback"
    details = {"cancel": dataclasses.asdict(result), "address": served.address}
    if result.unbound:
        return ctx.finding("served.cancel", task, "error",
                           f"{where}, the scripted model answered the run before its first "
                           f"delta tied it to the task, {PLAYS} times: no hang to cancel")
    if result.finished_first is not None:
        return ctx.finding("served.cancel", task, "skipped",
                           f"{where}, the run was answered ({result.finished_first}) before "
                           "any model request was previewed: nothing to cancel mid-request "
                           f"(see preview[{task.data.idx}] and episode[{task.data.idx}])",
                           **details)
    problems = []
    if result.cancel_reply != "cancelled":
        problems.append(f"the server answered the CancelRequest with: {result.cancel_reply}"
                        if not result.cancel_reply.startswith("no reply") else
                        f"the server did not answer the CancelRequest within {REPLY_WAIT:g}s")
    if (wrong := run_problem(result.run_reply, END_WAIT)) is not None:
        problems.append(wrong)
    note = ""
    if not result.saw_preview:  # the cancel came before any request: a slow start, not
        # the env, may have decided what follows, so a failure here is run again alone
        deadline_hit(f"served.cancel: no request was previewed within {lab.timeout:g}s")
    if result.pending and result.deltas_after_cancel and result.saw_preview:
        problems.append(f"after the cancel the server's last delta still previews "
                        f"{result.pending} message(s)")
    elif result.pending and result.deltas_after_cancel:
        note = (f"; a delta after the cancel still previews {result.pending} message(s), "
                "but the cancel came before any request was previewed (not mid-request): "
                "the rollout was still starting, so that is not held against the env")
    elif result.pending:
        note = (f"; the client's assembly still shows the {result.pending} previewed "
                "message(s) of the cancelled request, as verifiers leaves them: it sends no "
                "delta after a cancelled rollout (a library finding, `vfcheck library`: "
                "served.cancel.assembled), not the env's")
    seen = "" if result.saw_preview else (
        f" (no request was previewed within {lab.timeout:g}s; cancelled all the same)")
    if problems:
        return ctx.finding("served.cancel", task, "failed",
                           f"{where}, cancelled mid-request{seen}: {'; '.join(problems)}"
                           f"{note}", **details)
    return ctx.finding("served.cancel", task, "passed",
                       f"{where}, a cancel mid-request{seen} is answered and the rollout ends "
                       f"with it{note}", **details)

