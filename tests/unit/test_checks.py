"""What the checks decide without running an env: which tasks are never run on the host."""

from __future__ import annotations


def test_tasks_that_need_a_container_are_not_run_on_the_host() -> None:
    """`agent_user` makes verifiers run `useradd` in the box: on the host, in the
    subprocess runtime. Such tasks are skipped, like NEEDS_CONTAINER and images."""
    from types import SimpleNamespace

    from vfcheck.checks._validate import needs_container

    class Plain:
        NEEDS_CONTAINER = False

    def task(**data: object) -> object:
        fields = {"image": None, "agent_user": None, **data}
        instance = Plain()
        instance.data = SimpleNamespace(**fields)  # type: ignore[attr-defined]
        return instance

    assert not needs_container(task())
    assert needs_container(task(agent_user="vf-agent"))
    assert needs_container(task(image="python:3.12"))
