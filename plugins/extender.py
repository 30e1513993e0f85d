"""extender: a scheduler extender over HTTP, as Volcano calls one (plugins/extender/extender.go).

Every callback the conf gives a verb for POSTs a JSON request to ``<extender.urlPrefix>/<verb>``
(the prefix's trailing slashes dropped, ``Content-Type: application/json``) and reads a JSON answer
(plugins/extender_wire.py has the bodies).  Arguments, all optional:

- ``extender.urlPrefix``: ``http://`` or ``https://`` URL of the extender.
- ``extender.httpTimeout``: a Go duration (``100ms``, ``2s``), default ``1s``: the whole exchange
  (connect, request, answer, body) must end within it, as Go's ``http.Client.Timeout``; ``0`` or a
  negative duration waits without limit, as Go does.
- verbs, each registering one callback: ``extender.onSessionOpenVerb`` (``OnSessionOpenRequest``: all
  jobs, nodes, queues, namespaces, revocable nodes), ``extender.onSessionCloseVerb`` (``{}``),
  ``extender.predicateVerb`` (PredicateFn), ``extender.prioritizeVerb`` (BatchNodeOrderFn),
  ``extender.preemptableVerb`` / ``extender.reclaimableVerb`` (PreemptableFn / ReclaimableFn),
  ``extender.queueOverusedVerb`` (OverusedFn), ``extender.jobEnqueueableVerb`` (JobEnqueueableFn),
  ``extender.jobEnqueuedVerb`` (JobEnqueuedFn), ``extender.jobReadyVerb`` (JobReadyFn),
  ``extender.allocateFuncVerb`` / ``extender.deallocateFuncVerb`` (the event handler's
  AllocateFunc / DeallocateFunc).
- ``extender.ignorable`` (bool, default false): whether a failed call (no answer, an answer that is
  not 200, a body that does not decode) is passed over.
- ``extender.managedResources`` (a list of resource names): when given, predicate, prioritize,
  preemptable, reclaimable and the event handlers only ask about pods that request or limit one of
  them in a container or an init container (``IsInterested``); other pods pass untouched.

What a failed call means, callback by callback (Volcano's, ignorable / not ignorable):

- session open: a warning; not ignorable: the plugin registers nothing more this session, so
  scheduling goes on without the extender.
- predicate: the node passes / the node fails with code Error and the error's text.  An answer's
  ``status`` (a message) fails the node with its ``code`` (0 read as Error; a code no status set holds
  lets the node pass, as Volcano's predicate helpers do).
- prioritize: no scores from the extender / no node of that gradient is chosen (Volcano's
  ``PrioritizeNodes`` returns nothing when a batch scorer errs).  An answer with an ``errorMessage``
  or without ``nodeScore`` counts as an error even when ignorable, as in Volcano.
- preemptable, reclaimable: Permit with no victims / Reject.  Otherwise the answer's ``status``
  is the vote (0 abstains) and its ``victims`` the tasks it names by ``UID``.
- job enqueueable: Permit / Reject; otherwise the answer's ``status`` (<0 Reject, >0 Permit, 0 abstain).
- queue overused: not overused / overused; job ready: not ready / ready; job enqueued, session close,
  deallocate: a warning only.
- allocate: the placement stands / the placement is refused (the statement rolls it back).  An
  answer's ``errorMessage`` refuses it either way.

Where the I/O happens.  The session does no I/O, except through this plugin: Volcano's contract is
that the extender is asked synchronously from inside the callbacks (a predicate's verdict is the
HTTP answer), so the call cannot be moved out to a sink without changing what the extender decides.
It is confined to ``HttpClient`` below.  In ``vcsched run`` the session runs in a worker thread
(kube/runtime.py, ``asyncio.to_thread``), so the event loop keeps serving watches while the
extender thinks; in ``simulate`` the process is synchronous anyway.

Why ``http.client`` (standard library) and not aiohttp: the callbacks are plain synchronous
functions on a thread without an event loop.  aiohttp would need a loop per call (``asyncio.run``
and a new ClientSession for each predicate) or coroutines handed to the runtime's loop across
threads, which simulate does not have.  A blocking client is what Volcano uses too.  ``urllib``'s
timeout bounds each socket operation, not the exchange; ``http.client`` with the socket's timeout
set to what is left of the deadline before every read gives Go's whole-exchange timeout, and keeps
one connection alive across a session's many predicate calls (a reused connection the server has
closed is retried once on a new one, as Go's transport retries).

Differences from Volcano, each deliberate:

- Bad arguments refuse the configuration (ConfError naming the field): a verb or ``urlPrefix`` that
  is not a string, a ``urlPrefix`` that is not an http(s) URL (or missing while a verb is set), an
  ``httpTimeout`` Go cannot parse, a ``managedResources`` that is not a list of strings.  Volcano
  ignores the first ones (the verb stays off, the timeout stays 1s, every call fails at run time)
  and exits on the last.
- Victims an answer names that are not among the candidates it was asked about are dropped with a
  warning (Volcano would evict the decoded task object itself).
- A prioritize failure under backfill leaves the task unplaced with a fit error (Volcano's backfill
  dereferences the missing node); under allocate the task is skipped as in Volcano, and the node
  search says why in the task's fit errors, where Volcano records nothing.
- The answer of an unreachable extender in the log reads ``Post "<url>": <reason>``, as Go's; proxy
  variables (``HTTP_PROXY``...) are not consulted (Go's default transport would use them).
- The request bodies carry Volcano's field names; objects vcsched does not keep in Volcano's form
  are rebuilt (extender_wire.py says which).
"""

