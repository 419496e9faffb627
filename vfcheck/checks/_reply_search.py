"""hypothesis' search over a task's replies, each played as an episode: `fuzz` and
`exploit.search` share it.

hypothesis' search is synchronous, so it runs in a thread and plays each reply it draws on
the check's event loop (through the probe lab: the env's own scoring, nothing
re-implemented), each reply once. A check judges each play (`judged`: what it found, or
None) and may steer the search toward higher rewards (`steer`: hypothesis' `target()`);
hypothesis then shrinks what was found to the smallest reply that still shows it.

Bounded: `budget` plays while searching, `SHRINK_FACTOR` times as many in all, and no new
play once `time_left()` says the check's share of its deadline is spent (a tool episode
costs seconds: the unit's deadline must never be what ends the search). Seeded, with no
example database: the same seed gives the same verdict. What hypothesis caches (its
unicode tables, the constants it collects from the env's modules) goes under the project's
`.vfcheck/hypothesis`, never the working directory.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vfcheck._host.queue_clock import QUEUE_CLOCK
from vfcheck.checks._context import CheckContext
from vfcheck.checks._fuzz_replies import LAST_TOOL_RESULT, DrawnReply
from vfcheck.checks._probe_results import Probe, ProbeResult, Verdict

SHRINK_FACTOR = 3
"""Plays per search at most, in multiples of its budget: shrinking stops there."""
DEADLINE_SHARE = 0.5
"""The share of the check's deadline its searches may spend playing (queue time aside)."""
PLAY_TIMEOUT = 600.0
"""Seconds the search thread waits for one play (the check's own deadline stops it first)."""


class _Found(Exception):
    """A reply showed what the check looks for: hypothesis shrinks it."""


class _Stopped(Exception):
    """The check ended (its deadline): the search thread stops playing."""


@dataclass
class Searched:
    """What one search found: the smallest reply that showed it (None: nothing), what it
    showed, the plays it made, and whether time ran out before the budget did."""

    found: DrawnReply | None = None
    what: str = ""
    plays: int = 0
    out_of_time: bool = False


@dataclass
class ReplySearch:
    """The searches of one check on one task: their plays, memoised by reply."""

    ctx: CheckContext
    lab: Any
    task: Any
    judge: Verdict
    deadline: float
    """The check's deadline (seconds): the searches stop playing at `DEADLINE_SHARE` of it."""
    prefix: str
    """Probe names: `fuzz#0`, `search#1`, ..."""
    played: dict[DrawnReply, ProbeResult] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    queued: float = field(default_factory=QUEUE_CLOCK.waited)

    def time_left(self) -> bool:
        spent = time.monotonic() - self.started - (QUEUE_CLOCK.waited() - self.queued)
        return spent < DEADLINE_SHARE * self.deadline

    async def play(self, reply: DrawnReply) -> ProbeResult:
        """`reply` played on the check's loop (once), for the searches and the check."""
        if reply not in self.played:
            probe = Probe(f"{self.prefix}#{len(self.played)}", self.judge, policy_of(reply),
                          reply.text if reply.tool is None else reply.describe())
            self.played[reply] = await self.lab.play(self.task, probe)
        return self.played[reply]

    async def run(self, strategy: Any, budget: int, salt: str,
                  judged: Callable[[DrawnReply, ProbeResult], str | None],
                  steer: Callable[[ProbeResult], float | None] | None = None) -> Searched:
        """Search `strategy` (of `DrawnReply`s) for a reply `judged` finds something in,
        `budget` plays; `steer` scores a play for hypothesis' `target()`; `salt` tells the
        seeds of one task's searches apart."""
        loop = asyncio.get_running_loop()
        stop = threading.Event()
        raised: list[BaseException] = []  # what a play raised (a deadline): raised here again
        current: list[concurrent.futures.Future[ProbeResult]] = []

        def play_from_thread(reply: DrawnReply) -> ProbeResult:
            future = asyncio.run_coroutine_threadsafe(self.play(reply), loop)
            current[:] = [future]
            try:
                return future.result(PLAY_TIMEOUT)
            except BaseException as error:  # noqa: BLE001 - carried to the check's loop
                raised.append(error)
                future.cancel()
                stop.set()
                raise _Stopped from None

        seed = zlib.crc32(f"{self.ctx.seed}:{self.task.data.idx}:{salt}".encode())
        home = Path(self.ctx.options.project_dir or Path.cwd()) / ".vfcheck" / "hypothesis"
        try:
            return await in_own_thread(lambda: _search(
                strategy, budget, seed, home, play_from_thread, judged, steer,
                self.time_left, stop))
        except _Stopped:
            if raised:
                raise raised[0] from None
            raise
        finally:
            stop.set()
            for future in current:
                future.cancel()


