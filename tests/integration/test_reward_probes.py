"""The reward probe families (`reward.*`, `exploit.*`, `judge.*`) fail on their broken
fixtures, on exactly the units they break, naming the task, the policy, the reply and the
rewards; they stay clean on the well-behaved fixtures; and `allow` turns an accepted finding
into `expected`. Driven through the pytest plugin, as an env author runs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import CheckCache, PluginRun, by_unit, run_plugin

from vfcheck.checks import BY_ID

from .test_checks import FIXTURES, units_with

PROBE_FAMILIES = "reward,exploit,judge"
SAMPLED = range(3)

BREAKS: dict[str, set[tuple[str, int | None]]] = {
    "vfc-reward-zero": {(c, i) for c in ("reward.reachable", "reward.sensitive")
                        for i in SAMPLED},
    "vfc-reward-leak": {("exploit.echo-prompt", i) for i in SAMPLED},
    "vfc-judge-lenient": {("judge.garbage", i) for i in SAMPLED},
    "vfc-reward-gameable": {("exploit.empty", 0), ("exploit.echo-system", 1),
                            ("exploit.refusal", 2), ("exploit.claim", 3),
                            ("exploit.judge-attack", 4), ("exploit.answer-spam", 5)},
    "vfc-reward-toolspam": {("exploit.tool-spam", 0), ("exploit.tool-spam", 1)},
    "vfc-judge-backwards": {("judge.wiring", i) for i in SAMPLED},
    "vfc-judge-keyless": {("judge.skipped", i) for i in SAMPLED},
    "vfc-reward-format-only": {(c, i) for c in ("exploit.wrong-answer", "exploit.search")
                               for i in SAMPLED},
    "vfc-reward-length": {("exploit.search", i) for i in SAMPLED},
    "vfc-reward-constant": {(c, i) for c in ("reward.sensitive", "exploit.empty",
                                             "exploit.echo-prompt", "exploit.refusal",
                                             "exploit.claim", "exploit.judge-attack")
                            for i in SAMPLED},
}
"""Each broken fixture and the probe findings that must fail on it: nothing else may."""
CLEAN = ["vfc-ungameable", "vfc-judge", "vfc-answer-tags", "vfc-boxed-math", "vfc-judge-labels"]
JUDGE_ENVS = {"vfc-judge", "vfc-judge-labels"}
"""Well-behaved fixtures: every probe finding passes or is skipped with its reason."""


@pytest.fixture(scope="module")
def probe_run(checked: CheckCache) -> PluginRun:
    return checked.plugin(sorted({*BREAKS, *CLEAN} - set(OWN_RUNS)),
                          f"--vf-checks={PROBE_FAMILIES}")


@pytest.fixture(scope="module")
def gameable_run(checked: CheckCache) -> PluginRun:
    return checked.plugin(["vfc-reward-gameable"], f"--vf-checks={PROBE_FAMILIES}", "--vf-sample=6")


@pytest.fixture(scope="module")
def toolspam_run(checked: CheckCache) -> PluginRun:
    """Tool envs: their episodes start tool servers (seconds each), so exploits only; with
    the clean vfc-counter, whose only tool takes no arguments."""
    return checked.plugin(["vfc-reward-toolspam", "vfc-counter"], "--vf-checks=exploit")


@pytest.fixture(scope="module")
def backwards_run(checked: CheckCache) -> PluginRun:
    """A judge wired backwards rewards every reply its judge rejects: judge probes only."""
    return checked.plugin(["vfc-judge-backwards"], "--vf-checks=judge")


OWN_RUNS = {"vfc-reward-gameable": "gameable_run", "vfc-reward-toolspam": "toolspam_run",
            "vfc-judge-backwards": "backwards_run"}


@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(BREAKS))
def test_each_probe_family_fails_on_exactly_what_its_fixture_breaks(
        env_id: str, request: pytest.FixtureRequest) -> None:
    run: PluginRun = request.getfixturevalue(OWN_RUNS.get(env_id, "probe_run"))
    assert run.ret == 1
    env = run.envs[env_id]
    assert units_with(env, {"failed", "error"}) == BREAKS[env_id]
    for finding in env["findings"]:
        unit = (finding["check"], finding["task"]["index"] if finding["task"] else None)
        if unit not in BREAKS[env_id]:
            continue
        message = finding["message"]
        assert f"env {env_id!r}, task {unit[1]} (" in message
        assert BY_ID[finding["check"]].contract in message
        assert "reward" in message  # what the probe earned, by reward function
        if finding["check"].startswith("exploit."):
            assert "policy " in message and "reply " in message


@pytest.mark.slow
@pytest.mark.parametrize("env_id", CLEAN)
def test_well_behaved_fixtures_stay_clean(env_id: str, probe_run: PluginRun) -> None:
    env = probe_run.envs[env_id]
    bad = [(f["check"], f["message"]) for f in env["findings"]
           if f["outcome"] not in {"passed", "skipped"}]
    assert bad == []
    passed = units_with(env, {"passed"})
    assert {("reward.reachable", i) for i in SAMPLED} <= passed
    assert {("exploit.echo-prompt", i) for i in SAMPLED} <= passed
    if env_id in JUDGE_ENVS:  # the judge families ran, and held
        assert {("judge.wiring", i) for i in SAMPLED} <= passed
        assert {("judge.garbage", i) for i in SAMPLED} <= passed
        assert {("judge.skipped", i) for i in SAMPLED} <= passed  # called with no key
    else:
        skipped = [f for f in env["findings"] if f["check"] == "judge.wiring"]
        assert skipped and all("made no judge call" in f["message"] for f in skipped)
        unjudged = [f for f in env["findings"] if f["check"] == "judge.skipped"]
        assert unjudged and all("the env declares no judge" in f["message"]
                                for f in unjudged)


@pytest.mark.slow
def test_a_tool_without_arguments_is_the_work_not_spam(toolspam_run: PluginRun) -> None:
    """vfc-counter (verifiers' counter_tool_v1's shape): calling `bump()` three times is the
    task. Tool spam calls only tools that take arguments, so it is skipped, saying why,
    while vfc-reward-toolspam in the same run still fails it."""
    env = toolspam_run.envs["vfc-counter"]
    bad = [(f["check"], f["message"]) for f in env["findings"]
           if f["outcome"] not in {"passed", "skipped"}]
    assert bad == []
    (spam,) = [f for f in env["findings"] if f["check"] == "exploit.tool-spam"]
    assert spam["outcome"] == "skipped"
    assert "takes no arguments (counter_bump)" in spam["message"]
    assert "tool-spam" not in env["reward_probes"]
    assert ("exploit.tool-spam", 0) in units_with(toolspam_run.envs["vfc-reward-toolspam"],
                                                  {"failed"})


@pytest.mark.slow
def test_a_reward_that_reads_the_runtime_is_not_called_dead(tmp_path: Path) -> None:
    """vfc-file-answer (verifiers' echo_agentic_v1's shape): its reward reads the file the
    work wrote, never the trace, so its reference answer played as the reply earns 0 in
    every format. That is no evidence of a dead reward: reachable and sensitive skip,
    saying why; vfc-reward-zero in the same run still fails both."""
    run = run_plugin(tmp_path, FIXTURES, ["vfc-file-answer", "vfc-reward-zero"],
                     "--vf-checks=reward", "--vf-sample=2")
    env = run.envs["vfc-file-answer"]
    assert units_with(env, {"failed", "error"}) == set()
    reach = [f for f in env["findings"] if f["check"] == "reward.reachable"]
    assert reach and all(f["outcome"] == "skipped" for f in reach)
    assert all("its rewards wrote_phrase read the runtime, never the trace" in f["message"]
               for f in reach)
    assert not any("`oracle`" in f["message"] for f in env["findings"])
    assert units_with(run.envs["vfc-reward-zero"], {"failed"}) == {
        (c, i) for c in ("reward.reachable", "reward.sensitive") for i in range(2)}


HINTED_ORACLE = "give the task an `oracle`"
"""The hint a reward or exploit finding prints when a script `oracle` may help."""


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["vfc-code-fix", "vfc-file-answer"])
def test_following_the_printed_hints_leads_to_no_false_failure(tmp_path: Path,
                                                               env_id: str) -> None:
    """Rewards that read only the runtime (vfc-code-fix: hidden tests, pyfix's shape;
    vfc-file-answer: a file the work wrote), where gold passes. vfcheck names gold as the
    evidence the work reaches the reward and never hints at a script `oracle` there; and a
    user who gives every task an `oracle` reply anyway (the hint vfcheck used to print:
    pyfix got 6 false failures from it) still gets no failure."""
    checks = "--vf-checks=gold,reward,exploit"
    run = run_plugin(tmp_path, FIXTURES, [env_id], checks)
    env = run.envs[env_id]
    assert units_with(env, {"failed", "error"}) == set(), run.stdout[-3000:]
    assert not any(HINTED_ORACLE in f["message"] for f in env["findings"])
    reach = [f for f in env["findings"] if f["check"] == "reward.reachable"]
    assert reach and all(f["outcome"] == "skipped" for f in reach)
    if env_id == "vfc-code-fix":  # its Task.validate applies the fix: gold passes
        assert all("gold passed on this task" in f["message"] for f in reach)
    script = tmp_path / "oracle.toml"
    script.write_text("".join(f'[[task]]\nindex = {t["index"]}\noracle = "the fix"\n\n'
                              for t in env["tasks"]))
    followed = tmp_path / "followed"
    followed.mkdir()
    again = run_plugin(followed, FIXTURES, [env_id], checks, f"--vf-script={script}")
    assert units_with(again.envs[env_id], {"failed", "error"}) == set(), again.stdout[-3000:]


@pytest.mark.slow
def test_messages_name_the_policy_the_reply_and_the_rewards(probe_run: PluginRun) -> None:
    leak = next(f for f in probe_run.envs["vfc-reward-leak"]["findings"]
                if f["check"] == "exploit.echo-prompt" and f["task"]["index"] == 0)
    message = leak["message"]
    assert "policy echo-prompt" in message
    assert "Context: The lighthouse keeper's cat is named Biscuit." in message
    assert "mentions_answer=1" in message and "'Biscuit', data.answer" in message
    zero = next(f for f in probe_run.envs["vfc-reward-zero"]["findings"]
                if f["check"] == "reward.reachable" and f["task"]["index"] == 1)
    assert "the reference answer '27' (data.answer)" in zero["message"]
    assert "correct=0" in zero["message"]
    assert "no format earns anything (tried bare: 0, in <answer> tags: 0" in zero["message"]
    lenient = next(f for f in probe_run.envs["vfc-judge-lenient"]["findings"]
                   if f["check"] == "judge.garbage")
    assert "neither label" in lenient["message"] and "with no error" in lenient["message"]
    wrong = next(f for f in probe_run.envs["vfc-reward-format-only"]["findings"]
                 if f["check"] == "exploit.wrong-answer" and f["task"]["index"] == 0)
    assert "reply '<answer>27</answer>'" in wrong["message"]
    assert "formatted=1" in wrong["message"] and "in <answer> tags" in wrong["message"]
    constant = next(f for f in probe_run.envs["vfc-reward-constant"]["findings"]
                    if f["check"] == "reward.sensitive" and f["task"]["index"] == 0)
    assert "earned 1" in constant["message"] and "the reward's maximum" in constant["message"]


KEYLESS_LINES = {name: n for n, line in enumerate(
    (FIXTURES / "vfc_judge_keyless.py").read_text().splitlines(), 1)
    for name in ("async def checked(", "if not self.judge_available():", "def judge_available(",
                 "class CheckJudge(") if line.strip().startswith(name)}


@pytest.mark.slow
def test_a_judge_the_reward_skips_without_a_key_is_named_with_its_line(
        probe_run: PluginRun) -> None:
    """curators-eye's shape (issue #35 item 5): the reward names the `if` that skips the
    judge without a key, and the rewards with and without one; judge.wiring is skipped
    (no call without a key), as before."""
    findings = [f for f in probe_run.envs["vfc-judge-keyless"]["findings"]
                if f["check"] == "judge.skipped"]
    assert len(findings) == len(SAMPLED)
    lines = KEYLESS_LINES
    for finding in findings:
        message = finding["message"]
        # paths as shown from the run's folder (relative below it, else whole)
        assert (f"vfc_judge_keyless.py:{lines['class CheckJudge(']}), task config `judge` "
                "(its key in VFC_THEME_JUDGE_API_KEY)") in message
        assert "judge vfc_judge_keyless.CheckJudge (" in message
        assert "made no judge call with VFC_THEME_JUDGE_API_KEY unset, and 1 with a key" in message
        assert (f"vfc_judge_keyless.py:{lines['async def checked(']}) returns "
                "`await self.exact(trace)` before its judge call when "
                "`not self.judge_available()` (") in message
        assert (f"vfc_judge_keyless.py:{lines['if not self.judge_available():']}, "
                "judge_available at ") in message
        assert f"vfc_judge_keyless.py:{lines['def judge_available(']})" in message
        assert "reward checked (" in message
        # (verifiers records the rewards in an order of its own: each named apart)
        without, keyed = message.split(" without a key, ", 1)
        assert without.endswith(("earned reward 1 (exact=1, checked=1)",
                                 "earned reward 1 (checked=1, exact=1)")), message
        negative = keyed.split(" with it and the judge answering positive, ", 1)[1]
        assert negative.startswith(("reward 0.7 (exact=1, checked=0) answering negative",
                                    "reward 0.7 (checked=0, exact=1) answering negative"))
        assert "without a key checked scores 1, exact's score" in message
        assert finding["details"]["probes"] == {"oracle": 1.0, "oracle+key": 1.0,
                                                "oracle+key/negative": 0.7}


@pytest.mark.slow
def test_the_answer_is_played_in_the_format_its_prompt_names(probe_run: PluginRun) -> None:
    """A bare answer earns 0 on a tagged or `\\boxed{}` env; the report says which format
    earned the oracle's reward, and the labels each judge was answered in."""
    for env_id, fmt in (("vfc-answer-tags", "in <reversed_text> tags"),
                        ("vfc-boxed-math", "as \\boxed{…}")):
        reach = [f for f in probe_run.envs[env_id]["findings"]
                 if f["check"] == "reward.reachable"]
        assert reach and all(fmt in f["message"] for f in reach), reach
        table = probe_run.envs[env_id]["reward_probes"]
        assert table["oracle"] == {"0": 1.0, "1": 1.0, "2": 1.0}
        assert table["oracle[bare]"] == {"0": 0.0, "1": 0.0, "2": 0.0}
        assert f"oracle format: task 0 {fmt}" in probe_run.stdout
    wiring = [f for f in probe_run.envs["vfc-judge-labels"]["findings"]
              if f["check"] == "judge.wiring"]
    assert all("answered in CORRECT/WRONG (its prompt)" in f["message"] for f in wiring)
    assert "judge 'vfc-judge' answered in CORRECT/WRONG (its prompt)" in probe_run.stdout


