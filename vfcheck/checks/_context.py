"""What a check function gets: one env's run, with its resources opened on first use.

The worker makes one `CheckContext` per env run and hands it to every registered check
(`fn(ctx, task)`). It holds the run's options, the loaded env and tasks (the `load` check
fills them), and the shared resources the families need, each created once, by the family
module that owns it, when a check first asks (`shared`, `memo`): the episode lab (runners
inside `env.serving()` with the scripted model), the validate config. `async with ctx:`
closes the runners.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from vfcheck._options.resolved import CheckOptions
from vfcheck._shared.findings import Finding, Outcome, TaskId

T = TypeVar("T")


class CheckContext:
    """What every check function gets (`fn(ctx, task)`): the env's id, its loaded tasks and
    the run's options, `ctx.finding(...)` to write a finding in vfcheck's words, and the
    run's shared resources (the episode lab: `vfcheck.checks.play_reply`)."""

    def __init__(self, env_id: str, spec: dict[str, Any], options: CheckOptions) -> None:
        self.env_id = env_id
        self.spec = spec
        """The worker spec: the resolved options (`spec["options"]`) and this run's state,
        as `vfcheck._isolation.supervisor` writes it."""
        self.options = options
        """The options as the front end resolved them (the worker reads them from the
        spec)."""
        self.timeout: float = self.options.timeout
        self.harness: Literal["env", "fast"] = self.options.harness
        self.env_args: dict[str, Any] = self.options.env_args
        self.num_tasks: int | None = self.options.num_tasks
        self.script: str | None = self.options.script
        self.seed: int = self.options.played_seed
        """The seed that plays: the mock's, the golden header's."""
        self.skip: set[tuple[str, int | None]] = {(c, i) for c, i in spec.get("skip", [])}
        # filled by the `load` check
        self.env: Any = None
        self.tasks: list[Any] = []
        self.tiers: list[Any] = []
        self.verifiers_version = ""
        self.extras: dict[str, Any] = {}
        self.outcomes: dict[tuple[str, int | None], str] = {}
        """Each unit's outcome as this worker emitted it (`("gold", 1)` -> `passed`): the
        evidence a later check may cite (gold for the reward probes, episode for their skips).
        Units another worker ran are absent: a check reads it as "not known"."""
        """Per-family state started early (e.g. `determinism.load`'s other interpreter)."""
        self._stack = contextlib.AsyncExitStack()
        self._shared: dict[str, Any] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def __aenter__(self) -> CheckContext:
        await self._stack.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self._stack.__aexit__(*exc)
        finally:
            for pending in self.extras.values():  # e.g. a load in another interpreter
                if isinstance(pending, asyncio.Future) and not pending.done():
                    pending.cancel()
                    with contextlib.suppress(BaseException):
                        await pending

    # -- the run

    @property
    def loaded(self) -> bool:
        return self.env is not None

    @functools.cached_property
    def task_of(self) -> dict[int, Any]:
        return {t.data.idx: t for t in self.tasks}

    @property
    def sample(self) -> list[int]:
        """The tasks the episode families play: the first `--sample` of the taskset."""
        return [t.data.idx for t in self.tasks[: self.options.sample]]

    @functools.cached_property
    def identities(self) -> dict[int, tuple[str, str]]:
        """Each task's golden identity `(identity, source)` (`vfcheck._traces.golden`)."""
        from vfcheck._traces.golden import task_identity

        return {t.data.idx: task_identity(t) for t in self.tasks}

    @functools.cached_property
    def container_roles(self) -> list[str]:
        """Roles whose harness needs a container (`Harness.NEEDS_CONTAINER`): no episodes."""
        from verifiers.v1.utils.loaders import harness_class

        found = []
        for tier in self.tiers:
            try:
                needs = bool(harness_class(tier.harness).NEEDS_CONTAINER)
            except Exception:  # noqa: BLE001 - an unloadable harness fails the episodes instead
                needs = False
            if needs:
                found.append(f"role {tier.role!r} harness {tier.harness!r} needs a container "
                             "runtime (NEEDS_CONTAINER)")
        return found

    def where(self, task: Any) -> str:
        """`env 'x', task 1 (key)`: how messages name what a finding is about."""
        if task is None:
            return f"env {self.env_id!r}"
        return f"env {self.env_id!r}, {task_id(task).label()}"

    def finding(self, check: str, task: Any, outcome: Outcome, observed: str,
                **details: Any) -> Finding:
        """A finding of `check` on `task` (None: the env) whose message starts with where,
        and quotes the contract when the outcome is `failed`."""
        from vfcheck.checks._registry import spec_of

        spec = spec_of(check)
        message = f"{self.where(task)}: {observed}"
        if outcome == "failed":
            message = f"{self.where(task)}: {check} failed — {observed}. Contract: " \
                      f"{spec.contract}."
        return Finding(check, spec.family, task_id(task) if task is not None else None,
                       outcome, message, details)

    # -- resources, opened on first use

    @functools.cached_property
    def golden_book(self) -> Any:
        """The env's golden folder as this run treats it (`golden` and `golden.unused`)."""
        from vfcheck._traces.golden import GoldenBook

        options = self.options
        return GoldenBook(
            Path(options.golden_dir or "golden").resolve(), self.env_id,
            update=options.golden_update, strict=options.golden_strict,
            record=options.record_golden_command(
                self.env_id, pytest=self.spec.get("front_end") == "pytest"),
            write_root=Path(options.golden_write_root),
        )

    def base_policy(self) -> Any:
        """The user's script as the mock's base policy (None: the built-in default)."""
        script = self.script_file
        return None if script is None else script.policy(self.seed)

    def http_answers(self) -> list[Any]:
        """The script's `[[http]]` answers to env code's own requests (none without one)."""
        script = self.script_file
        return [] if script is None else list(script.http_answers())

    @functools.cached_property
    def script_file(self) -> Any:
        """The user's script (`vfcheck._model.script.Script`), or None."""
        if not self.script:
            return None
        from vfcheck._model.script import Script

        return Script.load(Path(self.script))

    @property
    def script_tools(self) -> frozenset[str]:
        """The tools the user's script calls (a harness built-in keeps its role on the env
        tier)."""
        script = self.script_file
        return frozenset() if script is None else frozenset(script.tool_names())

    def script_oracle(self, task: Any) -> str | None:
        """The script's `oracle` reply for `task`, if it gives one."""
        script = self.script_file
        if script is None or not hasattr(script, "oracle_for"):
            return None
        from vfcheck._model import TaskRef

        oracle: str | None = script.oracle_for(TaskRef(task.data.idx, str(task.key)))
        return oracle

    def script_judge_reply(self, task: Any) -> str | None:
        """The raw judge reply the script gives for `task` (`judge_reply`), if any: the
        judge's own format, in which the checks that play verdicts on purpose say them."""
        script = self.script_file
        if script is None or not hasattr(script, "judge_reply_for"):
            return None
        from vfcheck._model import TaskRef

        reply: str | None = script.judge_reply_for(TaskRef(task.data.idx, str(task.key)))
        return reply

    async def shared(self, key: str,
                     opener: Callable[[CheckContext, contextlib.AsyncExitStack], Awaitable[T]]
                     ) -> T:
        """The run's one `key` resource (the episode lab, ...), opened by `opener` on the first
        call, with whatever it enters on the stack closed with this context. The families
        that share a resource own its opener; this context only holds it. An opener that
        raises is not retried: every later call raises the same error."""
        async with self._locks.setdefault(key, asyncio.Lock()):  # one lock per resource:
            if key not in self._shared:  # an opener may ask for another resource
                try:
                    self._shared[key] = await opener(self, self._stack)
                except Exception as e:  # noqa: BLE001 - kept: every check that needs it says why
                    self._shared[key] = e
        value = self._shared[key]
        if isinstance(value, Exception):
            raise value
        opened: T = value
        return opened

    def opened(self, key: str) -> Any | None:
        """The `key` resource if a check opened it (and its opener did not raise), else None:
        for the checks that look back at what the run did (`hygiene.network`)."""
        value = self._shared.get(key)
        return None if isinstance(value, Exception) else value

    def failed(self, key: str) -> Exception | None:
        """Why the `key` resource could not be opened, if its opener raised (else None)."""
        value = self._shared.get(key)
        return value if isinstance(value, Exception) else None

    def forget(self, index: int | None) -> None:
        """Forget what the run played and started for task `index` (None: the env), so
        that a check run again (`vfcheck._host.attempts`) does its work anew: each
        shared resource that memoises plays drops the task's (`forget`), and env-level work
        started early that has ended (`extras`) is started again when asked."""
        if index is None:
            for key, pending in list(self.extras.items()):
                if isinstance(pending, asyncio.Future) and pending.done():
                    del self.extras[key]
            return
        for value in self._shared.values():
            if callable(forget := getattr(value, "forget", None)):
                forget(index)

    def memo(self, key: str, make: Callable[[], T]) -> T:
        """The run's one `key` value, made on first use (the validate config, ...)."""
        if key not in self._shared:
            self._shared[key] = make()
        value: T = self._shared[key]
        return value


def task_id(task: Any) -> TaskId:
    return TaskId(task.data.idx, str(task.key))
