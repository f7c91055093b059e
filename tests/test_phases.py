"""Where a run's time goes (:mod:`jaxcollab.io.phases`): each second charged to one phase, and
compiles (JAX's compile-duration events) split out of the phase they happened in. The compile
events here are recorded by hand with known durations, so the figures are exact, not timed."""

import jax
import jax.numpy as jnp
import pytest

from jaxcollab.io.phases import COMPILE_EVENTS, OTHER, Phases, phase

#: a compile far longer than the test: the phase it lands in is charged nothing
LONG_S = 1000.0


def _compiled(seconds: float) -> None:
    jax.monitoring.record_event_duration_secs(COMPILE_EVENTS[1], seconds, fun_name="test")


def test_compiles_are_split_out_and_phases_nest():
    with Phases() as spent:  # every stretch but the inner phase's holds a long compile
        _compiled(LONG_S)
        with phase("data"):
            _compiled(LONG_S)
            with phase("steps"):  # pauses "data"
                _compiled(0.25)
                jax.monitoring.record_event_duration_secs("/jax/other/event", LONG_S)
            _compiled(LONG_S)
        _compiled(LONG_S)
    assert spent.seconds["compile"] == 4 * LONG_S + 0.25  # the other event is no compile
    assert spent.seconds["data"] == 0.0 and spent.seconds[OTHER] == 0.0  # all compile
    assert set(spent.seconds) == set(spent.cpu) | {"compile"} == {"data", "steps", OTHER,
                                                                 "compile"}
    summary = spent.summary()
    assert list(summary["phases"])[0] == "compile"  # largest first
    assert summary["wall"] == spent.wall_seconds > 0 and summary["cpu"] == spent.cpu_seconds
    assert set(summary["phases_cpu"]) == {"data", "steps", OTHER}
    _compiled(LONG_S)  # after the block: its listener is gone
    assert spent.seconds["compile"] == 4 * LONG_S + 0.25


def test_a_real_compile_is_counted_and_phases_sum_to_the_wall_time():
    with Phases() as spent, phase("work"):
        jax.jit(lambda x: jnp.sin(x) * 3.0 + 1.0).lower(jnp.ones(7)).compile()
    assert spent.seconds["compile"] > 0
    assert sum(spent.seconds.values()) == pytest.approx(spent.wall_seconds, abs=1e-6)
    assert spent.line().startswith(f"time: {spent.wall_seconds:.1f} s wall")


def test_phase_without_a_block_is_a_no_op_and_blocks_do_not_nest():
    with phase("anything"):
        pass
    with Phases(), pytest.raises(RuntimeError, match="already open"):
        with Phases():
            pass
    with Phases() as again:  # the failed entry left nothing open
        pass
    assert set(again.seconds) == {OTHER, "compile"}


def test_compiles_ahead_are_summed_apart_and_taken_out_of_no_phase():
    import threading

    from jaxcollab.io.phases import ahead

    def worker():
        with ahead():
            _compiled(LONG_S)  # on a thread compiling ahead: overlaps the phases
        _compiled(0.5)  # the same thread outside the block: an ordinary compile

    with Phases() as spent, phase("steps"):
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
    assert spent.ahead_seconds == LONG_S and spent.seconds["compile"] == 0.5
    assert spent.summary()["compile_ahead"] == LONG_S
    assert spent.line().endswith(f"(and {LONG_S:.1f} s of compiles ahead, overlapping them)")