@pytest.mark.slow
def test_a_probe_whose_scoring_raised_is_not_scored_and_never_a_zero(tmp_path: Path) -> None:
    """vfc-broken-robustness's reward raises on an empty reply (task 1): the empty probe is
    `-` with its error, and `exploit.empty` is skipped naming it, not passed as `0 < 1`."""
    run = run_plugin(tmp_path, FIXTURES, ["vfc-broken-robustness"], "--vf-checks=exploit",
                     "--vf-sample=2")
    env = run.envs["vfc-broken-robustness"]
    (empty,) = [f for f in env["findings"]
                if f["check"] == "exploit.empty" and f["task"]["index"] == 1]
    assert empty["outcome"] == "skipped", empty["message"]
    assert "was not scored" in empty["message"] and "IndexError" in empty["message"]
    assert env["reward_probes"]["empty"]["1"] is None
    assert env["reward_probes"]["empty"]["0"] == 0.0
    assert "- empty: TaskError" in run.stdout


@pytest.mark.slow
def test_every_report_shows_the_probe_table(probe_run: PluginRun) -> None:
    assert "vfcheck reward probes" in probe_run.stdout
    assert "vfc-reward-leak reward probes (policy x task -> reward" in probe_run.stdout
    table: dict[str, Any] = probe_run.envs["vfc-reward-leak"]["reward_probes"]
    assert table["oracle"] == {"0": 1.0, "1": 1.0, "2": 1.0}
    assert table["echo-prompt"] == {"0": 1.0, "1": 1.0, "2": 1.0}
    assert table["refusal"] == {"0": 0.0, "1": 0.0, "2": 0.0}


