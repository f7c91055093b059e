"""The chat client against a misbehaving local server: every reply is a reply or a classified,
retried failure; replies are cached as they arrive; serial servers are not flooded; the start-up
check tells busy from unreachable, checks the model's name however busy the server is, hints at
a missing ``/v1`` and is skipped when the cache answers everything; torn files."""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import os
import signal
import socket
import threading
import time

import httpx
import pytest
from llm_server import CONTEXT_WORDS, LATE_S, SERIAL_S, LLMServer

from jaxcollab.core.errors import ConfigValueError
from jaxcollab.llm import jsonl, signals, wire
from jaxcollab.llm.client import (
    EFFORT_LADDER,
    ChatClient,
    LLMConfig,
    LLMError,
    ReplyCache,
    Request,
)


def cfg(url, model="good", **kw) -> LLMConfig:
    return LLMConfig(base_url=url, model=model, backoff_s=0.01, **kw)


def reqs(n, tag="maze", extra=""):
    return [Request(f"agent{i % 2}", ({"role": "system", "content": tag},
                                      {"role": "user", "content": f"go {i} {extra}"}),
                    nonce=str(i)) for i in range(n)]


def test_malformed_200_bodies_are_retried_and_counted(server):
    client = ChatClient(cfg(server.url, "malformed"))
    (reply,) = client.complete_many(reqs(1, extra="malformed"))
    assert reply.text.startswith("I move down")
    assert client.retries == {"malformed": 3}  # truncated JSON, empty choices, error object


def test_a_failed_request_keeps_the_replies_of_its_batch(server, tmp_path):
    batch = reqs(4, extra="partial")
    batch[2] = Request("agent0", ({"role": "user", "content": "FAIL"},), nonce="2")
    with pytest.raises(LLMError, match="HTTP 400"):
        ChatClient(cfg(server.url, "partial"), tmp_path / "c.jsonl").complete_many(batch)
    again = ChatClient(cfg(server.url, "partial"), tmp_path / "c.jsonl")
    assert sorted(again.cache.entries) == sorted(again.key(r) for i, r in enumerate(batch)
                                                  if i != 2)


def test_serial_server_is_not_flooded(server):
    """Ten requests at once on a one-slot server (served in no particular order), each
    generation 0.2 s, timeout 1.5 s: timed from sending, the last ones would time out and be
    generated again (the old client did); timed by the server's progress, each prompt is
    generated once, and latency is service time, queueing apart."""
    batch = reqs(10, extra="serial")
    client = ChatClient(cfg(server.url, "serial", concurrency=10, timeout_s=1.5))
    replies = client.complete_many(batch)
    assert client.retries == {}
    keys = [json.dumps(list(r.messages)) for r in batch]
    assert [server.generated[k] for k in keys] == [1] * 10
    assert all(SERIAL_S * 0.9 <= r.latency_s for r in replies)
    last = max(replies, key=lambda r: r.queue_s)
    assert last.queue_s >= 8 * SERIAL_S  # the last one served waited behind nine generations
    assert last.latency_s < last.queue_s  # its latency is its own generation, not the wait
    totals = client.usage_json()
    assert sum(u["latency_s"] for u in totals.values()) == pytest.approx(
        sum(r.latency_s for r in replies))


def test_rate_limits_shrink_the_window(server):
    client = ChatClient(cfg(server.url, "flaky", concurrency=8))
    client.complete_many(reqs(8, extra="window"))
    assert client.retries == {"rate_limited": 8} and client.window < 8


def test_a_late_reply_times_out_once_and_is_retried(server):
    """A request alone in flight that outlives its timeout is abandoned and sent again (the
    server never answers it), counted as ``timeout``, and the window halves."""
    client = ChatClient(cfg(server.url, "late", timeout_s=1.0, concurrency=4))
    (reply,) = client.complete_many(reqs(1, extra="late"))
    assert reply.text.startswith("I move down") and reply.latency_s < LATE_S
    assert client.retries == {"timeout": 1} and client.window == 2


def test_context_length_error_is_a_classified_reply(server, tmp_path):
    client = ChatClient(cfg(server.url, "context"), tmp_path / "c.jsonl")
    long = Request("defuser", ({"role": "user", "content": "word " * (CONTEXT_WORDS + 1)},))
    (reply,) = client.complete_many([long])
    assert reply.failure == "context_length" and reply.text == ""
    assert client.served_context == CONTEXT_WORDS and client.cache.entries == {}


