"""The HTML report, loaded in a real browser: headless Chromium renders the page that one
`vfcheck check --html` wrote (vfc-broken-golden, whose golden[1] fails, and vfc-echo), and
the tests read its DOM (matrix cells and their anchors, the conversation, the notify strip,
the golden diff, the probe table) and its screenshot (not blank: the outcome colours show).
`pytest --vf-html` writes the same page through the plugin."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from support import ROOT

from vfcheck._frontends.html_report import render_html

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install "
                             "chromium); the HTML report is checked in a real browser")


# -- the browser


def chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={profile}", *args, page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def dump_dom(page: Path, profile: Path) -> str:
    done = chromium(page, profile, "--dump-dom")
    assert done.returncode == 0 and "<html" in done.stdout, done.stderr[-2000:]
    return done.stdout


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: str = ""

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class Dom(HTMLParser):
    """The elements of a page, each with the text inside it (enough to query by tag,
    class, id)."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[Element] = []
        self._open: list[Element] = []

    VOID = frozenset({"meta", "br", "img", "input", "link", "hr"})

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.elements.append(element)
        if tag not in self.VOID:
            self._open.append(element)

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            if self._open.pop().tag == tag:
                break

    def handle_data(self, data: str) -> None:
        for element in self._open:
            element.text += data

    def find(self, tag: str = "", cls: str = "") -> list[Element]:
        return [e for e in self.elements if (not tag or e.tag == tag)
                and (not cls or cls in e.classes)]

    @property
    def ids(self) -> set[str]:
        return {e.attrs["id"] for e in self.elements if "id" in e.attrs}


def parse(text: str) -> Dom:
    dom = Dom()
    dom.feed(text)
    return dom


