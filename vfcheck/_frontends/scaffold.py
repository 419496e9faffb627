"""`vfcheck init`: add vfcheck to an env package, in its folder, without touching what the
user wrote.

Three steps, each idempotent (a second run changes nothing and says so) and each refusing to
overwrite: `[tool.vfcheck]` in `pyproject.toml` (the envs and the module folder, added with
tomlkit so the user's formatting and comments stay; a key already there with another value
is a refusal), the CI workflow `.github/workflows/vfcheck.yml` (an existing different file is a
refusal), and the envs' golden traces, recorded by `vfcheck check --checks golden
--golden-update` (an env with golden traces already keeps them). Conflicts are found before
anything is written: a refused init writes nothing.

The result is parsed back and compared with what was meant before it is written.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["WORKFLOW", "WORKFLOW_PATH", "InitError", "InitPlan", "Install", "init_package",
           "install_of", "plan_init", "workflow_text"]

WORKFLOW_PATH = Path(".github", "workflows", "vfcheck.yml")
WORKFLOW_TEMPLATE = """\
# vfcheck's conformance checks of this package's envs (written by `vfcheck init`).
# The envs and paths come from [tool.vfcheck] in pyproject.toml; golden traces from golden/.
name: vfcheck
on:
  push:
  pull_request:
jobs:
  vfcheck:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install the package and vfcheck ({source})
        run: pip install -e . {requirement}
      - name: Check the envs
        run: >-
          vfcheck check --golden-strict
          --junit-xml vfcheck.xml --json vfcheck.json --html vfcheck.html
      - name: Upload the report
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: vfcheck-report
          path: |
            vfcheck.html
            vfcheck.json
            vfcheck.xml
"""
"""The workflow: `vfcheck check` reads the envs from pyproject.toml, fails on a missing
golden trace (`--golden-strict`: they were recorded), and the reports are uploaded even
when it fails. `{requirement}` is where CI installs vfcheck from (`Install`)."""


@dataclass(frozen=True)
class Install:
    """Where the workflow installs vfcheck from: a pip requirement, what it is in words
    (`the package index`, `a git URL`, `a path in the package`), and a note when the choice
    was not the user's and may not suit their CI."""

    requirement: str
    source: str
    note: str = ""


def workflow_text(install: Install) -> str:
    return WORKFLOW_TEMPLATE.format(requirement=install.requirement, source=install.source)


def index_install() -> Install:
    from vfcheck._version import __version__

    return Install(shlex.quote(f"vfcheck=={__version__}"), "the package index")


def install_of(root: Path, given: str | None) -> Install:
    """Where CI gets vfcheck: `given` (`--install`: `index`, a git URL, a path, or any pip
    requirement), else how this vfcheck was installed (PEP 610's `direct_url.json`): from
    a git URL, from a folder or wheel inside the package, else from the package index, with
    a note when this one came from somewhere CI cannot reach."""
    if given is not None:
        return _given_install(root, given)
    import importlib.metadata

    try:
        text = importlib.metadata.distribution("vfcheck").read_text("direct_url.json")
        direct = json.loads(text) if text else None
    except (importlib.metadata.PackageNotFoundError, ValueError):
        direct = None
    if not isinstance(direct, dict) or not isinstance(direct.get("url"), str):
        return index_install()
    url: str = direct["url"]
    vcs = direct.get("vcs_info")
    if isinstance(vcs, dict) and not url.startswith("file:"):
        commit = vcs.get("commit_id") or vcs.get("requested_revision")
        spec = f"{vcs.get('vcs', 'git')}+{url}" + (f"@{commit}" if commit else "")
        return Install(shlex.quote(f"vfcheck @ {spec}"), "a git URL")
    if url.startswith("file:"):
        from urllib.parse import unquote, urlparse

        local = Path(unquote(urlparse(url).path))
        inside = _inside(root, local)
        if inside is not None:
            return Install(shlex.quote(f"./{inside}"), "a path in the package")
        return Install(index_install().requirement, "the package index",
                       f"vfcheck here was installed from {local}, which CI cannot reach: the "
                       "workflow installs it from the package index; if it is not there, "
                       "run vfcheck init --install git+URL (or a path in the package)")
    return Install(shlex.quote(f"vfcheck @ {url}"), "a URL")


def _inside(root: Path, path: Path) -> str | None:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix() or "."
    except ValueError:
        return None