def test_startup_check_busy_unreachable_and_cached(server, tmp_path, caplog):
    with pytest.raises(LLMError, match="unreachable"):
        ChatClient(LLMConfig(base_url="http://127.0.0.1:9/v1", timeout_s=2)).check()
    server.models_delay = 1.0
    try:
        never = r"did not list its models \(GET /models\) in 2 attempts \(0.6 s\)"
        with caplog.at_level(logging.WARNING), pytest.raises(LLMError, match=never):
            ChatClient(cfg(server.url, timeout_s=0.3, max_retries=1)).check()
        assert caplog.text.count("is busy") == 2 and "unreachable" not in caplog.text
        # busy, then free: the name is still checked (a server that answers any name, as
        # llama.cpp does, would play a misspelt one)
        threading.Timer(0.5, setattr, (server, "models_delay", 0.0)).start()
        with pytest.raises(LLMError, match="model 'nope' is not served"):
            ChatClient(cfg(server.url, "nope", timeout_s=0.3, max_retries=30)).check()
    finally:
        server.models_delay = 0.0
    with LLMServer() as gone:
        url = gone.url
        first = ChatClient(cfg(url), tmp_path / "c.jsonl").complete_many(reqs(3))
    replay = ChatClient(cfg(url), tmp_path / "c.jsonl")  # the server is gone: the cache answers
    assert replay.complete_many(reqs(3)) == first and not replay.checked
    with pytest.raises(LLMError, match="unreachable"):
        replay.complete_many(reqs(4))  # one request the cache cannot answer


def test_a_base_url_without_v1_gets_a_hint(server, caplog):
    """The test server, like vLLM, serves its routes under /v1 only: a root without it gets
    404s, and the error says to add /v1."""
    root = server.url.removesuffix("/v1")
    with pytest.raises(LLMError, match=f"HTTP 404.*try llm.base_url={root}/v1$"):
        ChatClient(cfg(root)).check()
    server.lists_models = False  # a server without GET /models: a probe, and a warning
    try:
        with caplog.at_level(logging.WARNING):
            ChatClient(cfg(server.url, "good")).check()
        with pytest.raises(LLMError, match="'nope' failed a probe request"):
            ChatClient(cfg(server.url, "nope")).check()  # a server that refuses unknown names
    finally:
        server.lists_models = True
    assert "llm.model='good' is not checked" in caplog.text


def test_torn_cache_line_is_skipped_and_re_requested(server, tmp_path):
    path = tmp_path / "cache.jsonl"
    client = ChatClient(cfg(server.url), path)
    client.complete_many(reqs(2, extra="torn"))
    whole = path.read_bytes()
    path.write_bytes(whole + whole.splitlines(keepends=True)[-1][:40])  # a killed append
    cache = ReplyCache(path)
    assert len(cache.entries) == 2 and cache.skipped == 0  # the torn row does not decode
    n = len(server.requests)
    client = ChatClient(cfg(server.url), path)
    client.complete_many(reqs(3, extra="torn"))
    assert len(server.requests) == n + 1  # only the new request is sent
    assert len(ReplyCache(path).entries) == 3  # the new row did not fuse with the fragment
    path.write_bytes(path.read_bytes() + b'{"key": "k", "reply": {"text": 5}}\n')
    assert ReplyCache(path).skipped == 1  # a row that is not a reply is skipped too


def test_jsonl_append_is_whole_lines(tmp_path):
    path = tmp_path / "t.jsonl"
    jsonl.append(path, [{"a": 1}, {"b": "é"}])
    path.write_bytes(path.read_bytes() + b'{"c": ')
    jsonl.append(path, [{"d": 2}, {"e": "\ud800"}])
    assert jsonl.read(path) == [{"a": 1}, {"b": "é"}, {"d": 2}, {"e": "?"}]
    jsonl.write_atomic(tmp_path / "r.json", "{}\n")
    assert (tmp_path / "r.json").read_text() == "{}\n" and not list(tmp_path.glob(".*tmp"))


def test_a_signal_cancels_requests_on_another_thread(server, default_sigint):
    """XLA may run the host callback off the main thread, where no Python signal handler runs:
    a SIGINT still stops the requests there within moments (the 3-s reply is not awaited)."""
    client, caught = ChatClient(cfg(server.url, "late")), []

    def worker():
        try:
            client.complete_many(reqs(1, extra="signal"))
        except KeyboardInterrupt as e:
            caught.append(e)

    with signals.watch():
        thread = threading.Thread(target=worker)
        thread.start()
        time.sleep(0.3)
        signalled = time.perf_counter()  # the stop is timed from the signal
        with pytest.raises(KeyboardInterrupt):  # the main thread's own handler
            os.kill(os.getpid(), signal.SIGINT)
            thread.join()
        thread.join()
    assert caught and time.perf_counter() - signalled < LATE_S - 1


