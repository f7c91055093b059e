"""A real OpenAI-compatible HTTP server on 127.0.0.1 that plays scripted strategies.

The served model name picks the strategy:

* ``good``: well-formed ``<thoughts>…</thoughts><action>…</action>`` replies for every family
  (bomb: Deaf speaks and gestures, Mute gestures, Blind or a solo player cuts wire 1; Keep
  Talking: the Defuser selects the first module then cuts ``B``, the Expert sends a message;
  mazes: ``~d`` and
  ``% …``); with ``tools`` in the request it answers with native tool calls instead.
* ``garbage``: replies with no action at all.
* ``freetext``: :data:`FREETEXT`, a small instruct model's prose that never follows the reply
  format (no tags, no ``~`` move, no ``%`` vector, no JSON verdict) whatever it is asked.
* ``refuse``: answers HTTP 400 with a content-policy error.
* ``slow``: ``good`` after sleeping :data:`SLOW_S` seconds.
* ``flaky``: HTTP 429 on every first attempt of a prompt, then ``good``.
* ``serial``: ``good``, generated one request at a time (:data:`SERIAL_S` seconds each, like a
  single-slot llama.cpp server), with llama.cpp-style ``timings`` of the generation alone;
  :attr:`LLMServer.generated` counts generations per prompt.
* ``malformed``: a broken 200 body on the first three attempts of a prompt (truncated JSON, an
  empty ``choices`` list, an error object), then ``good``.
* ``partial``: HTTP 400 (not retryable) for a prompt containing ``FAIL`` after
  :data:`SLOW_S` seconds, ``good`` for every other prompt at once.
* ``context``: HTTP 400 ``context_length_exceeded`` for a prompt longer than
  :data:`CONTEXT_WORDS` words (its ``/models`` entry reports that as ``max_model_len``), else
  ``good``.
* ``long``: ``good`` followed by :data:`LONG_CHARS` characters of rambling.
* ``gpt5``: answers like OpenAI's GPT-5 family: HTTP 400 ``unsupported_parameter`` for a
  request with ``max_tokens`` (naming ``max_completion_tokens``), HTTP 400 "Unrecognized request
  argument" for each of ``thinking_token_budget``, ``chat_template_kwargs`` and
  ``thinking_budget``, HTTP 400 ``unsupported_value`` for a temperature other than 1 or for
  ``reasoning_effort="none"`` (GPT-5 takes ``minimal`` and up), else ``good``.
* ``qwenapi``: answers like Qwen's hosted API: HTTP 400 "Unrecognized request argument" for
  ``thinking_token_budget`` or ``chat_template_kwargs`` (it takes a top-level
  ``thinking_budget``), else ``good``.
* ``late``: the first attempt of a prompt answers after :data:`LATE_S` seconds (later than a
  short client timeout), later attempts at once; both ``good``.
* ``maze``: exact maze replies (:func:`maze_reply`): in the odd rounds of a conversation
  ``~d`` with :data:`MAZE_ODD`, in the even rounds ``~u`` with :data:`MAZE_EVEN`; given the whole
  maze (solo) the path's true next move with :data:`MAZE_SURE` on it. Each reply carries a
  ``reasoning_content`` field, :data:`MAZE_REASONING` and the round (hosted reasoning models).
* ``judge``: a failure-mode judge that codes every episode alike: :data:`JUDGE_REPLY`, prose
  around a fenced JSON verdict (mode :data:`JUDGE_MODE`, ``assumed_meaning`` true,
  ``ungrounded_ref`` false); asked the protocol question (a system prompt whose reply format
  names a ``"family"``), :data:`JUDGE_PROTOCOL_REPLY`: family :data:`JUDGE_FAMILY` (the
  ``symbol`` team's own protocol).

:attr:`LLMServer.in_flight_max` is the most chat requests it was serving at once,
:attr:`LLMServer.connections` the TCP connections it accepted (HTTP/1.1 keep-alive, as real
servers: a client may send every request over one).
Set :attr:`LLMServer.models_delay` to make ``GET /v1/models`` answer late (a busy server),
:attr:`LLMServer.lists_models` false to make it 404. Every route is under ``/v1`` (others 404).
Any other model name is unknown (``GET /v1/models`` lists those above). ``LLMServer(latency=f)``
sleeps ``f(body)`` seconds before every chat reply (:func:`fixed_latency`,
:func:`heavy_tailed_latency`), so runs can be timed against a server's pace.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODELS = ("good", "garbage", "refuse", "slow", "flaky", "serial", "malformed", "partial",
          "context", "long", "late", "maze", "judge", "gpt5",
          "freetext", "qwenapi")
SLOW_S = 0.3
SERIAL_S = 0.2
CONTEXT_WORDS = 3000
LONG_CHARS = 100_000
LATE_S = 3.0
FREETEXT = ("Sure! I'd be happy to help. Looking at this carefully, I think the best next step "
            "is to go down and then right, or maybe cut the second wire; I am about 70 percent "
            "sure. Let me know what you see on your side!")
JUDGE_MODE = "omission"
JUDGE_REPLY = ("Reading the transcript, Deaf never told Mute the light.\n```json\n"
               + json.dumps({"rationale": "Step 0: Deaf spoke only to Blind.", "mode": JUDGE_MODE,
                             "assumed_meaning": True, "ungrounded_ref": False}) + "\n```")
JUDGE_FAMILY = "symbol_per_wire"
JUDGE_PROTOCOL_REPLY = json.dumps({"rationale": "Mute answered each query with one symbol.",
                                   "family": JUDGE_FAMILY})
#: The broken 200 bodies of ``malformed``, by attempt.
MALFORMED = (b'{"id": "chatcmpl-test", "choices": [{"index": 0, "mess',
             json.dumps({"id": "x", "object": "chat.completion", "choices": []}).encode(),
             json.dumps({"error": {"message": "internal: slot unavailable"}}).encode())


def fixed_latency(seconds: float):
    """Every reply takes ``seconds``."""
    return lambda body: seconds


def heavy_tailed_latency(fast: float, slow: float, every: int = 10):
    """Most replies take ``fast`` seconds, one request in ``every`` (by a hash of its body, so
    the same on every run) takes ``slow``."""
    def latency(body: dict) -> float:
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()
        return slow if int.from_bytes(digest[:4], "big") % every == 0 else fast
    return latency


def _bomb(system: str, user: str) -> str:
    found = re.search(r"You are (DEAF|MUTE|BLIND)", system)
    role = found.group(1).lower() if found else "blind"  # solo: the one who cuts
    calls = {
        "deaf": [{"call": "speak", "to": "blind", "text": "Cut wire 1."},
                 {"call": "gesture", "to": "mute", "symbols": ["thumbs_up", "point_up"]},
                 {"call": "wait"}],
        "mute": [{"call": "gesture", "to": "deaf", "symbols": ["question"]}, {"call": "wait"}],
        "blind": [{"call": "act", "op": "cut", "position": 1}],
    }[role]
    return f"<thoughts>I am {role}.</thoughts><action>{json.dumps(calls)}</action>"


def _ktane(system: str, user: str) -> str:
    if "You are the Expert" in system:
        action = {"kind": "send_message", "data": {"message": "Cut the second wire."}}
    elif "zoom none" in user:
        action = {"kind": "interact_game", "data": {"action": "select", "location": "A"}}
    else:
        action = {"kind": "interact_game", "data": {"action": "cut", "location": "B"}}
    return f"<thoughts>Next step.</thoughts><action>{json.dumps({'result': action})}</action>"


def _maze(system: str, user: str) -> str:
    return "I move down. ~d % 0.55, 0.35, 0.05, 0.05"


MAZE_ODD = (0.55, 0.35, 0.05, 0.05)
MAZE_EVEN = (0.1, 0.2, 0.6, 0.1)
MAZE_SURE = 0.97
MAZE_REASONING = "Hidden reasoning of round"
_STEPS = ((1, 0), (0, 1), (-1, 0), (0, -1))  # d r u l


def _solve(rows: list[str]) -> str:
    """The moves of the path from the top-left to the bottom-right cell (breadth-first)."""
    h, w = len(rows), len(rows[0])
    came, frontier = {(0, 0): None}, [(0, 0)]
    while frontier:
        nxt = []
        for r, c in frontier:
            for m, (dr, dc) in enumerate(_STEPS):
                cell = (r + dr, c + dc)
                if 0 <= cell[0] < h and 0 <= cell[1] < w and rows[cell[0]][cell[1]] != "#" \
                        and cell not in came:
                    came[cell] = ((r, c), "drul"[m])
                    nxt.append(cell)
        frontier = nxt
    moves, cell = "", (h - 1, w - 1)
    while came[cell] is not None:
        cell, m = came[cell]
        moves = m + moves
    return moves


def maze_reply(user: str) -> str:
    """The ``maze`` strategy's reply text to a maze prompt (module docstring)."""
    rows = ["".join(line.split()[1:]) for line in user.splitlines()
            if re.fullmatch(r"\s*\d+( [#.?@])+", line)]
    if rows and "?" not in "".join(rows):  # the whole maze: the true next move
        done = re.search(r"Moves so far: (.*)", user).group(1)
        move = _solve(rows)[0 if done == "(none)" else len(done.split())]
        probs = [MAZE_SURE if c == move else (1 - MAZE_SURE) / 3 for c in "drul"]
    else:
        k = int(re.search(r"Round (\d+) of", user).group(1))
        move, probs = ("d", MAZE_ODD) if k % 2 else ("u", MAZE_EVEN)
    return f"My move. ~{move} % " + ", ".join(f"{p:g}" for p in probs)


