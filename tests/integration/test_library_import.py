"""verifiers imported the way vfcheck's processes import it (`vfcheck._host.library_import`):
with one full garbage collection, after the import, its objects frozen, the collector on
after. In a fresh interpreter: the import is the point."""

from __future__ import annotations

import json
import subprocess
import sys

IMPORT_IN_A_FRESH_INTERPRETER = """
import gc, json, sys
from vfcheck._host.library_import import import_verifiers
full = gc.get_stats()[2]["collections"]
vf = import_verifiers()
again = import_verifiers()
print(json.dumps({
    "full_collections": gc.get_stats()[2]["collections"] - full,
    "enabled": gc.isenabled(), "frozen": gc.get_freeze_count(),
    "same": vf is again is sys.modules["verifiers.v1"],
}))
"""


def test_importing_verifiers_runs_one_full_collection_and_freezes_the_library() -> None:
    out = subprocess.run([sys.executable, "-c", IMPORT_IN_A_FRESH_INTERPRETER],
                         capture_output=True, text=True, check=True, timeout=120)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["full_collections"] == 1, seen  # the one after the import (without: 5-6)
    assert seen["enabled"] is True
    assert seen["frozen"] > 100_000, seen  # verifiers, openai, pydantic: ~360,000 objects
    assert seen["same"] is True
