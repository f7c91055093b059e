"""OpenAI-compatible chat-completions client: concurrency limit, retries, request cache, usage.

Any server that speaks ``POST {base_url}/chat/completions`` works (vLLM, SGLang, llama.cpp,
hosted APIs). Requests are cached by the SHA-256 of their content (model, messages, sampling
settings and a caller ``nonce`` that tells apart independent samples of the same prompt), in an
append-only JSONL file, so a rerun replays every reply, its token counts and its measured latency
exactly and sends nothing. The API key is read from the environment variable named by
``api_key_env`` at call time and is never stored, logged or cached.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import random
import time
from collections import defaultdict
from pathlib import Path

import httpx

#: Status codes retried with backoff (rate limit, server errors); timeouts and dropped
#: connections are retried too.
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
#: Substrings of a 4xx error body that mark a content-policy refusal (GPTNT appendix "Guardrail
#: violations": the provider answers a 4XX instead of a reply).
REFUSAL_MARKERS = ("content_filter", "content_policy", "content policy", "safety", "refus")


class LLMError(RuntimeError):
    """The endpoint cannot serve this run (unreachable, unknown model, bad key, bad request)."""


@dataclasses.dataclass(frozen=True)
class LLMConfig:
    """Endpoint and sampling settings (``configs/llm.yaml``, group ``llm``).

    Attributes:
        base_url: the OpenAI-compatible root, e.g. ``http://localhost:8000/v1``.
        model: the served model name.
        api_key_env: name of the environment variable holding the key ("" or unset: no key).
        temperature: sampling temperature.
        max_tokens: completion token cap per reply.
        reasoning_effort: passed through as ``reasoning_effort`` when set (hosted reasoning models).
        thinking_budget: passed through as ``thinking_budget`` (with ``chat_template_kwargs``
            ``enable_thinking``) when set (vLLM / Qwen-style servers); 0 disables thinking.
        timeout_s: per-request timeout in seconds.
        concurrency: requests in flight at once.
        max_retries: retries after the first attempt on 429/5xx/timeouts.
        backoff_s: base of the exponential backoff in seconds (full jitter).
        extra_body: further JSON fields merged into every request.
    """

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "model"
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.6
    max_tokens: int = 1000
    reasoning_effort: str | None = None
    thinking_budget: int | None = None
    timeout_s: float = 120.0
    concurrency: int = 16
    max_retries: int = 6
    backoff_s: float = 1.0
    extra_body: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if not str(self.base_url).startswith(("http://", "https://")):
            raise ValueError(f"llm.base_url must start with http:// or https://, got "
                             f"{self.base_url!r}")
        if int(self.concurrency) < 1 or int(self.max_retries) < 0 or int(self.max_tokens) < 1:
            raise ValueError(f"need concurrency >= 1, max_retries >= 0 and max_tokens >= 1, got "
                             f"{self.concurrency!r}, {self.max_retries!r}, {self.max_tokens!r}")


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
    measured ``latency_s`` (replayed from the cache on reruns) and ``refused`` (HTTP 4xx
    content-policy refusal; ``text`` then holds the error message)."""

    text: str
    tool_calls: tuple[dict, ...] = ()
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    refused: bool = False

    def to_json(self) -> dict:
        return dataclasses.asdict(self) | {"tool_calls": list(self.tool_calls)}

    @staticmethod
    def from_json(d: dict) -> Reply:
        return Reply(**(d | {"tool_calls": tuple(d.get("tool_calls", ()))}))