def good_reply(messages: list[dict]) -> str:
    """The well-formed strategy's reply text for a conversation."""
    system = messages[0]["content"]
    user = messages[-1]["content"]
    if '"kind"' in system:
        return _ktane(system, user)
    if re.search(r"You are (DEAF|MUTE|BLIND)|defusing a bomb alone", system):
        return _bomb(system, user)
    return _maze(system, user)


def _tool_calls(text: str) -> list[dict]:
    calls = json.loads(re.search(r"<action>(.*)</action>", text, re.S).group(1))
    return [{"id": f"call_{i}", "type": "function",
             "function": {"name": c.pop("call"), "arguments": json.dumps(c)}}
            for i, c in enumerate(calls)]


def _unrecognized(body: dict, fields: tuple[str, ...]) -> dict | None:
    """OpenAI's error body for the first of ``fields`` in ``body`` (an argument the API does
    not take), or None."""
    for field in fields:
        if field in body:
            return {"error": {"message": f"Unrecognized request argument supplied: {field}",
                              "type": "invalid_request_error", "param": None, "code": None}}
    return None


def _gpt5_error(body: dict) -> dict | None:
    """OpenAI's error body for a request GPT-5-family models refuse (their wording), or None."""
    if "max_tokens" in body:
        return {"error": {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
                       "Use 'max_completion_tokens' instead.",
            "type": "invalid_request_error", "param": "max_tokens",
            "code": "unsupported_parameter"}}
    unknown = _unrecognized(body, ("thinking_token_budget", "chat_template_kwargs",
                                   "thinking_budget"))
    if unknown:
        return unknown
    if body.get("reasoning_effort") == "none":
        return {"error": {
            "message": "Unsupported value: 'reasoning_effort' does not support 'none' with this "
                       "model. Supported values are: 'minimal', 'low', 'medium', and 'high'.",
            "type": "invalid_request_error", "param": "reasoning_effort",
            "code": "unsupported_value"}}
    if body.get("temperature", 1) != 1:
        return {"error": {
            "message": f"Unsupported value: 'temperature' does not support "
                       f"{body['temperature']} with this model. Only the default (1) value is "
                       "supported.",
            "type": "invalid_request_error", "param": "temperature",
            "code": "unsupported_value"}}
    return None