from __future__ import annotations

import http.client
import io
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Mapping
from urllib.parse import urlsplit

import structlog

from vcsched.api.duration import DurationError, parse_go_duration_ns
from vcsched.api.fit_errors import Status
from vcsched.api.node_info import NodeInfo
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import REVOCABLE_ZONE_KEY, StatusCode, Vote
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.framework.interface import BatchScorer, Plugin, Point, ScoringError
from vcsched.framework.session import EventError, EventHandler

from . import extender_wire as wire

if TYPE_CHECKING:
    from vcsched.api.job_info import JobInfo
    from vcsched.api.queue_info import QueueInfo
    from vcsched.framework.session import Session

log = structlog.get_logger("vcsched.extender")

URL_PREFIX = "extender.urlPrefix"
HTTP_TIMEOUT = "extender.httpTimeout"
ON_SESSION_OPEN_VERB = "extender.onSessionOpenVerb"
ON_SESSION_CLOSE_VERB = "extender.onSessionCloseVerb"
PREDICATE_VERB = "extender.predicateVerb"
PRIORITIZE_VERB = "extender.prioritizeVerb"
PREEMPTABLE_VERB = "extender.preemptableVerb"
RECLAIMABLE_VERB = "extender.reclaimableVerb"
QUEUE_OVERUSED_VERB = "extender.queueOverusedVerb"
JOB_ENQUEUEABLE_VERB = "extender.jobEnqueueableVerb"
JOB_ENQUEUED_VERB = "extender.jobEnqueuedVerb"
JOB_READY_VERB = "extender.jobReadyVerb"
ALLOCATE_FUNC_VERB = "extender.allocateFuncVerb"
DEALLOCATE_FUNC_VERB = "extender.deallocateFuncVerb"
IGNORABLE = "extender.ignorable"
MANAGED_RESOURCES = "extender.managedResources"

VERBS = (ON_SESSION_OPEN_VERB, ON_SESSION_CLOSE_VERB, PREDICATE_VERB, PRIORITIZE_VERB, PREEMPTABLE_VERB,
         RECLAIMABLE_VERB, QUEUE_OVERUSED_VERB, JOB_ENQUEUEABLE_VERB, JOB_ENQUEUED_VERB, JOB_READY_VERB,
         ALLOCATE_FUNC_VERB, DEALLOCATE_FUNC_VERB)

