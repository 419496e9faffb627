"""Shards and `vfcheck merge`: the `--shard`
and `--vf-shard` usage errors, a shard with no env, and merge's refusals and verdicts.
Merge runs on reports written here: it never needs an env."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from support import FIXTURES, vfcheck

pytest_plugins = ["pytester"]


@pytest.mark.slow
def test_cli_shard_usage_error_is_one_line_exit_2(tmp_path: Path) -> None:
    done = vfcheck("check", "vfc-echo", "--shard", "4/3", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == "vfcheck: error: --shard: '4/3': shard K of N needs 1 <= K <= N\n"


@pytest.mark.slow
def test_pytest_shard_usage_error_exits_4(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--vf-env", "vfc-echo", "--vf-shard", "0/2")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--vf-shard: '0/2': shard K of N needs 1 <= K <= N*"])


@pytest.mark.slow
def test_an_empty_shard_passes_saying_so_and_writes_its_report(tmp_path: Path) -> None:
    report = tmp_path / "shard-3.json"
    done = vfcheck("check", "vfc-echo", "vfc-many", "--shard", "3/3", "--json", str(report),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "shard 3/3 has no envs: 2 env(s) over 3 shards" in done.stdout
    data = json.loads(report.read_text())
    assert data["envs"] == []
    assert data["shard"] == {"index": 3, "count": 3, "of": ["vfc-echo", "vfc-many"]}


@pytest.mark.slow
def test_pytest_empty_shard_is_one_skipped_item(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--vf-env", "vfc-echo", "--vf-env", "vfc-many", "--vf-shard", "3/3",
        f"--vf-path={FIXTURES}", "--vf-json", "r.json", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*shard 3/3 has no envs: 2 env(s) over 3 shards*"])
    data = json.loads((pytester.path / "r.json").read_text())
    assert data["envs"] == [] and data["shard"]["index"] == 3


def finding(check: str, outcome: str, index: int | None = None) -> dict[str, Any]:
    task = None if index is None else {"index": index, "key": f"k{index}"}
    return {"check": check, "family": check.split(".")[0], "task": task, "outcome": outcome,
            "message": f"{check} {outcome}", "details": {}}


def env(env_id: str, *findings: dict[str, Any], worker: str = "main") -> dict[str, Any]:
    return {"id": env_id, "harness": "fast", "sample": [0], "tiers": [], "worker_starts": 1,
            "worker": worker, "host": "ci-1", "findings": list(findings)}


def write(path: Path, envs: list[dict[str, Any]], shard: tuple[int, int] | None = None,
          of: list[str] | None = None) -> Path:
    report = {"vfcheck": "0.1.0", "verifiers": "0.4.0", "seed": None,
              "shard": None if shard is None else {"index": shard[0], "count": shard[1],
                                                   "of": of or []},
              "envs": envs}
    path.write_text(json.dumps(report))
    return path


@pytest.mark.slow
def test_merge_joins_shards_with_checks_verdict_and_keeps_the_workers(tmp_path: Path) -> None:
    of = ["a", "b", "c"]
    one = write(tmp_path / "1.json", [env("a", finding("load", "passed")),
                                      env("c", finding("load", "passed"), worker="gw1")],
                (1, 2), of)
    two = write(tmp_path / "2.json", [env("b", finding("load", "passed"),
                                          finding("gold", "failed", 1))], (2, 2), of)
    done = vfcheck("merge", str(two), str(one), "--json", "m.json", "--junit-xml", "m.xml",
                   cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # gold[1] failed in shard 2
    assert "1 finding(s) failed or errored" in done.stdout
    merged = json.loads((tmp_path / "m.json").read_text())
    assert [(e["id"], e["worker"], e["host"]) for e in merged["envs"]] == [
        ("a", "main", "ci-1"), ("b", "main", "ci-1"), ("c", "gw1", "ci-1")]
    suites = ET.parse(tmp_path / "m.xml").getroot().findall("testsuite")
    assert [(s.get("name"), s.get("failures")) for s in suites] == [
        ("a", "0"), ("b", "1"), ("c", "0")]
    passing = write(tmp_path / "p.json", [env("a", finding("load", "passed"))])
    assert vfcheck("merge", str(passing), cwd=tmp_path).returncode == 0


@pytest.mark.slow
def test_merge_refuses_what_would_not_be_one_honest_report(tmp_path: Path) -> None:
    of = ["a", "b"]
    one = write(tmp_path / "1.json", [env("a", finding("load", "passed"))], (1, 2), of)
    two = write(tmp_path / "2.json", [env("b", finding("load", "passed"))], (2, 2), of)
    copy = tmp_path / "2-copy.json"  # the same shard's report, downloaded twice
    copy.write_text(two.read_text())
    again = write(tmp_path / "again.json", [env("a", finding("load", "passed"))])
    other = write(tmp_path / "other.json", [env("z", finding("load", "passed"))], (2, 2),
                  ["y", "z"])
    (tmp_path / "text.json").write_text("not json")
    (tmp_path / "list.json").write_text("[1, 2]")
    write(tmp_path / "badenv.json", [{"id": "q", "findings": [{"check": "load"}]}])
    cases = {
        ("missing.json",): "missing.json: no such file",
        ("text.json",): "text.json: not JSON",
        ("list.json",): "list.json: not a vfcheck JSON report",
        ("badenv.json",): "badenv.json: an env that is no vfcheck env report",
        (str(one), str(again)): "env 'a' is in both",
        (str(one),): "shard(s) 2/2 of this run are missing (got 1/2)",
        (str(one), str(other)): "shard 2/2 of other envs than the reports before it",
        (str(one), str(two), str(copy)): "shard 2/2 again",
        (str(one), str(one)): "1.json: given twice",
    }
    for files, message in cases.items():
        done = vfcheck("merge", *files, cwd=tmp_path)
        assert done.returncode == 2, (files, done.stdout, done.stderr)
        assert done.stderr.startswith("vfcheck: error: ") and message in done.stderr, (
            files, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert vfcheck("merge", str(two), str(one), cwd=tmp_path).returncode == 0
