"""The options of one check run, resolved: `CheckOptions` (what the check worker checks),
`RunOptions` (what the front end does with the run), and `resolve`, which reads them from
`[tool.vfcheck]` of the nearest pyproject.toml, the environment and the command line, in
that order of precedence, and checks every value before any work starts. Every option, its
default and what it allows are in one table, `vfcheck._options.table.OPTIONS`.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from vfcheck._options.allow import unknown_patterns
from vfcheck._options.table import (
    BY_NAME,
    OPTIONS,
    Front,
    GoldenFrom,
    OptionError,
    where_given,
)
from vfcheck._shared.paths import shown_path, unwritable, write_refusal

if TYPE_CHECKING:
    from vfcheck._shared.shards import Shard

__all__ = ["CheckOptions", "EpisodeOptions", "OptionError", "Resolved", "RunOptions",
           "resolve", "resolve_options", "shown_path", "write_refusal"]


def default_of(name: str) -> Callable[[], Any]:
    """The table's default of option `name`, as a dataclass default factory (a fresh copy
    each time: the default is written once, in `OPTIONS`)."""
    return lambda: copy.deepcopy(BY_NAME[name].default)


@dataclass
class CheckOptions:
    """What a check worker checks and how, as the front end resolved it (paths absolute).
    One field per `check` option of `OPTIONS`, plus where the golden traces are allowed."""

    env_args: dict[str, Any] = field(default_factory=default_of("env_args"))
    paths: list[str] = field(default_factory=default_of("paths"))
    num_tasks: int | None = field(default_factory=default_of("num_tasks"))
    families: list[str] | None = field(default_factory=default_of("families"))
    sample: int = field(default_factory=default_of("sample"))
    timeout: float = field(default_factory=default_of("timeout"))
    harness: Literal["env", "fast"] = field(default_factory=default_of("harness"))
    script: str | None = field(default_factory=default_of("script"))
    seed: int | None = field(default_factory=default_of("seed"))
    golden_dir: str = field(default_factory=default_of("golden_dir"))
    """Where golden traces live (absolute once resolved)."""
    golden_update: bool = field(default_factory=default_of("golden_update"))
    golden_strict: bool = field(default_factory=default_of("golden_strict"))
    wheels: str | None = field(default_factory=default_of("wheels"))
    cold_starts: bool = field(default_factory=default_of("cold_starts"))
    allow: dict[str, str] = field(default_factory=default_of("allow"))
    """Accepted findings: fnmatch pattern -> the user's reason (`vfcheck._options.allow`)."""
    load_timeout: float | None = field(default_factory=default_of("load_timeout"))
    """The load's deadline; None: the longer of `timeout` and `LOAD_TIMEOUT`
    (`CheckSpec.timeout`)."""
    reward_max: float | None = field(default_factory=default_of("reward_max"))
    fuzz_examples: int = field(default_factory=default_of("fuzz_examples"))
    group_size: int = field(default_factory=default_of("group_size"))
    soak_episodes: int = field(default_factory=default_of("soak_episodes"))
    soak_growth: int = field(default_factory=default_of("soak_growth"))
    pool_workers: int = field(default_factory=default_of("pool_workers"))
    golden_dir_from: GoldenFrom = "default"
    """Who named the golden dir: the command line (replay lines repeat it), pyproject.toml,
    or nobody (`golden/` of the project)."""
    allow_from: dict[str, str] = field(default_factory=dict)
    """Where each `allow` pattern was set: `pyproject.toml [tool.vfcheck] allow`, `--allow`
    (the closing line says so)."""
    project_dir: str = ""
    """The project vfcheck was invoked in: the folder of the pyproject.toml nearest the
    working directory, else the working directory. Golden traces are written only inside
    it, or inside a golden dir the user named."""

    @property
    def golden_write_root(self) -> str:
        """The only folder golden traces may be written below: the golden dir the user
        named (command line or pyproject.toml), else the project."""
        if self.golden_dir_from != "default":
            return self.golden_dir
        return self.project_dir or str(Path.cwd())

    @property
    def played_seed(self) -> int:
        """The seed this run plays (`vfcheck._model.script.seed_that_plays`); without a script
        file the scripted model (and the openai SDK) is not imported to say so."""
        if self.seed is None and not self.script:
            return 0
        from vfcheck._model.script import seed_that_plays

        return seed_that_plays(self.seed, self.script)

    def as_dict(self) -> dict[str, Any]:
        """What travels to the check worker (JSON)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckOptions:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def replay_args(self, *, pytest: bool) -> list[str]:
        """The options as command-line words, to print a replayable command line."""
        front: Front = "pytest" if pytest else "cli"
        words: list[str] = []
        for option in OPTIONS:
            flag = option.flag_for(front)
            if option.scope != "check" or not option.replay or flag is None:
                continue
            if option.name == "golden_dir" and self.golden_dir_from != "command line":
                continue  # the default, or pyproject.toml's: found again where it is replayed
            if option.name == "seed" and CheckOptions(script=self.script).played_seed == (
                    self.played_seed):
                continue  # the replayed script (or the default) plays the same seed
            words += option.words(flag, getattr(self, option.name), front=front)
        return words

    def record_golden_command(self, env_id: str, *, pytest: bool) -> str:
        """The command line that (re)records `env_id`'s golden traces with these options."""
        import shlex

        recording = CheckOptions.from_dict({**self.as_dict(), "families": ["golden"],
                                            "golden_strict": False})
        words = recording.replay_args(pytest=pytest)
        if pytest:
            return shlex.join(["pytest", "--vf-env", env_id, *words, "--snapshot-update"])
        return shlex.join(["vfcheck", "check", env_id, *words, "--golden-update"])


