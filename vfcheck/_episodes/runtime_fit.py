"""What verifiers' subprocess runtime refuses of a task, and the offline stand-in for it.

verifiers 0.4.0 refuses any task network policy on the subprocess runtime before any work
happens (`verifiers/v1/utils/compile.py` `resolve_runtime_config`: "task N requires a
network policy, but the subprocess runtime does not support framework-aware policies"), in
vf-validate and in every rollout. That is the env's incompatibility with the runtime, not a
broken `Task.setup`, nor vfcheck's failure. A network policy only ever asks for *less*
network than the default `["*"]`, and vfcheck's offline policy (no host but the mocked
endpoints, `vfcheck._host.offline_sockets`) is stricter than any of them: vfcheck plays such a task
with the policy left out (`stand_in`) and says so (`Refusal.describe`). Other refusals (an
image) are left to verifiers.
"""

from __future__ import annotations

import inspect
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vfcheck._shared.paths import shown_path

POLICY_FIELDS = ("network_allow", "network_block")
"""The `TaskData` fields of a task network policy (`verifiers/v1/task.py`)."""


@dataclass(frozen=True)
class Refusal:
    """verifiers' refusal of a task on the subprocess runtime, and the env's setting."""

    setting: str
    """The task's setting as data: `network_allow=[]`."""
    site: str | None
    """Where the env's source sets it (`file:line`), when it can be found."""
    refusal: str
    """verifiers' own words (the `ValueError` of `resolve_runtime_config`)."""

    def describe(self) -> str:
        where = f" ({self.site})" if self.site else ""
        return (f"the task asks for {self.setting}{where}, which verifiers' subprocess "
                f"runtime refuses (\"{self.refusal}\"): the env runs only on a runtime with "
                "network policies (docker, prime); vfcheck played it under its own offline "
                "policy instead, which lets no host through but the mocked endpoints")


def resolve(task: Any) -> str | None:
    """verifiers' refusal of `task` on a default subprocess runtime, in its words; None
    when it accepts it, or this verifiers has no `resolve_runtime_config` (feature-detected:
    0.3.x had no task runtime policies)."""
    try:
        from verifiers.v1.runtimes import SubprocessConfig
        from verifiers.v1.utils.compile import resolve_runtime_config
    except ImportError:
        return None
    try:
        resolve_runtime_config(SubprocessConfig(), task)
    except ValueError as e:
        return str(e)
    return None


def policy_setting(task: Any) -> str | None:
    """`network_allow=[]`: the task's network policy where it has one (not the default)."""
    data = task.data
    allow, block = getattr(data, "network_allow", ["*"]), getattr(data, "network_block", [])
    said = ([f"network_allow={list(allow)!r}"] if "*" not in allow else []) + (
        [f"network_block={list(block)!r}"] if block else [])
    return ", ".join(said) or None


def refusal(task: Any, owners: tuple[Any, ...] = ()) -> Refusal | None:
    """Why the subprocess runtime refuses `task` for its network policy alone, and where
    the env sets it (searched in the modules of `owners`, the task's and its data's
    classes); None when it is accepted, or refused for anything else (an image)."""
    setting = policy_setting(task)
    if setting is None or getattr(task.data, "image", None) is not None:
        return None
    said = resolve(task)
    if said is None or resolve(stand_in(task, force=True)) is not None:
        return None
    return Refusal(setting, setting_site((*owners, type(task), type(task.data))), said)


def stand_in(task: Any, force: bool = False) -> Any:
    """`task` as vfcheck hands it to verifiers: without its network policy where that
    policy is all the subprocess runtime refuses (vfcheck's offline policy is stricter);
    else `task` itself."""
    if not force and refusal(task) is None:
        return task
    return task.with_data(network_allow=["*"], network_block=[])


def container_reason(task: Any, owners: tuple[Any, ...] = ()) -> str:
    """Why `task` needs a container, in the env's terms: each setting that asks for one
    (`image='python:3.11'`, `agent_user='bob'`, `NEEDS_CONTAINER = True`), where the env's
    source sets the distinctively named ones, and verifiers' refusal where it refuses."""
    data, said = task.data, []
    if getattr(type(task), "NEEDS_CONTAINER", False):
        site = setting_site((*owners, type(task)), ("NEEDS_CONTAINER",))
        said.append("NEEDS_CONTAINER = True" + (f" ({site})" if site else ""))
    if (image := getattr(data, "image", None)) is not None:
        said.append(f"image={image!r}")
    if (user := getattr(data, "agent_user", None)) is not None:
        site = setting_site((*owners, type(task), type(data)), ("agent_user",))
        said.append(f"agent_user={user!r}" + (f" ({site})" if site else "")
                    + " (verifiers would run useradd for it on this machine)")
    refused = resolve(task) if image is not None else None
    return (f"needs a container runtime: the task asks for {', '.join(said) or 'a container'}"
            + (f", which verifiers' subprocess runtime refuses (\"{refused}\")" if refused
               else "") + "; vfcheck runs offline in the subprocess runtime")


def setting_site(owners: tuple[Any, ...],
                 fields: tuple[str, ...] = POLICY_FIELDS) -> str | None:
    """`file:line` of the first line naming one of `fields` in the env's own modules (those
    of `owners`' classes and their bases, verifiers' own left out)."""
    seen: list[Path] = []
    for owner in owners:
        cls = owner if isinstance(owner, type) else type(owner)
        for base in cls.__mro__:
            if base.__module__.split(".")[0] in {"verifiers", "builtins", "pydantic",
                                                 "typing"}:
                continue
            try:
                source = inspect.getsourcefile(base)
            except TypeError:
                continue
            if source is not None and (path := Path(source)) not in seen:
                seen.append(path)
    for path in seen:
        try:
            with path.open("rb") as source_file:
                names = [t for t in tokenize.tokenize(source_file.readline)
                         if t.type == tokenize.NAME and t.string in fields]
        except (OSError, SyntaxError, tokenize.TokenError):
            continue
        if names:  # code, not a docstring or a comment naming the field
            return f"{shown_path(path)}:{names[0].start[0]}"
    return None
