"""`fuzz`: env code never raises on a reply in the task's own answer format.

`robustness` plays replies in no format; a reward that parses its format carelessly
(`float()` on the box, `obj["city"]` without checking the shape) passes it, and errors the
rollout on the first `\\boxed{1,000}` a policy writes. Per sampled task, hypothesis searches
the replies of the formats the task's prompt names (`vfcheck.checks._fuzz_replies`), and on
a task that offers env tools with arguments, tool calls with arguments off their schema
before the reply; each is played as an episode through the probe lab
(`vfcheck.checks._reply_search`: the env's own scoring, nothing re-implemented), and a
failure is shrunk to the smallest reply that causes it. The property: no env code error and
every reward finite. A `raise` statement of the env's own is its contract refusing a reply
(vfc-json-contract), not a crash; `robustness` reports those.
"""

from __future__ import annotations

import asyncio
import math
import re
from typing import Any

from vfcheck._shared.findings import Finding
from vfcheck.checks._answer_formats import BARE, named_formats
from vfcheck.checks._context import CheckContext
from vfcheck.checks._fuzz_replies import DrawnReply
from vfcheck.checks._lab import ENV_CODE_ERRORS, blocked_before_model, env_code_errors, episode_lab
from vfcheck.checks._probe_results import ProbeResult, num, short
from vfcheck.checks._registry import check, family, spec_of
from vfcheck.checks._reply_search import ReplySearch, replay_script
from vfcheck.checks._trivial_probes import prompt_text, spammable_tools, system_text

family("fuzz", order=92, summary="replies in the task's own answer format, searched and "
       "shrunk by hypothesis, never crash env code.")

MAX_FUZZED_FORMATS = 2
"""Formats searched per task (the first its prompt names): the budget is split over them,
and over the tool calls where the task offers env tools with arguments."""
DELIBERATE = re.compile(r": `raise\b[^`]*`\)\s*$")
"""A located error whose line of code is a `raise` statement of the env's own."""
SITE = re.compile(r" at (\S+:\d+)(?::|\))")
"""Where a located error was raised (`crash_site`): `env.py:42`."""


