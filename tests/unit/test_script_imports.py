"""What a harness program's zygote imports (`vfcheck._host.script_imports`): the modules
the script imports, read from its source, not what only a type checker or its own folder
holds."""

from __future__ import annotations

from vfcheck._host.script_imports import imported_names

SOURCE = '''
import json, os.path
from collections import abc as things
from typing import TYPE_CHECKING
from . import sibling
if TYPE_CHECKING:
    import only_for_types
else:
    import array
try:
    import tomllib
except ImportError:
    import tomli
def lazy():
    from email.message import EmailMessage
    class Inner:
        import fractions
'''


def test_every_absolute_import_but_the_type_checkers():
    names = imported_names(SOURCE)
    assert names == ["json", "os.path", "collections", "collections.abc", "typing",
                     "typing.TYPE_CHECKING", "array", "tomllib", "tomli", "email.message",
                     "email.message.EmailMessage", "fractions"]
    assert "only_for_types" not in names


def test_a_script_that_does_not_parse_preloads_nothing():
    assert imported_names("def (:\n") == []

