"""The scripted model's transport-neutral core: decide, record, render.

`ScriptedModelCore.handle` answers one HTTP request given as (method, path, headers, body)
with a `WireResponse`; the transports (`vfcheck._model.transports`) only move bytes. An agent
turn's task comes from its `X-Session-ID` header (verifiers' trace id), which the runner
binds to a task from `on_trace`. A request without that header is a judge call: env code
scoring an episode (`verifiers/v1/judge.py` sends no session header); its episode is the
`episode_scope` it was made in (`vfcheck._model.scope`), which reaches the core only when it
runs in the caller's task, i.e. under the respx mock.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import NoReturn

from vfcheck._model.judge_parse import scored_trace_id
from vfcheck._model.judges import default_judge_policy, render_verdict
from vfcheck._model.offline_http import HttpAnswer, OfflineHttp
from vfcheck._model.policies import default_reply, default_text, first_of, tool_policy
from vfcheck._model.scope import current_episode
from vfcheck._model.types import (
    SESSION_ID_HEADER,
    EpisodeRef,
    Fault,
    ModelRequest,
    Policy,
    Reply,
    RequestRecord,
    TaskRef,
    WireResponse,
)
from vfcheck._model.wire import error_response, model_list, render

logger = logging.getLogger(__name__)
AST_RACE = "AST constructor recursion depth mismatch"
"""CPython 3.11/3.12 keep the `ast` module's recursion count per interpreter, not per
thread (python/cpython#106905): an `ast.parse` in another thread (hypothesis' search,
collecting constants from the env's modules, beside `fuzz`'s plays) can make one here (the
traceback module's carets, a judge's parse) raise this spuriously. Asked again, it answers."""

DEFAULT_MODEL_ID = "vfcheck-scripted"
"""The model name the mock answers as, when a request names none."""


class ScriptedModelCore:
    """The policy, the request log and the session bindings of a `ScriptedModel`, with no
    transport: `handle` turns one HTTP request into a `WireResponse`.

    `policy` None is the built-in default: `default_judge_policy()` for judge calls (the
    positive verdict), then `tool_policy(then=default_reply(seed), seed)` for agent turns; a
    given policy that has no opinion (returns None) falls through to that default.
    """

    def __init__(
        self,
        policy: Policy | None = None,
        *,
        seed: int = 0,
        task_of: Callable[[str], TaskRef | None] | None = None,
        model_id: str = DEFAULT_MODEL_ID,
        http: Sequence[HttpAnswer] = (),
    ) -> None:
        self.seed = seed
        self.http = OfflineHttp(http)
        """Env code's own HTTP requests: the script's `[[http]]` answers, the refused log."""
        self.task_of = task_of
        self.model_id = model_id
        self.default_policy: Policy = first_of(
            default_judge_policy(), tool_policy(then=default_reply(seed), seed=seed)
        )
        self.policy: Policy = (
            self.default_policy if policy is None else first_of(policy, self.default_policy)
        )
        # Episodes may run on several loops/threads (serve_forever, a runner thread).
        self._lock = threading.Lock()
        self._records: list[RequestRecord] = []
        self._turns: dict[str | EpisodeRef | None, int] = {}
        self._bound: dict[str, TaskRef] = {}
        self._episodes: dict[str, EpisodeRef] = {}
        self._scored: dict[str, EpisodeRef] = {}
        """Bound traces scored outside any `episode_scope`, as the episode of their judge
        calls (`_scored_episode`)."""
        self._model_ids: dict[str, None] = {model_id: None}
        self.await_binding: Callable[[str], Awaitable[None]] | None = None
        """Awaited before answering an agent turn of a session nobody has bound yet: a served
        run binds its traces from the server's first delta, which may trail the first model
        request (`vfcheck._episodes.served`); a runner in this process binds at mint."""

    # -- state

    @property
    def requests(self) -> list[RequestRecord]:
        """Every chat-completions request answered so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._records)

    def requests_of(self, session_ids: Iterable[str]) -> list[RequestRecord]:
        """The requests of these sessions (trace ids): their own, and their episode's
        (a judge call names the episode, not the trace)."""
        ids = set(session_ids)
        return [r for r in self.requests if _of_sessions(r, ids)]

    @property
    def judge_calls(self) -> list[RequestRecord]:
        """The judge calls among `requests` (`request.kind == "judge"`), in arrival order."""
        return [record for record in self.requests if record.request.kind == "judge"]

    def bind(self, session_id: str, task: TaskRef, episode: EpisodeRef | None = None) -> None:
        """Tie a session (verifiers' trace id) to its task, and to the play it belongs to;
        the runner calls it from `on_trace`, which fires at mint, before the first model
        request."""
        with self._lock:
            self._bound[session_id] = task
            if episode is not None:
                self._episodes[session_id] = episode

    def task_for(self, session_id: str | None) -> TaskRef | None:
        if session_id is None:
            return None
        with self._lock:
            bound = self._bound.get(session_id)
        if bound is not None or self.task_of is None:
            return bound
        return self.task_of(session_id)

    def forget(self, session_ids: Iterable[str]) -> None:
        """Drop all the model keeps of these sessions (their bindings, plays, turn counts and
        requests): for a caller that plays episodes only to let them go (`soak.memory`), so
        that the model holds none of their objects alive."""
        ids = set(session_ids)
        with self._lock:
            for session_id in ids:
                self._bound.pop(session_id, None)
                self._turns.pop(session_id, None)
                episode = self._episodes.pop(session_id, None)
                if episode is not None:
                    self._turns.pop(episode, None)
            self._records = [r for r in self._records if not _of_sessions(r, ids)]

    def reset(self) -> None:
        """Forget the request log and the per-session turn counts (bindings stay)."""
        with self._lock:
            self._records.clear()
            self._turns.clear()

    # -- the transport-neutral core

    async def handle(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> WireResponse:
        """Answer one HTTP request: POST .../chat/completions, GET .../models."""
        route = path.split("?", 1)[0].rstrip("/")
        if route.endswith("/chat/completions"):
            if method.upper() != "POST":
                return error_response(405, f"use POST for {route}, not {method}")
            return await self._complete(route, headers, body)
        if route.endswith("/models"):
            if method.upper() != "GET":
                return error_response(405, f"use GET for {route}, not {method}")
            return self._model_list()
        return error_response(
            404,
            f"the vfcheck scripted model serves POST .../chat/completions and "
            f"GET .../models, not {method} {path}",
        )

    async def _complete(self, route: str, headers: Mapping[str, str], body: bytes) -> WireResponse:
        try:
            payload = json.loads(body)
        except ValueError as error:
            return error_response(400, f"the request body is not JSON: {error}")
        if not isinstance(payload, dict):
            return error_response(400, "the request body must be a JSON object")
        lowered = {name.lower(): value for name, value in headers.items()}
        session_id = lowered.get(SESSION_ID_HEADER.lower())
        if session_id is not None:
            with self._lock:
                unbound = session_id not in self._bound
            if unbound and self.await_binding is not None:
                await self.await_binding(session_id)
            with self._lock:
                episode = self._episodes.get(session_id)
            task = self.task_for(session_id)
        else:  # a judge call, made in the scope of the episode it scores (if any)
            episode = current_episode() or self._scored_episode()
            task = episode.task if episode is not None else None
        counter = session_id if session_id is not None else episode
        with self._lock:
            turn = self._turns.get(counter, 0)
            self._turns[counter] = turn + 1
        request = ModelRequest(
            body=payload,
            session_id=session_id,
            task=task,
            turn=turn,
            path=route,
            headers=lowered,
            kind="agent" if session_id is not None else "judge",
            episode=episode,
        )
        with self._lock:
            if request.model:
                self._model_ids.setdefault(request.model, None)
        reply = self._decide(request)
        if reply.fault_kind is Fault.HANG:
            self._record(RequestRecord(request, reply, None))
            await hang_forever()
        response = render(reply, request, self.seed, self.model_id)
        self._record(RequestRecord(request, reply, response.status))
        return response

    def _scored_episode(self) -> EpisodeRef | None:
        """The episode of a judge call made outside any `episode_scope` (an env server's
        rollout runs in a context of its own): the bound trace being scored, found on the
        call's stack (`judge_parse.scored_trace_id`), so the script's answer for its task
        and the policy of its play apply there too."""
        trace_id = scored_trace_id()
        if trace_id is None:
            return None
        with self._lock:
            episode = self._episodes.get(trace_id) or self._scored.get(trace_id)
            task = self._bound.get(trace_id)
            if episode is None and task is not None:  # one per trace: its judge turns count
                episode = self._scored[trace_id] = EpisodeRef(task, [trace_id])
        return episode

    def _decide(self, request: ModelRequest) -> Reply:
        """The policy's reply, a verdict rendered for this request; a raising policy is a
        500 whose message names the error."""
        try:
            try:
                reply = self._policy_reply(request)
            except SystemError as error:
                if AST_RACE not in str(error):
                    raise
                reply = self._policy_reply(request)  # the race is spurious: once more
        except Exception as error:
            logger.exception("scripted model policy failed on %s", request.path)
            return Reply.fault(
                Fault.STATUS,
                status=500,
                message=f"vfcheck scripted model: the policy raised "
                f"{type(error).__name__}: {error}",
            )
        return reply if reply is not None else Reply.text(default_text(request, self.seed))

    def _policy_reply(self, request: ModelRequest) -> Reply | None:
        reply = self.policy(request)
        return render_verdict(reply, request, self.seed) if reply is not None else None

    def _record(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)

    def _model_list(self) -> WireResponse:
        with self._lock:
            ids = list(self._model_ids)
        return model_list(ids)


async def hang_forever() -> NoReturn:
    """A `Fault.HANG`: wait on a future nobody resolves, so only cancellation ends it."""
    await asyncio.get_running_loop().create_future()
    raise AssertionError("unreachable: the future above is never resolved")


def _of_sessions(record: RequestRecord, ids: set[str]) -> bool:
    """Whether `record` is a request of one of the sessions `ids`."""
    episode = record.request.episode
    return record.request.session_id in ids or (
        episode is not None and bool(ids & set(episode.trace_ids)))
