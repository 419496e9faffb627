"""The `api` family: the hooks vfcheck is built on exist, with the shapes it calls them by,
and `vf-eval` keeps the contract vfcheck documents (no `serve` block, the prime-rl hint).

A missing hook is a failed finding ("verifiers X lacks Y"), never a crash; the suite
skips the lifecycle/preview checks that need it, with the same reason.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from vfcheck._host.warm_plan import ACTIVATE
from vfcheck._library.clis import CliRuns
from vfcheck._library.result import finding, verdict
from vfcheck._library.source import module_constant, verifiers_root
from vfcheck._shared.findings import Finding


def _attr(dotted: str) -> object:
    """`verifiers.v1.trace:Trace.watch` -> the object (ImportError/AttributeError on a miss)."""
    module, _, path = dotted.partition(":")
    obj: object = importlib.import_module(module)
    for part in path.split(".") if path else []:
        obj = getattr(obj, part)
    return obj


def _params(dotted: str, *names: str) -> str | None:
    """None when `dotted` is callable with parameters `names` (besides self), else why not."""
    obj = _attr(dotted)
    if not callable(obj):
        return f"{dotted} is not callable"
    params = inspect.signature(obj).parameters
    missing = [n for n in names if n not in params]
    if missing:
        return f"{dotted} takes ({', '.join(params)}), no {', '.join(missing)}"
    return None


def _property(dotted: str) -> str | None:
    module, _, path = dotted.partition(":")
    owner_path, _, name = path.rpartition(".")
    owner = _attr(f"{module}:{owner_path}")
    if not isinstance(inspect.getattr_static(owner, name), property):
        return f"{dotted} is not a property"
    return None


def _coroutine(dotted: str, *names: str) -> str | None:
    problem = _params(dotted, *names)
    if problem is None and not inspect.iscoroutinefunction(_attr(dotted)):
        return f"{dotted} is not a coroutine function"
    return problem


def _checks_table() -> str | None:
    table = _attr("verifiers.v1.cli.validate:CHECKS")
    if not isinstance(table, dict):
        return "CHECKS is not a dict"
    missing = sorted({"setup", "gold", "noop"} - set(table))
    return f"CHECKS has no {', '.join(missing)}" if missing else None


def _wire_trace() -> str | None:
    reader = _attr("verifiers.v1:WireTrace")
    return None if hasattr(reader, "model_validate") else "WireTrace has no model_validate"


def _episode_assembly() -> str | None:
    serve = importlib.import_module("verifiers.v1.serve")
    if not hasattr(serve, "EpisodeAssembly"):
        return "verifiers.v1.serve has no EpisodeAssembly"
    if "EpisodeAssembly" not in getattr(serve, "__all__", ()):
        return "verifiers.v1.serve does not list EpisodeAssembly in __all__"
    return None


def _pool() -> str | None:
    """The pool as `served.pool` builds it: `pool_serve_kwargs(StaticPoolConfig(num_workers=2))`
    gives `EnvServerPool` keywords it takes, each worker is `serve_env` with the env's config
    as data and a `log_setup` run first, and a worker's own address is `_worker_path(i)`."""
    sizing = _attr("verifiers.v1.configs.serve:pool_serve_kwargs")(  # type: ignore[operator]
        _attr("verifiers.v1.configs.serve:StaticPoolConfig")(num_workers=2))  # type: ignore[operator]
    if not isinstance(sizing, dict) or sizing.get("max_workers") != 2:
        return f"pool_serve_kwargs(StaticPoolConfig(num_workers=2)) gave {sizing!r}"
    serve_env = inspect.signature(_attr(f"{SERVE}.pool:serve_env")).parameters  # type: ignore[arg-type]
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in serve_env.values()):
        return "serve_env takes no **server_kwargs (the config_data a worker gets)"
    return (_params(f"{SERVE}.pool:EnvServerPool", "server_kwargs", "address", "log_setup",
                    *sizing)
            or _params(f"{SERVE}.pool:serve_env", "max_workers", "address", "death_pipe",
                       "log_setup")
            or _params(f"{SERVE}.pool:EnvServerPool._worker_path", "i")
            or _params(f"{SERVE}.pool:env_config_data", "env"))


