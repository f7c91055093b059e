"""Compiling the round loop's programs ahead (:class:`jaxcollab.collab.run.CompileAhead`,
:func:`jaxcollab.collab.fit.precompile`): tasks run in order on one worker thread, an error
reaches the loop, and a fit after its precompile compiles neither its training chunk nor its
forward pass again."""

import threading

import jax
import numpy as np
import pytest

from jaxcollab.collab.fit import TrainConfig, fit, precompile, predict_probs
from jaxcollab.collab.run import CompileAhead
from jaxcollab.io.phases import COMPILE_EVENTS
from jaxcollab.models.gpt import GPTConfig


def test_tasks_run_in_order_on_the_worker_and_an_error_reaches_the_waiting_loop():
    ran: list[tuple[int, str]] = []

    def task(i: int):
        def run() -> None:
            ran.append((i, threading.current_thread().name))
            if i == 1:
                raise ValueError("task 1 failed")
        return run

    with CompileAhead([task(0), task(1), task(2)]) as ahead:
        ahead.wait(0, "nothing")
        with pytest.raises(ValueError, match="task 1 failed"):
            ahead.wait(1, "nothing")
        with pytest.raises(ValueError, match="task 1 failed"):  # later tasks never ran
            ahead.wait(2, "nothing")
    assert ran == [(0, "jaxcollab-compile-ahead"), (1, "jaxcollab-compile-ahead")]


@pytest.mark.full  # real compiles (seconds on a loaded machine)
def test_a_fit_after_its_precompile_compiles_no_chunk_and_no_forward_pass():
    cfg = GPTConfig(vocab_size=5, block_size=6, n_layer=1, n_head=1, n_embd=8)
    tc = TrainConfig(steps=3, batch_size=4, lr=1e-3, min_lr=1e-4, warmup_steps=1, eval_every=2,
                     val_examples=8, eval_batch=8)
    rng = np.random.default_rng(0)
    tokens, targets = rng.integers(0, 5, (40, 6)), rng.integers(0, 2, 40)
    precompile(cfg, tc, 32, 6, [8, 40], class_tokens=(0, 1))  # chunks of 2 and 1 steps
    compiled: list[str] = []

    def on_event(event: str, duration: float, fun_name: str = "", **_) -> None:
        if event == COMPILE_EVENTS[1]:
            compiled.append(fun_name)

    jax.monitoring.register_event_duration_secs_listener(on_event)
    try:
        result = fit(cfg, tc, tokens[:32], targets[:32], tokens[32:], targets[32:],
                     jax.random.PRNGKey(0), class_tokens=(0, 1))
        probs = predict_probs(result.graphdef, result.params, tokens, (0, 1), tc.eval_batch)
    finally:
        jax.monitoring.unregister_event_duration_listener(on_event)
    assert probs.shape == (40, 2)
    assert not {"chunk", "_answer_outputs", "_keep_best"} & set(compiled), compiled
