"""The check catalogue: what each check asserts, why it matters, and its scope.

A check is data here; the functions that produce its findings live in one module per
family (`load`, `validate`, `episodes`, `lifecycle`, `hygiene`). The registry is what
`vfcheck list-checks` prints and what both front ends iterate, so a check exists in
exactly one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Scope = Literal["env", "task", "sample"]
"""`env`: one finding per env; `task`: one per task; `sample`: one per sampled task."""


@dataclass(frozen=True)
class CheckSpec:
    id: str
    family: str
    scope: Scope
    contract: str
    """The contract in one sentence (failure messages quote it)."""
    fails_when: str
    why: str


CATALOGUE: tuple[CheckSpec, ...] = (
    CheckSpec(
        "load", "load", "env",
        "the id resolves to exactly one taskset whose load() yields tasks with unique keys, "
        "offline",
        "the id does not resolve to exactly one taskset, the module fails to import, load() "
        "raises or reaches the network, it yields no task, or task keys repeat",
        "every other check, and every training run, starts from load()",
    ),
    CheckSpec(
        "determinism.load", "determinism", "env",
        "two loads in fresh interpreters give the same tasks in the same order",
        "two loads with different PYTHONHASHSEED give different Task.hash sequences",
        "resume, replay and train/eval splits address tasks by position and hash",
    ),
    CheckSpec(
        "setup", "setup", "task",
        "Task.setup completes in a fresh runtime within the timeout",
        "Task.setup raises, or outlives the timeout (also when it blocks the event loop)",
        "a task whose setup fails can never be rolled out",
    ),
    CheckSpec(
        "gold", "gold", "task",
        "Task.validate accepts the task's own reference solution",
        "Task.validate returns False (or anything but True, False or None), raises or times "
        "out (None means no gold check: skipped)",
        "a task its own reference cannot solve trains the model on noise",
    ),
    CheckSpec(
        "noop", "noop", "task",
        "finalising and scoring the untouched task gives a reward below 1.0",
        "the untouched task scores >= 1.0, or finalize/scoring raises (no rewards: skipped)",
        "a task that passes with no work rewards doing nothing",
    ),
    CheckSpec(
        "episode", "episode", "sample",
        "one episode against the default script records no env or task error, finite "
        "rewards and metrics, and a trace that survives a JSON round trip",
        "the episode records an error, a non-finite reward or metric, a @vf.reward or "
        "@vf.metric hook returns a non-number or a @vf.stop hook a non-bool, or the trace "
        "does not round-trip through JSON",
        "an episode that breaks on a well-behaved model breaks on every model",
    ),
    CheckSpec(
        "lifecycle", "lifecycle", "sample",
        "the trace notifies boot -> setup -> agent -> (preview, call recorded)* -> finalize "
        "-> scoring, each boundary once, with clocks that never go back",
        "a stage ends before it starts, a timestamp goes back, a boundary is notified twice "
        "or not at all, a call is recorded without its preview, or a preview remains",
        "live dashboards, trainers and resume read the trace through these notifies",
    ),
    CheckSpec(
        "preview", "preview", "sample",
        "a model request that fails, times out or is cancelled leaves no preview behind",
        "after an upstream 500 the failed call is not recorded or a preview remains; after a "
        "hang ended by the agent timeout the stop is not the timeout or trace.pending is not "
        "empty; after a cancel mid-request trace.pending is not empty",
        "a stale preview shows watchers a turn that never happened",
    ),
    CheckSpec(
        "robustness", "robustness", "sample",
        "env code survives empty, whitespace, huge and malformed model output",
        "for an empty, whitespace or 100 kB reply, a malformed body, a cut stream or a tool "
        "call with invalid JSON arguments, env code raises, a reward is not finite, or the "
        "runner fails",
        "real models produce all of these; one of them must not crash a training run",
    ),
    CheckSpec(
        "determinism.replay", "determinism", "sample",
        "the same task played twice against the same script gives the same normalised trace",
        "two plays differ after normalisation (ids, times, ports, secrets scrubbed)",
        "golden traces and reproducible evals need a deterministic env",
    ),
    CheckSpec(
        "golden", "golden", "sample",
        "the task's normalised trace against the script equals its golden trace "
        "(<golden dir>/<env>/<task>.json)",
        "the normalised trace differs from the golden file (the diff names the message and "
        "field), the golden file is not valid JSON, or it is missing under "
        "--vf-golden-strict; a task whose two plays differ is reported non-deterministic "
        "instead (missing without strict: skipped, with the command that records it)",
        "a changed prompt, tool or reward shows as a readable diff before a training run "
        "finds out",
    ),
    CheckSpec(
        "golden.unused", "golden", "env",
        "every golden file in the env's golden folder belongs to one of its tasks",
        "under --vf-golden-strict, a golden file names no task of the env (an update "
        "removes it; without strict it is reported as skipped; unknowable when -n limits "
        "the tasks loaded)",
        "a stale golden trace hides that a task was renamed or removed",
    ),
    CheckSpec(
        "hygiene.processes", "hygiene", "env",
        "env code leaves no process running after its hooks and episodes finish",
        "a process below the check worker (a child, or an orphan it adopted) still runs once "
        "every check is done and verifiers has closed its runners (which stops the harness "
        "programs and tool servers it started); vfcheck then kills it",
        "a hook that starts a process and never reaps it leaks one per task and episode, "
        "until a training machine runs out of processes or memory",
    ),
)

FAMILIES: tuple[str, ...] = (
    "load", "determinism", "setup", "gold", "noop", "episode", "lifecycle", "preview",
    "robustness", "golden", "hygiene",
)
"""Env-suite families, in the order the report lists them."""

BY_ID: dict[str, CheckSpec] = {spec.id: spec for spec in CATALOGUE}


def select(families: list[str] | None) -> tuple[CheckSpec, ...]:
    """The checks of `families` (exact names; `load` always runs: the rest needs it)."""
    if not families:
        return CATALOGUE
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        raise ValueError(
            f"unknown check famil{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; "
            f"known: {', '.join(FAMILIES)}"
        )
    wanted = {"load", *families}
    return tuple(spec for spec in CATALOGUE if spec.family in wanted)
