"""Env code's own HTTP requests, under the mock: served from the script, or refused and logged.

vfcheck runs offline: the model and the judge are the only endpoints it mocks. A reward that
POSTs to a remote grader, a setup that fetches a file, a scorer that asks a service would
otherwise get respx's "not mocked" error (a mock library's words) or a DNS failure. Here,
every non-loopback httpx request that is not a model or judge call ends in `OfflineHttp`:
an `[[http]]` entry of the script answers it (`HttpAnswer`), or it is refused with an
`OfflineRequestError` (an `httpx.ConnectError`, what env code would get with no route) whose
message says what was asked, where, that vfcheck runs offline and how to serve it, and it
is logged (`OfflineHttp.refused`) for the `hygiene.network` finding, which env code cannot
swallow with an `except`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from vfcheck._model.scope import current_place
from vfcheck._model.types import TaskRef


@dataclass(frozen=True)
class HttpAnswer:
    """One `[[http]]` entry: the response to env code's requests for `url`.

    `url` matches a request's URL without its query, or with it when `url` has one; a
    trailing `*` makes it a prefix. `method` None matches any method."""

    url: str
    method: str | None = None
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"

    def matches(self, request: httpx.Request) -> bool:
        if self.method is not None and self.method.upper() != request.method.upper():
            return False
        asked = str(request.url)
        if "?" not in self.url:
            asked = asked.split("?", 1)[0]
        if self.url.endswith("*"):
            return asked.startswith(self.url[:-1])
        return asked.rstrip("/") == self.url.rstrip("/")

    def response(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(self.status, headers={"content-type": self.content_type},
                              content=self.body, request=request)


@dataclass(frozen=True)
class OfflineRequest:
    """A request env code made that vfcheck does not serve."""

    method: str
    url: str
    task: TaskRef | None
    """The task whose check or episode made it (None: outside any)."""
    stage: str
    """Where: `scoring of an episode`, `the gold check`, ..."""

    def describe(self) -> str:
        return f"{self.method} {self.url} ({self.stage})"


class OfflineRequestError(httpx.ConnectError):
    """What env code gets for a request vfcheck does not serve: no route to the host."""


def serve_hint(method: str, url: str) -> str:
    """The script entry that would serve `method url`."""
    return f'[[http]] url = "{url.split("?", 1)[0]}" method = "{method}" json = {{...}}'


OFFLINE_PREFIX = "vfcheck runs offline:"
"""How vfcheck's refusal of env code's own request starts (`offline_sockets` says it too)."""


@dataclass
class OfflineHttp:
    """Answers env code's HTTP requests from `answers` and logs the ones it refuses."""

    answers: Sequence[HttpAnswer] = ()
    refused: list[OfflineRequest] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def respond(self, request: httpx.Request) -> httpx.Response:
        """The scripted response to `request`, else raise `OfflineRequestError` (logged)."""
        for answer in self.answers:
            if answer.matches(request):
                return answer.response(request)
        task, stage = current_place()
        refused = OfflineRequest(request.method, str(request.url), task, stage)
        with self._lock:
            self.refused.append(refused)
        raise OfflineRequestError(
            f"{OFFLINE_PREFIX} env code requested {refused.describe()}, which is neither "
            f"the model nor the judge endpoint; serve it from a --script file: "
            f"{serve_hint(request.method, str(request.url))}", request=request)

    def taken(self) -> list[OfflineRequest]:
        """The refused requests so far (a copy)."""
        with self._lock:
            return list(self.refused)


def http_answer(url: str, *, method: str | None = None, status: int = 200,
                json_body: Any = None, text: str | None = None) -> HttpAnswer:
    """An `HttpAnswer` with a JSON body (`json_body`) or a text one."""
    if text is not None:
        return HttpAnswer(url, method, status, text.encode(), "text/plain; charset=utf-8")
    return HttpAnswer(url, method, status, json.dumps(json_body).encode())
