"""The setup family's presentation: one line per env whose tasks ask for what verifiers'
subprocess runtime refuses (a task network policy), so the incompatibility is seen without
`-v` although the checks it no longer blocks pass (`vfcheck._episodes.runtime_fit`)."""

from __future__ import annotations

from vfcheck._frontends.views._view import FamilyView, view
from vfcheck._shared.findings import EnvReport


def runtime_refusals(env: EnvReport) -> list[str]:
    """`vfc-x runtime: tasks 0, 1, 2 ask for network_allow=[] (envs/x.py:23), which ...`:
    one line per setting the runtime refused, naming the tasks that asked for it."""
    asked: dict[tuple[str, str], list[int]] = {}
    for f in env.findings:
        refused = f.details.get("runtime_refusal") if f.check == "setup" else None
        if refused and f.task is not None:
            key = (refused.get("setting", ""), refused.get("site") or "")
            asked.setdefault(key, []).append(f.task.index)
    lines = []
    for (setting, site), indices in asked.items():
        tasks = ", ".join(map(str, sorted(indices)[:5])) + (", ..." if len(indices) > 5 else "")
        where = f" ({site})" if site else ""
        lines.append(f"{env.id} runtime: task{'s' if len(indices) > 1 else ''} {tasks} ask for "
                     f"{setting}{where}, which verifiers' subprocess runtime refuses; vfcheck "
                     "played them under its own offline policy (no host but the mocked "
                     "endpoints): the env runs only on a runtime with network policies")
    return lines


view(FamilyView(("setup",), title="runtime", summary=runtime_refusals))