def _given_install(root: Path, given: str) -> Install:
    if given in ("index", "pypi"):
        return index_install()
    if given.startswith(("git+", "hg+")):
        return Install(shlex.quote(f"vfcheck @ {given}"), "a git URL")
    candidate = (root / given) if not Path(given).is_absolute() else Path(given)
    if candidate.exists():
        inside = _inside(root, candidate)
        if inside is None:
            raise InitError(f"--install: {candidate} is outside the package, where CI cannot "
                            "reach it: give a git URL, `index`, or a path in the package",
                            usage=True)
        return Install(shlex.quote(f"./{inside}"), "a path in the package")
    return Install(shlex.quote(given), "the package index" if given.startswith("vfcheck")
                   else "a pip requirement")


WORKFLOW = workflow_text(index_install())
"""The workflow that installs vfcheck from the package index."""


class InitError(Exception):
    """init cannot run here or refuses to overwrite; `str()` is one line saying why and what
    to do. `usage` is True for a usage error (exit 2), False for a refusal (exit 1)."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


@dataclass
class InitPlan:
    """What `init` will do in `root`: the new pyproject text (None: unchanged), whether the
    workflow is written, and which envs get golden traces recorded."""

    root: Path
    envs: list[str]
    paths: list[str]
    pyproject_text: str | None
    workflow: bool
    golden: Path
    record: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    """Envs whose golden traces exist (kept as they are)."""
    notes: list[str] = field(default_factory=list)
    install: Install | None = None
    """Where the workflow installs vfcheck from (`install_of`)."""

    @property
    def changes(self) -> bool:
        return self.pyproject_text is not None or self.workflow or bool(self.record)


def module_of(env_id: str) -> str:
    """The module verifiers' loader imports for `env_id` (`utils/loaders.py`): `owner/` and
    `@version` stripped, `-` -> `_`."""
    return env_id.rpartition("/")[2].partition("@")[0].replace("-", "_")


def module_folder(root: Path, env_id: str) -> str | None:
    """The folder below `root` (`.` or `src`) holding `env_id`'s module, if it is there."""
    name = module_of(env_id)
    for folder in (".", "src"):
        base = root / folder
        if (base / f"{name}.py").is_file() or (base / name / "__init__.py").is_file():
            return folder
    return None


def _relative(root: Path, path: str) -> str:
    """`path` as pyproject.toml should hold it: relative to the package when inside it (a
    path of this machine must not land in a file the package commits)."""
    given = Path(path)
    if not given.is_absolute():
        return path
    try:
        return given.resolve().relative_to(root.resolve()).as_posix() or "."
    except ValueError:
        return path


def plan_init(root: Path, envs: Sequence[str], paths: Sequence[str],
              golden_dir: Callable[[], Path], install: str | None = None) -> InitPlan:
    """Decide everything, write nothing; raises `InitError` on a conflict. `golden_dir`
    gives the project's golden folder (asked once the settings are known); `install`,
    where the workflow installs vfcheck from (`install_of`)."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        raise InitError(f"no pyproject.toml in {root}: run vfcheck init in the env package's "
                        "folder", usage=True)
    text = pyproject.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InitError(f"{pyproject.name}: invalid TOML: {error}", usage=True) from None
    section = data.get("tool", {}).get("vfcheck", {})
    if not isinstance(section, dict):
        raise InitError(f"{pyproject.name}: tool.vfcheck is not a table", usage=True)
    notes: list[str] = []
    wanted_envs = list(envs) or list(section.get("envs") or [])
    if not wanted_envs:
        name = data.get("project", {}).get("name")
        if not isinstance(name, str) or not name:
            raise InitError("name the env(s): vfcheck init ENV (pyproject.toml has no "
                            "[project] name to take it from)", usage=True)
        wanted_envs = [name]
        notes.append(f"env {name!r}: the project's name (name others: vfcheck init ENV...)")
    wanted_paths = [_relative(root, path) for path in paths]
    if not wanted_paths and "paths" not in section:
        found = {folder for env in wanted_envs if (folder := module_folder(root, env))}
        wanted_paths = sorted(found)
    wanted: dict[str, list[str]] = {"envs": wanted_envs}
    if wanted_paths:
        wanted["paths"] = wanted_paths
    missing = {}
    for key, value in wanted.items():
        present = section.get(key)
        if present is None:
            missing[key] = value
        elif present != value:
            raise InitError(
                f"{pyproject.name}: [tool.vfcheck] {key} = {json.dumps(present)} already, not "
                f"{json.dumps(value)}: init does not overwrite it (edit it yourself, or run "
                f"vfcheck init {' '.join(map(shlex.quote, map(str, present)))}"
                + (" with its --path" if key == "paths" else "") + ")")
    new_text = _with_keys(text, data, missing, pyproject.name) if missing else None

    workflow = root / WORKFLOW_PATH
    write_workflow = True
    source = install_of(root, install)
    if workflow.exists():
        if workflow.read_text(encoding="utf-8") != workflow_text(source):
            raise InitError(f"{WORKFLOW_PATH} exists and is not vfcheck init's: init does not "
                            "overwrite it (move it away to get init's, or add the vfcheck check "
                            "step to it yourself)")
        write_workflow = False

    golden = golden_dir()
    record: list[str] = []
    kept: list[str] = []
    for env in wanted_envs:
        (kept if any((golden / env).glob("*.json")) else record).append(env)
    return InitPlan(root, wanted_envs, wanted.get("paths", []), new_text, write_workflow,
                    golden, record, kept, notes, source)


def _with_keys(text: str, data: dict[str, Any], keys: dict[str, list[str]],
               name: str) -> str:
    """`text` with `keys` added to `[tool.vfcheck]` (made if missing), written by tomlkit,
    which keeps the user's formatting, comments and key style (dotted keys too); parsed
    back and checked to change nothing else."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        document = tomlkit.parse(text)
        tool = document.get("tool")
        if tool is None:
            tool = tomlkit.table(is_super_table=True)
            document.add("tool", tool)
        table = tool.get("vfcheck")
        if table is None:
            table = tomlkit.table()
            tool.add("vfcheck", table)
        for key, value in keys.items():
            table.add(key, value)
        new = tomlkit.dumps(document)
    except TOMLKitError:
        new = ""
    expected = json.loads(json.dumps(data))
    expected.setdefault("tool", {}).setdefault("vfcheck", {}).update(keys)
    try:
        if new and tomllib.loads(new) == expected:
            return new
    except tomllib.TOMLDecodeError:
        pass
    lines = "".join(f"{key} = {json.dumps(value)}\n" for key, value in keys.items())
    raise InitError(f"{name}: cannot add {', '.join(keys)} to [tool.vfcheck] here; add "
                    f"these lines to it yourself: {lines.strip()!r}")