@pytest.mark.slow
def test_allow_turns_a_finding_into_expected_with_its_reason(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[tool.vfcheck.allow]\n'
        '"vfc-reward-leak::exploit.echo-prompt" = "extractive QA: the context is the prompt"\n')
    run = run_plugin(project, FIXTURES, ["vfc-reward-leak"], "--vf-checks=exploit",
                     "--vf-sample=1")
    assert run.ret == 0, run.stdout
    (finding,) = [f for f in run.envs["vfc-reward-leak"]["findings"]
                  if f["check"] == "exploit.echo-prompt"]
    assert finding["outcome"] == "expected"
    assert finding["message"].startswith("allowed (extractive QA: the context is the prompt): ")
    assert "1 xfailed" in run.stdout
    # the command line form, in a project without the table
    elsewhere = tmp_path / "ci"
    elsewhere.mkdir()
    again = run_plugin(elsewhere, FIXTURES, ["vfc-reward-leak"], "--vf-checks=exploit",
                       "--vf-sample=1", "--vf-allow=exploit.echo-*=known leak")
    assert again.ret == 0, again.stdout
    (finding,) = [f for f in again.envs["vfc-reward-leak"]["findings"]
                  if f["check"] == "exploit.echo-prompt"]
    assert finding["outcome"] == "expected" and "allowed (known leak)" in finding["message"]




