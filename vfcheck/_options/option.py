"""One option of vfcheck's front ends (`Option`): its flags, its `[tool.vfcheck]` key, what
it allows, and how a value is read from the command line, the environment or TOML and
written back into a replay line. The options themselves are `vfcheck._options.table.OPTIONS`.
Stdlib only: the plugin imports it at every pytest start.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from vfcheck._shared.paths import shown_path, unwritable

Kind = Literal["text", "pairs", "allows", "path", "int", "float", "choice", "list", "flag",
               "shard"]
PathRole = Literal["any", "file", "dir", "golden", "output"]
"""What a path must be: `file` and `dir` must exist; a `golden` folder may not exist yet; an
`output` file is checked writable."""
Scope = Literal["check", "run", "episodes"]
"""`check`: a field of `CheckOptions`, sent to the check worker and repeated in replay lines;
`run`: what the front end does with the run (reports, item selection), in `RunOptions`;
`episodes`: how `vfcheck run`, `record` and `mock-server` play (`EpisodeOptions`)."""
Front = Literal["cli", "pytest"]
GoldenFrom = Literal["default", "pyproject", "command line"]


class OptionError(ValueError):
    """A value no option allows, in one line naming the option, where the value came from
    and what is allowed: a usage error, reported before any work starts."""


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
    minimum: float | None = None
    above: float | None = None
    """An exclusive lower bound."""
    maximum: float | None = None
    required_for: tuple[str, ...] = ()
    """The `vfcheck` subcommands that cannot run without it (argparse says so)."""
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
                 f" >= {self.minimum:g}" if self.minimum is not None else "") + (
                     f" and <= {self.maximum:g}" if self.maximum is not None else "")
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
                from vfcheck._options.allow import parse_allow

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
            from vfcheck._options.allow import parse_allow

            try:
                return next(iter(parse_allow([raw], where).items()))
            except ValueError as e:
                raise OptionError(str(e)) from e
        if kind == "pairs":
            try:
                return parse_env_arg(raw)
            except ValueError as e:  # "env arg 'x' is not KEY=VALUE"
                raise OptionError(str(e)) from e
        if kind == "path":
            return str(self._path(raw, where, base))
        if kind == "shard":
            from vfcheck._shared.shards import Shard

            try:
                return Shard.parse(raw)
            except ValueError as e:
                raise OptionError(f"{where}: {e}") from e
        return raw

    def _in_range(self, value: float, raw: Any, where: str) -> Any:
        if (self.minimum is not None and value < self.minimum) or (
                self.above is not None and value <= self.above) or (
                self.maximum is not None and value > self.maximum):
            raise self.bad(raw, where)
        return value

    def _names(self, items: Sequence[str], raw: Any, where: str) -> list[str]:
        names = [item.strip() for item in items if item.strip()]
        if not names:
            raise OptionError(f"{where}: {raw!r} names nothing; give one or more names "
                              "(`vfcheck list-checks` lists the families)")
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


def parse_env_arg(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` from the command line; VALUE is read as JSON when it parses
    (`n=3`, `flag=true`, `xs=[1,2]`), else kept as a string."""
    import json

    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"env arg {text!r} is not KEY=VALUE")
    if any(not part.strip() for part in key.split(".")):
        raise ValueError(f"env arg {text!r}: the dotted KEY {key.strip()!r} has an empty part")
    try:
        value: Any = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value
