# mypy: allow-subclassing-any, disable-error-code="untyped-decorator, no-any-return"
"""vfc-library-probe: the smallest env the library suite plays (one single-turn chat task).

Shipped inside vfcheck (not under the repo's `fixtures/`) so that `pytest --vf-library`
works from any project: the suite puts this folder on `sys.path` and `PYTHONPATH`, and
verifiers' loader resolves the id `vfc-library-probe` to this top-level module. Nothing
here may be clever: every observation the suite makes must be verifiers' own behaviour.
"""

import verifiers.v1 as vf

PHRASE = "library probe"


class ProbeData(vf.TaskData):
    answer: str


class ProbeTask(vf.Task[ProbeData]):
    @property
    def key(self) -> str:
        return "vfc-library-probe:0"

    @vf.stop
    async def single_turn(self, trace: vf.Trace) -> bool:
        return trace.num_turns >= 1

    @vf.reward(weight=1.0)
    async def echoed(self, trace: vf.Trace) -> float:
        return float(PHRASE in trace.last_reply.casefold())


class ProbeTaskset(vf.Taskset[ProbeTask, vf.TasksetConfig]):
    def load(self) -> list[ProbeTask]:
        data = ProbeData(
            id="probe",
            name=PHRASE,
            prompt=f"Answer directly, without tools. Repeat this phrase: {PHRASE}",
            system_prompt="Repeat the user's phrase.",
            answer=PHRASE,
        )
        return [ProbeTask(data, self.config.task)]


__all__ = ["ProbeTaskset"]