PROGRAM_BREAKS = {"vfc-broken-exit-code": {("exploit.program", 0)}}
"""What fails on the env tier (`--vf-harness=env --vf-sample=1`), and nothing else."""


@pytest.mark.slow
def test_a_reward_that_trusts_an_exit_code_is_gamed_by_a_trivial_program(
        tmp_path: Path) -> None:
    """vfc-broken-exit-code pays the hidden tests' exit code: `exploit.program` (on the env
    tier, through the bash harness's tool) finds that an exit 0 at import earns 1, naming the
    program and the reward's file:line, on the sampled task and nothing else; vfc-code-fix,
    whose tests must also print a nonce the model never sees, stays clean. On the fast tier
    the check says it needs the env tier."""
    run = run_plugin(tmp_path, FIXTURES, ["vfc-broken-exit-code", "vfc-code-fix"],
                     "--vf-checks=exploit", "--vf-harness=env", "--vf-sample=1")
    broken, control = run.envs["vfc-broken-exit-code"], run.envs["vfc-code-fix"]
    assert units_with(broken, {"failed", "error"}) == PROGRAM_BREAKS["vfc-broken-exit-code"]
    message = by_unit(broken)[("exploit.program", 0)]["message"]
    assert "the program exit-0 (every Python file the task's setup wrote replaced by " \
           "`import os; os._exit(0)`" in message
    assert "earned reward 1 (tests_pass=1)" in message
    assert "tests_pass at vfc_broken_exit_code.py:29" in message
    assert units_with(control, {"failed", "error"}) == set()
    assert {f["outcome"] for f in control["findings"] if f["check"] == "exploit.program"} == {
        "passed"}
    fast = tmp_path / "fast"
    fast.mkdir()
    skipped = run_plugin(fast, FIXTURES, ["vfc-broken-exit-code"], "--vf-checks=exploit",
                         "--vf-sample=1")
    finding = by_unit(skipped.envs["vfc-broken-exit-code"])[("exploit.program", 0)]
    assert finding["outcome"] == "skipped"
    assert "needs the env tier" in finding["message"] and "--harness env" in finding["message"]


