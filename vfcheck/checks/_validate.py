"""What `setup`, `gold` and `noop` share: verifiers' own validate checks, run in-process,
per task.

Each runs `verifiers.v1.cli.validate._run_check(task, config, mode)` — the very function
`vf-validate` runs: a fresh subprocess runtime, `Task.setup`, then the check — and turns its
row into a finding. Two deliberate differences from `vf-validate`: the checks run inside
`env.serving()` (env-managed resources exist), and every check is bounded (vf-validate's
`--timeout.total` defaults to none, so a hanging check hangs it).

Where `env.serving()` itself could not open (an env's `start()` hook that brings up the
resource server its tasks need, and cannot offline), a task's setup that then fails is not
the task's fault: the finding is an `error` naming both, never a `failed` verdict on
`Task.setup` (verifiers' nemo-gym-weather: "set resources_url or use a managed NeMo Gym
taskset", when its managed server could not start).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

from vfcheck._episodes.runtime_fit import container_reason, stand_in
from vfcheck._host.attempts import CURRENT_ATTEMPT, deadline_hit
from vfcheck._host.crash_site import (
    Raised,
    raise_site,
    site_of_error,
    site_of_timeout,
    watching,
)
from vfcheck._shared.error_text import one_line
from vfcheck._shared.findings import Finding, TaskId
from vfcheck.checks._context import CheckContext
from vfcheck.checks._judge_calls import model_judge_exchanges
from vfcheck.checks._registry import spec_of


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
                probed: list[str] | None = None, site: str | None = None) -> Finding:
    """A validate row as a finding: the row itself is the observation. A hook that returned
    the wrong type is named with what it returned and the rule it broke (`probed`: what
    `hook_types.probe` found on an untouched trace of the task); one that raised, with
    where env code raised (`site`, `crash_site.CrashSite.describe`)."""
    from vfcheck.checks._hook_types import VALIDATE_RULE, describe, explain_error

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
        observed = f"it timed out ({row.get('error_type') or 'TimeoutError'})"
        observed += f", {site}" if site else ""
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
        observed += f" ({site})" if site else ""
        if (wrong := explain_error(str(row.get("error") or ""))) is not None:
            got, rule = wrong
            observed = f"{got}; {observed}" + (f" ({'; '.join(probed)})" if probed else "")
    contract = spec.contract + (f"; {rule}" if rule else "")
    return Finding(
        mode, mode, tid, "failed",
        f"{where}: {mode} failed — {observed}. Contract: {contract}.", details,
    )


async def check_task(env_id: str, task: Any, mode: str, config: Any,
                     serving_error: Exception | None = None, model: Any = None) -> Finding:
    """vf-validate's `mode` check of `task`, as a finding; `model` (the scripted model
    that answers the check's judge calls, if known) says what they were asked and
    answered in its details."""
    tid = TaskId(index=task.data.idx, key=str(task.key))
    if needs_container(task):
        return Finding(mode, mode, tid, "skipped",
                       f"env {env_id!r}, {tid.label()}: {container_reason(task)}", {})
    api = validate_api()
    if isinstance(api, str):
        return Finding(mode, mode, tid, "skipped", f"env {env_id!r}, {tid.label()}: {api}", {})
    from vfcheck._shared.compat import validate_modes, verifiers_version

    if mode not in validate_modes():
        return Finding(mode, mode, tid, "skipped",
                       f"env {env_id!r}, {tid.label()}: verifiers {verifiers_version()} lacks "
                       f"the {mode} check (verifiers.v1.cli.validate.CHECKS)", {})
    run_check, _ = api
    from vfcheck._model import EpisodeRef, TaskRef, Verdict, episode_scope

    # a judge that grades the check's scoring agrees with it: gold scores the task's own
    # reference (positive), noop the untouched task (negative); see vfcheck._model.judges
    verdict = {"gold": Verdict.POSITIVE, "noop": Verdict.NEGATIVE}.get(mode)
    where = f"vf-validate's {mode} check"
    alone = (attempt := CURRENT_ATTEMPT.get()) is not None and attempt.alone
    with episode_scope(EpisodeRef(TaskRef(tid.index, tid.key), judge=verdict,
                                  stage=lambda: where)) as scope:
        with watching() if alone else contextlib.nullcontext() as seen:
            row = await run_check(stand_in(task), config, mode)
        site = await where_it_raised(task, config, mode, row, run_check, seen)
    if row.get("reason") == "timeout":
        deadline_hit(f"{mode} timed out ({row.get('error_type') or 'TimeoutError'})")
    finding = row_finding(env_id, tid, mode, row, await name_scoring_hooks(task, row), site)
    if finding.outcome == "failed" and serving_error is not None:
        return unjudged(env_id, tid, mode, row, serving_error)
    if exchanges := model_judge_exchanges(model, scope):
        finding = dataclasses.replace(finding, details={**finding.details,
                                                        "judge_exchanges": exchanges})
    return finding


async def where_it_raised(task: Any, config: Any, mode: str, row: dict[str, Any],
                          run_check: Any, seen: Raised | None) -> str | None:
    """Where env code raised, or waited when the check timed out. vf-validate's row keeps
    only the error's text: a run alone was `watching()` (`seen`); else a check that raised
    is played once more under the tracer, a timeout is left to its run alone. Not for
    vfcheck's own refusal of a request (it says what and where, and a second play would
    make the request again, which `hygiene.network` counts)."""
    from vfcheck._model.offline_http import OFFLINE_PREFIX

    error = f"{row.get('error_type')}: {row.get('error')}"
    if row.get("reason") == "timeout":
        site = site_of_timeout(seen) if seen is not None else None
        return site.describe("waiting in") if site is not None else None
    if row.get("reason") != "error" or OFFLINE_PREFIX in error:
        return None
    if seen is not None:
        site = site_of_error(seen, error)
    else:
        site = await raise_site(lambda: run_check(stand_in(task), config, mode), error,
                                float(config.timeout.total or 60))
    return site.describe() if site is not None else None


def unjudged(env_id: str, tid: TaskId, mode: str, row: dict[str, Any],
             serving_error: Exception) -> Finding:
    """The check ran without the env's serving resources (`env.serving()` raised: its
    `start()` hook or shared tool servers), which vf-eval brings up before any task is set
    up: what the task did then says nothing about the task."""
    what = (f"it raised {row.get('error_type')}: {row.get('error')}" if row.get("error")
            else f"it ended {row.get('reason')!r}")
    return Finding(
        mode, mode, tid, "error",
        f"env {env_id!r}, {tid.label()}: {mode} could not be judged — the env's serving "
        f"resources did not come up (env.serving(), which runs its start() hook and shared "
        f"tool servers before any task is set up: {one_line(serving_error)}), and without "
        f"them {what}", {"validate_row": row, "serving_error": one_line(serving_error, 2000)})


async def name_scoring_hooks(task: Any, row: dict[str, Any]) -> list[str]:
    """When scoring failed on a hook's return type, which `@vf.reward`/`@vf.metric` hooks
    return a non-number on an untouched trace of the task (verifiers' message names none)."""
    from vfcheck.checks._hook_types import explain_error, probe, untouched_trace

    if explain_error(str(row.get("error") or "")) is None:
        return []
    try:
        found = await probe(task, untouched_trace(task), kinds=("metric", "reward"))
    except Exception:  # noqa: BLE001 - naming the hook is a courtesy; the row stands alone
        return []
    return [f"{p}, on an untouched trace" for p in found]


def lab_model(ctx: CheckContext) -> Any:
    """The episode lab's scripted model, if the lab opened (it answers every judge call of
    the worker, vf-validate's checks' too), for what they were asked and answered."""
    lab = ctx.opened("episode_lab")
    return getattr(getattr(lab, "runner", None), "model", None)


def run_config(ctx: CheckContext) -> Any:
    """The run's one validate config (the three checks share it)."""
    return ctx.memo("validate_config", lambda: validate_config(ctx.env, ctx.timeout))
