"""The arithmetic of `soak.memory`: which lines of env code keep more memory after every
stretch of episodes, how much per episode, and the words that say so.

A line whose kept bytes grew between every two snapshots grows steadily; its rate is the
slowest stretch's (bytes per episode). A snapshot taken while another check's episode was
in flight holds that episode's blocks too: that raises one stretch and lowers the next, so
the slowest stretch stays what the line keeps for good. A cache filled in the warm-up, or
one keyed by task (the soak plays one task), does not grow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vfcheck._host.retained import Kept, Site

SHOWN_SITES = 3
"""Lines of env code a message names (the largest growth first)."""


@dataclass(frozen=True)
class Growth:
    site: Site
    per_episode: float
    """Bytes kept per episode: the slowest stretch's rate."""
    kept: int
    """Bytes the line held at the last snapshot beyond what it held at the first."""


def steady_growth(snapshots: Sequence[Kept], episodes: Sequence[float]) -> list[Growth]:
    """The lines of env code whose kept bytes grew over every stretch between `snapshots`
    (taken after `episodes[i]` episodes), largest rate first."""
    if len(snapshots) != len(episodes) or len(snapshots) < 2:
        raise ValueError("one episode count per snapshot, and two snapshots at least")
    found = []
    for site in set().union(*snapshots):
        held = [snapshot.get(site, 0) for snapshot in snapshots]
        rates = [(after - before) / (e1 - e0) for before, after, e0, e1
                 in zip(held, held[1:], episodes, episodes[1:], strict=False) if e1 > e0]
        if rates and min(rates) > 0:
            found.append(Growth(site, min(rates), held[-1] - held[0]))
    return sorted(found, key=lambda g: (-g.per_episode, g.site.at))


def per_episode(growth: Sequence[Growth]) -> float:
    return sum(g.per_episode for g in growth)


def shown_bytes(size: float) -> str:
    """`512 B`, `4.1 KiB`, `2.3 MiB`."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(size) >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size:.0f} B"


def sites_listed(growth: Sequence[Growth]) -> str:
    """`` my_env.py:30 `seen.append(...)` 4.0 KiB per episode; ... ``, the largest first."""
    parts = [f"{g.site.at}" + (f" `{g.site.code[:80]}`" if g.site.code else "")
             + f" {shown_bytes(g.per_episode)} per episode" for g in growth[:SHOWN_SITES]]
    more = len(growth) - SHOWN_SITES
    return "; ".join(parts) + (f" (+{more} more line(s))" if more > 0 else "")


def played_text(own: int, others: int) -> str:
    """`16 episodes of this task (and 7 of other checks that ran meanwhile)`."""
    text = f"{own} episode{'s' if own != 1 else ''} of this task"
    return text + (f" (and {others} of other checks that ran meanwhile)" if others else "")


def warmup_text(warmup: int, warmed: int) -> str:
    """`4 warm-up episodes (3 of them other checks')`."""
    text = f"{warmup} warm-up episode{'s' if warmup != 1 else ''}"
    if not warmed:
        return text
    return text + f" ({'all' if warmed == warmup else warmed} of them other checks')"


def growth_observed(growth: Sequence[Growth], threshold: float, *, warmup: int, warmed: int,
                    own: int, others: int) -> tuple[bool, str]:
    """Whether the growth is above `threshold` bytes per episode, and what was observed."""
    rate = per_episode(growth)
    over = f"after {warmup_text(warmup, warmed)}, over {played_text(own, others)}"
    if not growth:
        return False, f"env code kept no more memory from episode to episode ({over})"
    said = (f"env code kept {shown_bytes(rate)} more per episode {over} "
            f"({shown_bytes(sum(g.kept for g in growth))} in all): {sites_listed(growth)}")
    if rate > threshold:
        return True, (f"{said}; above the threshold of {shown_bytes(threshold)} per episode: a "
                      "training run plays thousands of episodes per process, so this ends "
                      "in an out-of-memory crash. Keep per-episode data on the trace, or "
                      "bound what is kept across episodes")
    return False, f"{said}; within the threshold of {shown_bytes(threshold)} per episode"
