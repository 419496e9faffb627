"""The HTML report rendered from report data, without a browser."""

from __future__ import annotations

from vfcheck._frontends.html_report import render_html


def test_details_of_an_unexpected_shape_cost_one_part_not_the_page() -> None:
    odd = {"check": "episode", "family": "episode", "task": {"index": 0, "key": "k"},
           "outcome": "passed", "message": "ok",
           "details": {"episode": {"traces": [{"trace": "not a record"}]}}}
    fine = {"check": "load", "family": "load", "task": None, "outcome": "passed",
            "message": "env 'x': 1 task(s)", "details": {}}
    page = render_html({"envs": [{"id": "x", "findings": [fine, odd]}]})
    assert "vfcheck could not draw this part (AttributeError" in page
    assert "env &#39;x&#39;: 1 task(s)" in page and page.rstrip().endswith("</html>")