DEFAULT_TIMEOUT = 1.0  # seconds
MAX_BODY_SIZE = 10 << 20  # the largest answer read (Volcano's maxBodySize)
_READ_CHUNK = 64 << 10


_STATUS_CODES = frozenset(int(c) for c in StatusCode)


class ExtenderError(Exception):
    """A call that failed: no answer, an answer that is not 200, or a body that does not decode."""


# -- arguments ---------------------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class ExtenderConfig:
    """``extenderConfig``: verbs by argument name ("" when off)."""

    url_prefix: str = ""
    timeout: float | None = DEFAULT_TIMEOUT  # seconds; None: no limit
    verbs: Mapping[str, str] = field(default_factory=dict)
    ignorable: bool = False
    managed_resources: frozenset[str] = frozenset()

    def verb(self, key: str) -> str:
        return self.verbs.get(key, "")


def parse_config(arguments: Arguments) -> ExtenderConfig:
    """``parseExtenderConfig``, refusing what it would ignore (ArgumentError naming the field)."""
    where = arguments.where
    verbs = {key: arguments.get_str(key, "") for key in VERBS}
    verbs = {k: v for k, v in verbs.items() if v}
    prefix = arguments.get_str(URL_PREFIX, "")
    if prefix:
        parts = urlsplit(prefix)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ArgumentError(f"{where}.{URL_PREFIX}: expected an http:// or https:// URL, got {prefix!r}")
        try:
            parts.port  # noqa: B018 - refuses a port that is not a number
        except ValueError as e:
            raise ArgumentError(f"{where}.{URL_PREFIX}: {e}, got {prefix!r}") from None
    elif verbs:
        raise ArgumentError(f"{where}.{URL_PREFIX}: required when a verb is set ({', '.join(sorted(verbs))})")
    timeout: float | None = DEFAULT_TIMEOUT
    raw = arguments.get_str(HTTP_TIMEOUT, "")
    if raw:
        try:
            ns = parse_go_duration_ns(raw)
        except DurationError as e:
            raise ArgumentError(f"{where}.{HTTP_TIMEOUT}: expected a duration such as 100ms or 2s, got {raw!r} ({e})") from None
        timeout = ns / 1e9 if ns > 0 else None
    managed: frozenset[str] = frozenset()
    if MANAGED_RESOURCES in arguments and arguments.values[MANAGED_RESOURCES] is not None:
        value = arguments.values[MANAGED_RESOURCES]
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise ArgumentError(f"{where}.{MANAGED_RESOURCES}: expected a list of resource names, "
                                f"got {type(value).__name__} {value!r}")
        managed = frozenset(value)
    return ExtenderConfig(prefix, timeout, verbs, arguments.get_bool(IGNORABLE, False), managed)


# -- HTTP ----------------------------------------------------------------------------------------


class _DeadlineReader(io.RawIOBase):
    """The response's socket, its timeout set to what is left of the call's deadline before each read."""

    def __init__(self, sock, client: "HttpClient") -> None:
        self.sock = sock
        self.client = client

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        self.sock.settimeout(self.client.remaining())
        return self.sock.recv_into(b)


class _DeadlineSocket:
    """What ``HTTPResponse`` takes a socket for: only ``makefile``."""

    def __init__(self, sock, client: "HttpClient") -> None:
        self.sock = sock
        self.client = client

    def makefile(self, mode: str, *args, **kwargs):
        return io.BufferedReader(_DeadlineReader(self.sock, self.client))


class _DeadlineResponse(http.client.HTTPResponse):
    def __init__(self, sock, *args, client: "HttpClient", **kwargs) -> None:
        super().__init__(_DeadlineSocket(sock, client), *args, **kwargs)


