"""How much of the machine one run takes: env workers at once, episodes in flight per env.

Sized, when the user does not say, to the cores and memory that are free when the run
starts (psutil): a CI runner shared with other jobs, or a laptop compiling, must not get 16
episodes per env in each of 4 envs, every one of them pushed towards its deadline. What
counts as busy is the CPU others use right now (a short sample, not the load average, which
lags a minute behind a machine that just went idle).

- env workers at once: one per free core, at least `MIN_ENVS` (at most the cores, the envs,
  and what free memory holds at `ENV_MEMORY` each);
- episodes in flight in one env worker: chat episodes play in the worker's own event loop
  (~0.07 s of CPU each, mostly waits), up to `CHAT_EPISODES` while the worker has a core to
  itself, fewer as its share of a free core shrinks; episodes that start an interpreter (a
  tool server, a harness program: seconds of CPU each) one per free core of its share, at
  most `INTERPRETER_EPISODES`, within free memory at `INTERPRETER_MEMORY` each. A tool
  episode whose tool servers are forked warm (`vfcheck._host.warm_starts`) costs what
  a chat episode costs, and counts as one (`vfcheck.checks._lab`).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

MIN_ENVS = 2
"""Env workers at once however busy the machine (where it has the cores): a worker spends
much of its run waiting (agent timeouts, settles, a second interpreter's load), which a
second one overlaps. Measured with two busy loops on 2 cores, six envs at `--timeout 10`:
one at a time 232 s, two at a time 114 s, the same verdicts and no deadline hit either way."""
CHAT_EPISODES = 16
"""Chat episodes in flight in a worker with a free core of its own."""
MIN_CHAT_EPISODES = 4
INTERPRETER_EPISODES = 4
ENV_MEMORY = 600 * 2**20
"""Bytes one env's worker takes, with the fresh interpreter of `determinism.load`."""
INTERPRETER_MEMORY = 250 * 2**20
"""Bytes a tool server or harness program takes (an interpreter that imports verifiers)."""
SAMPLE_SECONDS = 0.25
"""How long the CPU others use is sampled for."""


@dataclass(frozen=True)
class Capacity:
    """What one front-end run takes of the machine, and what it saw."""

    envs_at_once: int
    chat_episodes: int
    """Chat episodes in flight per env worker (every role on the fast tier, no tools)."""
    interpreter_episodes: int
    """Episodes in flight per env worker when they start interpreters (tools, env tier)."""
    cores: float
    busy: float
    """Cores' worth of CPU others used when the run started."""
    free_memory: int
    chosen: str
    """`measured`, or the options that chose (`--envs-at-once`, `--episodes-at-once`)."""

    def line(self) -> str:
        """The header's line: what was chosen, and from what."""
        given = "" if self.chosen == "measured" else f"; {self.chosen} given"
        return (f"concurrency: {self.envs_at_once} env(s) at once, per env "
                f"{self.chat_episodes} chat or {self.interpreter_episodes} tool/harness "
                f"episode(s) in flight ({self.cores:g} cores, {self.busy:.1f} busy, "
                f"{self.free_memory / 2**30:.1f} GiB free{given})")

    def for_worker(self) -> dict[str, Any]:
        """What the check worker reads (its spec's `capacity`)."""
        return asdict(self)


def size(cores: float, busy: float, free_memory: int, envs: int, *,
         envs_at_once: int | None = None, episodes_at_once: int | None = None) -> Capacity:
    """The run's share of a machine with `cores`, `busy` of them used by others, and
    `free_memory` bytes, for `envs` envs; a number the user gave wins."""
    free = max(0.0, cores - busy)
    by_memory = max(1, free_memory // ENV_MEMORY)
    chosen_envs = envs_at_once or max(1, min(max(MIN_ENVS, round(free)), int(cores) or 1,
                                             max(envs, 1), by_memory))
    share = free / chosen_envs  # free cores per env worker
    chat = episodes_at_once or max(MIN_CHAT_EPISODES,
                                   min(CHAT_EPISODES, round(CHAT_EPISODES * min(share, 1.0))))
    per_env_memory = free_memory // max(chosen_envs, 1)
    interpreters = episodes_at_once or max(1, min(INTERPRETER_EPISODES, round(share),
                                                  per_env_memory // INTERPRETER_MEMORY))
    given = [flag for flag, value in (("--envs-at-once", envs_at_once),
                                      ("--episodes-at-once", episodes_at_once)) if value]
    return Capacity(chosen_envs, chat, interpreters, cores, round(busy, 2), free_memory,
                    " and ".join(given) or "measured")


def usable_cores() -> float:
    """The cores this process may run on: its CPU affinity, within a cgroup's CPU quota
    (a container's `cpu.max`)."""
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        affinity = os.cpu_count() or 1
    try:
        cpu_max: str | None = Path("/sys/fs/cgroup/cpu.max").read_text()
    except OSError:
        cpu_max = None
    return cores_within(affinity, cpu_max)


def cores_within(affinity: int, cpu_max: str | None) -> float:
    """`affinity` cores, within a cgroup v2 `cpu.max` quota (`"150000 100000"`: 1.5 cores;
    `"max 100000"`: no quota), and never below one."""
    cores = float(max(1, affinity))
    try:
        quota, period = (cpu_max or "").split()[:2]
        if quota != "max":
            cores = min(cores, max(1.0, int(quota) / int(period)))
    except ValueError:
        pass
    return cores


def measure(envs: int, *, envs_at_once: int | None = None,
            episodes_at_once: int | None = None) -> Capacity:
    """`size` on this machine as it is now (samples the CPU for `SAMPLE_SECONDS`)."""
    import psutil

    cores = usable_cores()
    busy = psutil.cpu_percent(interval=SAMPLE_SECONDS) / 100 * (os.cpu_count() or cores)
    return size(cores, min(busy, cores), psutil.virtual_memory().available, envs,
                envs_at_once=envs_at_once, episodes_at_once=episodes_at_once)
