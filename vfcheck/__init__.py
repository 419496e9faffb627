"""vfcheck: the offline conformance kit for `verifiers.v1` environments.

Importing this package is cheap on purpose: it imports neither verifiers (3-5 s) nor
openai, respx or rich. The public names load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_PUBLIC = {
    "ScriptedModel": "vfcheck.model",
    "TaskRef": "vfcheck.model",
    "Reply": "vfcheck.model",
    "Script": "vfcheck.script",
    "TraceRecorder": "vfcheck.episodes.recorder",
    "EnvRunner": "vfcheck.episodes.runner",
    "EpisodeResult": "vfcheck.episodes.runner",
    "run_episodes": "vfcheck.episodes.runner",
    "reply_trace": "vfcheck.gold",
    "gold_trace": "vfcheck.gold",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'vfcheck' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
