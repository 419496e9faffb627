"""A judge the reward skips: an env that declares an LLM judge but scores without calling it.

curators-eye (issue #35 item 5) declares a `vf.Judge` and a `judge: vf.JudgeConfig` on its
task config, and its `theme` reward returns the `intruders` score when the judge's API key
is unset (`if not self.judge_available(): return await self.intruders(trace)`). vfcheck
runs with no key, so every play scored the fallback, and a trainer with a key trains on
another signal. What this module gives `judge.skipped`:

- `declared_judges`: the judges a task declares, `vf.Judge` subclasses in the modules of its
  classes and `JudgeConfig`s on its task config (the plugged `judges` list is left out:
  `Task.score` always runs those);
- `keyed_task`: the task with each judge config reading its key from a variable vfcheck
  sets (`VFCHECK_API_KEY`), so that a `resolve_api_key` check passes and the judge calls
  the scripted model, as it would with a key (the mock answers every host's
  `/chat/completions`);
- `skip_sites`: where a reward returns before its judge call, read from its source: the
  `if` whose test names a key, the judge or its availability, the line and the condition.
"""

from __future__ import annotations

import ast
import copy
import inspect
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vfcheck._episodes.offline import MOCK_API_KEY_VAR
from vfcheck._shared.paths import shown_path

KEYED_VAR = MOCK_API_KEY_VAR
"""The variable a keyed play's judge configs read their key from: the one vfcheck sets for
the scripted model, never a real key."""
_KEYISH = re.compile(r"key|api|judge|avail|environ|getenv|token|secret|credential|offline",
                     re.IGNORECASE)
"""Words of an `if` test that makes a reward skip its judge (`not self.judge_available()`,
`os.environ.get("OPENAI_API_KEY")`)."""
_JUDGE_CALLS = frozenset({"evaluate", "complete"})
_MAX_DEPTH = 4


@dataclass
class DeclaredJudges:
    """The judges a task declares."""

    classes: list[type] = field(default_factory=list)
    """`vf.Judge` subclasses defined in the modules of the task's classes."""
    configs: dict[str, Any] = field(default_factory=dict)
    """Dotted path on the task config (`judge`) -> its `vf.JudgeConfig`."""
    plugged: list[str] = field(default_factory=list)
    """The ids of the task config's plugged `judges` (`Task.score` runs them, key or not)."""

    def __bool__(self) -> bool:
        return bool(self.classes or self.configs or self.plugged)

    def named(self) -> str:
        """`judge vfc_x.ThemeJudge (fixtures/vfc_x.py:30), task config `judge` (its key in
        VFC_KEY)`, for messages."""
        parts = [f"judge {cls.__module__}.{cls.__qualname__} ({where_defined(cls)})"
                 for cls in self.classes]
        parts += [f"task config `{path}` (its key in {config.api_key_var})"
                  for path, config in self.configs.items()]
        parts += [f"plugged judge `{name}`" for name in self.plugged]
        return ", ".join(parts)

    def key_vars(self) -> str:
        return ", ".join(sorted({config.api_key_var for config in self.configs.values()}))


@dataclass(frozen=True)
class SkipSite:
    """Where a reward returns before its judge call."""

    reward: str
    reward_at: str
    """The reward's `def` line, `file:line`."""
    condition: str
    """The `if` test, as written (`not self.judge_available()`)."""
    at: str
    """The `if`'s `file:line`."""
    returns: str
    """What it returns instead (`await self.intruders(trace)`)."""
    helper: str = ""
    """The task method the test calls and where it is (`judge_available at x.py:88`)."""

    def describe(self) -> str:
        helper = f", {self.helper}" if self.helper else ""
        return (f"reward {self.reward} ({self.reward_at}) returns `{self.returns}` before its "
                f"judge call when `{self.condition}` ({self.at}{helper})")


def declared_judges(task: Any) -> DeclaredJudges:
    """The judges `task` declares (module docstring)."""
    declared = DeclaredJudges()
    judge_module = sys.modules.get("verifiers.v1.judge")
    judge_type = getattr(judge_module, "Judge", None)
    config_module = sys.modules.get("verifiers.v1.configs.judge")
    config_type = getattr(config_module, "JudgeConfig", None)
    if judge_type is not None:
        for module in env_modules(type(task)):
            for value in vars(module).values():
                if (isinstance(value, type) and issubclass(value, judge_type)
                        and value is not judge_type and value.__module__ == module.__name__
                        and value not in declared.classes):
                    declared.classes.append(value)
    if config_type is not None:
        declared.configs = dict(_configs_in(getattr(task, "config", None), config_type, ""))
    for entry in getattr(getattr(task, "config", None), "judges", None) or []:
        declared.plugged.append(str(getattr(entry, "name", "") or getattr(entry, "id", "")
                                    or type(entry).__name__))
    return declared


