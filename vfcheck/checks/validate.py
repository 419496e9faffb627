"""`setup`, `gold`, `noop`: verifiers' own validate checks, run in-process, per task.

Each runs `verifiers.v1.cli.validate._run_check(task, config, mode)` — the very function
`vf-validate` runs: a fresh subprocess runtime, `Task.setup`, then the check — and turns its
row into a finding. Two deliberate differences from `vf-validate`: the checks run inside
`env.serving()` (env-managed resources exist), and every check is bounded (vf-validate's
`--timeout.total` defaults to none, so a hanging check hangs it).
"""

from __future__ import annotations

import asyncio
from typing import Any

from vfcheck.checks.context import CheckContext
from vfcheck.checks.registry import check, spec_of
from vfcheck.findings import Finding, TaskId
from vfcheck.isolation.attempts import deadline_hit

MODES = ("setup", "gold", "noop")


def validate_api() -> tuple[Any, Any] | str:
    """`(_run_check, ValidateConfig)`, or why this verifiers lacks them."""
    try:
        from verifiers.v1.cli.validate import _run_check
        from verifiers.v1.configs.cli.validate import ValidateConfig
    except ImportError as e:
        import verifiers

        return f"verifiers {verifiers.__version__} lacks the validate checks ({e})"
    return _run_check, ValidateConfig


def validate_config(env: Any, timeout: float) -> Any:
    api = validate_api()
    if isinstance(api, str):
        raise RuntimeError(api)
    _, config_cls = api
    return config_cls.model_validate(
        {
            "taskset": env.config.taskset.model_dump(),
            "runtime": {"type": "subprocess"},
            "timeout": {"setup": timeout, "total": timeout},
            "rich": False,
        }
    )


def needs_container(task: Any) -> bool:
    """A task vfcheck cannot run offline on the host: it declares a container, an image, or
    an `agent_user` (verifiers creates that user with `useradd` in the box — on the host, in
    the subprocess runtime)."""
    data = task.data
    return bool(getattr(type(task), "NEEDS_CONTAINER", False) or getattr(data, "image", None)
                or getattr(data, "agent_user", None))


def row_finding(env_id: str, tid: TaskId, mode: str, row: dict[str, Any],
                probed: list[str] | None = None) -> Finding:
    """A validate row as a finding: the row itself is the observation. A hook that returned
    the wrong type is named with what it returned and the rule it broke (`probed`: what
    `hook_types.probe` found on an untouched trace of the task)."""
    from vfcheck.checks.hook_types import VALIDATE_RULE, describe, explain_error

    spec = spec_of(mode)
    rule = ""
    where = f"env {env_id!r}, {tid.label()}"
    reason = row.get("reason")
    details = {"validate_row": row}
    if reason == "valid":
        return Finding(mode, mode, tid, "passed", f"{where}: {mode} valid", details)
    if reason == "unchecked":
        why = "no gold check (Task.validate returned None)" if mode == "gold" else (
            "no rewards declared (nothing to score untouched)"
        )
        return Finding(mode, mode, tid, "skipped", f"{where}: {why}", details)
    if reason == "timeout":
        observed = f"it timed out ({row.get('error_type') or 'TimeoutError'})" + (
            f" in {row['running']}" if row.get("running") else "")
    elif reason == "invalid" and mode == "noop":
        observed = (f"the untouched task scores reward={row.get('reward')!r} "
                    f"(rewards {row.get('rewards')})")
    elif reason == "invalid" and row.get("valid") is not False:
        observed = (f"Task.validate returned {describe(row.get('valid'))}, not a bool "
                    "(vf-validate counts anything but True as invalid)")
        rule = VALIDATE_RULE
    elif reason == "invalid":
        observed = "Task.validate returned False"
    else:
        observed = f"it raised {row.get('error_type')}: {row.get('error')}"
        if (wrong := explain_error(str(row.get("error") or ""))) is not None:
            got, rule = wrong
            observed = f"{got}; {observed}" + (f" ({'; '.join(probed)})" if probed else "")
    contract = spec.contract + (f"; {rule}" if rule else "")
    return Finding(
        mode, mode, tid, "failed",
        f"{where}: {mode} failed — {observed}. Contract: {contract}.", details,
    )


