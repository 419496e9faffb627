"""vfcheck: the offline conformance kit for `verifiers.v1` environments.

The names listed in `__all__` are the public API (docs/reference/api.md); modules and
packages whose name starts with `_` are internal and may change in any release. Importing
this package is cheap on purpose: it imports neither verifiers (3-5 s) nor openai, respx or
rich; each public name loads on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from vfcheck._version import __version__

if TYPE_CHECKING:
    from vfcheck._episodes.recorder import TraceRecorder
    from vfcheck._episodes.runner import EnvRunner, EpisodeResult, run_episodes
    from vfcheck._model import Reply, ScriptedModel, TaskRef
    from vfcheck._model.script import Script
    from vfcheck._shared.findings import Finding
    from vfcheck._traces.reply_traces import gold_trace, reply_trace
    from vfcheck.checks import CheckContext, check, family

_PUBLIC = {
    # the scripted model and its scripts
    "ScriptedModel": "vfcheck._model",
    "Reply": "vfcheck._model",
    "TaskRef": "vfcheck._model",
    "Script": "vfcheck._model.script",
    # playing episodes in-process
    "EnvRunner": "vfcheck._episodes.runner",
    "EpisodeResult": "vfcheck._episodes.runner",
    "run_episodes": "vfcheck._episodes.runner",
    "TraceRecorder": "vfcheck._episodes.recorder",
    # reference traces for an env's own `Task.validate`
    "reply_trace": "vfcheck._traces.reply_traces",
    "gold_trace": "vfcheck._traces.reply_traces",
    # writing a check of your own (docs/write-your-own-check.md)
    "check": "vfcheck.checks",
    "family": "vfcheck.checks",
    "CheckContext": "vfcheck.checks",
    "Finding": "vfcheck._shared.findings",
}

__all__ = ["CheckContext", "EnvRunner", "EpisodeResult", "Finding", "Reply", "Script",
           "ScriptedModel", "TaskRef", "TraceRecorder", "__version__", "check", "family",
           "gold_trace", "reply_trace", "run_episodes"]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'vfcheck' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # loaded once
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
