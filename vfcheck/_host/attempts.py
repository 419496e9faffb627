"""A deadline failure is confirmed before it is reported.

A deadline that fires on a busy machine (a CI runner shared with other jobs, other envs'
episodes in flight) says as much about the machine as about the env. So the worker notes,
per run of a unit (an `Attempt`), every deadline its work hit: an episode the runner's
deadline ended, a validate check that timed out, the unit's own deadline. A unit that failed
after one is not reported: it runs again, with the same timeout, once nothing else runs in
its worker and the run's other workers are paused (`vfcheck._host.floor`). Only a
second timeout fails it, saying so; a second run that finishes gives the verdict, and the
report keeps a note that the first attempt timed out under load (`confirmed`).

Code that hits a deadline calls `deadline_hit`; the unit's attempt is a context variable,
so the asyncio tasks a check starts note on the attempt of the unit that started them.
"""

from __future__ import annotations

import contextvars
import re
from dataclasses import dataclass, field, replace

from vfcheck._shared.findings import Finding

TWICE = "timed out twice, the second time alone"
_WHERE = re.compile(r"env '[^']*'(?:, task \d+ \(.*?\))?: ")
"""`env 'x', task 1 (key): `: how every finding's message starts (`CheckContext.where`)."""


@dataclass
class Attempt:
    """One run of one unit: the deadlines its work hit, in the words of their messages."""

    deadlines: list[str] = field(default_factory=list)
    alone: bool = False
    """This run is the one alone (nothing else runs in its worker): a check may afford to
    watch where env code raises (`vfcheck._host.crash_site.watching`)."""


CURRENT_ATTEMPT: contextvars.ContextVar[Attempt | None] = contextvars.ContextVar(
    "vfcheck_attempt", default=None)
"""The attempt of the unit whose code runs here (the worker sets it around each unit)."""


def deadline_hit(what: str) -> None:
    """Note on the current unit's attempt that `what` hit its deadline (`episode exceeded
    the runner's 10s deadline`); nothing outside a unit."""
    attempt = CURRENT_ATTEMPT.get()
    if attempt is not None and what not in attempt.deadlines:
        attempt.deadlines.append(what)


def needs_confirming(finding: Finding, attempt: Attempt) -> bool:
    """A verdict against the env that a deadline may have decided: run it again alone."""
    return finding.bad and bool(attempt.deadlines)


KILLED = "its worker was killed at a hard deadline with this check in flight"
"""The first attempt of a unit the supervisor isolated (`vfcheck._isolation.supervisor`)."""


def confirmed(first: Finding | None, first_hit: list[str], second: Finding,
              second_hit: list[str]) -> Finding:
    """The verdict of a unit run twice, the second time alone: the second run's, with the
    first attempt noted (`first`: its finding; None when it ended with its worker). A second
    timeout says so in the message."""
    note = {"outcome": first.outcome if first else None,
            "message": first.message if first else None, "deadlines": first_hit}
    details = {**second.details, "first_attempt": note}
    if second.bad and second_hit:
        return replace(second, message=twice(second.message, second.check),
                       details={**details, "deadlines": second_hit})
    said = "it passed" if second.outcome == "passed" else f"its verdict is {second.outcome}"
    return replace(second, details=details, message=(
        f"{second.message} (the first attempt hit a deadline under load: {first_hit[0]}; "
        f"run again alone, {said})"))


def twice(message: str, check: str) -> str:
    """`... gold failed — timed out twice, the second time alone: it timed out ...`: the
    words go after the check's `failed — `, else after the `env 'x', task i (key): ` that
    starts every finding's message."""
    marker = f"{check} failed — "
    if marker in message:
        head, tail = message.split(marker, 1)
        return f"{head}{marker}{TWICE}: {tail}"
    where = _WHERE.match(message)
    if where is None:
        return f"{TWICE}: {message}"
    return f"{where.group(0)}{TWICE}: {message[where.end():]}"