@dataclass
class RunOptions:
    """What the front end does with a run: one field per `run` option of `OPTIONS`."""

    envs: list[str] = field(default_factory=default_of("envs"))
    json: str | None = field(default_factory=default_of("json"))
    junit_xml: str | None = field(default_factory=default_of("junit_xml"))
    shard: Shard | None = field(default_factory=default_of("shard"))
    html: str | None = field(default_factory=default_of("html"))
    verbose: bool = field(default_factory=default_of("verbose"))
    from_validate: str | None = field(default_factory=default_of("from_validate"))
    only: list[str] = field(default_factory=default_of("only"))
    library: bool = field(default_factory=default_of("library"))
    no_baseline: bool = field(default_factory=default_of("no_baseline"))
    envs_at_once: int | None = field(default_factory=default_of("envs_at_once"))
    """None: sized to the free cores and memory (`vfcheck._isolation.capacity`)."""
    episodes_at_once: int | None = field(default_factory=default_of("episodes_at_once"))
    spread: str = field(default_factory=default_of("spread"))
    """`vfcheck._frontends.xdist_spread.spreads_envs` reads it."""


@dataclass
class EpisodeOptions:
    """How `vfcheck run`, `record` and `mock-server` play: one field per `episodes` option
    of `OPTIONS`."""

    rollouts: int = field(default_factory=default_of("rollouts"))
    concurrency: int = field(default_factory=default_of("concurrency"))
    base_url: str | None = field(default_factory=default_of("base_url"))
    api_key_var: str = field(default_factory=default_of("api_key_var"))
    model: str | None = field(default_factory=default_of("model"))
    episode_timeout: float = field(default_factory=default_of("episode_timeout"))
    output: str | None = field(default_factory=default_of("output"))
    port: int = field(default_factory=default_of("port"))


