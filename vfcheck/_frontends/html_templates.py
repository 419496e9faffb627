"""The HTML report's templates (`templates/*.html.j2`), rendered by jinja2 with autoescape
on: every value from a report (env ids, task keys, messages, replies, tool arguments) is
escaped by the template itself, so no code path can forget it. Parts rendered apart (an
episode, a finding) come back as `Markup` and are placed as they are."""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup


@cache
def environment() -> Environment:
    return Environment(loader=PackageLoader("vfcheck._frontends", "templates"), autoescape=True,
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                       keep_trailing_newline=True)


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def macro(template: str, name: str, *args: Any) -> Markup:
    """One macro of a template, rendered on its own: a part of the page."""
    return Markup(getattr(environment().get_template(template).module, name)(*args))