def test_gpt5_style_endpoint_gets_max_completion_tokens(server, tmp_path):
    """A GPT-5-style endpoint refuses ``max_tokens`` (HTTP 400 naming
    ``max_completion_tokens``), each thinking field and ``reasoning_effort="none"``: the request
    is resent with the token limit under the other key, without those fields and, thinking
    being off (GPTNT app. F.3), at the least effort it takes (``minimal``), remembered for later
    requests, and the cache key stays that of the configured request (a rerun replays it,
    whichever keys were sent)."""
    path = tmp_path / "c.jsonl"
    settings = cfg(server.url, "gpt5", temperature=0.6, max_tokens=321, thinking_budget=0)
    client = ChatClient(settings, path)
    n = len(server.requests)
    (reply,) = client.complete_many(reqs(1, extra="gpt5"))
    assert reply.text.startswith("I move down") and client.retries == {}
    sent = server.requests[n:]
    fields = ("max_tokens", "thinking_token_budget", "chat_template_kwargs", "thinking_budget",
              "temperature")
    assert [tuple(f in b for f in fields) + (b.get("reasoning_effort"),) for b in sent] == [
        (True, True, True, True, True, None), (False, True, True, True, True, None),
        (False, False, True, True, True, None), (False, False, False, True, True, None),
        (False, False, False, False, True, "none"), (False, False, False, False, True, "minimal"),
        (False, False, False, False, False, "minimal")]
    assert sent[-1]["max_completion_tokens"] == 321
    assert client.adapted == {"token_limit_key": "max_completion_tokens",
                              "dropped": ["chat_template_kwargs", "temperature",
                                          "thinking_budget", "thinking_token_budget"],
                              "reasoning_effort": "minimal"}
    n = len(server.requests)
    client.complete_many(reqs(2, extra="gpt5 again"))
    assert len(server.requests) == n + 2  # remembered: each new prompt is sent once
    one = ChatClient(cfg(server.url, "gpt5", temperature=1.0))  # its default: kept
    one.complete_many(reqs(1, extra="gpt5 at 1"))
    assert one.adapted["dropped"] == [] and server.requests[-1]["temperature"] == 1.0
    assert "reasoning_effort" not in server.requests[-1]  # thinking not asked off: no effort
    replay = ChatClient(settings, path)
    assert replay.complete_many(reqs(1, extra="gpt5")) == [reply] and not replay.checked


def test_effort_ladder_ends_with_none_sent(server):
    """An endpoint that refuses every ``reasoning_effort`` of the ladder (a non-reasoning
    hosted model) is sent none after the last, and that is remembered."""
    client = ChatClient(cfg(server.url, "gpt5", thinking_budget=0))
    client.adapted["reasoning_effort"] = EFFORT_LADDER[-1]
    refusal = httpx.Response(400, json={"error": {"message": "Unrecognized request argument "
                                                  "supplied: reasoning_effort"}})
    assert client.adapt(refusal, {"reasoning_effort": EFFORT_LADDER[-1]})
    assert "reasoning_effort" not in client.adapted
    assert "reasoning_effort" not in client.wire({"model": "gpt5", "reasoning_effort": "low"})


@pytest.mark.parametrize("level, cap, expected", [
    ("off", 0, {"max_tokens": 2048, "thinking_token_budget": 0, "thinking_budget": 0,
                "chat_template_kwargs": {"enable_thinking": False, "thinking_budget": 0}}),
    ("on", 4096, {"max_tokens": 2048 + 4096, "thinking_token_budget": 4096,
                  "thinking_budget": 4096,
                  "chat_template_kwargs": {"enable_thinking": True, "thinking_budget": 4096}}),
    ("max", -1, {"chat_template_kwargs": {"enable_thinking": True}}),
])
def test_thinking_levels_arrive_under_each_servers_names(server, level, cap, expected):
    """SANZARU Table 11's Off / On (cap 4,096) / Max (uncapped) reach a vLLM-style server
    (which takes every field) as its own fields, the reply's limit raised above the cap (On)
    or not sent (Max); Qwen's hosted API keeps only the top-level ``thinking_budget``,
    learned from its 400s."""
    thinking = ("max_tokens", "thinking_token_budget", "thinking_budget", "chat_template_kwargs")
    vllm = ChatClient(cfg(server.url, "good", max_tokens=2048, thinking_budget=cap))
    vllm.complete_many(reqs(1, extra=f"vllm {level}"))
    body = server.requests[-1]
    assert {k: body[k] for k in thinking if k in body} == expected
    assert "reasoning_effort" not in body
    qwen = ChatClient(cfg(server.url, "qwenapi", max_tokens=2048, thinking_budget=cap))
    qwen.complete_many(reqs(1, extra=f"qwen {level}"))
    body = server.requests[-1]
    kept = {k: v for k, v in expected.items() if k in ("max_tokens", "thinking_budget")}
    assert {k: body[k] for k in thinking if k in body} == kept
    assert qwen.adapted["dropped"] == sorted({"chat_template_kwargs",
                                              "thinking_token_budget"} & set(expected))