def record_golden(root: Path, env: str, *, echo: Callable[[str], None]) -> int:
    """Record `env`'s golden traces with `vfcheck check --checks golden --golden-update` in
    `root` (it reads the pyproject.toml just written); its exit code."""
    command = [sys.executable, "-m", "vfcheck", "check", env, "--checks", "golden",
               "--golden-update"]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        for line in (done.stdout + done.stderr).strip().splitlines()[-15:]:
            echo(f"    {line}")
    return done.returncode


def init_package(plan: InitPlan, *, echo: Callable[[str], None]) -> bool:
    """Carry the plan out, saying what is done; False if recording a golden trace failed."""
    for note in plan.notes:
        echo(note)
    if plan.pyproject_text is not None:
        (plan.root / "pyproject.toml").write_text(plan.pyproject_text, encoding="utf-8")
        shown = ", ".join(f"{key} = {json.dumps(value)}" for key, value in
                          (("envs", plan.envs), ("paths", plan.paths)) if value)
        echo(f"pyproject.toml: [tool.vfcheck] {shown}")
    else:
        echo("pyproject.toml: [tool.vfcheck] already set, unchanged")
    if plan.workflow:
        path = plan.root / WORKFLOW_PATH
        path.parent.mkdir(parents=True, exist_ok=True)
        install = plan.install or index_install()
        path.write_text(workflow_text(install), encoding="utf-8")
        echo(f"{WORKFLOW_PATH}: written (vfcheck check, reports uploaded as an artifact); it "
             f"installs vfcheck from {install.source}: pip install -e . "
             f"{install.requirement} (another source: vfcheck init --install index|git+URL|"
             "PATH)")
        if install.note:
            echo(f"{WORKFLOW_PATH}: {install.note}")
    else:
        echo(f"{WORKFLOW_PATH}: already there, unchanged")
    for env in plan.kept:
        echo(f"{_shown(plan, env)}: golden traces exist, kept (re-record: vfcheck check {env} "
             "--checks golden --golden-update)")
    ok = True
    for env in plan.record:
        echo(f"{_shown(plan, env)}: recording golden traces (vfcheck check {env} --checks "
             "golden --golden-update) ...")
        if record_golden(plan.root, env, echo=echo) != 0:
            echo(f"{_shown(plan, env)}: recording failed (above); fix the env, then run "
                 "vfcheck init again")
            ok = False
        else:
            count = len(list((plan.golden / env).glob("*.json")))
            echo(f"{_shown(plan, env)}: {count} golden trace(s) recorded")
    return ok


def _shown(plan: InitPlan, env: str) -> str:
    folder = plan.golden / env
    try:
        return str(folder.relative_to(plan.root))
    except ValueError:
        return str(folder)
