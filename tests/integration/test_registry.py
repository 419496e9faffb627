"""The check registry is the one place a check exists: the README catalogue and
`vfcheck list-checks` come from it, units are computed from it, and every registered check
has a fixture env that makes it fail."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support import ROOT

from vfcheck.checks import CATALOGUE, FAMILIES, REGISTRY
from vfcheck.checks.catalogue import markdown_table, readme_block
from vfcheck.checks.registry import CheckSpec, Registry, check


def test_the_readme_catalogue_is_the_registry() -> None:
    block = readme_block((ROOT / "README.md").read_text())
    assert block is not None, "README.md lost its <!-- checks:start/end --> markers"
    assert block == markdown_table(CATALOGUE), (
        "README's check catalogue drifted from the registry; regenerate it with "
        "`vfcheck list-checks --markdown`")


def test_list_checks_markdown_prints_the_readme_table() -> None:
    done = subprocess.run([sys.executable, "-m", "vfcheck", "list-checks", "--markdown"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == markdown_table(CATALOGUE)


def test_every_check_is_a_registered_function_with_a_full_spec() -> None:
    assert [spec.id for spec in REGISTRY] == [spec.id for spec in CATALOGUE]
    for spec in CATALOGUE:
        assert spec.fn is not None and spec.fn.__module__.startswith("vfcheck.checks.")
        assert spec.contract and spec.fails_when and spec.why, spec.id
        assert spec.deadline(60.0) > 0
    assert CATALOGUE[0].phase == "load"
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

    registry.register(CheckSpec("x.y", "x", "sample", "c", "f", "w", fn=fn))  # type: ignore[arg-type]
    assert registry.families == ("x",)
    assert registry.units(None, tasks=[0, 1], sample=[1]) == [("x.y", 1)]
    with pytest.raises(ValueError, match="registered twice"):
        check("load", family="load", scope="env", contract="c", fails_when="f", why="w")(fn)  # type: ignore[arg-type]


def test_every_check_has_a_fixture_that_makes_it_fail() -> None:
    """A check that cannot fail is a defect: each registered check id is expected to fail
    on some fixture env named in the tests that run them."""
    from .test_checks import BROKEN, LOAD_BROKEN

    failing = {check for units in BROKEN.values() for check, _ in units}
    failing |= {"load"} if LOAD_BROKEN else set()
    failing |= {"golden.unused"}  # under strict: tests/test_golden.py
    from .test_network import BREAKS as NETWORK_BREAKS
    from .test_reward_probes import BREAKS
    from .test_served import BREAKS as SERVED_BREAKS

    failing |= {check for units in BREAKS.values() for check, _ in units}
    failing |= {check for units in SERVED_BREAKS.values() for check, _ in units}
    failing |= {check for units in NETWORK_BREAKS.values() for check, _ in units}
    missing = [spec.id for spec in CATALOGUE if spec.id not in failing]
    assert missing == [], f"no fixture breaks {missing}"
