"""OpenAI-compatible chat-completions client: adaptive concurrency, retries, request cache, usage.

Any server that speaks ``POST {base_url}/chat/completions`` works (vLLM, SGLang, llama.cpp,
hosted APIs). Requests are cached by the SHA-256 of their content (model, messages, sampling
settings and a caller ``nonce`` that tells apart independent samples of the same prompt), in an
append-only JSONL file, so a rerun replays every reply, its token counts and its measured latency
exactly and sends nothing; each reply is cached the moment it arrives, so a request that fails
later in the same batch loses none of the others. The API key is read from the environment
variable named by ``api_key_env`` at call time and is never stored, logged or cached.

Every answer is a reply or a classified failure. Retried with full-jitter backoff and counted by
class in :attr:`ChatClient.retries`: ``rate_limited`` (429), ``server_error`` (5xx, 408, 409),
``malformed`` (a 200 whose body is not a completion: truncated JSON, an empty ``choices``, an
error object), ``timeout`` and ``connection``. Returned as replies: content-policy refusals
(``refused``) and context-length errors (``failure="context_length"``). Anything else (a bad key,
an unknown model) raises :class:`LLMError`. A request times out only after ``timeout_s`` in which
the server answered none of the client's requests (any episode's), and 429s and timeouts halve
the number in flight (growing back by one per window of successes), so a server that generates
one request at a time is neither flooded nor sent the same prompt again while it still waits in
its queue. Each retry is logged as it happens (class, attempt, agent).

Hosted endpoints are adapted to from their own errors, with no flag (:meth:`ChatClient.adapt`):
a model that answers ``max_tokens`` with an HTTP 400 naming ``max_completion_tokens`` (OpenAI's
GPT-5 family and o-series) gets the token limit under that key, one that rejects a
:data:`THINKING_FIELDS` field (a hosted API, not a vLLM-style server) is no longer sent it (and,
where thinking was to be off and none of those fields is taken, is sent the smallest
``reasoning_effort`` of :data:`EFFORT_LADDER` it accepts, GPTNT app. F.3), and one that refuses
any temperature but its default as "unsupported" (the GPT-5 family) is sent none, so it samples
at its default; the request is resent at once and the client remembers it
(:attr:`ChatClient.adapted`, in ``results.json``). The cache key hashes the
configured request, not the adapted one, so a rerun replays the same replies whichever keys the
server took.
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import hashlib
import json
import logging
import os
import random
import threading
import time
import weakref
from collections import Counter, defaultdict
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx

from jaxcollab.core.config import bounded, check_fields, count
from jaxcollab.core.errors import ConfigValueError, EndpointError
from jaxcollab.llm import jsonl, signals, wire

log = logging.getLogger(__name__)

#: Status codes retried with backoff (rate limit, server errors); timeouts and dropped
#: connections are retried too.
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
#: Substrings of a 4xx error body that mark a prompt longer than the model's context (OpenAI's
#: ``context_length_exceeded``, vLLM's "maximum context length", llama.cpp's "exceeds the
#: available context size").
CONTEXT_MARKERS = ("context_length", "context length", "context size", "context window",
                   "maximum context", "exceed_context")
#: Substrings of a 4xx error body that mark a content-policy refusal (GPTNT appendix "Guardrail
#: violations": the provider answers a 4XX instead of a reply).
REFUSAL_MARKERS = ("content_filter", "content_policy", "content policy", "safety", "refus")
#: The default ``llm.stall_s`` in multiples of ``llm.timeout_s`` (:meth:`LLMConfig.stall`).
STALL_TIMEOUTS = 3
#: The request fields that carry ``llm.thinking_budget`` (:meth:`ChatClient.body`), each read by
#: some server and rejected by others (HTTP 400 naming the field: each is dropped once refused):
#: vLLM's top-level cap ``thinking_token_budget`` (its sampling parameters) and the chat
#: template's switches ``chat_template_kwargs`` (``enable_thinking``, and ``thinking_budget`` for
#: a template that reads one); the top-level ``thinking_budget`` of Qwen's hosted API.
THINKING_FIELDS = ("thinking_token_budget", "chat_template_kwargs", "thinking_budget")
#: ``reasoning_effort`` values from the smallest up, tried in turn where thinking is to be off
#: and the endpoint takes none of :data:`THINKING_FIELDS` (GPTNT app. F.3: the minimum effort
#: where thinking cannot be turned off); each refused one is learned from the endpoint's 400
#: (OpenAI: "Unsupported value: 'reasoning_effort' does not support 'none'"), and past the
#: last none is sent.
EFFORT_LADDER = ("none", "minimal", "low")


class LLMError(EndpointError):
    """The endpoint cannot serve this run (unreachable, unknown model, bad key, bad request)."""


class LLMTools(StrEnum):
    text = "text"      # <thoughts>/<action> replies
    native = "native"  # bomb calls as OpenAI tool definitions


#: The most requests one client keeps in flight (``llm.concurrency``): 16 times the batch a
#: vLLM server schedules by default (``max_num_seqs`` 256, vLLM's engine arguments); every
#: request in flight holds a socket, and its episode's state, in this process.
MAX_CONCURRENCY = 4096


def check_llm_values(values: Mapping[str, Any], prefix: str = "llm") -> None:
    """Refuse LLM endpoint settings no server can serve, naming ``<prefix>.<key>``: the one
    check of these values (the ``llm`` and ``judge`` blocks, each ``llm.roles.<role>`` block
    and :class:`jaxcollab.llm.client.LLMConfig`). Keys absent or null are not checked (null:
    the family's default or the server's).

    Raises:
        ConfigValueError: ``base_url`` not an ``http(s)://host…`` URL; ``temperature`` outside
            0..2 (the OpenAI chat API's range); ``max_tokens`` < 1; ``context_tokens`` < 1 or
            leaving no room for a prompt beside ``max_tokens`` (plus a positive
            ``thinking_budget``: :meth:`LLMConfig.reply_tokens`); ``concurrency`` outside
            1..:data:`MAX_CONCURRENCY`; ``max_retries`` < 0.
    """
    url = values.get("base_url")
    if url is not None:
        parts = urlsplit(str(url))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigValueError(f"{prefix}.base_url", url, "an http:// or https:// URL of "
                                   "the OpenAI-compatible root, e.g. http://127.0.0.1:8000/v1")
    ranges = {"temperature": (0, 2, "a number in 0..2 (the OpenAI chat API's range)"),
              "max_tokens": (1, None, "a positive number of tokens"),
              "context_tokens": (1, None, "null (the server's reported context) or a positive "
                                          "number of tokens"),
              "concurrency": (1, MAX_CONCURRENCY, f"an integer in 1..{MAX_CONCURRENCY} "
                                                  "(requests in flight at once)"),
              "max_retries": (0, None, "an integer >= 0")}
    for key, (low, high, expected) in ranges.items():
        value = values.get(key)
        if value is not None and not (low <= value and (high is None or value <= high)):
            raise ConfigValueError(f"{prefix}.{key}", value, expected)
    context, limit = values.get("context_tokens"), values.get("max_tokens")
    think = values.get("thinking_budget")
    what = f"{prefix}.max_tokens={limit}"
    if limit is not None and think is not None and think > 0:  # sent as their sum
        what, limit = f"{what} + {prefix}.thinking_budget={think}", limit + think
    if context is not None and limit is not None and context <= limit:
        raise ConfigValueError(f"{prefix}.context_tokens", context, f"more than {what}: room "
                               "for a prompt beside the reply")


@dataclasses.dataclass
class LLMConfig:
    """An OpenAI-compatible endpoint and its sampling: the ``llm`` block of ``eval/rollout.py``
    (``agent=llm``) and of ``eval/collabgap.py``, and every :class:`ChatClient`'s settings.
    Checked on construction (:func:`~jaxcollab.core.config.check_fields`).

    Attributes:
        base_url: the OpenAI-compatible root, e.g. ``http://localhost:8000/v1``.
        model: the served model name.
        api_key_env: the NAME of the environment variable holding the key ("" or unset: no
            key; the key itself is never written).
        temperature: sampling temperature. None: the family's default in a run
            (:class:`~jaxcollab.core.family.LLMGame`: bomb and Keep Talking 0.6 as GPTNT
            app. H, the maze 1.0 as the collaboration-gap paper §6); a client without a
            family sends none (the server's default).
        max_tokens: completion token cap per reply, sent as ``max_completion_tokens`` where
            the endpoint asks for it. None: the family's default (Keep Talking 1000, GPTNT §4;
            maze 2048, the collaboration-gap paper §6; bomb 2048, ours); a client without a
            family sends none (the server's cap).
        reasoning_effort: passed through as ``reasoning_effort`` when set (hosted reasoning
            models), e.g. minimal, low, medium, high.
        thinking_budget: thinking tokens per reply, SANZARU Table 11's levels: 0 Off, a
            positive cap (On: 4,096), a negative value Max (uncapped); sent under each
            server's names (:meth:`ChatClient.body`, :data:`THINKING_FIELDS`), with the reply's
            token limit raised by the cap (On) or not sent (Max). None: the family's default
            (Keep Talking 0 = off, GPTNT §4; else nothing is sent).
        timeout_s: seconds a request may go unanswered while the server answers none of the
            client's other requests either (waiting in a serial server's queue is not timed out).
        context_tokens: the model's context length in tokens (None: the server's reported
            one, if any); prompts are kept within it less ``max_tokens``.
        concurrency: the most requests (episodes) in flight at once (the client adapts below
            it, server-paced).
        max_retries: retries after the first attempt on 429/5xx/timeouts.
        backoff_s: base of the exponential backoff in seconds (full jitter).
        stall_s: seconds without any reply, callback or finished episode after which a run
            ends with one error naming what it waited on (None: :data:`STALL_TIMEOUTS` x
            ``timeout_s``; :meth:`stall`).
        tools: ``text`` (<thoughts>/<action> replies) or ``native`` (bomb calls as OpenAI tool
            definitions); read by the LLM run, not the client.
        cache: the request cache file; None: ``out_dir/cache.jsonl`` (the LLM run's).
        roles: a mixed team: role -> its own settings, each falling back to ``llm.*`` (e.g.
            ``+llm.roles.expert.model=B``; :func:`jaxcollab.llm.roles.role_configs` checks the
            keys).

    Raises:
        ConfigValueError: a value out of range or no server serves, named as ``llm.<key>``
            (:func:`check_llm_values`).
    """

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "model"
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float | None = None
    max_tokens: int | None = bounded(None, ge=1)
    reasoning_effort: str | None = None
    thinking_budget: int | None = None
    timeout_s: float = bounded(120.0, gt=0)
    context_tokens: int | None = None
    concurrency: int = count(16)
    max_retries: int = count(6, 0)
    backoff_s: float = bounded(1.0, ge=0)
    stall_s: float | None = bounded(None, gt=0)
    tools: LLMTools = LLMTools.text
    cache: str | None = None
    roles: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: the block's key in a run config (errors name ``llm.<key>``)
    key_prefix: ClassVar[str] = "llm."

    def reply_tokens(self) -> int | None:
        """The completion token limit sent: ``max_tokens`` (the answer's budget) plus a
        positive ``thinking_budget`` (servers count thinking tokens against it, so a cap of
        4,096 under a 2,048 limit would be cut at 2,048); None (uncapped, the server's
        limit) at Max (a negative ``thinking_budget``) or without ``max_tokens``."""
        think = self.thinking_budget
        if self.max_tokens is None or (think is not None and int(think) < 0):
            return None
        return int(self.max_tokens) + max(int(think or 0), 0)

    def stall(self) -> float:
        """The stall limit in seconds (``stall_s``, default :data:`STALL_TIMEOUTS` x
        ``timeout_s``: a request is retried after ``timeout_s`` without progress, so a few of
        those in a row mean nothing moves)."""
        return float(self.stall_s) if self.stall_s is not None else \
            STALL_TIMEOUTS * float(self.timeout_s)

    def __post_init__(self) -> None:
        check_fields(self, self.key_prefix)  # the bounds, then :meth:`check`

    def check(self) -> None:
        check_llm_values(vars(self), self.key_prefix.rstrip("."))


@dataclasses.dataclass(frozen=True)
class Request:
    """One chat request. ``agent`` names who pays (usage accounting); ``nonce`` separates
    independent samples of an identical prompt (episode, step, sample) in the cache."""

    agent: str
    messages: tuple[dict, ...]
    nonce: str = ""
    tools: tuple[dict, ...] = ()
    temperature: float | None = None


@dataclasses.dataclass(frozen=True)
class Reply:
    """A reply: ``text``, native ``tool_calls`` (OpenAI format), ``finish_reason``, token counts,
    ``latency_s`` (the server's service time: its own reported timings where it sends them, as
    llama.cpp does, else seconds from sending to the answer; replayed from the cache on reruns),
    ``queue_s`` (seconds the request waited in this client before it was sent), ``refused``
    (HTTP 4xx content-policy refusal; ``text`` then holds the error message) and ``failure``
    (``"context_length"``: the server refused the prompt as longer than its context; never
    cached) and ``reasoning`` (the reasoning text a server returns apart from the content, in
    the message's ``reasoning_content`` or ``reasoning`` field; "" if none), and ``timed_by``
    (which clock ``latency_s`` is: ``"server"``, the server's own timings of that request's
    generation, queueing behind other requests excluded; ``"client"``, seconds from sending
    it to its answer, which include any queue inside a server that reports no timings)."""

    text: str
    tool_calls: tuple[dict, ...] = ()
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    refused: bool = False
    queue_s: float = 0.0
    failure: str = ""
    reasoning: str = ""
    timed_by: str = "client"

    def to_json(self) -> dict:
        """The reply as a cache row (a shallow copy: its values are JSON's own types)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)} | {
            "tool_calls": list(self.tool_calls)}

    @staticmethod
    def from_json(d: dict) -> Reply:
        """A reply from its cache row.

        Raises:
            ValueError: the row is not a reply (a field of the wrong type).
        """
        if not isinstance(d, dict) or not isinstance(d.get("text"), str):
            raise ValueError(f"not a cached reply: {str(d)[:80]}")
        fields = {f.name for f in dataclasses.fields(Reply)}
        reply = Reply(**{k: v for k, v in d.items() if k in fields})
        calls = reply.tool_calls
        if not isinstance(calls, list | tuple) or not all(isinstance(c, dict) for c in calls):
            raise ValueError(f"not a cached reply: tool_calls {str(calls)[:80]}")
        for name in ("prompt_tokens", "completion_tokens", "latency_s", "queue_s"):
            float(getattr(reply, name))  # raises on a non-number
        return dataclasses.replace(reply, tool_calls=tuple(calls))


@dataclasses.dataclass
class Usage:
    """Per-agent totals: calls sent, cache hits, tokens, summed service latency and queueing
    (s), refusals."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    refusals: int = 0
    queue_s: float = 0.0


class ReplyCache:
    """Append-only JSONL map from request hash to :class:`Reply` (``path=None``: in memory).

    A torn row (a write killed halfway) or a row that is not a reply is skipped, so its request
    is simply sent again; each reply is appended whole (:func:`~jaxcollab.llm.jsonl.append`).
    A deferred put (the LLM pool's event loop: a synced append costs ~4 ms, which would stall
    every episode's requests) is appended by a writer thread at once, in one synced write with
    whatever else arrived meanwhile; :meth:`flush` (every pool's end, and the process's exit)
    waits for it.
    """

    #: every cache with a file (:meth:`flush_all`)
    _all: weakref.WeakSet = weakref.WeakSet()

    def __init__(self, path: str | Path | None):
        self.path = None if path is None else Path(path)
        self.entries: dict[str, dict] = {}
        self.skipped = 0
        self._queue: list[dict] = []
        self._writing = False
        self._cv = threading.Condition()
        self._writer: threading.Thread | None = None
        if self.path is not None:
            ReplyCache._all.add(self)
            atexit.register(self.flush)
        for row in ([] if self.path is None else jsonl.read(self.path)):
            try:
                Reply.from_json(row["reply"])
                self.entries[str(row["key"])] = row["reply"]
            except (KeyError, TypeError, ValueError):
                self.skipped += 1

    def get(self, key: str) -> Reply | None:
        row = self.entries.get(key)
        return None if row is None else Reply.from_json(row)

    def put(self, key: str, reply: Reply, defer: bool = False) -> None:
        """Keep ``reply`` under ``key`` and append it to the file: now, or by the writer
        thread when ``defer`` (class docstring)."""
        row = self.entries[key] = reply.to_json()
        if self.path is None:
            return
        if not defer:
            jsonl.append(self.path, [{"key": key, "reply": row}])
            return
        with self._cv:
            self._queue.append({"key": key, "reply": row})
            if self._writer is None:
                self._writer = threading.Thread(target=self._write, daemon=True,
                                                name="jaxcollab-llm-cache")
                self._writer.start()
            self._cv.notify_all()

    def _write(self) -> None:
        while True:
            with self._cv:
                while not self._queue:
                    self._cv.wait()
                rows, self._queue, self._writing = self._queue, [], True
            try:
                jsonl.append(self.path, rows)
            except OSError as e:  # a full disk: the replies stay in memory, sent again later
                log.warning("could not append %d replies to %s: %s", len(rows), self.path, e)
            finally:
                with self._cv:
                    self._writing = False
                    self._cv.notify_all()

    def flush(self) -> None:
        """Wait until every deferred put is in the file."""
        with self._cv:
            while self._queue or self._writing:
                self._cv.wait()

    @classmethod
    def flush_all(cls) -> None:
        """:meth:`flush` every cache of the process."""
        for cache in list(cls._all):
            cache.flush()


class ChatClient:
    """Concurrent, retrying, caching client of one OpenAI-compatible endpoint.

    Args:
        cfg: endpoint and sampling settings.
        cache_path: JSONL cache file (``None``: cache in memory only), or a
            :class:`ReplyCache` shared with other clients (one per model of a mixed team).
        salt: hashed into every cache key: what tells apart runs whose prompts coincide (the
            run's seed: two seeds of a fixed mission send the same first prompts).
    """

    def __init__(self, cfg: LLMConfig, cache_path: str | Path | ReplyCache | None = None,
                 salt: str = ""):
        self.cfg, self.salt = cfg, str(salt)
        self.cache = cache_path if isinstance(cache_path, ReplyCache) else ReplyCache(cache_path)
        self.usage: dict[str, Usage] = defaultdict(Usage)
        #: retries by class (``rate_limited``, ``server_error``, ``malformed``, ``timeout``,
        #: ``connection``), for ``results.json``
        self.retries: Counter = Counter()
        #: a JSON Lines file each retry is appended to as it happens (None: not kept)
        self.retry_log: Path | None = None
        #: requests in flight at once, adapted to the server (:class:`_Flight`)
        self.window = int(cfg.concurrency)
        #: the model's context length as the server reports it (after :meth:`check`), or None
        self.served_context: int | None = None
        self.checked = False
        #: what this endpoint's errors taught (:meth:`adapt`): ``token_limit_key`` (the key the
        #: token limit is sent under) and ``dropped`` (request fields it refused)
        self.adapted: dict = {"token_limit_key": "max_tokens", "dropped": []}
        #: ``time.perf_counter()`` when the server last answered any request of this client
        #: (every episode's thread: :meth:`_post` times requests out from it)
        self.progress = 0.0
        self._check_lock = threading.Lock()  # pool workers share the client: one check
        self._usage_lock = threading.Lock()  # ... and its usage counters
        #: event loops with their HTTP clients not in use (:meth:`_lease`)
        self._idle: list[tuple[asyncio.AbstractEventLoop, Any]] = []
        self._idle_lock = threading.Lock()
        #: (event loop, HTTP client, window) of :meth:`acomplete_many` (:meth:`_on_loop`)
        self._loop_client: tuple[asyncio.AbstractEventLoop, Any, _Flight] | None = None
        self._url = cfg.base_url.rstrip("/")
        self._ssl = httpx.create_ssl_context()  # once: loading CA certificates costs ~0.1 s

    def prompt_budget(self) -> int | None:
        """Prompt tokens one request may use: the smaller of ``cfg.context_tokens`` and the
        server's reported context (:attr:`served_context`), less ``cfg.max_tokens``; None when
        neither is known (no ``max_tokens``: nothing is kept for the reply; thinking's cap,
        :meth:`LLMConfig.reply_tokens`, is kept too; at Max the answer's ``max_tokens``)."""
        limits = [c for c in (self.cfg.context_tokens, self.served_context) if c]
        reply = self.cfg.reply_tokens() or self.cfg.max_tokens or 0
        return max(min(limits) - reply, 1) if limits else None

    # --- request building ------------------------------------------------------------------

    def body(self, req: Request) -> dict:
        """The JSON body sent for ``req`` (also what the cache key hashes, with the nonce).

        ``cfg.thinking_budget`` goes out under every server's names (SANZARU Table 11): Off (0)
        and On (a cap ``N``) as vLLM's ``thinking_token_budget=N``, ``chat_template_kwargs``
        ``{"enable_thinking": N > 0, "thinking_budget": N}`` and Qwen's hosted
        ``thinking_budget=N``; Max (negative) as ``chat_template_kwargs``
        ``{"enable_thinking": true}`` alone, with no token limit (:meth:`LLMConfig.reply_tokens`).
        """
        cfg = self.cfg
        body = {
            "model": cfg.model,
            "messages": list(req.messages),
        }
        temperature = cfg.temperature if req.temperature is None else req.temperature
        if temperature is not None:  # None: the server's default
            body["temperature"] = temperature
        if cfg.reply_tokens() is not None:  # None: the server's cap
            body["max_tokens"] = cfg.reply_tokens()
        if req.tools:
            body["tools"] = list(req.tools)
        if cfg.reasoning_effort:
            body["reasoning_effort"] = cfg.reasoning_effort
        if cfg.thinking_budget is not None:
            cap = int(cfg.thinking_budget)
            if cap < 0:  # Max: on, uncapped
                body["chat_template_kwargs"] = {"enable_thinking": True}
            else:
                body["thinking_token_budget"] = body["thinking_budget"] = cap
                body["chat_template_kwargs"] = {"enable_thinking": cap > 0, "thinking_budget": cap}
        return body

    def key(self, req: Request) -> str:
        """SHA-256 hex of the request's content (configured body, nonce, base URL, salt; the
        body names the model, so replies of two models never mix in one cache file)."""
        content = {"url": self._url, "nonce": req.nonce, "body": self.body(req)}
        if self.salt:
            content["salt"] = self.salt
        blob = json.dumps(content, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    def wire(self, body: dict) -> dict:
        """``body`` as this endpoint takes it (:attr:`adapted`): the token limit under its key,
        refused fields left out, the learned ``reasoning_effort`` added where none is set."""
        out = {k: v for k, v in body.items() if k not in self.adapted["dropped"]}
        effort = self.adapted.get("reasoning_effort")
        if effort and "reasoning_effort" not in out:
            out["reasoning_effort"] = effort
        limit_key = self.adapted["token_limit_key"]
        if "max_tokens" in out and limit_key != "max_tokens":
            out[limit_key] = out.pop("max_tokens")
        return out

    def adapt(self, r: httpx.Response, sent: dict) -> bool:
        """Learn from an HTTP 400/422 whether the endpoint refused a request *key* rather than
        the request: ``max_tokens`` where it wants ``max_completion_tokens`` (OpenAI's GPT-5
        family: "Unsupported parameter: 'max_tokens' ... Use 'max_completion_tokens'
        instead."), a temperature it does not support ("Unsupported value: 'temperature' does
        not support 0.6 with this model"), a :data:`THINKING_FIELDS` field it does not take
        (once it takes none and thinking is to be off, :meth:`_least_effort` starts), or a
        learned ``reasoning_effort`` it refuses (the next of :data:`EFFORT_LADDER`). True (and
        remembered for every later request) when resending can help.
        """
        if r.status_code not in (400, 422):
            return False
        text = r.text
        if "max_completion_tokens" in text and "max_tokens" in sent:
            self.adapted["token_limit_key"] = "max_completion_tokens"
            log.warning("%s wants max_completion_tokens instead of max_tokens for model %r; "
                        "sending that from now on", self._url, self.cfg.model)
            return True
        if ("temperature" in sent and "'temperature'" in text
                and "unsupported" in text.lower()):
            self.adapted["dropped"] = sorted({*self.adapted["dropped"], "temperature"})
            log.warning("%s samples model %r only at its default temperature; not sending "
                        "temperature=%s (recorded in results.json 'adapted')", self._url,
                        self.cfg.model, sent["temperature"])
            return True
        effort = self.adapted.get("reasoning_effort")
        if effort and sent.get("reasoning_effort") == effort and "reasoning_effort" in text:
            return self._least_effort(EFFORT_LADDER.index(effort) + 1)
        refused = [k for k in THINKING_FIELDS if k in sent and k in text]
        if refused:
            self.adapted["dropped"] = sorted({*self.adapted["dropped"], *refused})
            log.warning("%s does not take %s for model %r: not sending it",
                        self._url, ", ".join(refused), self.cfg.model)
            if set(THINKING_FIELDS) <= set(self.adapted["dropped"]) and \
                    self.cfg.thinking_budget == 0 and not self.cfg.reasoning_effort:
                self._least_effort(0)
            return True
        return False

    def _least_effort(self, rung: int) -> bool:
        """Send ``reasoning_effort`` :data:`EFFORT_LADDER` ``[rung]`` from now on (none past its
        end): thinking is to be off where the endpoint offers no switch (GPTNT app. F.3)."""
        if rung < len(EFFORT_LADDER):
            self.adapted["reasoning_effort"] = EFFORT_LADDER[rung]
            log.warning("%s cannot turn thinking off for model %r: sending "
                        "reasoning_effort=%s (recorded in results.json 'adapted')", self._url,
                        self.cfg.model, EFFORT_LADDER[rung])
        else:
            self.adapted.pop("reasoning_effort", None)
            self.adapted["dropped"] = sorted({*self.adapted["dropped"], "reasoning_effort"})
            log.warning("%s takes no reasoning_effort of %s for model %r: not sending one",
                        self._url, "/".join(EFFORT_LADDER), self.cfg.model)
        return True

    def _headers(self) -> dict:
        key = os.environ.get(self.cfg.api_key_env, "") if self.cfg.api_key_env else ""
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _client(self) -> wire.Connections | httpx.AsyncClient:
        """A new HTTP client for one thread's event loop: :class:`~jaxcollab.llm.wire.
        Connections` (~0.6 ms of CPU a request where httpx took ~7: :mod:`~jaxcollab.llm.
        wire`), or an ``httpx.AsyncClient`` where a proxy setting applies to the URL (httpx
        honours it). Neither has a read timeout: :meth:`_post` times requests by the server's
        progress; a busy server still accepts connections at once (an unreachable one refuses
        them at once)."""
        if wire.proxied(self._url):
            return httpx.AsyncClient(timeout=httpx.Timeout(None, connect=wire.CONNECT_S),
                                     headers=self._headers(), verify=self._ssl)
        return wire.Connections(self._url, self._headers(), self._ssl)

    def _lease(self) -> tuple[asyncio.AbstractEventLoop, wire.Connections | httpx.AsyncClient]:
        """An event loop and its HTTP client (:meth:`_client`) that no other call is using: an
        idle one, its connections still open (keep-alive), else a new one; :meth:`_release`
        gives it back. Not one per thread: XLA runs each host callback on whichever thread of
        its pool, and kept per thread they were reused so rarely that 384 requests of a
        64-episode pool built 375 clients, each opening a connection."""
        with self._idle_lock:
            if self._idle:
                return self._idle.pop()
        return asyncio.new_event_loop(), self._client()

    def _release(self, leased: tuple[asyncio.AbstractEventLoop, Any]) -> None:
        with self._idle_lock:
            self._idle.append(leased)

    # --- preflight -------------------------------------------------------------------------

    def check(self) -> None:
        """Fail fast, before the first request is sent: the endpoint answers and serves
        ``cfg.model``. Runs once, on the first request the cache cannot answer (a run replayed
        wholly from the cache needs no server).

        Lists ``GET /models`` and checks the model's name there, however busy the server is:
        one that accepts the connection but does not answer within ``min(timeout_s, 30)`` s is
        *busy* (a server that generates one request at a time may answer only after its
        current generation); that is logged and the list is asked for again, ``timeout_s``
        each time, ``max_retries`` more times (a server answering any name, as llama.cpp does,
        would otherwise play a misspelt one). A server without that route cannot tell its
        models: it is probed with a 1-token chat (an unknown name fails only where the server
        refuses it) and a warning says the name was not checked. The model's context length,
        where ``/models`` reports one (``max_model_len``, ``context_length``), is kept in
        :attr:`served_context`.

        Raises:
            LLMError: nothing answers at the URL (says *unreachable*), an HTTP error (a 404
                hints at a ``base_url`` without ``/v1``), the server never listed its models
                (busy throughout), or the model is not served (names both).
        """
        self.checked = True
        url = f"{self._url}/models"
        waits = [min(float(self.cfg.timeout_s), 30.0)] + \
            [float(self.cfg.timeout_s)] * int(self.cfg.max_retries)
        try:
            with httpx.Client(headers=self._headers()) as http:
                r = self._list_models(http, url, waits)
                if r.status_code == 404:
                    self._probe(http)
                    return
        except (httpx.ConnectError, httpx.ConnectTimeout) as e:
            raise LLMError(f"the LLM endpoint {url} is unreachable: nothing accepted the "
                           f"connection ({e!r}); is the server running there?") from None
        except httpx.HTTPError as e:
            raise LLMError(f"the LLM endpoint {url} failed: {e!r}") from None
        if r.status_code >= 400:
            raise LLMError(f"{url} answered HTTP {r.status_code}: {r.text[:200]}")
        try:
            models = [m for m in r.json().get("data", []) if isinstance(m, dict)]
        except (ValueError, AttributeError):
            raise LLMError(f"{url} answered a body that is not a model list: "
                           f"{r.text[:200]!r}") from None
        served = {m.get("id"): m for m in models}
        if self.cfg.model not in served:
            raise LLMError(f"model {self.cfg.model!r} is not served at {self._url}; "
                           f"served: {', '.join(map(str, served)) or 'none'}")
        info = served[self.cfg.model]
        limit = next((info[k] for k in ("max_model_len", "context_length", "context_window")
                      if isinstance(info.get(k), int) and info[k] > 0), None)
        self.served_context = limit

    def _list_models(self, http: httpx.Client, url: str, waits: list[float]) -> httpx.Response:
        """``GET url``, waiting ``waits[i]`` seconds on attempt ``i`` (a busy server: logged).

        Raises:
            LLMError: no attempt was answered.
        """
        for i, wait in enumerate(waits):
            try:
                return http.get(url, timeout=wait)
            except (httpx.ConnectError, httpx.ConnectTimeout):
                raise
            except httpx.TimeoutException:
                log.warning("the LLM server at %s is busy: it accepted the connection but did "
                            "not answer GET /models within %.3g s (it may be generating for "
                            "someone else); %s", self._url, wait,
                            "asking again" if i + 1 < len(waits) else "giving up")
        raise LLMError(f"the LLM server at {self._url} accepted the connection but did not list "
                       f"its models (GET /models) in {len(waits)} attempts ({sum(waits):.3g} s): "
                       f"cannot check that it serves llm.model={self.cfg.model!r}; raise "
                       "llm.timeout_s for a server that stays busy this long")

    def _probe(self, http: httpx.Client) -> None:
        """A 1-token chat with ``cfg.model`` (a server without ``GET /models``).

        Raises:
            LLMError: the probe failed (a 404 hints at a ``base_url`` without ``/v1``).
        """
        r = http.post(f"{self._url}/chat/completions", timeout=float(self.cfg.timeout_s),
                      json={"model": self.cfg.model, "max_tokens": 1,
                            "messages": [{"role": "user", "content": "ping"}]})
        if r.status_code >= 400:
            raise LLMError(f"{self._url}: model {self.cfg.model!r} failed a probe request "
                           f"(HTTP {r.status_code}: {r.text[:200]})"
                           + _v1_hint(self._url, r.status_code))
        log.warning("the LLM server at %s does not list its models (GET /models: HTTP 404): "
                    "llm.model=%r is not checked (a server that answers any name plays it)",
                    self._url, self.cfg.model)

    def check_once(self) -> None:
        """:meth:`check`, the first time any thread calls it (pool workers share the client)."""
        with self._check_lock:
            if not self.checked:
                self.check()

    # --- completion ------------------------------------------------------------------------

    def complete_many(self, reqs: list[Request]) -> list[Reply]:
        """All replies, in order; cached ones replayed, the rest sent concurrently (at most
        :attr:`window` in flight, adapted to the server) and each cached as it arrives.

        Raises:
            LLMError: a non-retryable HTTP error other than a refusal or a context-length
                error, or retries exhausted (after every other request of the batch finished,
                its reply cached).
            KeyboardInterrupt: SIGINT or SIGTERM arrived (inside
                :func:`~jaxcollab.llm.signals.watch`) while requests were in flight; the replies
                that had arrived are cached.
        """
        keys = [self.key(r) for r in reqs]
        replies: list[Reply | None] = [self.cache.get(k) for k in keys]
        todo = [i for i, r in enumerate(replies) if r is None]
        if todo:
            self.check_once()
            loop, http = leased = self._lease()
            try:
                fresh = loop.run_until_complete(self._send_all(
                    http, [reqs[i] for i in todo], [keys[i] for i in todo]))
            except _Interrupted:  # every request of the batch ended: the loop is clean
                self._release(leased)
                raise KeyboardInterrupt("stopped by a signal") from None
            # any other error (e.g. a KeyboardInterrupt between two steps of the loop) drops
            # the loop: requests it left pending never resume on a later call
            self._release(leased)
            for i, reply in zip(todo, fresh):
                replies[i] = reply
        return self._account(reqs, replies, set(todo))

    async def acomplete_many(self, reqs: list[Request]) -> list[Reply]:
        """:meth:`complete_many` on the running event loop (one loop drives every episode of
        an LLM pool: :mod:`jaxcollab.llm.play`): the requests of every call on that loop
        share one HTTP client and one :class:`_Flight`, so at most :attr:`window` of them are
        in flight at once, whatever the number of episodes. A cancelled call (a stopping pool)
        drops its pending requests; the replies that arrived are cached.

        Raises:
            LLMError: as :meth:`complete_many` (after every other request of the call ended).
        """
        keys = [self.key(r) for r in reqs]
        replies: list[Reply | None] = [self.cache.get(k) for k in keys]
        todo = [i for i, r in enumerate(replies) if r is None]
        if todo:
            if not self.checked:  # a blocking HTTP check, once: off the loop
                await asyncio.get_running_loop().run_in_executor(None, self.check_once)
            http, flight = self._on_loop()
            fresh = await asyncio.gather(*(self._send(http, flight, reqs[i], keys[i], True)
                                           for i in todo), return_exceptions=True)
            for o in fresh:
                if isinstance(o, BaseException):
                    raise o
            for i, reply in zip(todo, fresh):
                replies[i] = reply
        return self._account(reqs, replies, set(todo))

    def _on_loop(self) -> tuple[wire.Connections | httpx.AsyncClient, _Flight]:
        """The running loop's HTTP client (:meth:`_client`) and concurrency window, made on
        its first use there."""
        loop = asyncio.get_running_loop()
        if self._loop_client is None or self._loop_client[0] is not loop:
            self._loop_client = (loop, self._client(), _Flight(self))
        return self._loop_client[1], self._loop_client[2]

    def _account(self, reqs: list[Request], replies: list[Reply | None],
                 fresh_set: set[int]) -> list[Reply]:
        """Add ``replies`` (those at ``fresh_set`` sent, the rest cached) to :attr:`usage`."""
        with self._usage_lock:  # complete_many runs on many threads at once
            for i, (req, reply) in enumerate(zip(reqs, replies)):
                u = self.usage[req.agent]
                u.calls += 1
                u.cached += i not in fresh_set
                u.prompt_tokens += reply.prompt_tokens
                u.completion_tokens += reply.completion_tokens
                u.latency_s += reply.latency_s
                u.queue_s += reply.queue_s
                u.refusals += reply.refused
        return replies  # type: ignore[return-value]

    async def _send_all(self, http: wire.Connections | httpx.AsyncClient, reqs: list[Request],
                        keys: list[str]) -> list[Reply]:
        flight = _Flight(self)
        sends = asyncio.gather(*(self._send(http, flight, r, k)
                                 for r, k in zip(reqs, keys)), return_exceptions=True)
        stop = asyncio.ensure_future(_until_interrupted())
        await asyncio.wait({sends, stop}, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        await asyncio.gather(stop, return_exceptions=True)  # nothing left pending on the loop
        if not sends.done():  # SIGINT/SIGTERM: what arrived is cached, the rest dropped
            sends.cancel()
            await asyncio.gather(sends, return_exceptions=True)
            raise _Interrupted
        out = sends.result()
        for o in out:
            if isinstance(o, BaseException):
                raise o
        return out

    async def _post(self, http: wire.Connections | httpx.AsyncClient, flight: _Flight,
                    body: dict) -> tuple[wire.Response | httpx.Response | None, str]:
        """One attempt: ``(response, "")`` or ``(None, error class)``. It times out only once
        ``timeout_s`` has passed since it was sent *and* since the server last answered any
        request of this client (:attr:`progress`: any episode's, from any thread): a request
        waiting its turn behind others on a server that serves one at a time (in whatever
        order, whatever the concurrency) is never abandoned, and sent again, while the server
        is still working through the queue."""
        sent = time.perf_counter()
        post = asyncio.ensure_future(http.post(f"{self._url}/chat/completions", json=body))
        timeout = float(self.cfg.timeout_s)
        try:
            while True:
                idle = time.perf_counter() - max(sent, self.progress)
                done, _ = await asyncio.wait({post}, timeout=max(timeout - idle, 0.0))
                if done:
                    return post.result(), ""
                if time.perf_counter() - max(sent, self.progress) >= timeout:
                    return None, "timeout"
        except httpx.TimeoutException:
            return None, "timeout"
        except httpx.TransportError:
            return None, "connection"
        finally:
            post.cancel()

    async def _send(self, http: wire.Connections | httpx.AsyncClient, flight: _Flight,
                    req: Request, key: str, defer: bool = False) -> Reply:
        body, created = self.body(req), time.perf_counter()
        url = f"{self._url}/chat/completions"
        for attempt in range(int(self.cfg.max_retries) + 1):
            await flight.enter()
            sent = time.perf_counter()
            r, cls = None, "connection"
            try:
                wire = self.wire(body)
                r, cls = await self._post(http, flight, wire)
                while r is not None and self.adapt(r, wire):  # a key the endpoint refused
                    wire = self.wire(body)
                    sent = time.perf_counter()
                    r, cls = await self._post(http, flight, wire)
            finally:
                await flight.leave(answered=r is not None)
            done = time.perf_counter()
            reply = None
            if r is not None:
                reply, cls = _outcome(r, sent, done)
            if reply is not None:
                flight.success()
                reply = dataclasses.replace(
                    reply, queue_s=round(max(done - created - reply.latency_s, 0.0), 6))
                if not reply.failure:
                    self.cache.put(key, reply, defer)  # at once: a later failure cannot lose it
                return reply
            if cls == "fatal":
                raise LLMError(f"{url} answered HTTP {r.status_code} for model "
                               f"{self.cfg.model!r}: {r.text[:300]}"
                               + _v1_hint(self._url, r.status_code))
            if cls in ("timeout", "rate_limited"):
                flight.congested()
            if attempt == int(self.cfg.max_retries):
                detail = f"HTTP {r.status_code}: {r.text[:200]}" if r is not None else cls
                raise LLMError(f"{url}: {detail} ({cls}) after {attempt + 1} attempts")
            with self._usage_lock:
                self.retries[cls] += 1
                if self.retry_log is not None:  # kept across resumes (results.json retries)
                    jsonl.append(self.retry_log, [{"class": cls, "agent": req.agent,
                                                   "attempt": attempt + 1, "url": url}])
            log.warning("%s: %s on attempt %d of a request of %s (%s); retrying", url, cls,
                        attempt + 1, req.agent or "the run",
                        f"HTTP {r.status_code}" if r is not None else "no answer")
            await asyncio.sleep(_backoff(self.cfg.backoff_s, attempt, r))
        raise AssertionError("unreachable")

    def usage_json(self) -> dict:
        """Per-agent usage as plain dicts (results.json ``tokens`` / ``latency_s`` source)."""
        with self._usage_lock:
            return {a: dataclasses.asdict(u) for a, u in sorted(self.usage.items())}


class _Interrupted(Exception):
    """A stop signal arrived while requests were in flight (raised as KeyboardInterrupt)."""


async def _until_interrupted(poll_s: float = 0.1) -> None:
    """Returns once SIGINT or SIGTERM has arrived (:func:`jaxcollab.llm.signals.interrupted`:
    seen from this thread even when it is not the main one)."""
    while not signals.interrupted():
        await asyncio.sleep(poll_s)


class _Flight:
    """The requests of one batch in flight: an adaptive concurrency window; each answer
    moves the client's :attr:`~ChatClient.progress` (:meth:`ChatClient._post` times requests
    from it).

    The window (kept on the client, so it carries over between batches) halves on every 429 or
    timeout, never below 1, and grows by one after as many successes in a row as its size, up to
    ``cfg.concurrency`` (additive increase, multiplicative decrease).
    """

    def __init__(self, client: ChatClient):
        self.client, self.cond = client, asyncio.Condition()
        self.active = self.streak = 0

    async def enter(self) -> None:
        async with self.cond:
            await self.cond.wait_for(lambda: self.active < self.client.window)
            self.active += 1

    async def leave(self, answered: bool) -> None:
        async with self.cond:
            self.active -= 1
            if answered:  # client-wide: every episode's requests see the server move
                self.client.progress = time.perf_counter()
            self.cond.notify_all()

    def success(self) -> None:
        self.streak += 1
        if self.streak >= self.client.window < int(self.client.cfg.concurrency):
            self.client.window += 1
            self.streak = 0

    def congested(self) -> None:
        self.client.window = max(1, self.client.window // 2)
        self.streak = 0


def _v1_hint(base_url: str, status: int) -> str:
    """A hint for a 404 from a base URL whose path does not end in ``/v1`` (vLLM, SGLang,
    llama.cpp and hosted APIs serve the OpenAI routes under ``/v1``), else ""."""
    if status != 404 or httpx.URL(base_url).path.rstrip("/").endswith("/v1"):
        return ""
    return f"; OpenAI-compatible servers answer under /v1: try llm.base_url={base_url}/v1"


def _backoff(base: float, attempt: int, r: httpx.Response | None) -> float:
    """Full-jitter exponential backoff, at least the server's ``Retry-After`` (seconds)."""
    wait = random.uniform(0, base * 2**attempt)
    if r is not None and r.headers.get("retry-after", "").replace(".", "", 1).isdigit():
        wait = max(wait, float(r.headers["retry-after"]))
    return min(wait, 60.0)


def _is_refusal(r: httpx.Response) -> bool:
    text = r.text.lower()
    return 400 <= r.status_code < 500 and any(m in text for m in REFUSAL_MARKERS)


def _is_context_error(r: httpx.Response) -> bool:
    text = r.text.lower()
    return r.status_code in (400, 413, 422) and any(m in text for m in CONTEXT_MARKERS)


def _outcome(r: httpx.Response, sent: float, done: float) -> tuple[Reply | None, str]:
    """``(reply, "")`` for an answer (a reply, a refusal, a context-length failure) or
    ``(None, error class)``: ``rate_limited`` (429), ``server_error`` (5xx, 408, 409),
    ``malformed`` (a 200 whose body is not a completion: truncated JSON, no ``choices``, an
    error object) — all retried — or ``fatal``."""
    wall = round(done - sent, 6)
    if r.status_code < 400:
        try:
            return _reply(r.json(), wall), ""
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            return None, "malformed"
    if r.status_code == 429:
        return None, "rate_limited"
    if r.status_code in RETRY_STATUS:
        return None, "server_error"
    if _is_context_error(r):
        return Reply(text="", finish_reason="context_length", latency_s=wall,
                     failure="context_length"), ""
    if _is_refusal(r):
        return Reply(text=r.text[:500], finish_reason="refused", latency_s=wall,
                     refused=True), ""
    return None, "fatal"


def _text(content) -> str:
    """Message content as text: a string, or the text parts of a list of content parts."""
    if isinstance(content, list):
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    text = "" if content is None else str(content)
    return text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates → "?"


def _reply(data: dict, wall: float) -> Reply:
    """A :class:`Reply` from a chat-completions JSON response.

    ``latency_s`` is the server's own service time where it reports one (llama.cpp's
    ``timings``: prompt plus generation milliseconds), else ``wall`` (seconds from sending).

    Raises:
        KeyError / IndexError / TypeError / ValueError: not a completion (no ``choices``, an
            error object, a choice without a message).
    """
    if data.get("error") and not data.get("choices"):
        raise ValueError(f"error object in a 200 reply: {str(data['error'])[:200]}")
    choice = data["choices"][0]
    msg = choice["message"]
    if not isinstance(msg, dict):
        raise TypeError("a choice without a message")
    calls = msg.get("tool_calls") or ()
    if not isinstance(calls, list | tuple):
        raise TypeError("tool_calls is not a list")
    usage = data.get("usage") or {}
    timings = data.get("timings") or {}
    served = (float(timings.get("prompt_ms") or 0) + float(timings.get("predicted_ms") or 0)
              ) / 1000 if isinstance(timings, dict) else 0.0
    return Reply(
        text=_text(msg.get("content")),
        tool_calls=tuple(c for c in calls if isinstance(c, dict)),
        finish_reason=str(choice.get("finish_reason") or "stop"),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        latency_s=round(served if 0 < served <= wall else wall, 6),
        timed_by="server" if 0 < served <= wall else "client",
        reasoning=_text(msg.get("reasoning_content") or msg.get("reasoning")),
    )
