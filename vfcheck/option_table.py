"""The options of vfcheck's front ends, described once: `OPTIONS`.

From this one table come the argparse and pytest options, the `[tool.vfcheck]` reader, the
check of every value (`vfcheck.options.resolve`), the replay line, what travels to the check
worker and the options reference page (`readme_table`, held to docs/reference/options.md by
a test). Importing it is cheap (the plugin does at every pytest start): stdlib only.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from vfcheck.paths import shown_path, unwritable

if TYPE_CHECKING:
    import argparse

    import pytest

Kind = Literal["text", "pairs", "allows", "path", "int", "float", "choice", "list", "flag",
               "shard"]
PathRole = Literal["any", "file", "dir", "golden", "output"]
"""What a path must be: `file` and `dir` must exist; a `golden` folder may not exist yet; an
`output` file is checked writable."""
Scope = Literal["check", "run"]
"""`check`: a field of `CheckOptions`, sent to the check worker and repeated in replay lines;
`run`: what the front end does with the run (reports, item selection), in `RunOptions`."""
Front = Literal["cli", "pytest"]
GoldenFrom = Literal["default", "pyproject", "command line"]


class OptionError(ValueError):
    """A value no option allows, in one line naming the option, where the value came from
    and what is allowed: a usage error, reported before any work starts."""


def _load_script(path: Path) -> None:
    """A script file must parse: its ScriptError names the file, the task and the turn."""
    from vfcheck.script import Script

    Script.load(path)


def _families() -> tuple[str, ...]:
    from vfcheck.checks import FAMILIES

    return tuple(FAMILIES)


@dataclass(frozen=True)
class Option:
    name: str
    """The field of `CheckOptions` (scope `check`) or `RunOptions` (scope `run`)."""
    kind: Kind
    help: str
    """Help text of both front ends, and the README's "meaning"."""
    default: Any = None
    shown_default: str = ""
    """The default in words (help, README) where the value says too little."""
    key: str | None = None
    """The `[tool.vfcheck]` key (`-` and `_` alike)."""
    key_aliases: tuple[str, ...] = ()
    cli: tuple[str, ...] = ()
    """Flags of the `vfcheck` subcommands in `commands`."""
    commands: tuple[str, ...] = ("check",)
    positional: bool = False
    """The CLI takes it as positional words (env ids)."""
    pytest: str | None = None
    pytest_owner: str | None = None
    """The pytest flag belongs to pytest or another plugin (syrupy): read, not registered."""
    pytest_dest: str | None = None
    """Where an owned pytest flag's value is (`config.option.<dest>`)."""
    env: str | None = None
    """An environment variable that sets it."""
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    choices_from: Callable[[], tuple[str, ...]] | None = None
    """Names a list's items must be among, loaded when a value is checked."""
    minimum: float | None = None
    above: float | None = None
    """An exclusive lower bound."""
    unit: str = ""
    """What a number counts (`seconds`), for messages."""
    repeat: bool = False
    given_replaces: bool = False
    """A repeated value given on the command line replaces pyproject.toml's instead of
    adding to it (env ids: naming an env checks that env, not the project's too)."""
    path: PathRole = "any"
    missing: str = ""
    """The message for a `dir` that does not exist (`{path}` is replaced)."""
    load: Callable[[Path], None] | None = None
    """Reads a `file` through, raising (one line) if its content is unusable."""
    scope: Scope = "check"
    replay: bool = True
    """Repeated in replay lines (an update of golden traces is not, nor `allow`: a project's
    accepted findings are its policy, read again from its pyproject.toml)."""

    # -- flags

    @property
    def dest(self) -> str:
        """The attribute the pytest flag's value lands on."""
        if self.pytest_dest:
            return self.pytest_dest
        assert self.pytest is not None
        return self.pytest.lstrip("-").replace("-", "_")

    def flag_for(self, front: Front) -> str | None:
        """The flag a replay line uses (the long one)."""
        return self.pytest if front == "pytest" else (self.cli[-1] if self.cli else None)

    def help_text(self) -> str:
        shown = self.shown_default.replace("`", "") or (
            "" if self.default in (None, False, [], {}) else _text_of(self.default))
        repeat = " (repeatable)" if self.repeat and not self.positional else ""
        return self.help.replace("`", "") + repeat + (f" (default: {shown})" if shown else "")

    def argparse_kwargs(self) -> dict[str, Any]:
        """Every value is taken as text and checked by `resolve`, so that a bad one is one
        line naming where it came from (argparse's own errors print the usage too)."""
        kwargs: dict[str, Any] = {"default": None, "help": self.help_text()}
        if self.kind == "flag":
            kwargs["action"] = "store_true"
            return kwargs
        if self.repeat:
            kwargs["action"] = "append"
        if metavar := self.metavar or ("{" + ",".join(self.choices) + "}" if self.choices
                                       else None):
            kwargs["metavar"] = metavar
        return kwargs

    # -- values

    def allowed(self) -> str:
        """What the option allows, in words, for messages."""
        unit = f" of {self.unit}" if self.unit else ""
        bound = (f" > {self.above:g}" if self.above is not None else
                 f" >= {self.minimum:g}" if self.minimum is not None else "")
        return {
            "int": f"a whole number{unit}{bound}",
            "float": f"a number{unit}{bound}",
            "choice": "one of " + ", ".join(self.choices),
            "flag": "true or false",
            "list": "names, comma-separated (or a list)",
            "pairs": "KEY=VALUE (or a table)",
            "allows": "PATTERN[=REASON] (or a list of patterns, or a table of pattern = reason)",
            "text": "a string",
            "shard": "K/N with 1 <= K <= N",
            "path": "a path" if self.repeat is False else "a list of paths",
        }[self.kind]

    def bad(self, raw: Any, where: str) -> OptionError:
        return OptionError(f"{where}: {raw!r} is not {self.allowed()}")

    def parse(self, raw: Any, where: str, *, text: bool, base: Path) -> Any:
        """The value of this option from `raw`: command-line or environment text (`text`),
        or a TOML value. Relative paths are relative to `base`."""
        if self.repeat:
            if self.kind == "allows" and not text:
                from vfcheck.allow import parse_allow

                try:
                    return parse_allow(raw, where)
                except ValueError as e:
                    raise OptionError(str(e)) from e
            if self.kind == "pairs" and not text:
                if not isinstance(raw, dict):
                    raise self.bad(raw, where)
                return dict(raw)
            if not text and not (isinstance(raw, list)
                                 and all(isinstance(item, str) for item in raw)):
                raise self.bad(raw, where)
            items = [self._one(item, where, text=text, base=base) for item in raw]
            return dict(items) if self.kind in ("pairs", "allows") else items
        return self._one(raw, where, text=text, base=base)

    def _one(self, raw: Any, where: str, *, text: bool, base: Path) -> Any:
        kind = self.kind
        if kind == "flag":
            if text or isinstance(raw, bool):
                return bool(raw)
            raise self.bad(raw, where)
        if kind == "int":
            value: Any = (int(raw) if text and re.fullmatch(r"\s*[+-]?\d+\s*", str(raw))
                          else raw if not text and type(raw) is int else None)
            if value is None:
                raise self.bad(raw, where)
            return self._in_range(value, raw, where)
        if kind == "float":
            try:
                number = float(raw) if text or type(raw) in (int, float) else math.nan
            except ValueError:
                number = math.nan
            if not math.isfinite(number):
                raise self.bad(raw, where)
            return self._in_range(number, raw, where)
        if not isinstance(raw, str):
            if kind == "list" and isinstance(raw, list) and all(isinstance(x, str) for x in raw):
                return self._names(raw, raw, where)
            raise self.bad(raw, where)
        if kind == "text" and not raw.strip():  # an env id, an item: never empty
            raise OptionError(f"{where}: {raw!r} is empty")
        if kind == "choice":
            if raw not in self.choices:
                raise self.bad(raw, where)
            return raw
        if kind == "list":
            return self._names(raw.split(","), raw, where)
        if kind == "allows":
            from vfcheck.allow import parse_allow

            try:
                return next(iter(parse_allow([raw], where).items()))
            except ValueError as e:
                raise OptionError(str(e)) from e
        if kind == "pairs":
            from vfcheck.episodes.offline import parse_env_arg

            try:
                return parse_env_arg(raw)
            except ValueError as e:  # "env arg 'x' is not KEY=VALUE"
                raise OptionError(str(e)) from e
        if kind == "path":
            return str(self._path(raw, where, base))
        if kind == "shard":
            from vfcheck.shards import Shard

            try:
                return Shard.parse(raw)
            except ValueError as e:
                raise OptionError(f"{where}: {e}") from e
        return raw

    def _in_range(self, value: float, raw: Any, where: str) -> Any:
        if (self.minimum is not None and value < self.minimum) or (
                self.above is not None and value <= self.above):
            raise self.bad(raw, where)
        return value

    def _names(self, items: Sequence[str], raw: Any, where: str) -> list[str]:
        names = [item.strip() for item in items if item.strip()]
        if not names:
            raise OptionError(f"{where}: {raw!r} names nothing; allowed: "
                              + ", ".join(self.choices_from() if self.choices_from else ()))
        if self.choices_from is not None:
            known = self.choices_from()
            unknown = sorted(set(names) - set(known))
            if unknown:
                raise OptionError(
                    f"{where}: unknown check famil{'y' if len(unknown) == 1 else 'ies'} "
                    f"{', '.join(unknown)}; known: {', '.join(known)}")
        return names

    def _path(self, raw: str, where: str, base: Path) -> Path:
        if not raw.strip():
            raise self.bad(raw, where)
        path = (base / Path(raw).expanduser()).resolve()
        if self.path == "file" and not path.is_file():
            raise OptionError(f"{where}: {raw!r} is not a file ({path})")
        if self.load is not None:
            try:
                self.load(path)
            except Exception as e:  # the loader says what is wrong, in one line
                raise OptionError(f"{where}: {e}") from e
        if self.path == "dir" and path.exists() and not path.is_dir():
            raise OptionError(f"{where}: {path} is a file, not a folder")
        if self.path == "dir" and not path.is_dir():
            raise OptionError(f"{where}: " + (self.missing or "the folder {path} does not "
                                              "exist").format(path=path))
        if self.path == "golden" and path.exists() and not path.is_dir():
            raise OptionError(f"{where}: {path} is not a folder")
        if self.path == "output" and (problem := unwritable(path)):
            raise OptionError(f"{where}: cannot write {path}: {problem}")
        return path

    def words(self, flag: str, value: Any, *, front: Front = "cli") -> list[str]:
        """`value` as command-line words after `flag` (none for the default). A path for
        pytest is one word, `--vf-path=DIR`: pytest computes its rootdir before it knows
        plugin options, and takes the value of `--vf-path DIR` for a test path."""
        if value == self.default or value is None:
            return []
        if self.kind == "flag":
            return [flag] if value else []
        if self.kind == "pairs":
            return [w for k, v in value.items() for w in (flag, f"{k}={_arg_text(v)}")]
        if self.kind == "allows":
            return [w for k, v in value.items() for w in (flag, f"{k}={v}")]
        items = value if self.repeat else [value]
        texts = [_text_of(item, self.kind) for item in items]
        if front == "pytest" and self.kind == "path":
            return [f"{flag}={text}" for text in texts]
        return [w for text in texts for w in (flag, text)]


