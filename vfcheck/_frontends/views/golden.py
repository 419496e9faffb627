"""The golden family's presentation: a line per env on its golden traces (as syrupy's
snapshot summary), the header's golden folder and mode, a loud warning when the traces were
looked for in the wrong place, and a link from each golden finding to its episode."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from vfcheck._frontends.views._view import FamilyView, view
from vfcheck._shared.findings import EnvReport
from vfcheck._shared.paths import shown_path

if TYPE_CHECKING:
    from vfcheck._options.resolved import CheckOptions

GOLDEN_ACTIONS = ("matched", "recorded", "updated", "missing", "mismatch", "corrupt",
                  "nondeterministic", "refused")


def golden_summary(env: EnvReport) -> str | None:
    """One line on the env's golden traces, syrupy's summary for vfcheck's items, with the
    folder they are in: `vfc-echo golden traces: 2 matched, 1 recorded in golden/vfc-echo;
    1 unused: golden/vfc-echo/old.json`."""
    actions: dict[str, int] = {}
    unused: list[str] = []
    folders: set[str] = set()
    for f in env.findings:
        if f.check == "golden":
            golden = f.details.get("golden") or {}
            action = golden.get("action", f.outcome)
            actions[action] = actions.get(action, 0) + 1
            if golden.get("path"):
                folders.add(shown_path(Path(golden["path"]).parent))
        elif f.check == "golden.unused":
            unused = list(f.details.get("unused") or [])
            if f.details.get("removed"):
                actions["removed as unused"] = len(f.details["removed"])
    if not actions and not unused:
        return None
    order = [*GOLDEN_ACTIONS, "removed as unused"]
    parts = [f"{actions[a]} {a}" for a in sorted(actions, key=lambda a: (
        order.index(a) if a in order else len(order), a))]
    line = f"{env.id} golden traces: {', '.join(parts) or 'none'}"
    if folders:
        line += f" in {', '.join(sorted(folders))}"
    if unused:
        line += f"; {len(unused)} unused: {', '.join(unused)}"
    return line


def golden_not_found(report: EnvReport, options: CheckOptions) -> str | None:
    """A loud line when none of the env's golden traces exist and the golden folder is not
    where it should be: beside no pyproject.toml (vfcheck ran outside any project), or not
    the env's own project's, which holds traces for it. None for a healthy first run (in
    the project, nothing recorded yet) and for a golden folder the user named."""
    golden = [f for f in report.findings if f.check == "golden"]
    if not golden or not options.golden_dir or options.golden_dir_from != "default" or any(
            (f.details.get("golden") or {}).get("action") != "missing" for f in golden):
        return None
    from vfcheck._shared.env_ids import env_module_file
    from vfcheck._traces.golden import env_folder  # syrupy: only when there is a warning

    folder = Path(options.golden_dir).resolve()
    looked = env_folder(folder, report.id)
    module = env_module_file(report.id, options.paths)
    home = _project_of(module) if module is not None else None
    theirs = env_folder(home / "golden", report.id) if home is not None else None
    if home is not None and theirs is not None and theirs.resolve() != looked and any(
            theirs.glob("*.json")):
        return (f"vfcheck: WARNING: none of {report.id}'s golden traces is in {looked}, so "
                f"nothing was compared; its project {home} has them in {theirs}. Run vfcheck "
                f"in {home}, or name the folder: --golden-dir {home / 'golden'}")
    if not (folder.parent / "pyproject.toml").is_file():
        return (f"vfcheck: WARNING: none of {report.id}'s golden traces is in {looked}, and "
                f"{folder.parent} holds no pyproject.toml: vfcheck ran outside the env's "
                "project, so nothing was compared. Run it in the project's folder, or name "
                "the folder: --golden-dir DIR")
    return None


def _project_of(module: Path) -> Path | None:
    """The folder of the pyproject.toml nearest `module`'s file."""
    for folder in module.resolve().parents:
        if (folder / "pyproject.toml").is_file():
            return folder
    return None


def golden_header(options: CheckOptions) -> str:
    """`golden traces: /abs/golden/ (compare)`: where this run compares, records or updates."""
    mode = ("update" if options.golden_update else "strict" if options.golden_strict
            else "compare")
    return f"golden traces: {Path(options.golden_dir).resolve()}/ ({mode})"


view(FamilyView(
    ("golden",), title="golden traces",
    summary=lambda report: [line] if (line := golden_summary(report)) is not None else [],
    warning=golden_not_found, header=golden_header, episode_link=True))
