"""The check registry is the one place a check exists: the catalogue and `vfcheck list-checks
--markdown` come from it, and units are computed from it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support import DOCS, README, SOURCE

from vfcheck.checks import CATALOGUE, FAMILIES, REGISTRY
from vfcheck.checks._catalogue import markdown_table, readme_block
from vfcheck.checks._registry import CheckSpec, Family, Registry, check


def test_the_checks_reference_page_is_the_registry() -> None:
    block = readme_block((DOCS / "reference" / "checks.md").read_text())
    assert block is not None, "docs/reference/checks.md lost its <!-- checks:start/end --> markers"
    assert block == markdown_table(CATALOGUE), (
        "docs/reference/checks.md drifted from the registry: run `python scripts/regen-reference`"
        " (it rewrites the block between the markers from `vfcheck list-checks --markdown`)")


def test_the_readme_gives_every_family_its_declared_line() -> None:
    """The README's one line per family, `- `family`: <summary>`, is the family's own
    declaration (`family(name, summary=...)`), in report order."""
    lines = [line for line in README.read_text().splitlines() if line.startswith("- `")]
    expected = [f"- `{f.name}`: {f.summary}" for f in REGISTRY.declared]
    assert lines == expected, (
        "README's family lines should be the families' summaries, in order:\n"
        + "\n".join(expected))


def test_every_check_is_a_registered_function_with_a_full_spec() -> None:
    assert [spec.id for spec in REGISTRY] == [spec.id for spec in CATALOGUE]
    for spec in CATALOGUE:
        assert spec.fn is not None and spec.fn.__module__.startswith("vfcheck.checks.")
        assert spec.contract and spec.fails_when and spec.why, spec.id
        assert spec.deadline(60.0) > 0
    assert CATALOGUE[0].phase == "gate"
    assert FAMILIES[0] == "load" and FAMILIES[-1] == "hygiene"


def test_units_are_computed_in_one_place() -> None:
    units = REGISTRY.units(["gold", "episode"], tasks=[0, 1, 2], sample=[0])
    assert units == [("load", None), ("gold", 0), ("gold", 1), ("gold", 2), ("episode", 0)]
    everything = REGISTRY.units(None, tasks=[0, 1], sample=[1])
    assert ("hygiene.processes", None) in everything and ("setup", 1) in everything
    assert ("episode", 0) not in everything  # episodes run on the sample only


def test_an_unknown_family_is_named_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown check family nope; known: load, "):
        REGISTRY.select(["nope"])


def test_a_new_family_is_one_registered_function() -> None:
    """Registering into a registry needs nothing but the decorated function (the module
    registers into the process-wide REGISTRY the same way)."""
    registry = Registry()

    async def fn(ctx: object, task: object) -> object:
        raise AssertionError("not run here")

    with pytest.raises(ValueError, match=r"names family 'x', which no module declares"):
        registry.register(CheckSpec("x.y", "x", "sample", "c", "f", "w", fn=fn))  # type: ignore[arg-type]
    registry.declare(Family("x", 5.0, "x things"))
    registry.register(CheckSpec("x.y", "x", "sample", "c", "f", "w", fn=fn))  # type: ignore[arg-type]
    assert registry.families == ("x",)
    assert registry.units(None, tasks=[0, 1], sample=[1]) == [("x.y", 1)]
    with pytest.raises(ValueError, match="registered twice"):
        check("load", family="load", scope="env", contract="c", fails_when="f", why="w")(fn)  # type: ignore[arg-type]


def test_vf_only_runs_only_the_families_of_the_items_it_names() -> None:
    """`--vf-only 'golden[0]'` plays what golden needs, not what every family needs."""
    from vfcheck.checks import REGISTRY

    assert REGISTRY.families_of(["golden[0]"], None) == ["golden"]
    assert REGISTRY.families_of(["gold[1]", "exploit.empty"], None) == ["gold", "exploit"]
    assert REGISTRY.families_of(["gold[1]"], ["gold", "noop"]) == ["gold"]
    assert REGISTRY.families_of(["golden"], ["gold"]) == ["gold"]  # no item: said later
    assert REGISTRY.families_of(["nope[1]"], ["gold"]) == ["gold"]
    assert REGISTRY.families_of(["nope[1]"], None) is None


def test_report_order_is_the_families_order_then_registration() -> None:
    """Each family says where it goes (`order`); a family's checks stay in the order its
    module registers them, wherever its modules are."""
    registry = Registry()

    async def fn(ctx: object, task: object) -> object:
        raise AssertionError("not run here")

    registry.declare(Family("late", 50.0, "late"))
    registry.declare(Family("early", 10.0, "early"))
    for check_id in ("late.a", "early.b", "late.c", "early.a"):
        registry.register(CheckSpec(check_id, check_id.split(".")[0], "env", "c", "f", "w",
                                    fn=fn))  # type: ignore[arg-type]
    assert [s.id for s in registry] == ["early.b", "early.a", "late.a", "late.c"]
    assert registry.families == ("early", "late")
    with pytest.raises(ValueError, match="declared twice"):
        registry.declare(Family("early", 1.0, "again"))


def registering_modules(root: Path) -> dict[str, set[str]]:
    """Module (dotted) -> what it calls of the registry at its top level (`check`, `family`):
    read from the source, nothing imported."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        tree = ast.parse(path.read_text())
        calls = set()
        for node in tree.body:
            decorators = node.decorator_list if isinstance(
                node, ast.FunctionDef | ast.AsyncFunctionDef) else []
            exprs = [*decorators, node.value] if isinstance(node, ast.Expr) else decorators
            for expr in exprs:
                if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) \
                        and expr.func.id in ("check", "family"):
                    calls.add(expr.func.id)
        if calls:
            found[".".join(p for p in parts if p != "__init__")] = calls
    return found


