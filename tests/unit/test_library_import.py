"""verifiers is imported with the garbage collector paused, then frozen
(`vfcheck._host.library_import`): no full collection runs during the import (one after
it), the library's objects stay out of later collections, and the collector is on again
after. The import itself is tests/integration/test_library_import.py's: no unit test
imports verifiers."""

from __future__ import annotations

import gc

from vfcheck._host.library_import import collector_paused


def test_the_collector_is_as_it_was_after_a_pause() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # paused by someone else: left so
    finally:
        gc.enable()