class HttpClient:
    """POSTs JSON to the extender on one kept-alive connection, every call within ``timeout``."""

    def __init__(self, url_prefix: str, timeout: float | None) -> None:
        self.prefix = url_prefix.rstrip("/")
        parts = urlsplit(url_prefix)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port
        self.timeout = timeout
        self.deadline: float | None = None
        self.conn: http.client.HTTPConnection | None = None

    def remaining(self) -> float | None:
        """Seconds left of the current call (None: no limit); TimeoutError once it is over."""
        if self.deadline is None:
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline exceeded")
        return left

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """The kept-alive connection and True, or a new one (not connected yet) and False."""
        if self.conn is not None and self.conn.sock is not None:
            self.conn.sock.settimeout(self.remaining())
            return self.conn, True
        self.close()
        if self.https:
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                self.host, self.port, timeout=self.remaining(), context=ssl.create_default_context())
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.remaining())
        conn.response_class = partial(_DeadlineResponse, client=self)
        self.conn = conn
        return conn, False

    def post(self, verb: str, body: bytes, want_answer: bool) -> Any:
        """POST ``body`` to ``<prefix>/<verb>``; the first JSON value of a 200 answer when
        ``want_answer``, else None.  ExtenderError for anything else."""
        url = f"{self.prefix}/{verb}"
        path = urlsplit(url)
        target = (path.path or "/") + (f"?{path.query}" if path.query else "")
        self.deadline = None if self.timeout is None else time.monotonic() + self.timeout
        try:
            status, answer, over = self._exchange(target, body, want_answer)
        except TimeoutError:
            self.close()
            raise ExtenderError(f'Post "{url}": context deadline exceeded (Client.Timeout exceeded)') from None
        except (OSError, http.client.HTTPException) as e:
            self.close()
            raise ExtenderError(f'Post "{url}": {_reason(e)}') from None
        finally:
            self.deadline = None
        if status != 200:
            raise ExtenderError(f"failed {verb} with extender at URL {url}, code {status}")
        if not want_answer:
            return None
        try:
            return wire.first_value(answer)
        except wire.DecodeError as e:
            # past the limit, Go's decoder stops with the reader's error unless the value ended before it
            raise ExtenderError("http: request body too large" if over else str(e)) from None

    def _exchange(self, target: str, body: bytes, want_answer: bool) -> tuple[int, bytes, bool]:
        """The answer's status and body (its first ``MAX_BODY_SIZE`` bytes), and whether it was longer."""
        headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
        for attempt in (0, 1):
            conn, reused = self._connection()
            try:
                conn.request("POST", target, body, headers)
                resp = conn.getresponse()
            except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected):
                self.close()
                if reused and attempt == 0:
                    continue  # the server closed the idle connection: once more on a new one
                raise
            break
        if resp.status != 200 or not want_answer:
            # Volcano does not read these bodies; the connection is not reused
            self.close()
            return resp.status, b"", False
        chunks, size = [], 0
        while size <= MAX_BODY_SIZE:
            chunk = resp.read(_READ_CHUNK)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
        if size > MAX_BODY_SIZE:
            self.close()
            return 200, data[:MAX_BODY_SIZE], True
        return 200, data, False


def _reason(e: BaseException) -> str:
    if isinstance(e, ConnectionRefusedError):
        return "connect: connection refused"
    text = str(e) or type(e).__name__
    return text


# -- interest ----------------------------------------------------------------------------------


def is_interested(managed: frozenset[str], pod: Mapping[str, Any]) -> bool:
    """``IsInterested``: no managed resources, or a container or init container that requests or
    limits one of them."""
    if not managed:
        return True
    spec = pod.get("spec") or {}
    return has_managed_resources(managed, spec.get("containers")) or has_managed_resources(
        managed, spec.get("initContainers"))