def _text_of(value: Any, kind: Kind = "text") -> str:
    if kind == "path":
        return shown_path(Path(value))
    if kind == "list":
        return ",".join(value)
    if isinstance(value, float):
        short = f"{value:g}"
        return short if float(short) == value else repr(value)
    return str(value)


def _arg_text(value: Any) -> str:
    """An env arg's VALUE as `parse_env_arg` reads it back: JSON, unless it is a string
    that does not parse as JSON (then as it is)."""
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            return value
    return json.dumps(value)


OPTIONS: tuple[Option, ...] = (
    Option("envs", "text", "env ids to check", default=[], key="envs", repeat=True,
           given_replaces=True, positional=True, metavar="ENV", pytest="--vf-env",
           scope="run"),
    Option("env_args", "pairs",
           "env config value: dotted keys address the env config, bare keys the taskset "
           "(num_tasks=5); VALUE is JSON when it parses",
           default={}, key="env_args", cli=("--env-arg",), pytest="--vf-env-arg",
           commands=("check", "run", "record", "wheels"), metavar="KEY=VALUE", repeat=True),
    Option("paths", "path", "folder holding env modules, put on sys.path and PYTHONPATH",
           default=[], key="paths", cli=("--path",), pytest="--vf-path",
           commands=("check", "run", "record", "wheels"), metavar="DIR", repeat=True, path="dir"),
    Option("num_tasks", "int", "tasks to load", shown_default="all (an infinite taskset "
           "needs it)", key="num_tasks", cli=("-n", "--num-tasks"), pytest="--vf-num-tasks",
           commands=("check", "run", "record"), metavar="N", minimum=1),
    Option("families", "list", "check families to run, comma-separated (exact names; load "
           "always runs)", shown_default="all", key="checks", key_aliases=("families",),
           cli=("--checks",), pytest="--vf-checks", metavar="A,B", choices_from=_families),
    Option("sample", "int", "tasks sampled by the episode families", default=3, key="sample",
           cli=("--sample",), pytest="--vf-sample", metavar="K", minimum=1),
    Option("timeout", "float", "timeout per check, seconds", default=60.0, key="timeout",
           cli=("--timeout",), pytest="--vf-timeout", metavar="S", above=0, unit="seconds"),
    Option("harness", "choice", "harness tier: the env's own harness, or vfcheck's "
           "in-process chat loop where it applies", default="fast", key="harness",
           cli=("--harness",), pytest="--vf-harness", commands=("check", "run", "record"),
           choices=("env", "fast")),
    Option("script", "path", "the user's script file (TOML)", shown_default="the default "
           "policy", key="script", cli=("--script",), pytest="--vf-script",
           commands=("check", "run", "mock-server"), metavar="FILE", path="file",
           load=_load_script),
    Option("seed", "int", "seed of the default script", shown_default="the script file's, "
           "else 0", key="seed", cli=("--seed",), pytest="--vf-seed",
           commands=("check", "run", "mock-server"), metavar="N"),
    Option("golden_dir", "path", "where golden traces live", default="",
           shown_default="`golden/` beside the pyproject.toml nearest the working directory",
           key="golden_dir",
           cli=("--golden-dir",), pytest="--vf-golden-dir", metavar="DIR", path="golden"),
    Option("golden_update", "flag", "write golden traces (and remove unused ones)",
           default=False, shown_default="off", cli=("--golden-update",),
           pytest="--snapshot-update", pytest_owner="syrupy", pytest_dest="update_snapshots",
           replay=False),
    Option("golden_strict", "flag", "a missing or unused golden trace fails (CI, once "
           "recorded)", default=False, shown_default="off", key="golden_strict",
           cli=("--golden-strict",), pytest="--vf-golden-strict"),
    Option("allow", "allows", "accept a known finding: a failed finding whose name "
           "(`check`, `check[task]`, `env::check[task]`; fnmatch patterns) matches becomes "
           "`expected` (pytest: xfail), showing the reason", default={}, shown_default="none",
           key="allow", cli=("--allow",), pytest="--vf-allow", metavar="PATTERN[=REASON]",
           repeat=True, replay=False),
    Option("reward_max", "float", "the reward's maximum: without a reference answer, an "
           "`exploit.*` probe that reaches it fails", default=None,
           shown_default="the sum of the env's reward weights, else 1", key="reward_max",
           cli=("--reward-max",), pytest="--vf-reward-max", metavar="R", above=0),
    Option("wheels", "path", "folder of wheels the harness programs resolve their "
           "dependencies from, with no package index (fill it with: vfcheck wheels DIR ENV)",
           shown_default="the index", key="wheels", cli=("--wheels",), pytest="--vf-wheels",
           commands=("check", "run", "record"), metavar="DIR", path="dir",
           missing="the wheel folder {path} does not exist (fill it with: vfcheck wheels "
                   "{path})"),
    Option("cold_starts", "flag", "start every process verifiers asks for as a fresh "
           "interpreter: no warm starts (forks of a warm interpreter that already imported "
           "verifiers, for its tool servers; see docs/warm-starts.md)", default=False,
           shown_default="off: warm starts", key="cold_starts", cli=("--cold-starts",),
           pytest="--vf-cold-starts", commands=("check", "run"), env="VFCHECK_COLD_STARTS"),
    Option("json", "path", "write the JSON report", cli=("--json",), pytest="--vf-json",
           commands=("check", "library", "merge"), metavar="FILE", path="output",
           scope="run"),
    Option("junit_xml", "path", "write JUnit XML", cli=("--junit-xml",),
           pytest="--junit-xml", pytest_owner="pytest", pytest_dest="xmlpath",
           commands=("check", "library", "merge"), metavar="FILE", path="output",
           scope="run"),
    Option("shard", "shard", "check only shard K of N: the sorted env ids, every N-th from "
           "the K-th, the same on every machine (CI matrices; join the reports with "
           "`vfcheck merge`). A shard left with no env passes, saying so", cli=("--shard",),
           pytest="--vf-shard", metavar="K/N", scope="run"),
    Option("html", "path", "write the HTML report: one self-contained file (the outcome "
           "matrix, episodes, notify timelines, golden diffs, reward probes)",
           cli=("--html",), pytest="--vf-html", commands=("check", "library"),
           metavar="FILE", path="output", scope="run"),
    Option("verbose", "flag", "print every finding's row, not only failures and errors "
           "(pytest: its own `-v`)", default=False, shown_default="off",
           cli=("-v", "--verbose"), commands=("check", "library"), scope="run"),
    Option("from_validate", "path", "grade an existing vf-validate run directory instead",
           cli=("--from-validate",), metavar="RUN_DIR", scope="run"),
    Option("only", "text", "run only these items, e.g. 'gold[1]' or 'lifecycle'", default=[],
           pytest="--vf-only", commands=(), metavar="ITEM", repeat=True, scope="run"),
    Option("library", "flag", "check the installed verifiers against the contracts vfcheck "
           "relies on (`vfcheck library`)", default=False, shown_default="off",
           pytest="--vf-library", commands=(), scope="run"),
    Option("no_baseline", "flag", "library suite: report known behaviours of this verifiers "
           "as failed, not expected", default=False, shown_default="off", cli=("--no-baseline",),
           pytest="--vf-no-baseline", commands=("library",), scope="run"),
    Option("envs_at_once", "int", "env workers running at once in one front end (the "
           "others queue)", shown_default="one per free core (the header says)",
           key="envs_at_once", cli=("--envs-at-once",), pytest="--vf-envs-at-once",
           env="VFCHECK_ENVS_AT_ONCE", metavar="N", minimum=1, scope="run"),
    Option("episodes_at_once", "int", "episodes in flight in each env worker (chat "
           "episodes, and those that start a tool server or harness program)", shown_default=
           "sized to the free cores and memory (the header says)", key="episodes_at_once",
           cli=("--episodes-at-once",), pytest="--vf-episodes-at-once",
           env="VFCHECK_EPISODES_AT_ONCE", metavar="N", minimum=1, scope="run"),
    Option("spread", "choice", "who checks the envs under `pytest -n N --dist loadscope`: "
           "`workers`, each env on the xdist worker that runs its items; `controller`, this "
           "process, each env once, the workers reporting its findings; `auto`, `workers` "
           "when a worker is on another machine (`--tx ssh=...`), else `controller`, since "
           "workers on this machine share its cores and would load each env twice",
           default="auto", key="spread", pytest="--vf-spread", commands=(),
           choices=("auto", "workers", "controller"), scope="run"),
)
BY_NAME = {option.name: option for option in OPTIONS}