async def check_task(env_id: str, task: Any, mode: str, config: Any) -> Finding:
    tid = TaskId(index=task.data.idx, key=str(task.key))
    if needs_container(task):
        return Finding(
            mode, mode, tid, "skipped",
            f"env {env_id!r}, {tid.label()}: needs a container runtime (NEEDS_CONTAINER, "
            "TaskData.image or TaskData.agent_user); vfcheck runs offline in the subprocess "
            "runtime", {},
        )
    api = validate_api()
    if isinstance(api, str):
        return Finding(mode, mode, tid, "skipped", f"env {env_id!r}, {tid.label()}: {api}", {})
    from vfcheck.compat import validate_modes, verifiers_version

    if mode not in validate_modes():
        return Finding(mode, mode, tid, "skipped",
                       f"env {env_id!r}, {tid.label()}: verifiers {verifiers_version()} lacks "
                       f"the {mode} check (verifiers.v1.cli.validate.CHECKS)", {})
    run_check, _ = api
    from vfcheck.model import EpisodeRef, TaskRef, Verdict, episode_scope

    # a judge that grades the check's scoring agrees with it: gold scores the task's own
    # reference (positive), noop the untouched task (negative); see vfcheck.model.judges
    verdict = {"gold": Verdict.POSITIVE, "noop": Verdict.NEGATIVE}.get(mode)
    where = f"vf-validate's {mode} check"
    with episode_scope(EpisodeRef(TaskRef(tid.index, tid.key), judge=verdict,
                                  stage=lambda: where)):
        row = await run_watched(run_check(task, config, mode))
    if row.get("reason") == "timeout":
        deadline_hit(f"{mode} timed out ({row.get('error_type') or 'TimeoutError'})")
    return row_finding(env_id, tid, mode, row, await name_scoring_hooks(task, row))


async def run_watched(check: Any) -> dict[str, Any]:
    """verifiers' validate row of `check`, noting (`running`) the env hook it was last seen
    in: a row that timed out says only `TimeoutError`, and the message names the hook."""
    from vfcheck.isolation import watchdog

    job = asyncio.ensure_future(check)  # this unit's task: the watchdog knows its owner
    seen = None
    try:
        while not job.done():
            await asyncio.wait({job}, timeout=0.25)
            if not job.done() and watchdog.CURRENT_WATCHDOG is not None:
                seen = watchdog.CURRENT_WATCHDOG.running_hook(
                    watchdog.CURRENT_UNIT.get()) or seen
    except asyncio.CancelledError:
        job.cancel()
        raise
    row: dict[str, Any] = job.result()
    if row.get("reason") == "timeout" and seen is not None:
        row = {**row, "running": f"{seen.hook or seen.function} at {seen.at}"
               + (f" ({seen.call})" if seen.call else "")}
    return row


async def name_scoring_hooks(task: Any, row: dict[str, Any]) -> list[str]:
    """When scoring failed on a hook's return type, which `@vf.reward`/`@vf.metric` hooks
    return a non-number on an untouched trace of the task (verifiers' message names none)."""
    from vfcheck.checks.hook_types import explain_error, probe, untouched_trace

    if explain_error(str(row.get("error") or "")) is None:
        return []
    try:
        found = await probe(task, untouched_trace(task), kinds=("metric", "reward"))
    except Exception:  # noqa: BLE001 - naming the hook is a courtesy; the row stands alone
        return []
    return [f"{p}, on an untouched trace" for p in found]


def run_config(ctx: CheckContext) -> Any:
    """The run's one validate config (the three checks share it)."""
    return ctx.memo("validate_config", lambda: validate_config(ctx.env, ctx.timeout))


@check(
    "setup", family="setup", scope="task", budget=1.5, blocked_by_setup=False,
    runs=("setup",),
    contract="Task.setup completes in a fresh runtime within the timeout",
    fails_when="`Task.setup` raises or outlives the timeout (also when it blocks the event loop)",
    why="a task whose setup fails can never be rolled out",
)
async def setup(ctx: CheckContext, task: Any) -> Finding:
    return await check_task(ctx.env_id, task, "setup", run_config(ctx))


@check(
    "gold", family="gold", scope="task", budget=2.5, runs=("setup", "validate", "scoring"),
    contract="Task.validate accepts the task's own reference solution",
    fails_when="`Task.validate` returns False (or anything but True, False or None: the message "
    "names what it returned), raises or times out; `None` = no gold check: skipped",
    why="a task its own reference cannot solve trains on noise",
)
async def gold(ctx: CheckContext, task: Any) -> Finding:
    return await check_task(ctx.env_id, task, "gold", run_config(ctx))


@check(
    "noop", family="noop", scope="task", budget=2.5, runs=("setup", "finalize", "scoring"),
    contract="finalising and scoring the untouched task gives a reward below 1.0",
    fails_when="finalize + score of the untouched task gives reward >= 1.0, or raises; no "
    "rewards: skipped",
    why="a task that passes with no work rewards doing nothing",
)
async def noop(ctx: CheckContext, task: Any) -> Finding:
    return await check_task(ctx.env_id, task, "noop", run_config(ctx))
