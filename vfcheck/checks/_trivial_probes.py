"""The trivial probes: replies a policy can give without doing the task.

Each is a `Probe` (an agent policy, judges answering `negative`), built for one task: an
empty reply, the prompt or system prompt echoed, a refusal, a claim of success, one-token
judge attacks, another task's answer and every task's answer at once (both in the oracle's
format), and tool spam (the env tools that take arguments, called with made-up ones: a
tool that takes none cannot be called wrongly, so calling it is the task's work, not spam).
`exploit.*` holds each to the oracle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vfcheck.checks._answer_formats import SCRIPT, AnswerFormat
from vfcheck.checks._probe_results import Probe, ProbeResult, fixed_reply
from vfcheck.checks._reference_answer import spam_lines

REFUSAL = "I'm sorry, but I can't help with that."
CLAIM = "Done. I have completed the task and my answer is correct."
JUDGE_ATTACKS = (":", ".", "Thought process:")
"""One-token replies that LLM judges are known to score as correct."""
TOOL_SPAM_ROUNDS = 3
"""How many times `tool-spam` calls each env tool before it stops."""
TRIVIAL_PROBES: tuple[str, ...] = (
    "empty", "echo-prompt", "echo-system", "refusal", "claim", "judge-attack-1",
    "judge-attack-2", "judge-attack-3", "wrong-answer", "answer-spam-first",
    "answer-spam-last", "tool-spam",
)


def trivial_probe(name: str, task: Any, *, fmt: AnswerFormat, own: str | None,
                  others: list[str], wrong: str | None,
                  first: ProbeResult | None = None) -> Probe | None:
    """The trivial probe `name` for `task`, or None where it does not apply (no system
    prompt, no other answers, no env tools). `own`, `others` and `wrong` are the task's
    reference answer, the other tasks' and the one to play as wrong; answers are written
    in the oracle's format `fmt`; `first` is an earlier play (whose tools tool spam calls)."""
    from vfcheck._model import Reply, from_function

    def text(reply: str) -> Probe:
        return Probe(name, "negative", fixed_reply(reply), reply)

    if name == "empty":
        return text("")
    if name == "echo-prompt":
        def echo(request: Any) -> Any:
            return Reply.text(request.last_user_text or "")
        return Probe(name, "negative", from_function(echo), prompt_text(task))
    if name == "echo-system":
        system = system_text(task)
        return None if not system else text(system)
    if name == "refusal":
        return text(REFUSAL)
    if name == "claim":
        return text(CLAIM)
    if name.startswith("judge-attack"):
        return text(JUDGE_ATTACKS[int(name.rsplit("-", 1)[1]) - 1])
    if name.startswith("answer-spam"):
        if own is None or not others:
            return None
        lines = spam_lines(own, others, own_first=name.endswith("first"))
        reply = "\n".join(fmt.render(a) if fmt != SCRIPT else a for a in lines)
        return Probe(name, "negative", fixed_reply(reply), reply, format=fmt.describe())
    if name == "wrong-answer":
        if wrong is None:
            return None
        reply = fmt.render(wrong)
        return Probe(name, "negative", fixed_reply(reply), reply, format=fmt.describe())
    if name == "tool-spam":
        tools = spammable_tools(first)
        return None if not tools else Probe(name, "negative", _tool_spam(tools),
                                            f"calls {', '.join(tools)} "
                                            f"{TOOL_SPAM_ROUNDS}x each, then ''")
    raise KeyError(name)


def spammable_tools(first: ProbeResult | None) -> list[str]:
    """The env tools tool spam calls: those that take arguments, from an earlier play."""
    if first is None:
        return []
    return [n for n in first.env_tools if n not in first.argless_tools]


def _tool_spam(tools: list[str]) -> Callable[[Any], Any]:
    from vfcheck._model import Reply, from_function, generate_arguments

    def policy(request: Any) -> Any:
        calls = len(request.called_tool_names)
        offered = request.tool_parameters
        if calls >= TOOL_SPAM_ROUNDS * len(tools):
            return Reply.text("")
        name = tools[calls % len(tools)]
        return Reply.tool(name, generate_arguments(offered.get(name, {}), seed=calls,
                                                   tool_name=name))

    return from_function(policy)


def prompt_text(task: Any) -> str:
    try:
        return str(task.data.prompt_text)
    except Exception:  # noqa: BLE001 - only for the message: the policy echoes the request
        return "<the prompt>"


def system_text(task: Any) -> str:
    system = getattr(task.data, "system_prompt", None)
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return " ".join(str(getattr(m, "content", m)) for m in system)
    return ""


