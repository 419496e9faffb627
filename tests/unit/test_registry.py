"""The check registry is the one place a check exists: the catalogue and `vfcheck list-checks
--markdown` come from it, and units are computed from it."""

from __future__ import annotations

import pytest
from support import DOCS, README

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
