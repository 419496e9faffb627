"""Why an env did not load, in one line: what the `load` finding, `vfcheck run` and
`vfcheck record` say, and whether it is the user's input (an env arg) or the env's own."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vfcheck._episodes.offline import offline_env_config


class EnvLoadError(Exception):
    """The env could not be loaded: one line saying what and where (the `load` finding)."""


class EnvArgError(EnvLoadError):
    """The env's config rejects a value the user gave (`--env-arg`), or has no such key:
    the user's input, a usage error, in one line naming the key and the env's own words."""


def rejected_args(env_id: str, env_args: Mapping[str, Any] | None,
                  error: Exception) -> str | None:
    """`env arg phrases=[1]: env 'x' rejects it: config key 'taskset.phrases.0': ...`,
    when `error` came of the user's env args: the env's config resolves without them. None
    when it fails without them too (then it is the env's own load failure)."""
    if not env_args:
        return None
    try:
        offline_env_config(env_id, None)
    except Exception:  # noqa: BLE001 - the env fails on its own: not the user's input
        return None
    cause = load_error_cause(error)
    named = [key for key in env_args
             if (key if "." in key else f"taskset.{key}").replace("-", "_") in cause]
    shown = ", ".join(f"{key}={json.dumps(env_args[key], default=str)}"
                      for key in named or list(env_args))
    plural = "s" if len(named or env_args) > 1 else ""
    return f"env arg{plural} {shown}: env {env_id!r} rejects {'them' if plural else 'it'}: {cause}"


def id_hint(env_id: str) -> str:
    """` (an env id is a module's name ...)`, when `env_id` looks like a file path: the
    mistake of passing `fixtures/my_env.py` for `my-env`."""
    if "/" not in env_id and "\\" not in env_id and not env_id.endswith(".py"):
        return ""
    path = Path(env_id)
    name = path.stem.replace("_", "-")
    folder = str(path.parent) if str(path.parent) not in ("", ".") else "."
    return (f" ({env_id!r} looks like a file path; an env id is its module's name with "
            f"dashes: try `{name} --path {folder}`)")


def load_error_cause(error: BaseException) -> str:
    """One line saying why a load failed, from verifiers' wrapped exceptions.

    verifiers reports a module whose own import fails ("No module named 'dep'") as the
    taskset "not found" (`utils/loaders.py:_import_plugin` catches ModuleNotFoundError), and
    an export error surfaces wrapped in a pydantic ValidationError of the env config."""
    chain: list[BaseException] = []
    seen: BaseException | None = error
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    missing = [e for e in chain[1:] if isinstance(e, ModuleNotFoundError)]
    if isinstance(error, ModuleNotFoundError) and missing:
        inner = missing[-1]
        target = str(error).split("tried to import ", 1)[-1].split(")", 1)[0].strip("'")
        if inner.name and inner.name != target:
            return (f"its module {target!r} was found but failed to import: "
                    f"ModuleNotFoundError: No module named {inner.name!r}")
    errors = getattr(error, "errors", None)
    if callable(errors) and type(error).__name__ == "ValidationError":
        messages = []
        for e in errors():
            message = str(e.get("msg", "")).removeprefix("Value error, ")
            where = ".".join(str(part) for part in e.get("loc") or ())
            # a config key the env does not have (a typo in --env-arg), or lacks: name it
            if where and e.get("type") == "extra_forbidden":
                message = f"unknown config key {where!r} ({message})"
            elif where and e.get("type") == "missing":
                message = f"config key {where!r} is required ({message})"
            elif where:
                message = f"config key {where!r}: {message}, got {e.get('input')!r}"
            messages.append(message)
        return " ".join("; ".join(dict.fromkeys(messages)).split())
    return " ".join(f"{type(error).__name__}: {error}".split())