def png_pixels(path: Path) -> tuple[int, int, list[bytes], int]:
    """(width, height, rows of pixel bytes, bytes per pixel) of an 8-bit RGB(A) PNG, as
    Chromium writes its screenshots: a tiny reader, so the test needs no imaging package."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    width = height = depth = colour = interlace = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    assert depth == 8 and colour in (2, 6) and not interlace, (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind_of_filter, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind_of_filter == 1:  # Sub
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif kind_of_filter == 2:  # Up
            line = bytearray((a + b) & 255 for a, b in zip(line, prev, strict=True))
        elif kind_of_filter == 3:  # Average
            for x in range(stride):
                line[x] = (line[x] + ((line[x - bpp] if x >= bpp else 0) + prev[x]) // 2) & 255
        elif kind_of_filter == 4:  # Paeth
            for x in range(stride):
                a, b = (line[x - bpp] if x >= bpp else 0), prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows, bpp


# -- one real run


@dataclass
class HtmlRun:
    page: Path
    report: dict[str, Any]
    dom: Dom
    profile: Path


@pytest.fixture(scope="module")
def html_run(fixtures_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> HtmlRun:
    """`vfcheck check --html` on vfc-broken-golden and vfc-echo (the families that make
    episodes, notify logs, golden diffs and probe tables), loaded once in Chromium."""
    if CHROMIUM is None:
        pytest.skip("headless Chromium is not installed (Debian: apt-get install chromium)")
    where = tmp_path_factory.mktemp("html")
    done = subprocess.run(
        [sys.executable, "-m", "vfcheck", "check", "vfc-broken-golden", "vfc-echo", "--path",
         str(fixtures_dir), "--golden-dir", str(ROOT / "golden"), "--checks",
         "episode,lifecycle,golden,reward", "--html", "report.html", "--json", "report.json"],
        cwd=where, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]  # golden[1] fails
    page = where / "report.html"
    report = json.loads((where / "report.json").read_text())
    profile = where / "chromium-profile"
    return HtmlRun(page, report, parse(dump_dom(page, profile)), profile)


@pytest.mark.slow
@needs_chromium
def test_every_matrix_cell_links_to_its_finding_and_shows_its_outcome(
        html_run: HtmlRun) -> None:
    cells = html_run.dom.find("a", "cell")
    findings = [(e, i, f) for e, env in enumerate(html_run.report["envs"])
                for i, f in enumerate(env["findings"])]
    assert len(cells) == len(findings)
    ids = html_run.dom.ids
    by_href = {cell.attrs["href"]: cell for cell in cells}
    for e, i, finding in findings:
        cell = by_href[f"#f{e}-{i}"]
        assert f"f{e}-{i}" in ids
        assert finding["outcome"] in cell.classes, (finding["check"], cell.classes)
    (golden,) = [c for c in cells if "failed" in c.classes]
    assert golden.attrs["href"] == "#f0-" + str(next(
        i for i, f in enumerate(html_run.report["envs"][0]["findings"])
        if (f["check"], (f["task"] or {}).get("index")) == ("golden", 1)))
    assert golden.text == "F" and "golden[1] failed" in golden.attrs["title"]


@pytest.mark.slow
@needs_chromium
def test_each_sampled_episode_shows_its_conversation_rewards_and_timeline(
        html_run: HtmlRun) -> None:
    dom = html_run.dom
    episodes = dom.find("details", "episode")
    assert len(episodes) == 6  # 3 sampled tasks of each env
    assert "open" in episodes[0].attrs  # the first is open, so a reader sees one at once
    roles = [m.classes - {"msg"} for m in dom.find("div", "msg")]
    assert roles[:3] == [{"system"}, {"user"}, {"assistant"}]
    users = [m.text for m in dom.find("div", "user")]
    assert any("Your reply must contain this exact phrase: ping Reply in lowercase." in t
               for t in users)  # vfc-broken-golden's reworded task 1
    scores = dom.find("table", "scores")
    assert len(scores) == 6 and all("echoed" in t.text and "reply_chars" in t.text
                                    for t in scores)
    strips = dom.find("div", "strip")
    assert len(strips) == 6
    spans = [s.classes for s in dom.find("span", "span") if "key" not in s.classes]
    for stage in ("boot", "setup", "agent", "finalize", "scoring"):
        assert sum(stage in s for s in spans) == 6, stage
    ticks = [t.classes for t in dom.find("span", "tick") if "key" not in t.classes]
    assert sum("preview" in t for t in ticks) >= 6 and sum("call" in t for t in ticks) == 6


@pytest.mark.slow
@needs_chromium
def test_a_golden_mismatch_is_shown_side_by_side(html_run: HtmlRun) -> None:
    (sides,) = html_run.dom.find("table", "sides")
    rows = [r for r in html_run.dom.elements if r.tag == "tr" and r.text.startswith(
        "traces[0].messages[1].content")]
    assert rows, sides.text
    golden = [e.text for e in html_run.dom.find("td", "golden")]
    now = [e.text for e in html_run.dom.find("td", "now")]
    assert any("Reply in lowercase." in t for t in now)
    assert not any("Reply in lowercase." in t for t in golden)
    assert "traces[0].task.data.prompt" in sides.text


@pytest.mark.slow
@needs_chromium
def test_the_probe_table_and_the_notify_log_are_on_the_page(html_run: HtmlRun) -> None:
    tables = html_run.dom.find("table", "probes")
    assert len(tables) == 2
    assert all(t.text.startswith("probetask 0task 1task 2") and "oracle111" in t.text
               for t in tables)
    logs = [d.text for d in html_run.dom.find("details") if d.text.startswith("notify log")]
    assert len(logs) == 6 and all("setup.end+agent.start" in t for t in logs)


@pytest.mark.slow
@needs_chromium
def test_the_page_is_self_contained_and_its_screenshot_is_not_blank(html_run: HtmlRun) -> None:
    text = html_run.page.read_text()
    assert "<script" not in text and "http://" not in text and "https://" not in text
    assert not html_run.dom.find("link") and not html_run.dom.find("script")
    shot = html_run.page.with_name("shot.png")
    done = chromium(html_run.page, html_run.profile, "--window-size=1000,1200",
                    "--hide-scrollbars", f"--screenshot={shot}")
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    width, height, rows, bpp = png_pixels(shot)
    assert (width, height) == (1000, 1200)
    colours = {row[x:x + 3] for row in rows[::3] for x in range(0, width * bpp, bpp * 3)}
    assert len(colours) > 50, "a blank page"
    assert bytes((0x2e, 0x7d, 0x32)) in colours  # a passed cell's green
    assert bytes((0xc6, 0x28, 0x28)) in colours  # golden[1]'s failed red


@needs_chromium
def test_env_text_is_escaped_in_the_browser(tmp_path: Path) -> None:
    """An env id, a task key, a message and a reply that hold markup stay text."""
    attack = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    finding = {"check": "episode", "family": "episode", "task": {"index": 0, "key": attack},
               "outcome": "failed", "message": attack, "details": {"episode": {
                   "task": {"index": 0, "key": attack}, "reward": 0.0, "ok": True,
                   "errors": [attack], "traces": [{"notify": [], "trace": {
                       "nodes": [{"message": {"role": "user", "content": attack}},
                                 {"message": {"role": "assistant", "content": None,
                                              "tool_calls": [{"id": attack, "name": attack,
                                                              "arguments": attack}]}},
                                 {"message": {"role": "tool", "tool_call_id": attack,
                                              "name": attack, "content": attack}}],
                       "rewards": {attack: {"score": 0.0, "weight": 1.0}},
                       "info": {"judge_calls": [{"name": attack, "request": {
                           "messages": [{"role": "user", "content": attack}]},
                           "response": {"message": {"content": attack}}}]}}}]}},
               }
    golden = {"check": "golden", "family": "golden", "task": {"index": 0, "key": attack},
              "outcome": "failed", "message": attack,
              "details": {"changes": [[attack, attack, attack]], "notify_log": [attack]}}
    report = {"vfcheck": attack, "verifiers": attack, "seed": attack, "envs": [
        {"id": attack, "harness": attack, "findings": [finding, golden],
         "reward_probes": {attack: {"0": 1.0}}}]}
    page = tmp_path / "attack.html"
    page.write_text(render_html(report))
    dom = parse(dump_dom(page, tmp_path / "profile"))
    assert not dom.find("img") and not dom.find("script")
    assert sum(attack in e.text for e in dom.find("pre")) >= 6
    # the conversation's parts, each in its own box
    assert [m.classes - {"msg"} for m in dom.find("div", "msg")] == [
        {"user"}, {"assistant"}, {"tool"}, {"judge"}]
    (call,) = dom.find("div", "toolcall")
    assert call.text.startswith(f"tool call {attack} (id {attack})")
    (judge,) = dom.find("div", "judge")
    assert judge.text.startswith(f"judge call · {attack}") and "judge replied" in judge.text


@pytest.mark.slow
def test_pytest_vf_html_writes_the_report_and_the_step_summary(
        pytester: pytest.Pytester, fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "summary.md"))
    result = pytester.runpytest_subprocess(
        "--vf-env", "vfc-echo", f"--vf-path={fixtures_dir}", "--vf-checks", "episode",
        "--vf-sample", "1", "--vf-html=out/report.html", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()[-3000:]
    dom = parse((pytester.path / "out" / "report.html").read_text())
    cells = dom.find("a", "cell")
    assert [c.text for c in cells] == ["."] * 2  # load, episode[0]
    assert all(c.attrs["href"].lstrip("#") in dom.ids for c in cells)
    assert [m.classes - {"msg"} for m in dom.find("div", "msg")] == [
        {"system"}, {"user"}, {"assistant"}]
    summary = (pytester.path / "summary.md").read_text()
    assert "| vfc-echo | 0 | 0 | 2 | 0 | 0 |" in summary and "| episode |  | `.` |" in summary