@check(
    "fuzz", family="fuzz", scope="sample", budget=4.5,
    contract="env code never raises and every reward is finite on a reply in the task's "
    "own answer format",
    fails_when="a reply hypothesis builds from the formats the task's prompt names (content "
    "inside the format: empty, separators, signs, exponents, LaTeX, words, unicode digits; "
    "the format bent: nested, unclosed, two answers; JSON with missing keys, null, wrong "
    "types, a list for an object; on a tool task, an env tool called first with arguments "
    "off its schema: a key missing, null, of the wrong type, extra, huge) makes env code "
    "raise (not a `raise` of its own) or a reward not finite; the message names the shrunk "
    "reply",
    why="a policy in training writes millions of replies in the env's format with content "
    "nobody planned for; a reward that raises errors the rollout instead of scoring it",
)
async def fuzz(ctx: CheckContext, task: Any) -> Finding:
    from vfcheck._model import generate_arguments
    from vfcheck.checks._fuzz_replies import replies, tool_call_replies
    from vfcheck.checks._probes import probe_lab

    lab = await probe_lab(ctx)
    formats = (named_formats([system_text(task), prompt_text(task)]) or [BARE])
    formats = formats[:MAX_FUZZED_FORMATS]
    reference = lab.reference(task)
    answer = reference.answer if reference is not None and not reference.scripted else None
    empty = lab.probe("empty", task)
    assert empty is not None
    first = await lab.play(task, empty)  # which env tools the task offers (exploit.empty's)
    if first.turns == 0 and (
            blocked := blocked_before_model(await lab.lab.first_play(task))) is not None:
        # the episode ends before its first model request whatever the reply: no search
        return ctx.finding("fuzz", task, "skipped",
                           f"blocked — {blocked}, so no searched reply could reach env code "
                           f"(see episode[{task.data.idx}])", examples=0)
    tools = {name: generate_arguments(first.tool_parameters.get(name, {}), tool_name=name)
             for name in spammable_tools(first)}
    searches: list[tuple[str, Any]] = [
        (fmt.describe(), replies(fmt, answer).map(DrawnReply)) for fmt in formats]
    if tools:
        searches.append((f"calling {', '.join(tools)} with arguments off their schema",
                         tool_call_replies(tools, replies(formats[0], answer))))
    budget = max(1, ctx.options.fuzz_examples // len(searches))
    deadline = spec_of("fuzz").deadline(ctx.timeout)
    # the searches run at once, each in its own thread, its plays named after it: a tool
    # task's plays wait on tool servers, and one search after the other held the check's
    # critical path (echo-tool-v1); the verdict reads them in order as before
    each = [ReplySearch(ctx, lab, task, "positive", deadline, f"fuzz{number or ''}")
            for number in range(len(searches))]
    runs = [asyncio.ensure_future(one.run(strategy, budget, what, _crashed))
            for one, (what, strategy) in zip(each, searches, strict=True)]
    try:
        found_by = await asyncio.gather(*runs)
    except BaseException:  # a deadline in one: the others stop too
        for run in runs:
            run.cancel()
        raise
    done = list(zip([what for what, _ in searches], found_by, strict=True))
    played = {reply: result for one in each for reply, result in one.played.items()}
    tried = sum(s.plays for _, s in done)
    refused = sum(1 for r in played.values() if refusal(r))
    details: dict[str, Any] = {
        "formats": [what for what, _ in searches], "examples": tried,
        "budget": ctx.options.fuzz_examples, "refused": refused,
        "tool_calls": sum(1 for r in played if r.tool is not None)}
    found = next(((what, s) for what, s in done if s.found is not None), None)
    if found is not None:
        what, searched = found
        reply = searched.found
        assert reply is not None
        if (same := await raised_anyway(ctx, task, searched.what)) is not None:
            return ctx.finding(
                "fuzz", task, "skipped",
                f"blocked — env code raises on vfcheck's default reply too, at the same line "
                f"({short(same, 300)}; see episode[{task.data.idx}]): no reply of the "
                "task's format is to blame", **details)
        details |= {"reply": reply.text, "format": what,
                    "replay_script": replay_script(task.data.idx, reply),
                    "result": played[reply].as_dict()}
        if reply.tool is not None:
            details |= {"tool": reply.tool, "arguments": reply.arguments}
        return ctx.finding(
            "fuzz", task, "failed",
            f"{searched.what}, on the reply {reply.describe(120)} ({what}; the "
            f"smallest failing reply of {tried} hypothesis played; replay: `vfcheck run "
            f"{ctx.env_id} --script FILE`, FILE holding details.replay_script)", **details)
    if all(r.turns == 0 for r in played.values()) and (
            blocked := blocked_before_model(await lab.lab.first_play(task))) is not None:
        # no searched reply was ever sent: "survived" would be a pass for nothing
        return ctx.finding("fuzz", task, "skipped",
                           f"blocked — {blocked}, so no searched reply reached env code (see "
                           f"episode[{task.data.idx}])", **details)
    refusals = (f", {refused} of them refused by a `raise` of its own (its contract; "
                "robustness reports those)" if refused else "")
    stopped = ("; the search stopped when its share of the check's deadline was spent"
               if any(s.out_of_time for _, s in done) else "")
    return ctx.finding("fuzz", task, "passed",
                       f"env code survived {tried} replies "
                       f"{' and '.join(what for what, _ in done)}{refusals}{stopped}",
                       **details)


def _crashed(_: DrawnReply, result: ProbeResult) -> str | None:
    return broke(result)


async def raised_anyway(ctx: CheckContext, task: Any, what: str) -> str | None:
    """The error of vfcheck's default episode of `task` (`episode`'s play, shared) raised
    at the same file:line as `what`, if one was: then env code raises whatever the reply
    (a missing dependency, a broken `run`), and the reply fuzz found is not the cause."""
    site = site_of(what)
    if site is None:
        return None
    default = await (await episode_lab(ctx)).first_play(task)
    return next((e for e in env_code_errors(default) if site_of(e) == site), None)


def site_of(error: str) -> str | None:
    """Where a located error (`crash_site`) was raised: `env.py:42`, or None."""
    found = SITE.search(error, max(0, error.rfind(" (in ")))
    return found.group(1) if found is not None else None


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
