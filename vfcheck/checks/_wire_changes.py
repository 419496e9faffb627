"""What differs between an in-process task and the one an env server rebuilds, and how a
message says it: each difference by its path down nested values (`data.entry.metadata.size`),
with both values and their types, and which differences JSON carries by nature (a tuple that
comes back a list where the declared type names no tuple), the verdict on a served
episode against the in-process plays, and how a validation error or a cancelled run's answer
reads. Pure: no verifiers, no episode played here."""

from __future__ import annotations

import contextlib
import math
import typing
from collections.abc import Sequence
from typing import Any, NamedTuple

from vfcheck._shared.error_text import condense
from vfcheck._shared.findings import Outcome

ABSENT = "(absent)"
SHOWN_CHANGES = 6
"""Changes named in a message; the details hold them all."""

class Change(NamedTuple):
    """One difference between the in-process task and the served one."""

    path: str
    """`data.prompt`, `data.entry.metadata.size`, `data type`, `Task class`,
    `config.max_turns`, `key`."""
    before: str
    after: str
    why: str = ""
    equivalent: bool = False
    """JSON-equivalent (a tuple served as a list) where the declared type does not tell
    them apart: no env code can rely on the difference, so it is no failure."""


# -- pure: what differs, and how a message says it


def shown(value: Any, limit: int = 80) -> str:
    """`value` as a message shows it: its repr, cut to `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def same(before: Any, after: Any) -> bool:
    """Equal and of one type (a tuple that comes back a list differs); NaN equals NaN."""
    if type(before) is not type(after):
        return False
    if isinstance(before, float) and math.isnan(before) and math.isnan(after):
        return True
    with contextlib.suppress(Exception):
        if before == after:
            return True
    return repr(before) == repr(after)


def pair(before: Any, after: Any) -> tuple[str, str]:
    """Both values shown with their types (two strings: quoted, and when long as a window
    around their first difference)."""
    if isinstance(before, str) and isinstance(after, str) and max(len(before), len(after)) > 60:
        from vfcheck._traces.normalize import trace_changes

        (_, was, now), *_ = trace_changes(before, after) or [("", shown(before), shown(after))]
        return was, now
    if isinstance(before, str) and isinstance(after, str):  # quoted: plainly two strings
        return shown(before), shown(after)
    return typed(before), typed(after)


def typed(value: Any) -> str:
    """`(10, 30) (tuple)`: a value shown with its type."""
    return f"{shown(value)} ({type(value).__name__})"


def fields_of(data: Any) -> dict[str, Any]:
    """A pydantic model's field values (`exclude=True` ones too) and its extras."""
    values = {name: getattr(data, name) for name in type(data).model_fields}
    return {**values, **(getattr(data, "model_extra", None) or {})}


def excluded_fields(data_type: type) -> set[str]:
    return {name for name, info in getattr(data_type, "model_fields", {}).items()
            if info.exclude}


def data_changes(before: Any, after: Any) -> list[Change]:
    """How the served task's data (`after`) differs from the in-process one (`before`):
    each value that changed, vanished or appeared, by its path down nested dicts, lists
    and models (`data.entry.metadata.size`), and the data type."""
    changes = []
    if type(before) is not type(after):
        changes.append(Change("data type", type(before).__name__, type(after).__name__,
                              "the server builds the taskset's declared data type"))
    was, now = fields_of(before), fields_of(after)
    declared = getattr(type(after), "model_fields", {})
    excluded = excluded_fields(type(before))
    for name in [*was, *(n for n in now if n not in was)]:
        path = f"data.{name}"
        if name not in now:
            changes.append(Change(path, shown(was[name]), ABSENT,
                                  f"{type(after).__name__} has no such field"))
        elif name not in was:
            changes.append(Change(path, ABSENT, shown(now[name])))
        elif not same(was[name], now[name]):
            why = "excluded from the dump: exclude=True" if name in excluded else (
                "" if name in declared else "an extra field")
            if why:
                changes.append(Change(path, *pair(was[name], now[name]), why))
                continue
            loose = name not in declared or not tells_tuple_apart(declared[name].annotation)
            changes += value_changes(path, was[name], now[name], loose)
    return changes


def value_changes(path: str, before: Any, after: Any, loose: bool) -> list[Change]:
    """Where two values differ, down their dicts, equal-length lists and tuples, and
    models of one type. A tuple that comes back a list with equal items is `equivalent`
    when the declared type is `loose` (names no tuple: `dict[str, Any]`, `Any`)."""
    if same(before, after):
        return []
    if isinstance(before, dict) and isinstance(after, dict) and type(before) is type(after):
        changes = []
        for key in [*before, *(k for k in after if k not in before)]:
            where = f"{path}.{key}" if isinstance(key, str) and key.isidentifier() \
                else f"{path}[{key!r}]"
            if key not in after:
                changes.append(Change(where, typed(before[key]), ABSENT))
            elif key not in before:
                changes.append(Change(where, ABSENT, typed(after[key])))
            else:
                changes += value_changes(where, before[key], after[key], loose)
        return changes
    if isinstance(before, list | tuple) and isinstance(after, list | tuple) \
            and len(before) == len(after):
        inner = [c for i, (x, y) in enumerate(zip(before, after, strict=True))
                 for c in value_changes(f"{path}[{i}]", x, y, loose)]
        if type(before) is type(after):
            return inner
        if loose and all(c.equivalent for c in inner):
            return [*inner, Change(path, *pair(before, after), JSON_EQUIVALENT, True)]
        return [*inner, Change(path, *pair(before, after))]
    if type(before) is type(after) and hasattr(type(before), "model_fields"):
        fields = fields_of(before), fields_of(after)
        if set(fields[0]) == set(fields[1]):
            return [c for name in fields[0]
                    for c in value_changes(f"{path}.{name}", fields[0][name], fields[1][name],
                                           loose)]
    return [Change(path, *pair(before, after))]