def test_cache_keys_hold_the_model_and_the_salt(server):
    """Two models (or two seeds: the salt) never share a cached reply of the same prompt."""
    (req,) = reqs(1)
    a, b = ChatClient(cfg(server.url, "good")), ChatClient(cfg(server.url, "slow"))
    assert a.key(req) != b.key(req)
    seeded = [ChatClient(cfg(server.url), salt=f"seed {s}").key(req) for s in (0, 1)]
    assert seeded[0] != seeded[1] and a.key(req) not in seeded


def test_thinking_cap_is_kept_out_of_the_prompt_budget():
    """On's cap counts against the reply's limit, so the context must hold it too; Max keeps
    the answer's budget free of the prompt."""
    on = LLMConfig(max_tokens=2048, thinking_budget=4096, context_tokens=8192)
    assert on.reply_tokens() == 6144 and ChatClient(on).prompt_budget() == 2048
    off = LLMConfig(max_tokens=2048, thinking_budget=0, context_tokens=8192)
    assert off.reply_tokens() == 2048 and ChatClient(off).prompt_budget() == 6144
    top = LLMConfig(max_tokens=2048, thinking_budget=-1, context_tokens=8192)
    assert top.reply_tokens() is None and ChatClient(top).prompt_budget() == 6144
    with pytest.raises(ConfigValueError, match=r"llm\.context_tokens.*more than "
                       r"llm\.max_tokens=2048 \+ llm\.thinking_budget=4096"):
        LLMConfig(max_tokens=2048, thinking_budget=4096, context_tokens=6144)


def test_calls_send_their_requests_over_kept_connections_from_any_thread():
    """Calls reuse kept-alive connections (an idle event loop and its HTTP client outlive each
    call: no connect and no client built per request), whichever thread makes them: XLA runs
    host callbacks on any thread of its pool. Another thread's batch of 3 takes the idle
    connection and opens 2 more. The start-up check's ``GET /models`` is the first
    connection."""
    with LLMServer() as server:
        client = ChatClient(cfg(server.url))
        for i in range(10):
            [reply] = client.complete_many(reqs(1, extra=f"turn {i}"))
            assert reply.text and not reply.failure
        assert (len(server.requests), server.connections) == (10, 2)
        other = threading.Thread(target=lambda: client.complete_many(reqs(3, extra="other")))
        other.start()
        other.join()
        assert (len(server.requests), server.connections) == (13, 4)


def test_the_wire_client_reads_chunked_gzip_answers_and_reopens_a_closed_connection():
    """:mod:`jaxcollab.llm.wire` against a raw server that answers a gzip body in two chunks
    and then closes the kept connection (as a server ending an idle keep-alive does): both
    posts get the JSON, the second over a reopened connection, with nothing counted as an
    error."""
    listener = socket.create_server(("127.0.0.1", 0))
    seen = []

    def serve():
        for _ in range(2):
            conn, _ = listener.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, body = data.split(b"\r\n\r\n", 1)
                length = int(next(h.split(b":")[1] for h in head.split(b"\r\n")
                                  if h.lower().startswith(b"content-length")))
                while len(body) < length:
                    body += conn.recv(65536)
                seen.append(json.loads(body))
                packed = gzip.compress(json.dumps({"n": len(seen)}).encode())
                chunks = [packed[:5], packed[5:]]
                conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                             b"Content-Encoding: gzip\r\n\r\n" + b"".join(
                                 b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n")

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    http = wire.Connections(url, {"Authorization": "Bearer k"})

    async def two():
        first = await http.post(f"{url}/chat/completions", json={"q": 1})
        await asyncio.sleep(0.1)  # the server has closed the kept connection by now
        return first, await http.post(f"{url}/chat/completions", json={"q": 2})

    first, second = asyncio.run(two())
    server.join(5)
    listener.close()
    assert [r.status_code for r in (first, second)] == [200, 200]
    assert (first.json(), second.json(), seen) == ({"n": 1}, {"n": 2}, [{"q": 1}, {"q": 2}])
