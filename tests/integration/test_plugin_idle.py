"""Without a `--vf-*` option the plugin costs nothing: it imports nothing heavy."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


@pytest.mark.slow
def test_plugin_is_registered_and_imports_nothing_heavy(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import sys

        def test_idle(pytestconfig):
            assert pytestconfig.pluginmanager.has_plugin("vfcheck")
            # respx and syrupy register pytest plugins of their own (their cost, not ours)
            heavy = {"verifiers", "verifiers.v1", "openai", "aiohttp"}
            ours = {m for m in sys.modules if m.startswith("vfcheck")}
            assert not heavy & set(sys.modules), heavy & set(sys.modules)
            # the option table the plugin registers its options from, and its Option
            # class (standard library only), with their packages
            assert ours == {"vfcheck", "vfcheck._version", "vfcheck._frontends",
                            "vfcheck._frontends.plugin", "vfcheck._options",
                            "vfcheck._options.option", "vfcheck._options.table",
                            "vfcheck._shared", "vfcheck._shared.paths"}, ours
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


@pytest.mark.slow
def test_plugin_can_be_disabled(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_off(pytestconfig):
            assert not pytestconfig.pluginmanager.has_plugin("vfcheck")
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:vfcheck")
    result.assert_outcomes(passed=1)


@pytest.mark.slow
def test_import_vfcheck_is_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, vfcheck; heavy = {'verifiers', 'openai', 'respx', 'rich'} & set(sys.modules);"
        "print(sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
