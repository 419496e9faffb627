"""One option set for both front ends (`pytest --vf-*`, `vfcheck check --*`), also read
from `[tool.vfcheck]` in pyproject.toml. The command line wins over the file."""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

DEFAULT_SAMPLE = 3
DEFAULT_TIMEOUT = 60.0


@dataclass
class CheckOptions:
    env_args: dict[str, Any] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)
    num_tasks: int | None = None
    families: list[str] | None = None
    sample: int = DEFAULT_SAMPLE
    timeout: float = DEFAULT_TIMEOUT
    harness: str = "fast"
    script: str | None = None
    seed: int | None = None
    golden_dir: str = ""
    """Where golden traces live (absolute once resolved; default `golden/` beside the
    pyproject.toml, else under the start folder)."""
    golden_dir_given: bool = False
    """True when the command line named the golden dir (replay commands repeat it)."""
    golden_update: bool = False
    """Write golden traces (`--snapshot-update`, `--golden-update`)."""
    golden_strict: bool = False
    """A missing or unused golden trace fails (CI, once recorded)."""
    wheels: str | None = None
    """A folder of wheels the harness programs resolve their dependencies from, with no
    package index (absolute once resolved; `vfcheck.episodes.harness_deps`)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckOptions:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def replay_args(self, *, pytest: bool) -> list[str]:
        """The options as command-line words, to print a replayable command line."""
        prefix = "--vf-" if pytest else "--"
        words: list[str] = []
        for key, value in self.env_args.items():
            words += [f"{prefix}env-arg", f"{key}={value}"]
        for path in self.paths:
            words += [f"{prefix}path", path]
        if self.num_tasks is not None:
            words += [f"{prefix}num-tasks", str(self.num_tasks)]
        if self.families:
            words += [f"{prefix}checks", ",".join(self.families)]
        if self.sample != DEFAULT_SAMPLE:
            words += [f"{prefix}sample", str(self.sample)]
        if self.timeout != DEFAULT_TIMEOUT:
            words += [f"{prefix}timeout", f"{self.timeout:g}"]
        if self.harness != "fast":
            words += [f"{prefix}harness", self.harness]
        if self.script:
            words += [f"{prefix}script", self.script]
        if self.seed is not None:
            words += [f"{prefix}seed", str(self.seed)]
        if self.golden_dir_given:
            from vfcheck.traces.golden import shown_path

            words += [f"{prefix}golden-dir", shown_path(Path(self.golden_dir))]
        if self.golden_strict:
            words += [f"{prefix}golden-strict"]
        if self.wheels:
            words += [f"{prefix}wheels", self.wheels]
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


def nearest_pyproject(start: Path) -> Path | None:
    for folder in [start, *start.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def pyproject_settings(start: Path) -> dict[str, Any]:
    """`[tool.vfcheck]` of the nearest pyproject.toml at or above `start` (else {})."""
    candidate = nearest_pyproject(start)
    if candidate is None:
        return {}
    try:
        data = tomllib.loads(candidate.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{candidate}: {e}") from e
    section = data.get("tool", {}).get("vfcheck", {})
    return {k.replace("-", "_"): v for k, v in section.items()}


def resolve_options(
    start: Path,
    *,
    env_args: list[str] | None = None,
    paths: list[str] | None = None,
    checks: str | None = None,
    golden_dir: str | None = None,
    wheels: str | None = None,
    wheels_flag: str = "--wheels",
    **given: Any,
) -> CheckOptions:
    """The options of one run, for both front ends: `[tool.vfcheck]` of the nearest
    pyproject.toml at or above `start`, overridden by what the command line gave (`None` =
    not given). A golden dir or wheel folder given on the command line is relative to the
    working directory; one in pyproject.toml, and the default `golden`, to the
    pyproject.toml's folder (else `start`). Raises ValueError (or ScriptError) for an unknown
    family, a broken script or a missing wheel folder: usage errors, reported before any
    env runs."""
    from vfcheck.checks import select
    from vfcheck.episodes.harness_deps import wheel_folder
    from vfcheck.episodes.offline import parse_env_arg
    from vfcheck.script import Script

    settings = pyproject_settings(start)
    options = CheckOptions.from_dict(settings)
    pyproject = nearest_pyproject(start)
    base = pyproject.parent if pyproject is not None else start
    if golden_dir:
        options.golden_dir = str(Path(golden_dir).resolve())
        options.golden_dir_given = True
    else:
        options.golden_dir = str((base / (options.golden_dir or "golden")).resolve())
    if wheels:
        options.wheels = str(wheel_folder(wheels, Path.cwd(), wheels_flag))
    elif options.wheels:
        options.wheels = str(wheel_folder(options.wheels, base,
                                          f"{pyproject}: [tool.vfcheck] wheels"))
    if settings.get("checks") and not options.families:
        options.families = [str(c) for c in settings["checks"]]
    if env_args:
        options.env_args = {**options.env_args, **dict(parse_env_arg(a) for a in env_args)}
    if paths:
        options.paths = [*paths, *options.paths]
    for attr, value in given.items():
        if value is not None:
            setattr(options, attr, str(value) if attr == "script" else value)
    if checks:
        options.families = [c.strip() for c in checks.split(",") if c.strip()]
    select(options.families)
    if options.script:
        Script.load(Path(options.script))
    return options
