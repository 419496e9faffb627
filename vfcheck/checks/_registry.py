"""The check registry: a family is declared once, a check is one function registered with
its spec.

    family("gold", order=40, summary="`Task.validate` accepts the task's own reference ...")

    @check("gold", family="gold", scope="task", budget=2.5, contract=..., fails_when=...,
           why=...)
    async def gold(ctx: CheckContext, task: Any) -> Finding: ...

The worker runs whatever is registered (`REGISTRY.units`, `spec.run`) and names no family;
the front ends read the same specs (`vfcheck list-checks`, the docs' catalogue, pytest
items), so a check exists in exactly one place: its family's module. Report order is the
families' `order`, then registration order within a family. Nothing here imports
verifiers.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from vfcheck._shared.findings import Finding

Scope = Literal["env", "task", "sample"]
"""`env`: one finding per env; `task`: one per task; `sample`: one per sampled task (these
play episodes)."""
Phase = Literal["gate", "run", "last", "after"]
"""`gate`: runs first and decides whether anything else runs (the env loads); `run`: with the
runners open;
`last`: once every `run` check is done, the runners still open (a check whose measurement the
others' work would blur, or slow them: `soak.memory`);
`after`: once every `run` and `last` check is done and verifiers has closed its runners."""
Unit = tuple[str, int | None]
"""A check on a task (`("gold", 1)`), or on the env (`("load", None)`)."""
Stage = Literal["setup", "validate", "finalize", "scoring", "episode"]
"""Where a task's env code runs: `Task.setup`; `Task.validate` (gold); `Task.finalize`;
scoring (`@vf.reward`, `@vf.metric`, judges, `Task.score`); the episode itself (`@vf.stop`,
`@vf.intercept`, tools, the harness). A hook that blocks in a stage blocks every check of
the task that runs that stage (`vfcheck._isolation.supervisor`)."""
EPISODE_STAGES: tuple[Stage, ...] = ("setup", "episode", "finalize", "scoring")
"""What every played episode runs (verifiers' rollout: setup, the turns, finalize, score)."""
ALL_STAGES: tuple[Stage, ...] = ("setup", "validate", "finalize", "scoring", "episode")
CheckFn = Callable[[Any, Any], Awaitable["Finding"]]
"""`fn(ctx, task)`: `ctx` is the run's `vfcheck.checks._context.CheckContext`, `task` the
verifiers Task, or None for an env-scoped check."""

DEADLINE_SLACK = 10.0
"""Seconds added to every unit's deadline (process scheduling, a loaded CI machine)."""


@dataclass(frozen=True)
class Family:
    """A check family as the reports show it: its name (what `--checks` takes), its place in
    report order, and the one line the README and the checks reference give it."""

    name: str
    order: float
    summary: str
    module: str = ""
    """The module that declared it (a built-in family's, or a user's plug-in)."""


USER_ORDER = 900.0
"""Where a family that gives no `order` goes: after the built-in families that play
episodes, before `hygiene` (which looks at what every other check left behind)."""


@dataclass(frozen=True)
class CheckSpec:
    """A registered check: its id, family, scope and the three sentences the reports quote
    (contract, fails when, why), with how its deadline is sized."""

    id: str
    family: str
    scope: Scope
    contract: str
    """The contract in one sentence (failure messages quote it)."""
    fails_when: str
    why: str
    fn: CheckFn | None = field(default=None, compare=False, repr=False)
    phase: Phase = "run"
    budget: float = 2.0
    """The unit's deadline in multiples of the per-check timeout (a `gold` unit sets the
    task up, then validates, each bounded by the timeout; `preview` plays three episodes)."""
    min_timeout: float = 0.0
    """A floor under the per-check timeout for this check's deadline, for a check whose
    work is loading the env (its modules' import, which a machine under load makes slow):
    `--load-timeout`, when given, replaces both."""
    extra_seconds: float = 0.0
    """Seconds added to the deadline whatever the timeout (a fixed settle time)."""
    blocked_by_setup: bool = True
    """A task-bound check that is skipped as blocked when the task's `setup` failed
    (verifiers runs `Task.setup` before every check and episode: same cause)."""
    prepare: Callable[[Any], Awaitable[None] | None] | None = field(
        default=None, compare=False, repr=False)
    """Called when the worker starts, before it imports verifiers, for a check this run will
    run: work that overlaps the worker's import and the env's load (`determinism.load` starts
    its other interpreter). What it returns, if anything, is awaited before the import: that
    the work has started (the import holds the event loop for seconds)."""
    runs: tuple[Stage, ...] | None = None
    """The stages of a task's env code this check runs (None: every episode stage for a
    `sample` check, every stage for a `task` check, none for an `env` check)."""

    @property
    def stages(self) -> tuple[Stage, ...]:
        if self.runs is not None:
            return self.runs
        return {"env": (), "sample": EPISODE_STAGES, "task": ALL_STAGES}[self.scope]

    def timeout(self, timeout: float, load_timeout: float | None = None) -> float:
        """The timeout this check's work gets at `--timeout` and `--load-timeout`: the
        load timeout for a check with a load floor (`min_timeout`) when given, else the
        longer of the timeout and the floor."""
        if self.min_timeout and load_timeout is not None:
            return load_timeout
        return max(timeout, self.min_timeout)

    def deadline(self, timeout: float, load_timeout: float | None = None) -> float:
        """Seconds this check's unit may take, at `--timeout` and `--load-timeout`."""
        return (self.budget * self.timeout(timeout, load_timeout) + self.extra_seconds
                + DEADLINE_SLACK)

    async def run(self, ctx: Any, task: Any) -> Finding:
        assert self.fn is not None, f"check {self.id!r} has no function"
        from vfcheck.checks._unread_judge import unless_judge_unread
        return unless_judge_unread(await self.fn(ctx, task))


class Registry:
    """Every declared family and registered check, in report order."""

    def __init__(self) -> None:
        self._specs: dict[str, CheckSpec] = {}
        self._families: dict[str, Family] = {}
        self.plugin_errors: list[str] = []
        """One line per check plug-in that could not be loaded (`vfcheck.checks`' discovery):
        the front ends refuse to run with them, as with a bad option."""
        self.early: list[Callable[[Any], Awaitable[Finding | None]]] = []
        """Checks of the run's inputs a family runs before anything starts (`early`): a
        finding ends the env's run there (an env arg the env's config rejects)."""
        self.modes: dict[str, Callable[[dict[str, Any]], None]] = {}
        """The worker's other jobs a family declares (`python -m vfcheck._isolation.worker
        --NAME`, spec on stdin): a second interpreter's load, say (`worker_mode`)."""

    def declare(self, declared: Family) -> Family:
        if (known := self._families.get(declared.name)) is not None:
            raise ValueError(f"check family {declared.name!r} is declared twice: in "
                             f"{known.module or '?'} and {declared.module or '?'}")
        self._families[declared.name] = declared
        return declared

    def register(self, spec: CheckSpec) -> CheckSpec:
        if spec.id in self._specs:
            raise ValueError(f"check {spec.id!r} is registered twice")
        if spec.family not in self._families:
            raise ValueError(
                f"check {spec.id!r} names family {spec.family!r}, which no module declares: "
                f"write `family({spec.family!r}, summary=...)` above its checks")
        self._specs[spec.id] = spec
        return spec

    def family(self, name: str) -> Family:
        return self._families[name]

    def _ordered(self) -> list[CheckSpec]:
        rank = {name: i for i, name in enumerate(self._families)}
        specs = list(self._specs.values())  # registration order breaks ties
        return sorted(specs, key=lambda s: (self._families[s.family].order, rank[s.family]))

    def __getitem__(self, check_id: str) -> CheckSpec:
        return self._specs[check_id]

    def __contains__(self, check_id: object) -> bool:
        return check_id in self._specs

    def __iter__(self) -> Iterator[CheckSpec]:
        return iter(self._ordered())

    def __len__(self) -> int:
        return len(self._specs)

    @property
    def gate(self) -> str:
        """The check that decides whether anything else runs (the `gate` phase's)."""
        return next(spec.id for spec in self if spec.phase == "gate")

    @property
    def families(self) -> tuple[str, ...]:
        """The families that have checks, in report order."""
        return tuple(dict.fromkeys(spec.family for spec in self))

    @property
    def declared(self) -> tuple[Family, ...]:
        """Every declared family, in report order (one without checks too)."""
        return tuple(sorted(self._families.values(), key=lambda f: f.order))

    def select(self, families: Sequence[str] | None) -> tuple[CheckSpec, ...]:
        """The checks of `families` (exact names; the `gate` phase always runs: the rest
        needs it). Raises ValueError naming an unknown family."""
        if not families:
            return tuple(self)
        unknown = sorted(set(families) - set(self.families))
        if unknown:
            raise ValueError(
                f"unknown check famil{'y' if len(unknown) == 1 else 'ies'} "
                f"{', '.join(unknown)}; known: {', '.join(self.families)}"
            )
        wanted = set(families)
        return tuple(spec for spec in self if spec.family in wanted or spec.phase == "gate")

    def families_of(self, items: Sequence[str], families: Sequence[str] | None
                    ) -> list[str] | None:
        """The families of `families` (None: all) that the item names `items` (`gold[1]`,
        `gold`, `exploit.empty`: pytest's `--vf-only`) can be in: a run of `golden[0]` need
        not play what the other families need. `families` itself when a name is no check
        id (the front end says it names no item)."""
        found: list[str] = []
        for item in items:
            name = item.split("[", 1)[0]
            if name in self:
                found.append(self[name].family)
            else:
                return list(families) if families else None
        narrowed = [f for f in self.families if f in found and (not families or f in families)]
        return narrowed or (list(families) if families else None)

    def units(self, families: Sequence[str] | None, tasks: Sequence[int],
              sample: Sequence[int]) -> list[Unit]:
        """Every (check, task) unit of a run, in report order: the one place units are
        computed (the worker runs them, the supervisor settles the missing ones, pytest
        collects them)."""
        units: list[Unit] = []
        for spec in self.select(families):
            if spec.scope == "env":
                units.append((spec.id, None))
            else:
                units += [(spec.id, i) for i in (tasks if spec.scope == "task" else sample)]
        return units


REGISTRY = Registry()
"""The process's one registry: every family and check discovered (`vfcheck.checks`)."""


def family(name: str, *, summary: str, order: float = USER_ORDER) -> Family:
    """Declare check family `name` (its checks name it: `@check(..., family=name)`), at
    `order` in reports (the built-in families use 10-150; hygiene 1000)."""
    module = sys._getframe(1).f_globals.get("__name__", "")
    return REGISTRY.declare(Family(name, float(order), summary, module))


def check(check_id: str, *, family: str, scope: Scope, contract: str, fails_when: str,
          why: str, phase: Phase = "run", budget: float = 2.0, min_timeout: float = 0.0,
          extra_seconds: float = 0.0, blocked_by_setup: bool = True,
          prepare: Callable[[Any], Awaitable[None] | None] | None = None,
          runs: tuple[Stage, ...] | None = None,
          ) -> Callable[[CheckFn], CheckFn]:
    """Register the decorated `async def fn(ctx, task) -> Finding` as check `check_id`."""

    def register(fn: CheckFn) -> CheckFn:
        REGISTRY.register(CheckSpec(
            check_id, family, scope, contract, fails_when, why, fn=fn, phase=phase,
            budget=budget, min_timeout=min_timeout, extra_seconds=extra_seconds,
            blocked_by_setup=blocked_by_setup, prepare=prepare, runs=runs))
        return fn

    return register


def early(fn: Callable[[Any], Awaitable[Finding | None]]) -> Callable[
        [Any], Awaitable[Finding | None]]:
    """Register `async def fn(ctx) -> Finding | None` to run before the env loads."""
    REGISTRY.early.append(fn)
    return fn


def worker_mode(name: str) -> Callable[[Callable[[dict[str, Any]], None]], Callable[
        [dict[str, Any]], None]]:
    """Register the decorated `fn(spec)` as the worker's `--NAME` mode."""

    def register(fn: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
        REGISTRY.modes[name] = fn
        return fn

    return register


def spec_of(check_id: str) -> CheckSpec:
    """The registered spec of `check_id` (for messages that quote its contract)."""
    return REGISTRY[check_id]
