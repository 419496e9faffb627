"""`vfcheck._episodes.runtime_fit`'s pure parts: a task's network policy as its setting, and
the line of the env's own source that sets it (code, not a docstring naming the field).
verifiers' refusal itself is tested on the real runtime (tests/integration/test_runtime_fit.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

from vfcheck._episodes.runtime_fit import (
    Refusal,
    container_reason,
    policy_setting,
    setting_site,
)


def task(**data: object) -> SimpleNamespace:
    return SimpleNamespace(data=SimpleNamespace(**data))


def test_a_policy_is_shown_as_the_task_sets_it_and_the_default_is_none() -> None:
    assert policy_setting(task(network_allow=["*"], network_block=[])) is None
    assert policy_setting(task(network_allow=[], network_block=[])) == "network_allow=[]"
    assert policy_setting(task(network_allow=["*"], network_block=["a.org"])) == (
        "network_block=['a.org']")


def test_the_site_is_the_first_line_of_code_naming_the_field(tmp_path: Path) -> None:
    source = tmp_path / "vfc_site_probe.py"
    source.write_text('"""Asks network_allow=[] (docstring)."""\n# network_allow in a comment\n'
                      "class Probe:\n    def load(self):\n        return dict(network_allow=[])\n")
    spec = importlib.util.spec_from_file_location("vfc_site_probe", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["vfc_site_probe"] = module
    try:
        spec.loader.exec_module(module)
        site = setting_site((module.Probe(),))
    finally:
        del sys.modules["vfc_site_probe"]
    assert site is not None and site.endswith("vfc_site_probe.py:5")
    assert setting_site((object(),)) is None


def test_the_refusal_is_worded_as_the_envs_incompatibility() -> None:
    said = Refusal("network_allow=[]", "envs/x.py:7", "task 0 requires a network policy").describe()
    assert said.startswith("the task asks for network_allow=[] (envs/x.py:7), which verifiers' "
                           "subprocess runtime refuses (\"task 0 requires a network policy\")")
    assert "the env runs only on a runtime with network policies" in said
    assert "vfcheck could not" not in said


class Boxed:
    NEEDS_CONTAINER = True

    def __init__(self, **data: object) -> None:
        self.data = SimpleNamespace(**data)


def test_a_container_need_names_what_the_task_asks_for() -> None:
    said = container_reason(Boxed(agent_user="bob"))
    assert said.startswith("needs a container runtime: the task asks for NEEDS_CONTAINER = True (")
    assert "test_runtime_fit.py:" in said
    assert "agent_user='bob'" in said and "useradd" in said
    assert said.endswith("; vfcheck runs offline in the subprocess runtime")