@dataclass
class Resolved:
    check: CheckOptions
    run: RunOptions
    episodes: EpisodeOptions = field(default_factory=EpisodeOptions)
    listed_envs: Any = None
    """`[tool.vfcheck] envs` as written (the ids "did you mean" offers)."""
    where_of: dict[str, str] = field(default_factory=dict)
    """Where each option given a value got it last (`--checks`, pyproject.toml, ...)."""

    def check_names(self, families: Sequence[str], check_ids: Sequence[str]) -> None:
        """`--checks` names registered families, and each `allow` pattern can name a
        registered check: a typo is a usage error with "did you mean", never a run that
        checks or accepts nothing. The registry is above the options: the front ends pass
        its names."""
        import difflib

        unknown = [f for f in self.check.families or [] if f not in families]
        if unknown:
            close = difflib.get_close_matches(unknown[0], families, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise OptionError(
                f"{self.where_of.get('families', 'checks')}: unknown check "
                f"famil{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)} "
                f"({hint}known: {', '.join(families)})")
        for pattern in unknown_patterns(self.check.allow, check_ids):
            name = pattern.split("::", 1)[-1].split("[", 1)[0]
            close = difflib.get_close_matches(name, check_ids, n=1)
            hint = f"did you mean {close[0]!r}?" if close else "`vfcheck list-checks` lists them"
            raise OptionError(
                f"{self.check.allow_from.get(pattern, 'allow')}: allow pattern {pattern!r} "
                f"names no check ({hint})")

    def find_envs(self) -> None:
        """Each env id this run checks (its shard's) names a module (`check_env_ids`); the
        last check of the options: any other bad value is said first."""
        shard = self.run.shard
        envs = self.run.envs if shard is None else shard.pick(self.run.envs)
        check_env_ids(envs, self.check.paths, self.listed_envs)


# -- resolving


def nearest_pyproject(start: Path) -> Path | None:
    for folder in [start, *start.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def pyproject_settings(pyproject: Path) -> dict[str, Any]:
    """`[tool.vfcheck]` of `pyproject`, by option name; an unknown key is an OptionError
    that names the closest known one."""
    import difflib
    import tomllib

    label = f"{shown_path(pyproject)}: [tool.vfcheck]"
    try:
        data = tomllib.loads(pyproject.read_text())
    except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError) as e:
        raise OptionError(f"{shown_path(pyproject)}: {e}") from e
    section = data.get("tool", {}).get("vfcheck", {})
    if not isinstance(section, dict):
        raise OptionError(f"{label} is not a table")
    by_key = {k: option for option in OPTIONS if option.key
              for k in (option.key, *option.key_aliases)}
    settings: dict[str, Any] = {}
    for key, value in section.items():
        option = by_key.get(key.replace("-", "_"))
        if option is None:
            known = [o.key for o in OPTIONS if o.key]
            close = difflib.get_close_matches(key.replace("-", "_"), known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(known)}"
            raise OptionError(f"{label}: unknown key {key!r} ({hint})")
        settings[option.name] = value
    return settings


def resolve(cwd: Path, given: Mapping[str, Any] | None = None, *, front: Front = "cli",
            pyproject: bool = True, environ: Mapping[str, str] | None = None,
            find_envs: bool = False) -> Resolved:
    """Every option of a run, checked: `[tool.vfcheck]` of the pyproject.toml nearest `cwd`
    (relative paths there are relative to its folder), then the environment, then what the
    command line gave (`None` = not given; relative paths relative to `cwd`), which wins.
    Raises OptionError for the first bad value (or unknown key), before any work starts.

    `cwd` is the working directory the user invoked vfcheck in, for both front ends (never
    pytest's rootdir, which lands elsewhere when pytest takes an option's value for a test
    path): its project is the folder of the nearest pyproject.toml. `find_envs`: each env
    id must name a module verifiers can load (`check_env_ids`)."""
    cwd = cwd.resolve()
    given = given or {}
    environ = os.environ if environ is None else environ
    found = nearest_pyproject(cwd)
    settings = pyproject_settings(found) if found is not None and pyproject else {}
    project = found.parent.resolve() if found is not None else cwd
    check, run = CheckOptions(project_dir=str(project)), RunOptions()
    where_of: dict[str, str] = {}
    episodes = EpisodeOptions()
    for option in OPTIONS:
        target: Any = {"check": check, "run": run, "episodes": episodes}[option.scope]
        sources: list[tuple[Any, str, bool, Path]] = []
        if option.name in settings:
            assert found is not None
            sources.append((settings[option.name],
                            f"{shown_path(found)}: [tool.vfcheck] {option.key}", False, project))
        if option.env and environ.get(option.env):
            sources.append((environ[option.env], f"environment variable {option.env}", True,
                            cwd))
        raw = given.get(option.name)
        if raw is not None and raw != []:
            sources.append((raw, where_given(option, front), True, cwd))
        for value, where, text, base in sources:
            parsed = option.parse(value, where, text=text, base=base)
            if option.name == "allow":
                check.allow_from.update(dict.fromkeys(parsed, where))
            current = getattr(target, option.name)
            if option.kind in ("pairs", "allows"):
                parsed = {**current, **parsed}
            elif option.repeat and not (option.given_replaces and text):
                parsed = list(dict.fromkeys([*parsed, *current]))  # the command line's first
            setattr(target, option.name, parsed)
            where_of[option.name] = where
        if option.name == "golden_dir":
            check.golden_dir_from = ("command line" if raw else
                                     "pyproject" if option.name in settings else "default")
    if not check.golden_dir:
        check.golden_dir = str((project / "golden").resolve())
    _check_usable(check, front)
    _check_reports_apart(run, front)
    resolved = Resolved(check, run, episodes, listed_envs=settings.get("envs"),
                        where_of=where_of)
    if find_envs:
        resolved.find_envs()
    return resolved


def check_env_ids(env_ids: list[str], paths: list[str], known: Any = None) -> None:
    """Each env id names a module verifiers' loader can find (`vfcheck._shared.env_ids`), else an
    OptionError with "did you mean" from `known` (`[tool.vfcheck] envs`) and the ids under
    `paths`: a typo is a usage error before any slow load."""
    from vfcheck._shared.env_ids import unknown_env

    listed = [k for k in known if isinstance(k, str)] if isinstance(known, list) else []
    for env_id in env_ids:
        if (why := unknown_env(env_id, paths, listed)) is not None:
            raise OptionError(why)


def _check_reports_apart(run: RunOptions, front: Front) -> None:
    """Each report goes to a file of its own: two named alike would overwrite each other."""
    seen: dict[Path, str] = {}
    for name in ("json", "junit_xml", "html"):
        if (value := getattr(run, name)) is None:
            continue
        where = where_given(BY_NAME[name], front)
        if (path := Path(value).resolve()) in seen:
            raise OptionError(f"{where}: {path} is the {seen[path]} report's file too; give "
                              "each report a file of its own")
        seen[path] = where


def _check_usable(options: CheckOptions, front: Front) -> None:
    """What one value alone cannot tell: that the golden dir can be written when updating,
    and lies in the project (a `golden` link to another project's folder is refused)."""
    golden = Path(options.golden_dir)
    if not options.golden_update:
        return
    where = where_given(BY_NAME["golden_update"], front)
    if problem := unwritable(golden, folder=True):
        raise OptionError(f"{where}: cannot write golden traces to {golden}: {problem}")
    if refused := write_refusal(golden, Path(options.golden_write_root)):
        raise OptionError(f"{where}: {refused}")


def resolve_options(start: Path, given: Mapping[str, Any] | None = None, *,
                    front: Front = "cli") -> CheckOptions:
    """The check options of a run started in `start` (see `resolve`)."""
    return resolve(start, given, front=front).check