class _Handler(BaseHTTPRequestHandler):
    server: LLMServer
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers: clients reuse connections
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed ACK

    def log_message(self, *args):  # keep test output quiet
        pass

    def setup(self):
        super().setup()
        self.server.serving(0, connection=True)

    def _send(self, status: int, body: dict | bytes) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up on this request (a timeout): nobody to answer

    def do_GET(self):
        if self.path.rstrip("/") == "/v1/models" and self.server.lists_models:
            time.sleep(self.server.models_delay)
            self._send(200, {"object": "list", "data": [
                {"id": m, "object": "model"} | ({"max_model_len": CONTEXT_WORDS}
                                                if m == "context" else {}) for m in MODELS]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.rstrip("/") != "/v1/chat/completions":  # routes live under /v1 only
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        self.server.record(body)
        self.server.serving(+1)
        try:
            self._chat(body)
        finally:
            self.server.serving(-1)

    def _chat(self, body: dict) -> None:
        model, messages = body["model"], body["messages"]
        if model not in MODELS:
            return self._send(404, {"error": {"message": f"model {model!r} does not exist"}})
        if model == "refuse":
            return self._send(400, {"error": {"code": "content_filter", "message":
                                              "The prompt was flagged by our content policy."}})
        refused = {"gpt5": _gpt5_error, "qwenapi": lambda b: _unrecognized(
            b, ("thinking_token_budget", "chat_template_kwargs"))}.get(model, lambda b: None)(body)
        if refused:
            return self._send(400, refused)
        if model == "flaky" and self.server.first_attempt(body):
            return self._send(429, {"error": {"message": "rate limited"}})
        n_prompt = sum(len(str(m["content"]).split()) for m in messages)
        if model == "malformed":
            attempt = self.server.attempt(body)
            if attempt < len(MALFORMED):
                return self._send(200, MALFORMED[attempt])
        if model == "partial" and any("FAIL" in str(m["content"]) for m in messages):
            time.sleep(SLOW_S)
            return self._send(400, {"error": {"message": "invalid request"}})
        if model == "context" and n_prompt > CONTEXT_WORDS:
            return self._send(400, {"error": {
                "code": "context_length_exceeded", "message": f"This model's maximum context "
                f"length is {CONTEXT_WORDS} tokens; your prompt has {n_prompt}."}})
        if model == "slow":
            time.sleep(SLOW_S)
        timings = self.server.serve(body)
        if model == "late" and self.server.first_attempt(body):
            time.sleep(LATE_S)
        if model == "serial":
            with self.server.slot:  # one generation at a time
                started = time.perf_counter()
                time.sleep(SERIAL_S)
                timings = {"timings": {"prompt_ms": 0.0,
                                       "predicted_ms": 1000 * (time.perf_counter() - started)}}
                self.server.generated[json.dumps(messages)] += 1
        text = "Let me think about the bomb." if model == "garbage" else good_reply(messages)
        if model == "maze":
            text = maze_reply(messages[-1]["content"])
        if model == "judge":
            protocol = '"family" is one of' in str(messages[0]["content"])
            text = JUDGE_PROTOCOL_REPLY if protocol else JUDGE_REPLY
        if model == "freetext":
            text = FREETEXT
        if model == "long":
            text += " And so on." * (LONG_CHARS // 11)
        message: dict = {"role": "assistant", "content": text}
        if model == "maze":
            found = re.search(r"Round (\d+)", messages[-1]["content"])
            message["reasoning_content"] = f"{MAZE_REASONING} {found.group(1) if found else 1}."
        if body.get("tools") and model not in ("garbage", "freetext"):
            message = {"role": "assistant", "content": None, "tool_calls": _tool_calls(text)}
        self._send(200, timings | {
            "id": "chatcmpl-test", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": len(text.split()),
                      "total_tokens": n_prompt + len(text.split())},
        })


class Batching:
    """Continuous batching (vLLM, SGLang): up to ``cap`` requests are served at once, each in
    ``base * (1 + (n - 1) / cap)`` seconds when it starts with ``n`` in the batch (itself
    included), so throughput ``n / latency`` rises with the batch up to ``cap``; more requests
    queue for a slot. Like vLLM, it reports no timings: the client's wall time since sending
    includes the queue."""

    def __init__(self, base: float, cap: int):
        self.base, self.cap = float(base), int(cap)
        self.slots = threading.BoundedSemaphore(self.cap)
        self.active = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> dict:
        with self.slots:
            with self.lock:
                self.active += 1
                seconds = self.base * (1 + (self.active - 1) / self.cap)
            try:
                time.sleep(seconds)
            finally:
                with self.lock:
                    self.active -= 1
        return {}


class Serial:
    """One request at a time (a single-slot llama.cpp server), ``seconds`` each, in arrival
    order; reports llama.cpp's ``timings`` of the generation alone (not the queue)."""

    def __init__(self, seconds: float):
        self.seconds = float(seconds)
        self.slot = threading.Lock()

    def __call__(self, body: dict) -> dict:
        with self.slot:
            started = time.perf_counter()
            time.sleep(self.seconds)
            return {"timings": {"prompt_ms": 0.0,
                                "predicted_ms": 1000 * (time.perf_counter() - started)}}


class Never:
    """Never answers (a hung server): the request waits until the server shuts down."""

    def __init__(self):
        self.closed = threading.Event()

    def __call__(self, body: dict) -> dict:
        self.closed.wait()
        return {}


class LLMServer(ThreadingHTTPServer):
    """The server; ``url`` is its ``/v1`` base URL, ``requests`` the bodies received.

    ``latency``: ``f(body)`` seconds slept before every chat reply, or a service mode
    (:class:`Batching`, :class:`Serial`, :class:`Never`: ``mode(body)`` waits and returns the
    extra response fields). :attr:`generated` counts, per prompt, the replies the server
    generated in a mode (also those whose client had given up: wasted work)."""

    daemon_threads = True
    request_queue_size = 1024  # many clients connect at once (server-paced runs)

    def __init__(self, latency=None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.latency = latency
        self.requests: list[dict] = []
        self.models_delay = 0.0
        self.lists_models = True
        self.in_flight = self.in_flight_max = 0
        self.connections = 0  # TCP connections accepted (clients keep theirs alive)
        self.generated: Counter = Counter()
        self.slot = threading.Lock()
        self._seen: Counter = Counter()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def record(self, body: dict) -> None:
        with self._lock:
            self.requests.append(body)

    def serving(self, delta: int, connection: bool = False) -> None:
        with self._lock:
            self.connections += connection
            self.in_flight += delta
            self.in_flight_max = max(self.in_flight_max, self.in_flight)

    def attempt(self, body: dict) -> int:
        """How many times this exact body was received before (0 on the first attempt)."""
        key = json.dumps(body, sort_keys=True)
        with self._lock:
            self._seen[key] += 1
            return self._seen[key] - 1

    def serve(self, body: dict) -> dict:
        """Wait as the latency or mode says; the extra response fields (timings)."""
        if self.latency is None:
            return {}
        if isinstance(self.latency, Batching | Serial | Never):
            extra = self.latency(body)
            with self._lock:
                self.generated[json.dumps(body["messages"])] += 1
            return extra
        time.sleep(self.latency(body))
        return {}

    def first_attempt(self, body: dict) -> bool:
        return self.attempt(body) == 0

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if isinstance(self.latency, Never):
            self.latency.closed.set()
        self.shutdown()
        self.server_close()
        self._thread.join()


def latency_from_spec(spec: str):
    """``fixed:S``, ``tail:FAST:SLOW`` (one in ten slow), ``batch:BASE:CAP`` (continuous
    batching), ``serial:S`` (one at a time) or ``never``, as :class:`LLMServer` ``latency``."""
    kind, *values = spec.split(":")
    if kind == "fixed" and len(values) == 1:
        return fixed_latency(float(values[0]))
    if kind == "tail" and len(values) == 2:
        return heavy_tailed_latency(float(values[0]), float(values[1]))
    if kind == "batch" and len(values) == 2:
        return Batching(float(values[0]), int(values[1]))
    if kind == "serial" and len(values) == 1:
        return Serial(float(values[0]))
    if kind == "never" and not values:
        return Never()
    raise ValueError(f"latency spec {spec!r} must be 'fixed:S', 'tail:FAST:SLOW', "
                     f"'batch:BASE:CAP', 'serial:S' or 'never'")


if __name__ == "__main__":  # python tests/llm_server.py [SPEC]: serve, print the URL
    import sys

    with LLMServer(latency_from_spec(sys.argv[1]) if len(sys.argv) > 1 else None) as srv:
        print(srv.url, flush=True)
        threading.Event().wait()
