"""`fuzz`: env code never raises on a reply in the task's own answer format.

`robustness` plays replies in no format; a reward that parses its format carelessly
(`float()` on the box, `obj["city"]` without checking the shape) passes it, and errors the
rollout on the first `\\boxed{1,000}` a policy writes. Per sampled task, hypothesis searches
the replies of the formats the task's prompt names (`vfcheck.checks._fuzz_replies`), each
played as an episode through the probe lab (the env's own scoring, nothing re-implemented),
and shrinks a failure to the smallest reply that causes it. The property: no env code error
and every reward finite. A `raise` statement of the env's own is its contract refusing a
reply (vfc-json-contract), not a crash; `robustness` reports those.

hypothesis runs in a thread (its search is synchronous) and plays each example on the
check's event loop; seeded from the run's seed and the task, no example database, so the
same seed gives the same verdict. What hypothesis caches (its unicode tables, the constants
it collects from the env's modules) goes under the project's `.vfcheck/hypothesis`, never
the working directory. `--fuzz-examples` bounds the search, and shrinking stops
after `SHRINK_FACTOR` times as many plays.
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
import zlib
from pathlib import Path
from typing import Any

from vfcheck._shared.findings import Finding
from vfcheck.checks._answer_formats import BARE, AnswerFormat, named_formats
from vfcheck.checks._context import CheckContext
from vfcheck.checks._lab import ENV_CODE_ERRORS
from vfcheck.checks._probe_results import Probe, ProbeResult, fixed_reply, num, short
from vfcheck.checks._registry import check, family
from vfcheck.checks._trivial_probes import prompt_text, system_text

family("fuzz", order=92, summary="replies in the task's own answer format, searched and "
       "shrunk by hypothesis, never crash env code.")

MAX_FUZZED_FORMATS = 2
"""Formats searched per task (the first its prompt names): the budget is split over them."""
SHRINK_FACTOR = 3
"""Plays per task at most, in multiples of the example budget: shrinking stops there."""
PLAY_TIMEOUT = 600.0
"""Seconds the search thread waits for one play (the check's own deadline stops it first)."""
DELIBERATE = re.compile(r": `raise\b[^`]*`\)\s*$")
"""A located error whose line of code is a `raise` statement of the env's own."""


class _Broke(Exception):
    """A reply broke env code: hypothesis shrinks it."""


class _Stopped(Exception):
    """The check ended (its deadline): the search thread stops playing."""


@check(
    "fuzz", family="fuzz", scope="sample", budget=4.5,
    contract="env code never raises and every reward is finite on a reply in the task's "
    "own answer format",
    fails_when="a reply hypothesis builds from the formats the task's prompt names (content "
    "inside the format: empty, separators, signs, exponents, LaTeX, words, unicode digits; "
    "the format bent: nested, unclosed, two answers; JSON with missing keys, null, wrong "
    "types, a list for an object) makes env code raise (not a `raise` of its own) or a "
    "reward not finite; the message names the shrunk reply",
    why="a policy in training writes millions of replies in the env's format with content "
    "nobody planned for; a reward that raises errors the rollout instead of scoring it",
)
async def fuzz(ctx: CheckContext, task: Any) -> Finding:
    from vfcheck.checks._probes import probe_lab

    lab = await probe_lab(ctx)
    formats = (named_formats([system_text(task), prompt_text(task)]) or [BARE])
    formats = formats[:MAX_FUZZED_FORMATS]
    reference = lab.reference(task)
    answer = reference.answer if reference is not None and not reference.scripted else None
    budget = max(1, ctx.options.fuzz_examples // len(formats))
    home = Path(ctx.options.project_dir or Path.cwd()) / ".vfcheck" / "hypothesis"
    loop = asyncio.get_running_loop()
    stop = threading.Event()
    raised: list[BaseException] = []  # what a play raised (a deadline): raised here again
    played: dict[str, ProbeResult] = {}
    broken: list[tuple[str, AnswerFormat, str]] = []  # reply, format, what broke
    tried = 0
    try:
        for fmt in formats:
            try:
                found = await asyncio.to_thread(
                    _search, fmt, answer, budget, _seed(ctx.seed, task.data.idx), home,
                    lambda reply: _play_from_thread(loop, lab, task, reply, played, stop,
                                                    raised), stop)
            except _Stopped:
                if raised:
                    raise raised[0] from None
                raise
            tried += found[0]
            if found[1] is not None:
                broken.append((found[1], fmt, found[2]))
                break
    finally:
        stop.set()
    refused = sum(1 for r in played.values() if refusal(r))
    details: dict[str, Any] = {
        "formats": [f.describe() for f in formats], "examples": tried,
        "budget": ctx.options.fuzz_examples, "refused": refused}
    if broken:
        reply, fmt, what = broken[0]
        details |= {"reply": reply, "format": fmt.describe(),
                    "replay_script": replay_script(task.data.idx, reply),
                    "result": played[reply].as_dict()}
        return ctx.finding(
            "fuzz", task, "failed",
            f"{what}, on the reply {quoted(short(reply, 120))} ({fmt.describe()}; the "
            f"smallest failing reply of {tried} hypothesis played; replay: `vfcheck run "
            f"{ctx.env_id} --script FILE`, FILE holding details.replay_script)", **details)
    refusals = (f", {refused} of them refused by a `raise` of its own (its contract; "
                "robustness reports those)" if refused else "")
    return ctx.finding("fuzz", task, "passed",
                       f"env code survived {tried} replies "
                       f"{' and '.join(f.describe() for f in formats)}{refusals}", **details)


def _search(fmt: AnswerFormat, answer: str | None, budget: int, seed: int, home: Path,
            play: Any, stop: threading.Event) -> tuple[int, str | None, str]:
    """hypothesis' search over `fmt`'s replies, `play` scoring each: (plays, the smallest
    reply that broke env code or None, what broke)."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as seeded
    from hypothesis.configuration import set_hypothesis_home_dir

    set_hypothesis_home_dir(home)

    from vfcheck.checks._fuzz_replies import replies

    failures: dict[str, str] = {}
    plays = [0]

    @seeded(seed)
    @settings(max_examples=budget, database=None, deadline=None, derandomize=False,
              phases=(Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck),
              verbosity=Verbosity.quiet, report_multiple_bugs=False, print_blob=False)
    @given(replies(fmt, answer))
    def never_crashes(reply: str) -> None:
        if stop.is_set():
            raise _Stopped
        if reply not in failures and plays[0] >= budget * SHRINK_FACTOR:
            return  # the play budget is spent: no more shrinking
        if reply not in failures:
            plays[0] += 1
            what = broke(play(reply))
            if what is None:
                return
            failures[reply] = what
        raise _Broke(reply)

    try:
        never_crashes()
    except _Stopped:
        raise
    except Exception:  # noqa: BLE001 - hypothesis' own report of the failure: ours is below
        pass
    if not failures:
        return plays[0], None, ""
    smallest = min(failures, key=lambda r: (len(r), r))
    return plays[0], smallest, failures[smallest]


def _play_from_thread(loop: asyncio.AbstractEventLoop, lab: Any, task: Any, reply: str,
                      played: dict[str, ProbeResult], stop: threading.Event,
                      raised: list[BaseException]) -> ProbeResult:
    """Play `reply` on the check's loop from the search thread (each reply once)."""
    if reply not in played:
        probe = Probe(f"fuzz#{len(played)}", "positive", fixed_reply(reply), reply)
        future = asyncio.run_coroutine_threadsafe(lab.play(task, probe), loop)
        try:
            played[reply] = future.result(PLAY_TIMEOUT)
        except BaseException as error:  # noqa: BLE001 - carried to the check's loop
            raised.append(error)
            future.cancel()
            stop.set()
            raise _Stopped from None
    return played[reply]


def broke(result: ProbeResult) -> str | None:
    """What broke env code in a play: its first error that is not a `raise` of its own, or
    a reward that is not finite; None if nothing did."""
    for error in result.errors:
        if error.split(":", 1)[0] in ENV_CODE_ERRORS and not DELIBERATE.search(error):
            return f"env code raised {short(error, 400)}"
    for name, value in result.rewards.items():
        if value is not None and not math.isfinite(value):
            return f"reward {name}={num(value)} is not finite"
    return None


def refusal(result: ProbeResult) -> bool:
    """Whether env code refused the reply with a `raise` of its own (and nothing else)."""
    return any(DELIBERATE.search(e) for e in result.errors) and broke(result) is None


def quoted(text: str) -> str:
    """`text` in quotes as written (`'\\boxed{}'` reads as the reply did), repr where it
    holds what a line cannot show (a newline, a control character)."""
    return f"'{text}'" if text.isprintable() and "'" not in text else repr(text)


def replay_script(index: int, reply: str) -> str:
    """A script (TOML) that plays `reply` as task `index`'s reply."""
    import tomlkit

    document = tomlkit.document()
    entry = tomlkit.table()
    entry.add("index", index)
    turn = tomlkit.aot()
    turn.append(tomlkit.item({"reply": reply}))
    entry.add("turn", turn)
    tasks = tomlkit.aot()
    tasks.append(entry)
    document.add("task", tasks)
    return tomlkit.dumps(document)


def _seed(run_seed: int, index: int) -> int:
    """hypothesis' seed for task `index`: the run's seed and the task, stable across runs."""
    return zlib.crc32(f"{run_seed}:{index}".encode())