JSON_EQUIVALENT = ("JSON-equivalent: the declared type does not tell a tuple from a list, so "
                   "the served value is what JSON carries")


def tells_tuple_apart(annotation: Any) -> bool:
    """Whether a declared field type names a tuple anywhere (`tuple[int, int]`,
    `dict[str, tuple[int, ...]]`): then pydantic rebuilds one, and a list it let through
    is a difference env code may see."""
    if annotation is tuple or typing.get_origin(annotation) is tuple:
        return True
    return any(tells_tuple_apart(arg) for arg in typing.get_args(annotation))


def config_changes(before: dict[str, Any], after: dict[str, Any]) -> list[Change]:
    """The task config's differences (both dumped), field by field."""
    from vfcheck._traces.normalize import trace_changes

    why = "the server wraps every task in the taskset's config.task"
    return [Change(f"config.{path}" if path != "(root)" else "config", was, now, why)
            for path, was, now in trace_changes(before, after)]


def describe(changes: Sequence[Change]) -> str:
    """`data.prompt '...' in-process, '...' served (why); ...` for the first changes."""
    parts = [f"{c.path} {c.before} in-process, {c.after} served" + (f" ({c.why})" if c.why
                                                                   else "")
             for c in changes[:SHOWN_CHANGES]]
    more = len(changes) - SHOWN_CHANGES
    return "; ".join(parts) + (f"; +{more} more (details.changes)" if more > 0 else "")


def episode_verdict(ours: list[Any], twice: list[Any], theirs: list[Any],
                    new_errors: list[str], index: int) -> tuple[Outcome, str, list[str]]:
    """The outcome and what was observed, given the normalised traces of two in-process
    plays (`ours`, `twice`) and the served one, and the errors only the served play
    recorded. What differs between the two in-process plays (a latency metric) is not
    compared; if the served play differs elsewhere while the env is not deterministic, it
    could be the same cause: not a verdict, unless the served rollout errs."""
    from vfcheck._traces.normalize import trace_changes

    moved = {path for path, _, _ in trace_changes({"traces": ours}, {"traces": twice})}
    diff = [f"{path}: {was} -> {now}" for path, was, now
            in trace_changes({"traces": ours}, {"traces": theirs}) if path not in moved]
    problems = [f"the served rollout recorded {e}, which the in-process play did not"
                for e in new_errors[:2]]
    if diff and (problems or not moved):
        problems.append("the served trace differs from the in-process one after "
                        f"normalisation: {'; '.join(diff[:SHOWN_CHANGES])}"
                        + (f" (+{len(diff) - SHOWN_CHANGES} more)" if len(diff) > SHOWN_CHANGES
                           else ""))
    if problems:
        return "failed", "; ".join(problems), diff
    unstable = ", ".join(sorted(moved)[:3]) + (f" (+{len(moved) - 3} more)" if len(moved) > 3
                                               else "")
    if diff:
        return ("skipped", f"the env is not deterministic (two in-process plays differ at "
                f"{unstable}) and the served play differs elsewhere too ({'; '.join(diff[:2])}), "
                f"which may be the same cause: not compared (see determinism.replay[{index}])",
                diff)
    return "passed", f"the episode equals the in-process one ({len(theirs)} trace(s), " \
                     "normalised" + (f"; not compared: {unstable}, which differ between two "
                                     "in-process plays" if moved else "") + ")", diff


def served_errors(episode: Any) -> list[str]:
    """Every error a served episode recorded, as `Type: message` lines written as
    `EpisodeResult.errors` writes the in-process play's (a traceback in a message condensed),
    so that the same error is the same line on both sides (deepwiki's harness exit, its
    stderr whole against the in-process play's condensed line, was an error "the in-process
    play did not" record)."""
    found = [f"{e.type}: {condense(e.message)}" for e in episode.errors]
    for trace in episode.traces:
        found += [f"{e.type}: {condense(e.message)}" for e in trace.errors]
    return found


def validation_problems(error: Any, sent: dict[str, Any] | None) -> str:
    """A pydantic ValidationError as `data.answer: Field required (sent: (absent))`."""
    errors = getattr(error, "errors", None)
    if not callable(errors):
        return str(error)
    parts = []
    for e in errors():
        loc = ".".join(str(p) for p in e.get("loc") or ())
        value = (sent or {}).get(str((e.get("loc") or ("",))[0]), ABSENT) if loc else ABSENT
        parts.append(f"data.{loc}: {e.get('msg')} (sent: "
                     f"{value if value == ABSENT else shown(value)})" if loc
                     else str(e.get("msg")))
    return "; ".join(parts)


def run_problem(reply: str, end_wait: float) -> str | None:
    """What is wrong with how the server answered a cancelled run (None: the cancellation)."""
    if reply == "cancelled":
        return None
    if reply == "episode":
        return ("the rollout did not end on the cancel: the server went on and answered the run "
                "with a finished episode instead of the cancellation")
    if reply.startswith("error: "):
        return ("the run was answered with an error instead of the cancellation: "
                + reply.removeprefix("error: "))
    return f"the rollout had not ended {end_wait:g}s after the cancel ({reply})"
