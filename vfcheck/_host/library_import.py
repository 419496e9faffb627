"""Import verifiers with the garbage collector paused, then freeze what it built.

`import verifiers.v1` builds ~360,000 objects (openai's and pydantic's types, aiohttp,
httpx). While they pile up, CPython's collector scans the whole growing heap again and
again: ~1.1 s of the import's 3.5 s of CPU on this machine, in every process that imports
it (the check worker, `determinism.load`'s second interpreter, the warm-start zygote). With
the collector paused, one collection after the import (~0.3 s) frees what the import left
unreachable (~4,500 objects, ~19 MB: copies of `sys.modules` held in reference cycles),
and the rest is frozen.

The pause covers the library's import only, not the env's code: the env's own import and
`load()` run with the collector on, as verifiers runs them. When the collector runs
changes nothing verifiers computes; `gc.freeze` then keeps the library's objects out of
every later collection (the collections an episode's garbage triggers scan the episode's
objects, not the library's).
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic garbage collection inside; the collector as it was after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def built_then_frozen() -> Iterator[None]:
    """Build (import) inside with the collector paused; then collect once and freeze
    what is left, so that no later collection scans it (nor, in a fork, copies it)."""
    with collector_paused():
        try:
            yield
        finally:
            gc.collect()
            gc.freeze()


def import_verifiers() -> Any:
    """`verifiers.v1`, imported in `built_then_frozen`; the module as it is when this
    process imported it already."""
    if (module := sys.modules.get("verifiers.v1")) is not None:
        return module
    with built_then_frozen():
        import verifiers.v1 as vf
    return vf
