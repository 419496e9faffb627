"""How `pytest -n N` spreads the envs over the xdist workers (`vfcheck._frontends.
pytest_session` says who does what): the keys the controller and its workers exchange, the
`--dist` modes that keep an env's items on one worker, and what a worker has queued.
"""

from __future__ import annotations

from typing import Any

import pytest

SPREAD_KEY = "vfcheck_spread"
"""workerinput: the envs are spread (the controller decides: xdist resets `--dist` on its
workers)."""
PLANS_KEY = "vfcheck_plans"
"""workerinput of a remote worker: each env's plan (None: it did not load). A worker on this
machine reads them from the run dir's event logs instead, so that its start-up need not
wait for the envs to load."""
REPORTS_KEY = "vfcheck_reports"
"""workeroutput: the env reports a spreading xdist worker checked (JSON text)."""
SPREADING_DIST = ("loadscope", "loadfile")
"""xdist modes that run all of an env's items on one worker (an env's item ids
`env::check[i]` are one scope and one "file"), so that worker can check the env. Not
`loadgroup`: xdist 3.8 marks an item's group by rewriting `item._nodeid`, which pytest 9 no
longer reads, so `xdist_group` marks group nothing."""


def spreads_envs(config: pytest.Config, policy: str = "auto") -> bool:
    """Whether each env is checked on the xdist worker that runs its items: under a
    `--dist` that keeps them on one worker, unless `policy` (the `spread` option) says
    `controller`, or says `auto` and every worker runs on this machine. Workers here share
    the controller's cores, which its `envs_at_once` slots already fill, and each of them
    would load its envs a second time (the controller loads every env to learn its items),
    so spreading over local workers is slower than not (bench/README.md, section spread)."""
    if hasattr(config, "workerinput"):
        return bool(config.workerinput.get(SPREAD_KEY))
    tx = list(getattr(config.option, "tx", None) or [])
    if not tx or getattr(config.option, "dist", "no") not in SPREADING_DIST:
        return False
    if policy == "auto":
        return not all(on_this_machine(spec) for spec in tx)
    return policy == "workers"


def on_this_machine(spec: str) -> bool:
    """An xdist `--tx` spec (`2*popen`, `popen//python=python3.12`, `ssh=host`,
    `popen//via=proxy`) starts its workers on this machine: a `popen` not reached through
    another gateway (`via`)."""
    import execnet

    _, _, one = spec.rpartition("*")
    return gateway_here(execnet.XSpec(one))


def gateway_here(spec: Any) -> bool:
    """A parsed `--tx` spec (execnet's `XSpec`, also a started node's `gateway.spec`) is a
    process on this machine, which shares its files (the run dir's event logs)."""
    return bool(spec.popen) and not spec.via


def queued_items(session: pytest.Session) -> list[pytest.Item]:
    """The items xdist has sent this worker and not run yet, so that their envs' checks
    start now, in parallel (up to `envs_at_once`), not one env after another as the items
    come. Read from xdist's worker queue (`WorkerInteractor.torun`, under its lock): no
    hook tells; where xdist keeps it otherwise this is empty and envs start at their first
    item."""
    for plugin in session.config.pluginmanager.get_plugins():
        queue = getattr(plugin, "torun", None)
        if queue is not None and callable(getattr(queue, "lock", None)):
            with queue.lock() as indices:
                queued = [i for i in indices if isinstance(i, int)]
            return [session.items[i] for i in queued if i < len(session.items)]
    return []


def xdist_note(config: pytest.Config, spread: bool, policy: str, envs: int) -> list[str]:
    """The header's line on who checks the envs under xdist (`spreads_envs`'s answer)."""
    dist = getattr(config.option, "dist", "no")
    if spread:
        return [f"vfcheck: envs spread over the xdist workers (--dist {dist}): each env "
                "is checked on the worker that runs its items"]
    if dist in SPREADING_DIST and getattr(config.option, "tx", None):
        why = ("--vf-spread=controller" if policy == "controller"
               else "the xdist workers run on this machine")
        return [f"vfcheck: {why}, so this process checks every env, each loaded once, "
                "and the workers report its findings; --vf-spread=workers checks each "
                "env on the worker that runs its items"]
    if dist != "no" and envs > 1:
        return [f"vfcheck: --dist {dist} puts an env's items on several workers, so "
                "this process checks every env; --dist loadscope spreads them"]
    return []
