"""pytest items of vfcheck: which ones `--vf-only` keeps, and how their node ids show."""

from __future__ import annotations

from typing import Any

import pytest


def keep_node_ids(config: pytest.Config, env_ids: list[str]) -> None:
    """vfcheck's node ids (`ENV::check[i]`) are names, not paths: pytest shows them relative
    to the working directory when its rootdir moved (`--vf-path /other/envs`, two words,
    makes it another project), as `../other/ENV::load`. Shown as they are instead; other
    node ids (the user's own tests) keep pytest's rendering."""
    relative = config.cwd_relative_nodeid
    own = set(env_ids)

    def shown(nodeid: Any) -> Any:  # pytest 9: a `NodeId` (its `path`); before, a string
        head = str(getattr(nodeid, "path", nodeid)).split("::", 1)[0]
        if head in own or head.startswith(("vfcheck-shard[", "verifiers@")):
            return nodeid
        return relative(nodeid)

    config.cwd_relative_nodeid = shown  # type: ignore[method-assign]


def only_items(items: list[pytest.Item], wanted: list[str]) -> list[pytest.Item]:
    """The items `--vf-only` names (`gold[1]`, or `gold` for every task), and the `load`
    item of an env that did not load (its other items are not there to pick: the load
    failure must not vanish). A name that matches no item of a loaded env is a usage error
    naming it, not an empty run."""
    def picks(item: pytest.Item, want: str) -> bool:
        return item.name == want or item.name.split("[")[0] == want

    by_env: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_env.setdefault(item.parent.nodeid if item.parent else "", []).append(item)
    unloaded = {env for env, its in by_env.items() if [i.name for i in its] == ["load"]}
    kept = [item for item in items if any(picks(item, want) for want in wanted)
            or (item.parent is not None and item.parent.nodeid in unloaded)]
    loaded = [item for item in items if item.parent is None
              or item.parent.nodeid not in unloaded]
    missing = [want for want in wanted if loaded and not any(picks(i, want) for i in loaded)]
    if missing:
        names = list(dict.fromkeys(i.name for i in loaded))
        shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        raise pytest.UsageError(f"vfcheck: --vf-only: {', '.join(map(repr, missing))} names "
                                f"no item (the items are: {shown})")
    return kept
