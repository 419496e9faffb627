"""Memory env code keeps: tracemalloc's live blocks, each charged to the line of env code
that allocated it.

`soak.memory` plays one task many times over and compares what is still allocated between
snapshots. A block counts for env code when its allocation traceback, as far as
tracemalloc recorded it (`TRACE_FRAMES` frames, innermost first), passes through env code
(`vfcheck._host.crash_site.CRASH_SITES`): it is charged to the innermost such frame, the
line that made it (`history.append(...)`), or called the library function that did. What
verifiers, vfcheck or a library allocated on their own is not env code's, even when env
code keeps it alive (a whole trace appended to a list shows as the list's growth).

tracemalloc is process-wide and costs every allocation while it traces (about 1.5x an
episode's CPU with one frame, 2x-4x with 2-4 frames, measured on vfc-echo): it traces only
between the first and the last snapshot of a soak.
"""

from __future__ import annotations

import gc
import linecache
import tracemalloc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from vfcheck._host.crash_site import CRASH_SITES
from vfcheck._host.env_code import display_path

TRACE_FRAMES = 2
"""Frames tracemalloc records per allocation: the line of env code itself, and the library
function it called (a `model_dump`, `copy.copy`) when that one allocated. Each frame more
costs every allocation of the process while the soak traces (3 frames: ~1.5x the tracing
time of 2)."""


@dataclass(frozen=True)
class Site:
    """A line of env code that allocated blocks still alive at a snapshot."""

    at: str
    """`my_env.py:30`, as crash reports show it."""
    code: str
    """That line of code, stripped."""


Kept = dict[Site, int]
"""Bytes still allocated at a snapshot, by the env-code line that allocated them."""


class RetainedMemory:
    """A tracemalloc session: started by `start` (unless the process already traces, which
    it then leaves on), read with `kept`, ended with `stop`.

    While it runs, the objects that existed at `start` are frozen out of the garbage
    collector (`gc.freeze`): each `kept` collects fully what was made since (garbage held
    only by a reference cycle is not kept) in milliseconds, not the whole heap's ~0.3 s."""

    def __init__(self) -> None:
        self._started_here = False
        self._frozen = False

    def start(self) -> None:
        gc.freeze()
        self._frozen = True
        if not tracemalloc.is_tracing():
            tracemalloc.start(TRACE_FRAMES)
            self._started_here = True

    def stop(self) -> None:
        if self._started_here:
            tracemalloc.stop()
            self._started_here = False
        if self._frozen:
            gc.unfreeze()
            self._frozen = False

    def kept(self) -> Kept:
        """What env code's lines hold now, after a garbage collection."""
        gc.collect()
        kept: dict[tuple[str, int], int] = {}
        env_file: dict[str, bool] = {}
        for size, frames in traced_blocks(tracemalloc.take_snapshot()):
            for name, line in frames:  # innermost first
                known = env_file.get(name)
                if known is None:
                    known = env_file[name] = CRASH_SITES.is_env(name)
                if known:
                    kept[name, line] = kept.get((name, line), 0) + size
                    break
        return {Site(f"{display_path(name)}:{line}", linecache.getline(name, line).strip()):
                size for (name, line), size in kept.items()}


def traced_blocks(snapshot: tracemalloc.Snapshot
                  ) -> Iterator[tuple[int, Sequence[tuple[str, int]]]]:
    """Each live block's size and its traceback as `(filename, lineno)`, innermost first:
    read from the snapshot's raw tuples where they are where CPython 3.8-3.13 keeps them
    (`Snapshot.traces._traces`; the public `Trace` objects cost ~50 us a block), else
    from the public API."""
    raw = getattr(snapshot.traces, "_traces", None)
    if isinstance(raw, list) and (not raw or (isinstance(raw[0], tuple) and len(raw[0]) >= 3)):
        for block in raw:
            yield block[1], block[2]
        return
    for trace in snapshot.traces:
        yield trace.size, [(f.filename, f.lineno) for f in reversed(trace.traceback)]