async def in_own_thread(work: Callable[[], Searched]) -> Searched:
    """`work()` run in a thread of its own, in this task's context (the unit and attempt
    the plays it asks for note their deadlines on). Not the loop's default executor: it
    has cpu_count + 4 threads, and a search that held one while it waits for a play
    would starve the plays themselves of the threads verifiers asks for (a deadlock
    until the runner's deadline, measured with six searches at once on 2 cores)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Searched] = loop.create_future()
    context = contextvars.copy_context()

    def settle(found: Searched | None, error: BaseException | None) -> None:
        if done.done():
            return  # the check ended first (its deadline)
        if error is not None:
            done.set_exception(error)
        else:
            assert found is not None
            done.set_result(found)

    def run() -> None:
        found: Searched | None = None
        failed: BaseException | None = None
        try:
            found = context.run(work)
        except BaseException as error:  # noqa: BLE001 - raised on the loop
            failed = error
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            loop.call_soon_threadsafe(settle, found, failed)

    threading.Thread(target=run, name="vfcheck-reply-search", daemon=True).start()
    return await done


def _search(strategy: Any, budget: int, seed: int, home: Path,
            play: Callable[[DrawnReply], ProbeResult],
            judged: Callable[[DrawnReply, ProbeResult], str | None],
            steer: Callable[[ProbeResult], float | None] | None,
            time_left: Callable[[], bool], stop: threading.Event) -> Searched:
    """hypothesis' search, in the search thread."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings, target
    from hypothesis import seed as seeded
    from hypothesis.configuration import set_hypothesis_home_dir

    set_hypothesis_home_dir(home)
    found: dict[DrawnReply, str] = {}
    seen: set[DrawnReply] = set()
    searched = Searched()
    phases = (Phase.generate, *([Phase.target] if steer else []), Phase.shrink)

    @seeded(seed)
    @settings(max_examples=budget, database=None, deadline=None, derandomize=False,
              phases=phases, suppress_health_check=list(HealthCheck),
              verbosity=Verbosity.quiet, report_multiple_bugs=False, print_blob=False)
    @given(strategy)
    def search(reply: DrawnReply) -> None:
        if stop.is_set():
            raise _Stopped
        if reply not in found:
            if reply not in seen:  # a reply drawn again is judged again, not played again
                if searched.plays >= budget * SHRINK_FACTOR:
                    return  # the play budget is spent: no more shrinking
                if not time_left():
                    searched.out_of_time = True
                    return
                searched.plays += 1
                seen.add(reply)
            result = play(reply)
            if steer is not None and (score := steer(result)) is not None:
                target(score, label="reward")
            what = judged(reply, result)
            if what is None:
                return
            found[reply] = what
        raise _Found

    try:
        search()
    except _Stopped:
        raise
    except Exception:  # noqa: BLE001 - hypothesis' own report of what was found: ours is below
        pass
    if found:
        searched.found = min(found, key=_size)
        searched.what = found[searched.found]
    return searched


def _size(reply: DrawnReply) -> tuple[int, str]:
    """The order in which found replies are the smallest: length, then text."""
    text = reply.describe()
    return len(text), text


def policy_of(reply: DrawnReply) -> Callable[[Any], Any]:
    """The scripted agent that plays `reply`: its tool call first (if any), then its text
    (the tool's result where it says `LAST_TOOL_RESULT`)."""
    from vfcheck._model import Reply, from_function

    def policy(request: Any) -> Any:
        if reply.tool is not None and not request.called_tool_names:
            return Reply.tool(reply.tool, reply.arguments or "{}")
        return Reply.text(reply.text.replace(LAST_TOOL_RESULT, request.last_tool_result or ""))

    return from_function(policy)


def replay_script(index: int, reply: DrawnReply) -> str:
    """A script (TOML) that plays `reply` as task `index`'s reply."""
    import tomlkit

    document = tomlkit.document()
    entry = tomlkit.table()
    entry.add("index", index)
    turns = tomlkit.aot()
    for turn in reply.turns():
        turns.append(tomlkit.item(turn))
    entry.add("turn", turns)
    tasks = tomlkit.aot()
    tasks.append(entry)
    document.add("task", tasks)
    return tomlkit.dumps(document)
