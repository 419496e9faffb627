"""What counts as a reward value, on values made here."""

from __future__ import annotations

from vfcheck.checks._hook_types import (
    number_problem,
)


def test_numbers_and_mappings_of_numbers_are_rewards() -> None:
    assert number_problem(1) is None and number_problem(0.5) is None
    assert number_problem(True) is None  # float(True) is 1.0: verifiers' own idiom
    assert number_problem({"a": 1.0, "b": 0}) is None
    assert number_problem("1.0") == "'1.0' (str)"  # verifiers coerces it silently
    assert number_problem({"a": 1.0, "why": "ok"}) == "a mapping whose 'why' is 'ok' (str)"