def env_modules(cls: type) -> list[Any]:
    """The modules that define `cls` and its bases, verifiers' and the standard library's
    left out."""
    found = []
    for base in cls.__mro__:
        module = sys.modules.get(base.__module__)
        if module is None or base.__module__.split(".")[0] in ("verifiers", "builtins",
                                                               "typing", "abc"):
            continue
        if module not in found:
            found.append(module)
    return found


def _configs_in(model: Any, config_type: type, prefix: str, depth: int = 0
                ) -> Iterator[tuple[str, Any]]:
    fields = getattr(type(model), "model_fields", None)
    if not isinstance(fields, dict) or depth > _MAX_DEPTH:
        return
    for name in fields:
        if name == "judges":  # plugged: `Task.score` runs them whatever the key
            continue
        value = getattr(model, name, None)
        path = f"{prefix}{name}"
        if isinstance(value, config_type):
            yield path, value
        elif hasattr(type(value), "model_fields"):
            yield from _configs_in(value, config_type, f"{path}.", depth + 1)


def keyed_task(task: Any, configs: dict[str, Any]) -> Any:
    """A copy of `task` whose judge configs (`configs`, by dotted path) read their key from
    `KEYED_VAR`, which vfcheck sets: a reward that checks for a key then calls its judge."""
    config = task.config
    for path in configs:
        config = _with_key(config, path.split("."))
    clone = copy.copy(task)
    clone.config = config
    return clone


def _with_key(model: Any, path: list[str]) -> Any:
    head, rest = path[0], path[1:]
    value = getattr(model, head)
    updated = (value.model_copy(update={"api_key_var": KEYED_VAR}) if not rest
               else _with_key(value, rest))
    return model.model_copy(update={head: updated})


def skip_sites(task: Any, names: list[str] | None = None) -> list[SkipSite]:
    """Where each reward of `task` (those in `names`, if given) returns before its judge
    call, on a test that names a key, the judge or its availability."""
    hooks = getattr(task, "hooks", None)
    sites = []
    for fn in hooks("reward") if callable(hooks) else []:
        name = getattr(fn, "__name__", "reward")
        if names is not None and name not in names:
            continue
        site = skip_site(fn, name, type(task))
        if site is not None:
            sites.append(site)
    return sites


def skip_site(fn: Callable[..., Any], name: str, owner: type) -> SkipSite | None:
    """Where `fn` returns before its judge call (see `skip_sites`), or None."""
    try:
        raw = inspect.unwrap(getattr(fn, "__func__", fn))
        lines, start = inspect.getsourcelines(raw)
        path = shown_path(Path(inspect.getsourcefile(raw) or "?"))
        source = textwrap.dedent("".join(lines))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return None
    func = next((n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)),
                None)
    if func is None:
        return None
    calls = [n.lineno for n in ast.walk(func) if isinstance(n, ast.Call) and _judges(n.func)]
    if not calls:
        return None
    guards = sorted((n for n in ast.walk(func) if isinstance(n, ast.If)
                     and n.lineno < min(calls) and _returns(n)
                     and _KEYISH.search(ast.get_source_segment(source, n.test) or "")),
                    key=lambda n: n.lineno)
    if not guards:
        return None
    guard = guards[0]
    returned = next(s for s in (*guard.body, *guard.orelse) if isinstance(s, ast.Return))

    def line(node: ast.AST) -> str:
        return f"{path}:{start + getattr(node, 'lineno', 1) - 1}"

    return SkipSite(name, line(func), ast.get_source_segment(source, guard.test) or "",
                    line(guard), ast.get_source_segment(source, returned.value) or "None"
                    if returned.value is not None else "None",
                    _helper(guard.test, owner))


def _judges(func: ast.expr) -> bool:
    """A call that asks a judge: `.evaluate(...)`, `.complete(...)`, `SomeJudge(...)`."""
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in _JUDGE_CALLS or name.endswith("Judge")


def _returns(node: ast.If) -> bool:
    return any(isinstance(s, ast.Return) for s in (*node.body, *node.orelse))


def _helper(test: ast.expr, owner: type) -> str:
    """`judge_available at x.py:88`: the task method an `if` test calls, where it is."""
    for node in ast.walk(test):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"):
            method = getattr(owner, node.func.attr, None)
            if callable(method):
                return f"{node.func.attr} at {where_defined(method)}"
    return ""


def where_defined(obj: Any) -> str:
    """`file:line` of a class or function, repo-relative where it can be."""
    try:
        raw = inspect.unwrap(obj) if callable(obj) and not isinstance(obj, type) else obj
        _, line = inspect.getsourcelines(raw)
        path = inspect.getsourcefile(raw) or "?"
    except (OSError, TypeError):
        return "?"
    if not isinstance(obj, type):  # a function's `def`, past its decorators
        line += next((i for i, text in enumerate(inspect.getsourcelines(raw)[0])
                      if text.lstrip().startswith(("def ", "async def "))), 0)
    return f"{shown_path(Path(path))}:{line}"