def has_managed_resources(managed: frozenset[str], containers: Sequence[Mapping[str, Any]] | None) -> bool:
    """``hasManagedResources``: a container requests or limits a managed resource."""
    for c in containers or ():
        res = c.get("resources") or {}
        if has_resources_in_list(managed, res.get("requests")) or has_resources_in_list(managed, res.get("limits")):
            return True
    return False


def has_resources_in_list(managed: frozenset[str], resources: Mapping[str, Any] | None) -> bool:
    """``hasResourcesInList``: a resource of the list is managed (an empty managed set manages none)."""
    return any(name in managed for name in (resources or ()))


# -- the plugin ----------------------------------------------------------------------------------


class ExtenderScorer(BatchScorer):
    """The prioritize verb as a batch node-order function."""

    def __init__(self, plugin: "ExtenderPlugin", verb: str) -> None:
        self.plugin = plugin
        self.verb = verb

    def applies(self, task: TaskInfo) -> bool:
        return self.plugin.interested(task)

    def score(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        ep = self.plugin
        body = {"task": wire.task(task), "nodes": [wire.node(n) for n in nodes]}
        try:
            got = wire.fields(ep.call(self.verb, body), "PrioritizeResponse", ("nodeScore", "errorMessage"))
            message = wire.as_str(got.get("errorMessage", ""), "PrioritizeResponse", "errorMessage")
            scores = (wire.as_score_map(got["nodeScore"], "PrioritizeResponse", "nodeScore")
                      if "nodeScore" in got else None)
        except (ExtenderError, wire.DecodeError) as e:
            log.warning(f"Prioritize failed with error {e}", plugin=ep.name, task=task.key)
            if ep.config.ignorable:
                return {}
            raise ScoringError(f"extender prioritize: {e}") from None
        if not message and scores is not None:
            return scores
        raise ScoringError(f"extender prioritize: {message}" if message else "extender prioritize: no nodeScore")


class ExtenderPlugin(Plugin):
    name = "extender"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.config = parse_config(arguments)
        self.client: HttpClient | None = None

    # -- calls ---------------------------------------------------------------------------

    def call(self, verb: str, body: Any, want_answer: bool = True) -> Any:
        """``send``: POST the body, the answer's first JSON value (None without ``want_answer``)."""
        if self.client is None:
            self.client = HttpClient(self.config.url_prefix, self.config.timeout)
        return self.client.post(verb, wire.dumps(body), want_answer)

    def interested(self, task: TaskInfo) -> bool:
        return is_interested(self.config.managed_resources, task.pod)

    # -- open and close ------------------------------------------------------------------

    def on_session_open(self, ssn: "Session") -> None:
        cfg = self.config
        verb = cfg.verb(ON_SESSION_OPEN_VERB)
        if verb:
            try:
                self.call(verb, session_open_request(ssn), want_answer=False)
            except ExtenderError as e:
                log.warning(f"OnSessionOpen failed with error {e}", plugin=self.name)
                if not cfg.ignorable:
                    return
        registered = False
        if cfg.verb(PREDICATE_VERB):
            ssn.add(Point.PREDICATE, self.name, partial(self.predicate, cfg.verb(PREDICATE_VERB)))
            registered = True
        if cfg.verb(PRIORITIZE_VERB):
            ssn.add(Point.BATCH_NODE_ORDER, self.name, ExtenderScorer(self, cfg.verb(PRIORITIZE_VERB)))
            registered = True
        if registered:
            # the extender's verdicts and scores are its own: a task shares them with no other task
            ssn.add(Point.TASK_SHAPE, self.name, lambda task: None if self.interested(task) else ())
        if cfg.verb(PREEMPTABLE_VERB):
            ssn.add(Point.PREEMPTABLE, self.name,
                    partial(self.victims, cfg.verb(PREEMPTABLE_VERB), "Preemptable"))
        if cfg.verb(RECLAIMABLE_VERB):
            ssn.add(Point.RECLAIMABLE, self.name,
                    partial(self.victims, cfg.verb(RECLAIMABLE_VERB), "Reclaimable"))
        if cfg.verb(JOB_ENQUEUEABLE_VERB):
            ssn.add(Point.JOB_ENQUEUEABLE, self.name, partial(self.job_enqueueable, cfg.verb(JOB_ENQUEUEABLE_VERB)))
        if cfg.verb(JOB_ENQUEUED_VERB):
            ssn.add(Point.JOB_ENQUEUED, self.name, partial(self.job_enqueued, cfg.verb(JOB_ENQUEUED_VERB)))
        if cfg.verb(QUEUE_OVERUSED_VERB):
            ssn.add(Point.OVERUSED, self.name, partial(self.queue_overused, cfg.verb(QUEUE_OVERUSED_VERB)))
        if cfg.verb(JOB_READY_VERB):
            ssn.add(Point.JOB_READY, self.name, partial(self.job_ready, cfg.verb(JOB_READY_VERB)))
        allocate, deallocate = cfg.verb(ALLOCATE_FUNC_VERB), cfg.verb(DEALLOCATE_FUNC_VERB)
        if allocate or deallocate:
            ssn.add_event_handler(EventHandler(
                allocate=partial(self.on_allocate, allocate) if allocate else None,
                deallocate=partial(self.on_deallocate, deallocate) if deallocate else None,
            ))

    def on_session_close(self, ssn: "Session") -> None:
        verb = self.config.verb(ON_SESSION_CLOSE_VERB)
        if verb:
            try:
                self.call(verb, {}, want_answer=False)
            except ExtenderError as e:
                log.warning(f"OnSessionClose failed with error {e}", plugin=self.name)
        if self.client is not None:
            self.client.close()

    # -- callbacks -------------------------------------------------------------------------

    def predicate(self, verb: str, task: TaskInfo, node: NodeInfo) -> list[Status] | None:
        if not self.interested(task):
            return None
        try:
            got = wire.fields(self.call(verb, {"task": wire.task(task), "node": wire.node(node)}),
                              "PredicateResponse", ("status", "code"))
            message = wire.as_str(got.get("status", ""), "PredicateResponse", "status")
            code = wire.as_int(got.get("code", 0), "PredicateResponse", "code")
        except (ExtenderError, wire.DecodeError) as e:
            log.warning(f"Predicate failed with error {e}", plugin=self.name, task=task.key, node=node.name)
            if self.config.ignorable:
                return None
            return [Status(StatusCode.Error, str(e))]
        if not message:
            return None
        if code == StatusCode.Success:
            code = StatusCode.Error  # a message without a code: Volcano reads it as Error
        if code not in _STATUS_CODES:
            return None  # no status set holds it: the node passes, as in Volcano
        return [Status(StatusCode(code), message)]

    def victims(self, verb: str, what: str, evictor: TaskInfo,
                evictees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        if not self.interested(evictor):
            return [], Vote.Abstain
        struct = f"{what}Response"
        try:
            got = wire.fields(self.call(verb, {"evictor": wire.task(evictor),
                                               "evictees": [wire.task(t) for t in evictees]}),
                              struct, ("status", "victims"))
            status = wire.as_int(got.get("status", 0), struct, "status")
            uids = wire.as_task_uids(got["victims"], struct, "victims") if "victims" in got else []
        except (ExtenderError, wire.DecodeError) as e:
            log.warning(f"{what} failed with error {e}", plugin=self.name, task=evictor.key)
            return ([], Vote.Permit) if self.config.ignorable else ([], Vote.Reject)
        by_uid = {t.uid: t for t in evictees}
        chosen = []
        for uid in uids:
            t = by_uid.get(uid) if uid is not None else None
            if t is None:
                log.warning(f"{what}: the extender named a victim that is not a candidate", plugin=self.name,
                            task=evictor.key, victim=uid)
                continue
            chosen.append(t)
        return chosen, (Vote.Abstain if status == 0 else Vote.Reject if status < 0 else Vote.Permit)

    def job_enqueueable(self, verb: str, job: "JobInfo") -> Vote:
        try:
            got = wire.fields(self.call(verb, {"job": wire.job(job)}), "JobEnqueueableResponse", ("status",))
            status = wire.as_int(got.get("status", 0), "JobEnqueueableResponse", "status")
        except (ExtenderError, wire.DecodeError) as e:
            log.warning(f"JobEnqueueable failed with error {e}", plugin=self.name, job=job.uid)
            return Vote.Permit if self.config.ignorable else Vote.Reject
        return Vote.Reject if status < 0 else Vote.Permit if status > 0 else Vote.Abstain

    def job_enqueued(self, verb: str, job: "JobInfo") -> None:
        try:
            self.call(verb, {"job": wire.job(job)})
        except ExtenderError as e:
            log.warning(f"JobEnqueued failed with error {e}", plugin=self.name, job=job.uid)

    def queue_overused(self, verb: str, queue: "QueueInfo") -> bool:
        try:
            got = wire.fields(self.call(verb, {"queue": wire.queue(queue)}), "QueueOverusedResponse", ("overused",))
            return wire.as_bool(got.get("overused", False), "QueueOverusedResponse", "overused")
        except (ExtenderError, wire.DecodeError) as e:
            log.warning(f"QueueOverused failed with error {e}", plugin=self.name, queue=queue.name)
            return not self.config.ignorable

    def job_ready(self, verb: str, job: "JobInfo") -> bool:
        try:
            got = wire.fields(self.call(verb, {"job": wire.job(job)}), "JobReadyResponse", ("status",))
            return wire.as_bool(got.get("status", False), "JobReadyResponse", "status")
        except (ExtenderError, wire.DecodeError) as e:
            log.warning(f"JobReady failed with error {e}", plugin=self.name, job=job.uid)
            return not self.config.ignorable

    def _event(self, verb: str, what: str, task: TaskInfo) -> str | None:
        """An event handler's call; the error that refuses the event, or None."""
        if not self.interested(task):
            return None
        try:
            got = wire.fields(self.call(verb, {"task": wire.task(task)}), "EventHandlerResponse", ("errorMessage",))
            message = wire.as_str(got.get("errorMessage", ""), "EventHandlerResponse", "errorMessage")
        except (ExtenderError, wire.DecodeError) as e:
            log.warning(f"{what} failed with error {e}", plugin=self.name, task=task.key)
            return None if self.config.ignorable else f"extender {what}: {e}"
        return f"extender {what}: {message}" if message else None

    def on_allocate(self, verb: str, task: TaskInfo) -> None:
        refusal = self._event(verb, "AllocateFunc", task)
        if refusal is not None:
            raise EventError(refusal)

    def on_deallocate(self, verb: str, task: TaskInfo) -> None:
        # Volcano sets event.Err, which no caller of DeallocateFunc reads
        self._event(verb, "DeallocateFunc", task)


def session_open_request(ssn: "Session") -> dict[str, Any]:
    """``OnSessionOpenRequest``: the session's jobs, nodes, queues and namespaces, and the nodes with a
    ``volcano.sh/revocable-zone`` label."""
    nodes = {name: wire.node(ssn.nodes[name]) for name in sorted(ssn.nodes)}
    return {
        "Jobs": {uid: wire.job(ssn.jobs[uid]) for uid in sorted(ssn.jobs)},
        "Nodes": nodes,
        "Queues": {name: wire.queue(ssn.queues[name]) for name in sorted(ssn.queues)},
        "NamespaceInfo": {name: wire.namespace(ssn.namespace_info[name]) for name in sorted(ssn.namespace_info)},
        "RevocableNodes": {name: nodes[name] for name in sorted(ssn.nodes)
                           if REVOCABLE_ZONE_KEY in ssn.nodes[name].spec.labels},
        "NodeList": None,
    }