def unregistered(root: Path, discovered: set[str]) -> list[str]:
    """Modules that register checks or declare a family but are not discovered: what they
    register never runs, and nothing else would say so."""
    return [f"{module} calls {', '.join(sorted(calls))}() but is no family module (a module "
            f"of vfcheck/checks/ without a leading `_`)"
            for module, calls in registering_modules(root).items() if module not in discovered]


def test_every_module_that_registers_a_check_is_a_discovered_family() -> None:
    from vfcheck.checks._discovery import family_modules

    package = SOURCE / "checks"
    discovered = set(family_modules("vfcheck.checks", [str(package)]))
    assert unregistered(SOURCE, discovered) == []
    declaring = {m for m, calls in registering_modules(SOURCE).items() if "family" in calls}
    assert declaring == discovered, "each family module declares its family"
    assert {spec.fn.__module__ for spec in CATALOGUE if spec.fn} == discovered


def test_a_forgotten_registration_is_caught(tmp_path: Path) -> None:
    """A check written in a helper module (`_probes.py`) or outside `checks/` is never
    imported by discovery, so it would never run: the source test names it."""
    root = tmp_path / "vfcheck"
    (root / "checks").mkdir(parents=True)
    (root / "checks" / "gold.py").write_text('family("gold", summary="s")\n\n@check("gold")\n'
                                             'async def gold(ctx, task): ...\n')
    (root / "checks" / "_probes.py").write_text('@check("probe.x", family="gold")\n'
                                                'async def x(ctx, task): ...\n')
    (root / "_frontends").mkdir()
    (root / "_frontends" / "mine.py").write_text('family("mine", summary="s")\n')
    assert unregistered(root, {"vfcheck.checks.gold"}) == [
        "vfcheck._frontends.mine calls family() but is no family module (a module of "
        "vfcheck/checks/ without a leading `_`)",
        "vfcheck.checks._probes calls check() but is no family module (a module of "
        "vfcheck/checks/ without a leading `_`)",
    ]


def test_the_load_timeout_sets_the_deadline_of_the_checks_that_load_the_env() -> None:
    """`--load-timeout` replaces the longer of `--timeout` and the load's floor for the
    checks whose work is loading the env (`load`, `determinism.load`), shorter or longer;
    every other check keeps its `--timeout`-sized deadline."""
    from vfcheck.checks._registry import DEADLINE_SLACK
    from vfcheck.checks.load import LOAD_TIMEOUT

    for loads in ("load", "determinism.load"):
        spec = REGISTRY[loads]
        assert spec.deadline(10) == spec.budget * LOAD_TIMEOUT + DEADLINE_SLACK
        assert spec.deadline(10, 15) == spec.budget * 15 + DEADLINE_SLACK
        assert spec.deadline(10, 300) == spec.budget * 300 + DEADLINE_SLACK
    gold = REGISTRY["gold"]
    assert gold.deadline(10, 300) == gold.deadline(10) == gold.budget * 10 + DEADLINE_SLACK