# -- the front ends' flags


def add_cli_options(parser: argparse.ArgumentParser, command: str) -> None:
    """The table's options of the `vfcheck <command>` subcommand."""
    for option in OPTIONS:
        if command not in option.commands or not (option.cli or option.positional):
            continue
        if option.positional:
            parser.add_argument(option.name, nargs="*", metavar=option.metavar,
                                help=option.help_text())
        else:
            parser.add_argument(*option.cli, dest=option.name, **option.argparse_kwargs())


def cli_given(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """What the command line gave for the subcommand's options (None: not given)."""
    return {option.name: getattr(args, option.name, None) for option in OPTIONS
            if command in option.commands}


def add_pytest_options(group: pytest.OptionGroup) -> None:
    """The table's `--vf-*` options (flags of pytest and syrupy are theirs)."""
    for option in OPTIONS:
        if option.pytest is not None and option.pytest_owner is None:
            group.addoption(option.pytest, **option.argparse_kwargs())



def where_given(option: Option, front: Front) -> str:
    """How a message names the command-line flag of `option`."""
    return (option.pytest or option.name) if front == "pytest" else (
        "/".join(option.cli) or (option.metavar if option.positional else None)
        or option.name.upper())


# -- the README's table


def readme_table() -> str:
    """The option table of docs/reference/options.md (a test holds them equal)."""

    def flags(words: Sequence[str], option: Option, owner: str | None = None) -> str:
        if not words:
            return ""
        value = "" if option.kind == "flag" else f" {option.metavar or '|'.join(option.choices)}"
        text = f"`{', '.join(words)}{value}`".replace("|", "\\|")
        return text + (f" ({owner}'s)" if owner else "")

    rows = ["| pytest | `vfcheck check` | `[tool.vfcheck]` | meaning | default |",
            "|---|---|---|---|---|"]
    for option in OPTIONS:
        pytest_cell = flags([option.pytest] if option.pytest else [], option,
                            option.pytest_owner)
        if option.positional:
            cli_cell = f"`{option.metavar}...` (positional)"
        else:
            cli_cell = flags(option.cli, option)
            if option.cli and "check" not in option.commands:
                cli_cell += f" (`vfcheck {option.commands[0]}`)"
        key = (f"`{option.key}`" if option.key else
               f"`{option.env}` (environment)" if option.env else "")
        default = option.shown_default or (
            "" if option.default in (None, [], {}) else _text_of(option.default))
        rows.append(f"| {pytest_cell} | {cli_cell} | {key} | {option.help} | {default} |")
    return "\n".join(rows) + "\n"
