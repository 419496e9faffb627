"""Policies: what the scripted model answers, as small composable functions.

A policy is `Callable[[ModelRequest], Reply | None]`; None means "no opinion, ask the next
one" (`first_of`). A policy sees agent turns and judge calls alike (`request.kind`), so a
`fixed` reply answers both; `agent_only` and `judge_only` narrow one down. `PolicyRouter`
gives each episode its own policy on one shared model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from vfcheck._model.json_reply import json_reply
from vfcheck._model.schema_args import generate_arguments
from vfcheck._model.types import ModelRequest, Policy, Reply, stable_digest, text_of

HARNESS_BUILTIN_TOOLS: frozenset[str] = frozenset({"bash", "edit", "search"})
"""Tools the harness offers itself (verifiers/v1/harnesses/bash): not the env's to test."""


def fixed(reply: str | Reply) -> Policy:
    """Always the same reply."""
    answer = Reply.text(reply) if isinstance(reply, str) else reply
    return lambda request: answer


def sequence(*replies: str | Reply) -> Policy:
    """Reply N for the session's turn N; the last reply repeats."""
    if not replies:
        raise ValueError("sequence() needs at least one reply")
    answers = [Reply.text(r) if isinstance(r, str) else r for r in replies]
    return lambda request: answers[min(request.turn, len(answers) - 1)]


def from_function(fn: Callable[[ModelRequest], Reply | str | None]) -> Policy:
    """A policy from any function of the request (which carries the task); str means text."""

    def policy(request: ModelRequest) -> Reply | None:
        answer = fn(request)
        return Reply.text(answer) if isinstance(answer, str) else answer

    return policy


def first_of(*policies: Policy) -> Policy:
    """The first policy with an opinion (a non-None reply) wins."""

    def policy(request: ModelRequest) -> Reply | None:
        for candidate in policies:
            answer = candidate(request)
            if answer is not None:
                return answer
        return None

    return policy


def agent_only(policy: Policy) -> Policy:
    """`policy` for agent turns; no opinion on judge calls (a fault meant for the agent must
    not also break the judge that scores it)."""
    return lambda request: policy(request) if request.kind == "agent" else None


def judge_only(policy: Policy) -> Policy:
    """`policy` for judge calls; no opinion on agent turns."""
    return lambda request: policy(request) if request.kind == "judge" else None


def per_task(mapping: Mapping[int | str, Policy]) -> Policy:
    """Route by task: an int key matches the task index, a str key the task key (tried
    first). No opinion for unbound sessions and unlisted tasks."""

    def policy(request: ModelRequest) -> Reply | None:
        task = request.task
        if task is None:
            return None
        if task.key is not None and task.key in mapping:
            return mapping[task.key](request)
        if task.index is not None and task.index in mapping:
            return mapping[task.index](request)
        return None

    return policy


def default_reply(seed: int = 0) -> Policy:
    """A deterministic final answer, so that simple envs are solved without a script:

    - the last message is a tool result -> its content (what a tool-using env checks);
    - else echo the text of the last user message (echo-style envs), and where it shows a
      JSON object for the reply to end with, a line with that object filled in
      (`vfcheck._model.json_reply`: an env that parses its model's final JSON gets one);
    - else a short text derived from a hash of (seed, messages).
    """

    def policy(request: ModelRequest) -> Reply:
        return Reply.text(default_text(request, seed))

    return policy


def tool_policy(
    then: Policy, seed: int = 0, *, builtins: frozenset[str] = HARNESS_BUILTIN_TOOLS
) -> Policy:
    """Call each of the env's own tools once, one call per turn, in offered order, with
    arguments generated from its schema; then defer to `then`.

    "The env's own" = offered tools whose names are not harness `builtins`. Which tools were
    already called is read from the assistant turns in the request's `messages`, so the
    policy is stateless (a retried or replayed request gets the same answer).
    """

    def policy(request: ModelRequest) -> Reply | None:
        called = set(request.called_tool_names)
        for name, parameters in request.tool_parameters.items():
            if name not in builtins and name not in called:
                return Reply.tool(name, generate_arguments(parameters, seed=seed, tool_name=name))
        return then(request)

    return policy


def default_text(request: ModelRequest, seed: int) -> str:
    """`default_reply`'s text; also the answer when every policy has no opinion."""
    messages = request.messages
    if messages and messages[-1].get("role") == "tool":
        return text_of(messages[-1].get("content"))
    user_text = request.last_user_text
    if user_text is not None:  # and, where it shows a JSON object to end with, one
        shaped = json_reply(user_text)
        return user_text if shaped is None else f"{user_text}\n{shaped}"
    digest = stable_digest(seed, json.dumps(messages, sort_keys=True, default=str))
    return f"scripted reply {digest[:8]}"


@dataclass
class PolicyRouter:
    """One model, many episodes: per trace id an assigned policy, else `base`.

    The episode checks assign a policy (the default script, or a fault) to each trace id at
    mint (`on_trace` fires before the first model request), so fault episodes run
    concurrently with happy ones on the same mock. A judge call has no trace id of its own:
    the policy assigned to any trace of its episode applies.

    What an assigned policy has no opinion on, `base` (the user's script) answers: a fault
    meant for the agent leaves the episode's judge calls to the script's `judge`/
    `judge_reply`, and the turns after a one-turn fault to the script's turns, as in every
    other play of the task.
    """

    base: Policy | None = None
    assigned: dict[str, Policy] = field(default_factory=dict)

    def __call__(self, request: ModelRequest) -> Reply | None:
        policy = self.policy_for(request)
        answer = None if policy is None else policy(request)
        if answer is None and policy is not self.base and self.base is not None:
            answer = self.base(request)
        return answer

    def policy_for(self, request: ModelRequest) -> Policy | None:
        if request.session_id is not None:
            return self.assigned.get(request.session_id, self.base)
        if request.episode is not None:
            for trace_id in request.episode.trace_ids:
                if trace_id in self.assigned:
                    return self.assigned[trace_id]
        return self.base