@dataclasses.dataclass
class Usage:
    """Per-agent totals: calls sent, cache hits, tokens, summed latency (s), refusals."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    refusals: int = 0


class ReplyCache:
    """Append-only JSONL map from request hash to :class:`Reply` (``path=None``: in memory)."""

    def __init__(self, path: str | Path | None):
        self.path = None if path is None else Path(path)
        self.entries: dict[str, dict] = {}
        if self.path is not None and self.path.exists():
            for line in self.path.read_text().splitlines():
                if line.strip():
                    row = json.loads(line)
                    self.entries[row["key"]] = row["reply"]

    def get(self, key: str) -> Reply | None:
        row = self.entries.get(key)
        return None if row is None else Reply.from_json(row)

    def put(self, key: str, reply: Reply) -> None:
        self.entries[key] = reply.to_json()
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as f:
                f.write(json.dumps({"key": key, "reply": reply.to_json()}) + "\n")


class ChatClient:
    """Concurrent, retrying, caching client of one OpenAI-compatible endpoint.

    Args:
        cfg: endpoint and sampling settings.
        cache_path: JSONL cache file (``None``: cache in memory only).
    """

    def __init__(self, cfg: LLMConfig, cache_path: str | Path | None = None):
        self.cfg = cfg
        self.cache = ReplyCache(cache_path)
        self.usage: dict[str, Usage] = defaultdict(Usage)
        self._url = cfg.base_url.rstrip("/")
        self._ssl = httpx.create_ssl_context()  # once: loading CA certificates costs ~0.1 s

    # --- request building ------------------------------------------------------------------

    def body(self, req: Request) -> dict:
        """The JSON body sent for ``req`` (also what the cache key hashes, with the nonce)."""
        cfg = self.cfg
        body = {
            "model": cfg.model,
            "messages": list(req.messages),
            "temperature": cfg.temperature if req.temperature is None else req.temperature,
            "max_tokens": int(cfg.max_tokens),
        }
        if req.tools:
            body["tools"] = list(req.tools)
        if cfg.reasoning_effort:
            body["reasoning_effort"] = cfg.reasoning_effort
        if cfg.thinking_budget is not None:
            body["thinking_budget"] = int(cfg.thinking_budget)
            body["chat_template_kwargs"] = {"enable_thinking": int(cfg.thinking_budget) > 0}
        return body | dict(cfg.extra_body)

    def key(self, req: Request) -> str:
        """SHA-256 hex of the request's content (body, nonce, base URL)."""
        blob = json.dumps({"url": self._url, "nonce": req.nonce, "body": self.body(req)},
                          sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _headers(self) -> dict:
        key = os.environ.get(self.cfg.api_key_env, "") if self.cfg.api_key_env else ""
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=self.cfg.timeout_s, headers=self._headers(),
                                 verify=self._ssl)

    # --- preflight -------------------------------------------------------------------------

    def check(self) -> None:
        """Fail fast, before any episode: the endpoint answers and serves ``cfg.model``.

        Lists ``GET /models``; a server without that route is probed with a 1-token chat.

        Raises:
            LLMError: unreachable URL, HTTP error, or the model is not served (names both).
        """
        url = f"{self._url}/models"
        try:
            with httpx.Client(timeout=min(self.cfg.timeout_s, 30.0),
                              headers=self._headers()) as http:
                r = http.get(url)
                if r.status_code == 404:
                    r = http.post(f"{self._url}/chat/completions", json={
                        "model": self.cfg.model, "max_tokens": 1,
                        "messages": [{"role": "user", "content": "ping"}]})
                    if r.status_code >= 400:
                        raise LLMError(f"{self._url}: model {self.cfg.model!r} failed a probe "
                                       f"request (HTTP {r.status_code}: {r.text[:200]})")
                    return
        except httpx.HTTPError as e:
            raise LLMError(f"cannot reach the LLM endpoint {url}: {e!r}") from None
        if r.status_code >= 400:
            raise LLMError(f"{url} answered HTTP {r.status_code}: {r.text[:200]}")
        served = [m.get("id") for m in r.json().get("data", [])]
        if self.cfg.model not in served:
            raise LLMError(f"model {self.cfg.model!r} is not served at {self._url}; "
                           f"served: {', '.join(map(str, served)) or 'none'}")

    # --- completion ------------------------------------------------------------------------

    def complete_many(self, reqs: list[Request]) -> list[Reply]:
        """All replies, in order; cached ones replayed, the rest sent concurrently
        (at most ``cfg.concurrency`` in flight).

        Raises:
            LLMError: a non-retryable HTTP error other than a refusal, or retries exhausted.
        """
        keys = [self.key(r) for r in reqs]
        replies: list[Reply | None] = [self.cache.get(k) for k in keys]
        todo = [i for i, r in enumerate(replies) if r is None]
        fresh_set = set(todo)
        if todo:
            fresh = asyncio.run(self._send_all([reqs[i] for i in todo]))
            for i, reply in zip(todo, fresh):
                self.cache.put(keys[i], reply)
                replies[i] = reply
        for i, (req, reply) in enumerate(zip(reqs, replies)):
            u = self.usage[req.agent]
            u.calls += 1
            u.cached += i not in fresh_set
            u.prompt_tokens += reply.prompt_tokens
            u.completion_tokens += reply.completion_tokens
            u.latency_s += reply.latency_s
            u.refusals += reply.refused
        return replies  # type: ignore[return-value]

    async def _send_all(self, reqs: list[Request]) -> list[Reply]:
        gate = asyncio.Semaphore(int(self.cfg.concurrency))
        async with self._client() as http:
            return await asyncio.gather(*(self._send(http, gate, r) for r in reqs))

    async def _send(self, http: httpx.AsyncClient, gate: asyncio.Semaphore, req: Request
                    ) -> Reply:
        url = f"{self._url}/chat/completions"
        body = self.body(req)
        for attempt in range(int(self.cfg.max_retries) + 1):
            last = attempt == int(self.cfg.max_retries)
            async with gate:
                start = time.perf_counter()
                try:
                    r = await http.post(url, json=body)
                except (httpx.TimeoutException, httpx.TransportError) as e:
                    if last:
                        raise LLMError(f"{url}: {e!r} after {attempt + 1} attempts") from None
                    r = None
                latency = time.perf_counter() - start
            if r is not None and r.status_code < 400:
                return _reply(r.json(), latency)
            if r is not None and r.status_code not in RETRY_STATUS:
                if _is_refusal(r):
                    return Reply(text=r.text[:500], finish_reason="refused", latency_s=latency,
                                 refused=True)
                raise LLMError(f"{url} answered HTTP {r.status_code} for model "
                               f"{self.cfg.model!r}: {r.text[:300]}")
            if last:
                raise LLMError(f"{url}: HTTP {r.status_code} after {attempt + 1} attempts")
            await asyncio.sleep(_backoff(self.cfg.backoff_s, attempt, r))
        raise AssertionError("unreachable")

    def usage_json(self) -> dict:
        """Per-agent usage as plain dicts (results.json ``tokens`` / ``latency_s`` source)."""
        return {a: dataclasses.asdict(u) for a, u in sorted(self.usage.items())}


def _backoff(base: float, attempt: int, r: httpx.Response | None) -> float:
    """Full-jitter exponential backoff, at least the server's ``Retry-After`` (seconds)."""
    wait = random.uniform(0, base * 2**attempt)
    if r is not None and r.headers.get("retry-after", "").replace(".", "", 1).isdigit():
        wait = max(wait, float(r.headers["retry-after"]))
    return min(wait, 60.0)


def _is_refusal(r: httpx.Response) -> bool:
    text = r.text.lower()
    return 400 <= r.status_code < 500 and any(m in text for m in REFUSAL_MARKERS)


def _reply(data: dict, latency: float) -> Reply:
    """A :class:`Reply` from a chat-completions JSON response."""
    choice = data["choices"][0]
    msg = choice.get("message") or {}
    usage = data.get("usage") or {}
    return Reply(
        text=msg.get("content") or "",
        tool_calls=tuple(msg.get("tool_calls") or ()),
        finish_reason=choice.get("finish_reason") or "stop",
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        latency_s=round(latency, 6),
    )
