"""Why an env did not load, in one line: what the `load` finding, `vfcheck run` and
`vfcheck record` say, and whether it is the user's input (an env arg) or the env's own."""

from __future__ import annotations

import inspect
import json
import linecache
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from vfcheck._episodes.offline import offline_env_config
from vfcheck._host.env_code import EnvCode, display_path


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


def env_site(error: BaseException) -> str:
    """` (in VfcTaskset.load at my_env.py:30: `raise ...`)`: the env's own line a load or
    construction error comes from, so the `load` finding names it as a crash does; empty
    when none is found.

    The innermost env-code frame of the traceback when there is one; else, when verifiers'
    own code raised on a config the env declared (`Taskset.__init__` reading
    `config.system_prompt.read_text()`), the field of that config the env redefined with
    another type than verifiers' base declares, which verifiers' line names."""
    env_code = EnvCode()
    for cause in _chain(error):  # the root cause first, as a traceback prints it
        env_frames = [tb for tb in _frames(cause.__traceback__)
                      if tb.tb_frame.f_code.co_filename in env_code]
        if env_frames:
            tb = env_frames[-1]
            code = tb.tb_frame.f_code
            line = linecache.getline(code.co_filename, tb.tb_lineno).strip()
            name = getattr(code, "co_qualname", code.co_name)
            return (f" (in {name} at {display_path(code.co_filename)}:{tb.tb_lineno}"
                    + (f": `{line}`)" if line else ")"))
    redefined = redefined_field(error)
    return f" ({redefined})" if redefined else ""


def redefined_field(error: BaseException) -> str | None:
    """`config field VfcConfig.system_prompt: str at my_env.py:21 redefines verifiers'
    TasksetConfig.system_prompt: Path | None, which verifiers reads at
    verifiers/v1/taskset.py:63`, for the innermost verifiers frame whose locals hold a config
    of the env's (a pydantic model defined in env code) with such a field named on that
    line or in the error; None otherwise."""
    env_code = EnvCode()
    frames = list(_frames(error.__traceback__))
    for tb in reversed(frames):
        frame = tb.tb_frame
        file = frame.f_code.co_filename
        if file in env_code:
            continue
        line = linecache.getline(file, tb.tb_lineno)
        context = line + linecache.getline(file, tb.tb_lineno - 1) + str(error)
        for value in list(frame.f_locals.values()):
            for name, own, base in _redefined_fields(type(value), env_code):
                if re.search(rf"\b{re.escape(name)}\b", context):
                    return (f"config field {own.__name__}.{name}: {_annotation(own, name)} at "
                            f"{_field_line(own, name)} redefines verifiers' "
                            f"{base.__name__}.{name}: {_annotation(base, name)}, which "
                            f"verifiers reads at {_verifiers_path(file)}:{tb.tb_lineno}: "
                            f"`{line.strip()}`")
    return None


def _chain(error: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    seen: BaseException | None = error
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return chain[::-1]


def _frames(tb: TracebackType | None) -> Iterator[TracebackType]:
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _redefined_fields(model: type, env_code: EnvCode) -> Iterator[tuple[str, type, type]]:
    """`(field, env class, verifiers base)` for each annotation an env class of `model`'s MRO
    gives a field that a verifiers base class annotates differently."""
    if not hasattr(model, "model_fields"):
        return
    mro = model.__mro__
    for index, own in enumerate(mro):
        source = inspect.getsourcefile(own) if own.__module__ != "builtins" else None
        if not source or source not in env_code:
            continue
        for name in vars(own).get("__annotations__", {}):
            base = next((b for b in mro[index + 1:]
                         if name in vars(b).get("__annotations__", {})
                         and b.__module__.startswith("verifiers.")), None)
            if base is not None and _annotation(base, name) != _annotation(own, name):
                yield name, own, base


def _annotation(owner: type, name: str) -> str:
    annotation = vars(owner)["__annotations__"][name]
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "").replace("pathlib.", "")


def _field_line(owner: type, name: str) -> str:
    """`my_env.py:21`, where `owner`'s body declares `name`."""
    try:
        lines, first = inspect.getsourcelines(owner)
    except (OSError, TypeError):
        return display_path(inspect.getsourcefile(owner) or "?")
    for offset, text in enumerate(lines):
        if re.match(rf"\s+{re.escape(name)}\s*:", text):
            return f"{display_path(inspect.getsourcefile(owner) or '?')}:{first + offset}"
    return display_path(inspect.getsourcefile(owner) or "?")


def _verifiers_path(file: str) -> str:
    """`verifiers/v1/taskset.py`: verifiers' file named from its package, as its docs do."""
    marker = "/verifiers/"
    return "verifiers/" + file.rsplit(marker, 1)[1] if marker in file else display_path(file)
