"""The `served` family: each served fixture breaks its own served check, on exactly the task
it breaks and nowhere else (the conformance families stay clean on it), with a message
naming the field or the prompt that differs; the well-behaved fixtures stay clean; a served
run that hangs is named with its server and bounded by the timeout. Driven through the
pytest plugin, as an env author runs it, and through `ServedEnv` for the hang."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support import CheckCache, PluginRun, run_plugin

from vfcheck.checks import BY_ID

from .test_checks import CONFORMANCE, FIXTURES, Unit, units_with

SERVED = "served.data", "served.episode", "served.cancel", "served.pool"
BREAKS: dict[str, set[Unit]] = {
    "vfc-broken-served-excluded": {("served.data", i) for i in range(3)},
    "vfc-broken-served-subclass": {("served.data", 1)},
    "vfc-broken-served-validator": {("served.data", 1)},
    "vfc-broken-served-state": {("served.episode", 1), ("served.pool", 1)},
    "vfc-broken-served-cancel": {("served.cancel", 1)},
    "vfc-broken-served-json": {("served.episode", 1), ("served.pool", 1)},
    "vfc-broken-served-pool": {("served.pool", 1)},
}
"""Each served fixture and the findings that must fail on it (with the conformance
families and `served`): nothing else may."""
NAMED = {
    ("vfc-broken-served-excluded", 1): [
        "the env server refuses the taskset: VfcServedExcludedData excludes ['expected'] from "
        "serialization", "data.expected 'ping' in-process, '' served (excluded from the dump: "
        "exclude=True)"],
    ("vfc-broken-served-subclass", 1): [
        "data.aliases ['pong'] in-process, (absent) served (VfcEchoData has no such field)",
        "data type VfcServedAliasData in-process, VfcEchoData served"],
    ("vfc-broken-served-validator", 1): [
        "data.prompt …\" Reply in lowercase.\" in-process, …\" Reply in lowercase. Reply in "
        "lowercase.\" served"],
    ("vfc-broken-served-state", 1): [
        "the served rollout recorded TaskError: task VfcServedStateTask scoring: AttributeError: "
        "'VfcServedStateTask' object has no attribute 'spellings', which the in-process play "
        "did not", "traces[0].rewards.echoed"],
    ("vfc-broken-served-json", 1): [
        "traces[0].rewards.echoed.score: 1.0 -> 0.0", "the served task differs only in values "
        "JSON carries as it must, which the env's code may tell apart: data.entry.metadata.size "
        "(10, 30) (tuple) in-process, [10, 30] (list) served"],
    ("vfc-broken-served-pool", 1): [
        "4 rollouts played at once through verifiers' env-server pool (2 worker processes), 4 "
        "of them differ from the in-process play: rollout 1: the served rollout recorded "
        "TaskError: task VfcBrokenServedPoolTask scoring: KeyError: 'ping', which the "
        "in-process play did not", "never calls `load()`: compare served.episode[1]"],
    ("vfc-broken-served-cancel", 1): [
        "the rollout did not end on the cancel: the server went on and answered the run with a "
        "finished episode instead of the cancellation"],
}
"""What the message of each broken unit must say (the field, the prompt, the error)."""
POOL = "--vf-pool-workers=2"
"""`served.pool` is off by default (each worker is an interpreter of its own)."""
CLEAN = ["vfc-echo", "vfc-served-wire", "vfc-served-json", "vfc-multiturn", "vfc-duet",
         "vfc-judge", "vfc-tool"]
"""Well-behaved fixtures: every served finding passes (`vfc-tool` plays its tool servers)."""


@pytest.fixture(scope="module")
def served_run(checked: CheckCache) -> PluginRun:
    return checked.plugin(sorted(BREAKS), f"{CONFORMANCE},served", POOL)


@pytest.fixture(scope="module")
def clean_run(checked: CheckCache) -> PluginRun:
    return checked.plugin(CLEAN, "--vf-checks=served,hygiene", POOL)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(BREAKS))
def test_each_served_fixture_breaks_its_own_check_only(served_run: PluginRun,
                                                       env_id: str) -> None:
    assert served_run.ret == 1
    env = served_run.envs[env_id]
    assert units_with(env, {"failed", "error"}) == BREAKS[env_id], [
        f["message"] for f in env["findings"] if f["outcome"] in ("failed", "error")]
    for finding in env["findings"]:
        unit = (finding["check"], finding["task"]["index"] if finding["task"] else None)
        if unit not in BREAKS[env_id]:
            continue
        message = finding["message"]
        assert f"env {env_id!r}, task {unit[1]} (" in message and "\n" not in message
        assert BY_ID[finding["check"]].contract in message
        for said in NAMED.get((env_id, unit[1]), []):
            assert said in message, message


@pytest.mark.slow
def test_a_task_blocked_by_its_data_or_a_refused_server_is_skipped_saying_why(
        served_run: PluginRun) -> None:
    def finding(env_id: str, check: str, index: int) -> dict[str, str]:
        return next(f for f in served_run.envs[env_id]["findings"]
                    if f["check"] == check and f["task"]["index"] == index)

    for check in ("served.episode", "served.cancel"):
        refused = finding("vfc-broken-served-excluded", check, 0)
        assert refused["outcome"] == "skipped"
        assert "the env server refuses the taskset" in refused["message"]
    for env_id in ("vfc-broken-served-subclass", "vfc-broken-served-validator"):
        blocked = finding(env_id, "served.episode", 1)
        assert blocked["outcome"] == "skipped" and "see served.data[1]" in blocked["message"]
        assert finding(env_id, "served.cancel", 1)["outcome"] == "passed"


@pytest.mark.slow
@pytest.mark.parametrize("env_id", CLEAN)
def test_well_behaved_fixtures_stay_clean_when_served(clean_run: PluginRun, env_id: str) -> None:
    env = clean_run.envs[env_id]
    assert [(f["check"], f["message"]) for f in env["findings"]
            if f["outcome"] != "passed"] == []
    checks = {f["check"] for f in env["findings"]}
    assert set(SERVED) <= checks
    cancel = next(f for f in env["findings"] if f["check"] == "served.cancel")
    assert "served.cancel.assembled" in cancel["message"]  # verifiers' 0.4.0 leftover, named


@pytest.mark.slow
@pytest.mark.parametrize("run", ["clean_run", "served_run"])
def test_a_tuple_that_comes_back_a_list_is_named_by_its_path_and_types_and_no_failure(
        run: str, request: pytest.FixtureRequest) -> None:
    """vfc-served-json (and its broken twin): `served.data` passes on every task, naming the
    JSON-equivalent value by its path with both values and their types."""
    env_id = "vfc-served-json" if run == "clean_run" else "vfc-broken-served-json"
    env = request.getfixturevalue(run).envs[env_id]
    data = [f for f in env["findings"] if f["check"] == "served.data"]
    assert len(data) == 3
    for finding in data:
        assert finding["outcome"] == "passed", finding["message"]
        assert ("data.entry.metadata.size (10, 30) (tuple) in-process, [10, 30] (list) served "
                "(JSON-equivalent") in finding["message"]


@pytest.mark.slow
def test_verifiers_own_envs_stay_clean_when_served(verifiers_fixtures: Path,
                                                   tmp_path: Path) -> None:
    run = run_plugin(tmp_path, verifiers_fixtures, ["echo-v1", "duet-v1"],
                     "--vf-checks=served", POOL)
    for env in run.envs.values():
        assert [(f["check"], f["message"]) for f in env["findings"]
                if f["outcome"] != "passed"] == [], env["id"]
        # pytest stops a worker once every finding is in: the pool was stopped before
        folders = {f["details"]["pool_dir"] for f in env["findings"]
                   if f["check"] == "served.pool"}
        assert folders and not [d for d in folders if Path(d).exists()], folders


@pytest.mark.slow
async def test_a_hung_served_run_is_named_with_its_server_and_bounded() -> None:
    """The model never answers: the run ends at the timeout, naming the server's address
    and how far the run got; the server goes on serving the next run."""
    from vfcheck._episodes.offline import prepare_process_env
    from vfcheck._episodes.runner import EnvRunner
    from vfcheck._episodes.served import ServedEnv
    from vfcheck._episodes.task_loading import load_tasks
    from vfcheck._model import PolicyRouter, Reply, ScriptedModel, TaskRef
    from vfcheck.checks._lab import agent_fault

    prepare_process_env([str(FIXTURES)])
    router = PolicyRouter()
    model = ScriptedModel(router)

    def bind(trace_id: str, task: object, policy: object) -> None:
        model.bind(trace_id, TaskRef(0, "x"))
        if policy is not None:
            router.assigned[trace_id] = policy  # type: ignore[assignment]

    async with EnvRunner.open("vfc-echo", model=model) as runner, \
            ServedEnv.open(runner.env) as served:
        task = load_tasks(runner.env, 1)[0]
        started = asyncio.get_running_loop().time()
        hung = await served.play(runner, bind, task, timeout=8.0,
                                 policy=agent_fault(Reply.fault("hang")))
        assert asyncio.get_running_loop().time() - started < 30
        assert hung.unfinished and hung.episode is None
        assert hung.error == (f"the env server at {served.address} did not answer the run "
                              "within 8s; its last delta showed the trace in the agent stage")
        after = await served.play(runner, bind, task, timeout=30.0)
        assert after.error is None and after.episode is not None


def test_a_verifiers_without_the_serve_path_skips_the_family_saying_what_it_lacks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from verifiers.v1.serve.server import EnvServer

    from vfcheck.checks.served import missing_serve

    assert missing_serve() is None
    monkeypatch.delattr(EnvServer, "_build_task")
    said = missing_serve()
    assert said is not None and said.endswith(
        "lacks EnvServer._build_task, which the served checks need")


@pytest.mark.slow
def test_served_pool_is_off_by_default_saying_how_to_turn_it_on(checked: CheckCache) -> None:
    done = checked.check("vfc-echo", "--path", str(FIXTURES), "--checks", "served")
    pool = [f for f in done.envs["vfc-echo"]["findings"] if f["check"] == "served.pool"]
    assert len(pool) == 3 and {f["outcome"] for f in pool} == {"skipped"}
    assert "off: `--pool-workers 2` (pytest `--vf-pool-workers 2`" in pool[0]["message"]


def test_a_verifiers_without_the_pool_skips_served_pool_saying_what_it_lacks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from verifiers.v1.serve import pool

    from vfcheck._episodes.served_pool import pool_missing

    assert pool_missing() is None
    monkeypatch.delattr(pool, "EnvServerPool")
    assert pool_missing() == "serve.pool.EnvServerPool, EnvServerPool._worker_path"


@pytest.mark.slow
async def test_the_pool_reaches_the_scripted_model_and_leaves_nothing_behind() -> None:
    """A group played through verifiers' pool: every rollout answered by the scripted model
    in this process (the workers are processes of their own), bound to its task; once
    closed, no worker, no resource tracker and no socket folder of the pool is left."""
    import os

    from vfcheck._episodes.offline import prepare_process_env
    from vfcheck._episodes.runner import EnvRunner
    from vfcheck._episodes.served_pool import PooledEnv
    from vfcheck._episodes.task_loading import load_tasks
    from vfcheck._host.leftovers import leftovers
    from vfcheck._model import ScriptedModel, TaskRef

    prepare_process_env([str(FIXTURES)])
    model = ScriptedModel()

    def bind(trace_id: str, task: object, policy: object) -> None:
        model.bind(trace_id, TaskRef(1, "vfc-echo:ping"))

    async with EnvRunner.open("vfc-echo", model=model) as runner:
        task = load_tasks(runner.env, 2)[1]
        async with PooledEnv.open_pool(runner.env, model) as pooled:
            plays = await asyncio.gather(*(pooled.play(runner, bind, task, timeout=120.0)
                                           for _ in range(4)))
            workers = [w["process"].pid for w in pooled.pool.workers]
            folder = Path(pooled.pool._ipc_dir)
            assert len(workers) == 2 and folder.exists()
        for play in plays:
            assert play.error is None and play.episode is not None, play.error
            assert play.episode.traces[0].reward == 1.0
        answered = [r for r in model.requests if r.request.session_id in
                    {t for p in plays for t in p.trace_ids}]
        assert len(answered) == 4 and all(r.request.task == TaskRef(1, "vfc-echo:ping")
                                          for r in answered)
    assert not folder.exists()
    assert [p.cmdline for p in leftovers(os.getpid()) if p.pid in workers
            or "multiprocessing" in p.cmdline] == []


def test_data_the_server_cannot_stream_back_is_named_by_field() -> None:
    """verifiers' msgpack encoder knows `Path` but not `PurePosixPath`: a task holding one
    rebuilds fine, and its served run fails when the trace streams the data back."""
    from pathlib import PurePosixPath
    from types import SimpleNamespace

    import verifiers.v1 as vf

    from vfcheck.checks.served import judge_wire

    class PathData(vf.TaskData):
        where: PurePosixPath

    class PathTask(vf.Task[PathData]):
        pass

    class PathTaskset(vf.Taskset[PathTask, vf.TasksetConfig]):
        def load(self) -> list[PathTask]:
            return []

    config = vf.TasksetConfig()
    env = SimpleNamespace(taskset=PathTaskset(config), config=SimpleNamespace(taskset=config))
    task = PathTask(PathData(prompt="p", where=PurePosixPath("rows/1.json"), idx=0),
                    config.task)
    served = SimpleNamespace(server=None, refusal=None)
    (problem,) = judge_wire(SimpleNamespace(env=env), task, served).problems  # type: ignore[arg-type]
    assert "the server cannot stream it back on the trace" in problem
    assert "data.where (a PurePosixPath): PydanticSerializationError" in problem