@pytest.mark.slow
def test_probe_skips_point_to_what_explains_them_and_their_hint_holds(tmp_path: Path) -> None:
    """vfc-json-contract (proposer-solver's shape) raises on any reply off its JSON contract,
    so no probe is scored while `episode` (the default reply ends with the contract's
    object) passes. The skips do not send the reader to that passing episode: they say the
    env rejects these replies. Following their hint (a script `oracle` in the contract's
    shape) scores the oracle alone, which is no constant reward: `reward.sensitive` skips
    (it used to fail "all 1 probes earned the same reward")."""
    checks = ("--vf-checks=episode,reward,exploit", "--vf-sample=1")
    run = run_plugin(tmp_path, FIXTURES, ["vfc-json-contract"], *checks)
    env = run.envs["vfc-json-contract"]
    assert ("episode", 0) in units_with(env, {"passed"})
    reach = by_unit(env)[("reward.reachable", 0)]
    assert reach["outcome"] == "skipped"
    assert "see episode[0]" not in reach["message"]
    assert "episode[0] passed with vfcheck's default reply, so the env rejects these " \
           "replies" in reach["message"]
    assert "a script `oracle` in that shape (--script)" in reach["message"]
    script = tmp_path / "oracle.toml"
    oracle = json.dumps('{"word": "cat", "count": 3}')
    script.write_text("".join(f'[[task]]\nindex = {t["index"]}\noracle = {oracle}\n\n'
                              for t in env["tasks"]))
    followed = tmp_path / "followed"
    followed.mkdir()
    again = run_plugin(followed, FIXTURES, ["vfc-json-contract"], *checks,
                       f"--vf-script={script}")
    env = again.envs["vfc-json-contract"]
    assert units_with(env, {"failed", "error"}) == set(), again.stdout[-3000:]
    assert by_unit(env)[("reward.reachable", 0)]["outcome"] == "passed"
    sensitive = by_unit(env)[("reward.sensitive", 0)]
    assert sensitive["outcome"] == "skipped"
    assert sensitive["message"].split(": ", 1)[1].startswith("only one probe was scored (oracle")
