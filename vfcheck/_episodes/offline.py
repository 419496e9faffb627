"""What makes a run offline: no cloud sandbox, no push, no hub, uv found.

verifiers 0.4.0 defaults point at the cloud: every `AgentConfig.runtime` defaults to the
`prime` sandbox (needs `PRIME_API_KEY`), `vf-eval` pushes results, and an unset harness is
`bash`. A vfcheck run therefore rewrites the env config so that **every** agent role (a
multi-agent env has one per role) runs in the `subprocess` runtime, and prepares the process
environment before verifiers is imported (its cache dir is computed at import time).

Nothing here imports verifiers at module import; the functions that need it import lazily.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vfcheck._episodes.harness_deps import use_wheels
from vfcheck._options.table import BY_NAME

OFFLINE_ENV: dict[str, str] = {
    # Nothing may reach a model hub; a `load()` that tries fails fast instead of hanging.
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    # Keep uv quiet and from nagging about updates.
    "UV_NO_PROGRESS": "1",
}
"""Process environment every vfcheck run sets (`setdefault`: the user may override)."""

MOCK_API_KEY_VAR = "VFCHECK_API_KEY"
"""The env var verifiers reads the (fake) upstream API key from."""
DEFAULT_API_KEY_VAR: str = BY_NAME["api_key_var"].default  # written once, in the table
"""Where `vfcheck run` and `record` read a real endpoint's key from, unless told otherwise."""


def uv_bin_dir() -> Path | None:
    """The folder of the `uv` executable installed with vfcheck (the `uv` wheel).

    verifiers' harness programs are uv scripts run by the subprocess runtime with plain
    `uv` from PATH (`runtimes/base.py:prepare_uv_script`); its own bootstrap falls back to
    `pip install --user` and a download, which fail in an offline venv. A venv's bin folder
    is not on PATH when its python is called by full path, so find uv through the wheel.
    """
    try:
        from uv import find_uv_bin
    except ImportError:
        found = Path(sys.executable).parent / "uv"
        return found.parent if found.exists() else None
    try:
        return Path(find_uv_bin()).parent
    except FileNotFoundError:
        return None


def uv_executable() -> str:
    """The uv that runs the harness programs (`uv_bin_dir`, else PATH's); FileNotFoundError
    if there is none."""
    folder = uv_bin_dir()
    found = str(folder / "uv") if folder is not None else shutil.which("uv")
    if found is None:
        raise FileNotFoundError("no uv found (vfcheck installs it: pip install uv)")
    return found


def prepare_process_env(extra_paths: Sequence[str] = (), *, wheels: str | None = None) -> None:
    """Set the offline flags, put uv on PATH, and put `extra_paths` (env folders) on
    both `sys.path` and `PYTHONPATH` (harness programs and tool servers are other
    processes that import the env module too); with `wheels`, harness programs resolve
    their dependencies from that folder alone (`vfcheck._episodes.harness_deps`). Idempotent."""
    if wheels:
        use_wheels(wheels)
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault(MOCK_API_KEY_VAR, "vfcheck-offline")
    path = os.environ.get("PATH", "").split(os.pathsep)
    uv_dir = uv_bin_dir()
    if uv_dir is not None and str(uv_dir) not in path:
        os.environ["PATH"] = os.pathsep.join([str(uv_dir), *path])
    if extra_paths:
        resolved = [str(Path(p).resolve()) for p in extra_paths]
        for folder in reversed(resolved):
            if folder not in sys.path:
                sys.path.insert(0, folder)
        current = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [*[p for p in resolved if p not in current], *current]
        )


SUBPROCESS_RUNTIME: dict[str, Any] = {"type": "subprocess"}


def offline_env_config(
    env_id: str,
    env_args: Mapping[str, Any] | None = None,
    *,
    harness: Mapping[str, Mapping[str, Any]] | None = None,
) -> Any:
    """The resolved `EnvConfig` for `env_id`, forced offline.

    `env_args` are dotted keys into the env config (`taskset.num_tasks=5`,
    `agent.max_turns=3`); bare keys go to the taskset. `harness` pins a harness config
    (its `id` and settings) per role (the fast tier). Every role's runtime becomes
    `subprocess`, whatever the env declared: roles are the env config's `AgentConfig`
    fields, known only after narrowing the config to the env class, so the config is
    resolved twice.
    """
    import verifiers.v1 as vf

    from vfcheck._shared.compat import agent_roles

    data: dict[str, Any] = {"taskset": {"id": env_id}}
    for key, value in (env_args or {}).items():
        dotted = key if "." in key else f"taskset.{key}"
        _set_dotted(data, dotted, value)
    first = vf.resolve_env_config(data)
    for role in agent_roles(first):
        role_data = data.setdefault(role, {})
        role_data["runtime"] = dict(SUBPROCESS_RUNTIME)
        if harness and role in harness:
            role_data["harness"] = dict(harness[role])
    return vf.resolve_env_config(data)


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    """`data["a"]["b"] = value` for `a.b`; `-` in keys become `_` like verifiers' CLI."""
    parts = [p.replace("-", "_") for p in dotted.split(".")]
    node = data
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ValueError(f"env arg {dotted!r}: {part!r} is already set to a value")
        node = child
    node[parts[-1]] = value