def _no_serve_block() -> str | None:
    config = _attr("verifiers.v1.configs.cli.eval:EvalConfig")
    fields = getattr(config, "model_fields", {})
    return "EvalConfig has a `serve` field" if "serve" in fields else None


def _cancel_request() -> str | None:
    request = _attr("verifiers.v1.serve.types:CancelRequest")
    fields = getattr(request, "model_fields", {})
    return None if "request_id" in fields else "CancelRequest has no request_id field"


def _subprocess_starts() -> str | None:
    """What warm starts rely on (`vfcheck._host.warm_starts`): the subprocess runtime
    starts its processes through `asyncio.create_subprocess_exec` in sessions of their own,
    a tool server is `[sys.executable, "-m", module]` reporting its port in a file, and a
    harness program not activated is `[its uv environment's interpreter, the script]`."""
    runtime = "verifiers.v1.runtimes.subprocess:SubprocessRuntime"
    for method in ("run", "open_process", "run_background"):
        text = inspect.getsource(_attr(f"{runtime}.{method}"))  # type: ignore[arg-type]
        for needed in ("asyncio.create_subprocess_exec(", "start_new_session=True"):
            if needed not in text:
                return f"SubprocessRuntime.{method} does not call {needed.rstrip('(')}" \
                    if needed.endswith("(") else f"SubprocessRuntime.{method} lacks {needed}"
    launch = inspect.getsource(_attr("verifiers.v1.mcp.launch:serve_in_runtime"))  # type: ignore[arg-type]
    for needed in ('python = sys.executable', '[python, "-m", type(server).__module__]',
                   '"MCP_PORT_FILE"', '[python, "-c", _PROBE'):
        if needed not in launch:
            return f"serve_in_runtime no longer has `{needed}`"
    uv_script = inspect.getsource(_attr("verifiers.v1.runtimes.base:Runtime.prepare_uv_script"))  # type: ignore[arg-type]
    if "return [interpreter, path]" not in uv_script:
        return "Runtime.prepare_uv_script(activate=False) no longer returns [interpreter, path]"
    texts = {node.value for node in ast.walk(ast.parse(textwrap.dedent(uv_script)))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    if ACTIVATE not in texts:
        return ("Runtime.prepare_uv_script(activate=True) no longer runs the shell command "
                "vfcheck's warm starts know (warm_plan.ACTIVATE)")
    return None


@dataclass(frozen=True)
class Hook:
    check: str
    what: str
    """How the hook reads in a message: `Trace.watch(on_change)`."""
    probe: Callable[[], str | None]
    """None when the hook is there as vfcheck uses it, else what is wrong."""
    why: str


TRACE = "verifiers.v1.trace:Trace"
SERVE = "verifiers.v1.serve"
HOOKS: tuple[Hook, ...] = (
    Hook("api.Env.run_slot", "Env.run_slot(on_trace=)",
         lambda: _params("verifiers.v1.env:Env.run_slot", "slot", "ctx", "on_trace"),
         "the runner sees each trace at mint through on_trace"),
    Hook("api.Trace.watch", "Trace.watch(on_change)",
         lambda: _params(f"{TRACE}.watch", "on_change"),
         "the recorder watches every minted trace"),
    Hook("api.Trace.notify", "Trace.notify()", lambda: _params(f"{TRACE}.notify"),
         "every lifecycle observation is a notify"),
    Hook("api.Trace.preview", "Trace.preview(key, messages)",
         lambda: _params(f"{TRACE}.preview", "key", "messages"),
         "the preview checks watch request previews"),
    Hook("api.Trace.clear_preview", "Trace.clear_preview(key)",
         lambda: _params(f"{TRACE}.clear_preview", "key"),
         "a finished request clears its own preview"),
    Hook("api.Trace.pending", "the Trace.pending property", lambda: _property(f"{TRACE}.pending"),
         "the preview contract is `trace.pending == []` after an episode"),
    Hook("api.PendingTurn.abandon", "verifiers.v1.graph.PendingTurn.abandon()",
         lambda: _params("verifiers.v1.graph:PendingTurn.abandon"),
         "a failed or cancelled request drops its preview through it"),
    Hook("api.validate._run_check", "verifiers.v1.cli.validate._run_check(task, config, mode)",
         lambda: _coroutine("verifiers.v1.cli.validate:_run_check", "task", "config", "mode"),
         "setup/gold/noop run vf-validate's own per-check function"),
    Hook("api.validate.CHECKS", "verifiers.v1.cli.validate.CHECKS (setup, gold, noop)",
         _checks_table, "the validate families are vf-validate's checks"),
    Hook("api.WireTrace", "vf.WireTrace", _wire_trace,
         "the episode check round-trips traces through verifiers' wire reader"),
    Hook("api.serve.EpisodeAssembly", "verifiers.v1.serve.EpisodeAssembly",
         _episode_assembly, "env servers assemble episodes with it"),
    Hook("api.eval.serve_block", "an eval config without a `serve` block", _no_serve_block,
         "serving envs is prime-rl's job; vf-eval runs in-process"),
    Hook("api.serve.EnvServer", "EnvServer(config, address) and its _build_task(task_data)",
         lambda: _params(f"{SERVE}.server:EnvServer", "config", "address")
         or _params(f"{SERVE}.server:EnvServer._build_task", "task_data"),
         "the served checks build verifiers' own server and rebuild tasks as it does"),
    Hook("api.serve.pool",
         "EnvServerPool(server_kwargs, address, log_setup, **pool_serve_kwargs(StaticPoolConfig"
         "(num_workers))) over serve_env workers, its _worker_path(i), env_config_data(env)",
         _pool, "served.pool plays groups of rollouts through verifiers' pool as trainers do"),
    Hook("api.serve.EnvClient.run",
         "EnvClient.run(client, model, sampling, task_data, on_delta)",
         lambda: _coroutine(f"{SERVE}.client:EnvClient.run", "client", "model", "sampling",
                            "task_data", "on_delta"),
         "served.episode plays each task through it and sees its deltas"),
    Hook("api.serve.EnvClient._request",
         "EnvClient._request(request, response_type, timeout) and a CancelRequest(request_id)",
         lambda: _coroutine(f"{SERVE}.client:EnvClient._request", "request", "response_type",
                            "timeout") or _cancel_request(),
         "served.cancel sends the CancelRequest and waits for the server's answer"),
    Hook("api.runtime.subprocess_starts",
         "the subprocess runtime's asyncio.create_subprocess_exec(start_new_session=True), "
         "serve_in_runtime's `python -m module` tool servers with a port file and "
         "prepare_uv_script's harness programs: `[interpreter, script]`, or the activating "
         "shell command vfcheck knows",
         _subprocess_starts,
         "warm starts fork exactly these processes; started any other way they would "
         "silently start cold again"),
)
LIFECYCLE_NEEDS = ("api.Env.run_slot", "api.Trace.watch", "api.Trace.notify")
SERVED_NEEDS = ("api.serve.EnvServer", "api.serve.EnvClient.run", "api.serve.EnvClient._request",
                "api.serve.EpisodeAssembly")
PREVIEW_NEEDS = (*LIFECYCLE_NEEDS, "api.Trace.pending", "api.Trace.preview",
                 "api.Trace.clear_preview", "api.PendingTurn.abandon")


def hook_findings(version: str) -> tuple[list[Finding], dict[str, str]]:
    """One finding per hook, and check id -> "verifiers X lacks Y" for the missing ones."""
    findings: list[Finding] = []
    missing: dict[str, str] = {}
    for hook in HOOKS:
        try:
            problem = hook.probe()
        except Exception as e:  # noqa: BLE001 - whatever breaks the probe is the finding
            problem = f"{type(e).__name__}: {e}"
        if problem is None:
            findings.append(finding(hook.check, "passed", f"{hook.what} is there",
                                    observed="present", why=hook.why))
        else:
            reason = f"verifiers {version} lacks {hook.what} ({problem})"
            missing[hook.check] = reason
            findings.append(finding(hook.check, "failed", reason, observed=problem,
                                    why=hook.why))
    return findings, missing


def _flat(text: str) -> str:
    return " ".join(text.split())


def prime_rl_hint() -> str | None:
    root = verifiers_root()
    path = root / "v1" / "cli" / "eval" / "hint.py" if root else None
    literal = module_constant(path, "PRIME_RL_HINT") if path and path.is_file() else None
    return literal.text if literal else None


def eval_findings(runs: CliRuns | None) -> list[Finding]:
    """`api.eval.serve_flag`, `api.eval.hint_logged`, `api.eval.hint_dashboard`."""
    checks = ("api.eval.serve_flag", "api.eval.hint_logged", "api.eval.hint_dashboard")
    if runs is None:
        return [finding(c, "skipped", "the CLIs were not run") for c in checks]
    return [_serve_flag(runs), *_hint(runs)]


def _serve_flag(runs: CliRuns) -> Finding:
    check = "api.eval.serve_flag"
    run = runs.get("serve-flag")
    if run is None or run.problem:
        return finding(check, "error", f"could not run vf-eval --serve.foo 1 "
                       f"({run.outcome() if run else 'not planned'})")
    text = run.stdout + run.stderr
    said = run.outcome()
    clear = ("--serve" in text and any(w in text.lower() for w in (
        "not permitted", "unrecognized", "unknown", "no such")) and "Traceback" not in text)
    ok = run.returncode not in (0, None) and clear
    if ok:
        message = f"`{run.shown}` is refused: {said}"
    elif run.returncode == 0:
        message = f"`{run.shown}` was accepted (exit 0): vf-eval has a serve block again"
    else:
        message = f"`{run.shown}` fails without a clear refusal: {said}"
    return finding(check, verdict(ok), message, command=run.shown, observed=said,
                   output=run.tail())


def _hint(runs: CliRuns) -> list[Finding]:
    run = runs.get("eval")
    checks = ("api.eval.hint_logged", "api.eval.hint_dashboard")
    if run is None or run.problem or run.returncode != 0 or run.run_dir() is None:
        said = run.outcome() if run else "not planned"
        return [finding(c, "error", f"could not run vf-eval offline ({said})") for c in checks]
    hint = prime_rl_hint()
    if hint is None:
        return [finding(c, "failed", "vf-eval has no prime-rl hint (cli/eval/hint.py)",
                        observed="no hint") for c in checks]
    base = run.run_dir()
    assert base is not None
    log_path = base / "logs" / "latest" / "eval.log"
    lines = log_path.read_text(encoding="utf-8").splitlines() if log_path.is_file() else []
    at = next((i for i, line in enumerate(lines) if hint in line), None)
    first_rollout = next((i for i, line in enumerate(lines) if "rollout start" in line), None)
    points = "prime-rl" in hint and "eval" in hint
    logged = at is not None and (first_rollout is None or at < first_rollout) and points
    if logged:
        logged_msg = ("vf-eval logs the prime-rl hint at start (in eval.log before the first "
                      "rollout)")
    elif at is None:
        logged_msg = "vf-eval's eval.log has no prime-rl deprecation hint"
    else:
        logged_msg = "vf-eval logs the prime-rl hint only after its rollouts started"
    shown = _flat(run.stdout)
    under = shown.rstrip().endswith(_flat(hint))
    if under:
        dash_msg = "vf-eval's dashboard ends with the prime-rl hint"
    elif _flat(hint) in shown:
        dash_msg = "vf-eval shows the prime-rl hint, but not under its dashboard"
    else:
        dash_msg = "vf-eval's dashboard does not show the prime-rl hint"
    return [
        finding("api.eval.hint_logged", verdict(logged), logged_msg, hint=hint,
                observed="logged at start" if logged else logged_msg,
                log=lines[: (first_rollout or 0) + 1]),
        finding("api.eval.hint_dashboard", verdict(under), dash_msg, hint=hint,
                observed="dashboard footer" if under else dash_msg,
                output=run.stdout[-800:]),
    ]
