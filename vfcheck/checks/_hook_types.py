"""Hooks that return the wrong type: name the hook, what it returned, and the rule it broke.

What verifiers 0.4.0 does with each (measured on `fixtures/vfc_broken_hook_types.py`):

- `@vf.reward` / `@vf.metric`: `Task.score` passes each result through `float()`
  (`Trace.record_reward`, `record_metric`). A non-numeric string or None raises inside the
  scoring boundary, so the trace records `TaskError: task T scoring: ValueError: could not
  convert string to float: 'yes'` — naming neither the hook nor the rule; a numeric string
  (`'1.0'`) is coerced silently.
- `@vf.stop` (trace boundary): anything but a bool raises `TaskError: @stop must return
  bool, got NoneType` before the first model call, naming no hook.
- `Task.validate`: vf-validate classifies anything but True, False or None as `invalid`,
  indistinguishable from a reference the task rejects.
- `Task.setup` / `Task.finalize`: the return value is discarded; verifiers does not care.

So vfcheck probes the scoring and stop hooks itself (verifiers' own `invoke`, on a copy of
a trace) to say which hook returned what, and reads verifiers' messages for the rest.
"""

from __future__ import annotations

import inspect
import numbers
import re
from collections.abc import Mapping
from typing import Any

SCORE_RULE = "@vf.reward and @vf.metric hooks return a number (or a mapping of names to numbers)"
STOP_RULE = "@vf.stop hooks return a bool"
VALIDATE_RULE = "Task.validate returns True, False or None"

_NOT_A_FLOAT = (
    re.compile(r"could not convert string to float: (?P<value>.*)$"),
    re.compile(r"float\(\) argument must be a string or a (?:real )?number, not '(?P<type>\w+)'"),
)
_STOP = re.compile(r"@stop must return bool, got (?P<type>\w+)")


def describe(value: Any) -> str:
    """`'yes' (str)`, `None (NoneType)`: a returned value and its type, short."""
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{text} ({type(value).__name__})"


def number_problem(result: Any) -> str | None:
    """Why a reward/metric result is not what `Task.score` expects, or None if it is."""
    if isinstance(result, Mapping):
        bad = {k: v for k, v in result.items() if not isinstance(v, numbers.Real)}
        if bad:
            key, value = next(iter(bad.items()))
            return f"a mapping whose {key!r} is {describe(value)}"
        return None
    if isinstance(result, numbers.Real):
        return None
    return describe(result)


def explain_error(text: str) -> tuple[str, str] | None:
    """What verifiers' own error text says a hook returned (`a scoring hook returned 'yes'
    (str), not a number`) and the rule it broke; None if the error is not a hook's wrong
    return type."""
    if found := _STOP.search(text):
        return f"a @vf.stop hook returned {_typed(found['type'])}, not a bool", STOP_RULE
    for pattern in _NOT_A_FLOAT:
        if found := pattern.search(text):
            value = found.groupdict().get("value")
            got = f"{value} (str)" if value else _typed(found["type"])
            return f"a scoring hook returned {got}, not a number", SCORE_RULE
    return None


def _typed(type_name: str) -> str:
    return "None (NoneType)" if type_name == "NoneType" else f"a {type_name}"


def untouched_trace(task: Any) -> Any:
    """A fresh trace of `task` with no agent turn (what vf-validate's noop check scores)."""
    import verifiers.v1 as vf
    from verifiers.v1.state import state_cls

    return vf.Trace(
        task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key,
                          hash=task.hash),
        state=state_cls(type(task))(),
        agent=vf.AgentInfo(config=vf.AgentConfig(), name="vfcheck-probe", trainable=False),
    )


async def probe(task: Any, trace: Any,
                kinds: tuple[str, ...] = ("metric", "reward", "stop")) -> list[str]:
    """Call the task's `@vf.metric`, `@vf.reward` and trace-boundary `@vf.stop` hooks the
    way verifiers does (`invoke` with the task data and the trace; hooks that need a
    runtime are left out, as `Task.score(trace, None)` does) on a deep copy of `trace`, and
    say which returned the wrong type: `@vf.reward echoed returned 'yes' (str), not a
    number`. A hook that raises is not this probe's business (verifiers records that)."""
    from verifiers.v1.session import hook_boundary
    from verifiers.v1.trace import Trace
    from verifiers.v1.utils.decorators import invoke

    copy = trace.model_copy(deep=True)
    problems: list[str] = []
    for kind in [k for k in ("metric", "reward") if k in kinds]:
        for fn in task.hooks(kind):
            param = inspect.signature(fn).parameters.get("runtime")
            if param is not None and param.default is inspect.Parameter.empty:
                continue
            try:
                result = invoke(fn, {"task": task.data, "trace": copy})
                if inspect.isawaitable(result):
                    result = await result
            except Exception:  # noqa: BLE001 - a raising hook is recorded by verifiers
                continue
            if (bad := number_problem(result)) is not None:
                problems.append(f"@vf.{kind} {fn.__name__} returned {bad}, not a number")
    for fn in task.hooks("stop") if "stop" in kinds else []:
        try:
            if hook_boundary(fn, allow_trace=True) is not Trace:
                continue
            result = invoke(fn, {Trace: copy})
            if inspect.isawaitable(result):
                result = await result
        except Exception:  # noqa: BLE001 - as above
            continue
        if not isinstance(result, bool):
            problems.append(f"@vf.stop {fn.__name__} returned {describe(result)}, not a bool")
    return problems


def rules_of(problems: list[str]) -> str:
    """The rules the probed problems broke, for the message's contract."""
    rules = []
    if any("@vf.reward" in p or "@vf.metric" in p for p in problems):
        rules.append(SCORE_RULE)
    if any("@vf.stop" in p for p in problems):
        rules.append(STOP_RULE)
    return "; ".join(rules)
