"""Bomb benchmark: the oracle team on base-1 at batch 65,536, in team-rounds per second, against
a straightforward pure-Python implementation of the same round logic, measured in the same run.

A *team-round* is one round (three turns: Deaf, Mute, Blind) of one episode. Both sides draw a
fresh instance whenever an episode ends, so every counted round is a live round.
"""

from __future__ import annotations

import random
import time

import jax
import numpy as np

from eval.benchmarks.timing import best_time
from jaxcollab.agents.bomb.run import play_continuous
from jaxcollab.agents.bomb.teams import oracle_team
from jaxcollab.envs.bomb import BombEnv
from jaxcollab.envs.bomb import tables as T


class PyBomb:
    """Pure-Python base-family episode: same generation rules, channel table and turn logic as
    the JAX env (light-keyed rows manual, cut task), one episode at a time, lists and ints."""

    def __init__(self, rng: random.Random, v: T.Variant, speech_bytes: int, gesture: int):
        self.rng, self.v = rng, v
        self.caps = (speech_bytes, gesture)
        self.reset()

    def reset(self) -> None:
        rng, v = self.rng, self.v
        keys = rng.sample(range(v.rows * v.cols), v.steps)
        named = rng.sample(range(T.N_COLOURS), v.steps)
        manual = [rng.randrange(T.N_COLOURS) for _ in range(v.rows * v.cols)]
        for k, c in zip(keys, named, strict=True):
            manual[k] = c
        others = [c for c in range(T.N_COLOURS) if c not in named]
        colours = named + [rng.choice(others) for _ in range(v.wires - v.steps)]
        rng.shuffle(colours)
        self.keys, self.manual, self.colours = keys, manual, colours
        self.cut = [False] * v.wires
        self.round = self.turn = self.progress = self.bounces = 0
        self.ending = T.RUNNING
        self.outbox = [[bytes(self.caps[0]), -1, bytes(self.caps[1]), -1] for _ in range(3)]

    def step(self, actor: int, act: int, arg: int, msg: list) -> None:
        """One turn: deliver or bounce the actor's speech and gesture, then its act."""
        for ch in (0, 1):
            body, to = msg[2 * ch], msg[2 * ch + 1]
            ok = (0 <= to < 3 and to != actor and T.CAN_SEND[actor, ch] and T.CAN_RECV[to, ch])
            self.bounces += to != -1 and not ok
            self.outbox[actor][2 * ch + 1] = to if ok else -1
            if ok:
                self.outbox[actor][2 * ch] = bytes(body)
        if act != T.WAIT and actor == T.BLIND:
            want = self.manual[self.keys[self.progress]]
            if act == T.CUT and not self.cut[arg] and self.colours[arg] == want:
                self.cut[arg] = True
                self.progress += 1
            else:
                self.ending = T.WRONG_ACTION
        if self.progress == self.v.steps:
            self.ending = T.DEFUSED
        self.turn = (self.turn + 1) % 3
        self.round += self.turn == 0
        if self.ending == T.RUNNING and self.round >= self.v.rounds:
            self.ending = T.TIMED_OUT

    def oracle(self) -> tuple[int, int]:
        want = self.manual[self.keys[self.progress]]
        return T.CUT, next(i for i, c in enumerate(self.colours) if c == want and not self.cut[i])


def python_rounds_per_second(n_rounds: int, seed: int = 0) -> float:
    """Team-rounds/s of :class:`PyBomb` with the oracle (turn order Deaf, Mute, Blind)."""
    env = BombEnv("base-1")
    game = PyBomb(random.Random(seed), env.variant, env.speech_bytes, env.gesture_symbols)
    quiet = [bytes(env.speech_bytes), -1, bytes(env.gesture_symbols), -1]
    start = time.perf_counter()
    for _ in range(n_rounds):
        for actor in (T.DEAF, T.MUTE, T.BLIND):
            act, arg = game.oracle() if actor == T.BLIND else (T.WAIT, 0)
            game.step(actor, act, arg, quiet)
        if game.ending != T.RUNNING:
            game.reset()
    return n_rounds / (time.perf_counter() - start)


def run(quick: bool) -> list[dict]:
    batch = 4_096 if quick else 65_536
    n_rounds = 8
    env = BombEnv("base-1")
    params = jax.tree.map(lambda x: np.broadcast_to(x, (batch,) + x.shape).copy(),
                          env.default_params)
    key = jax.random.PRNGKey(0)
    result = {}

    def go():
        result["out"] = play_continuous(key, params, oracle_team, True, env.layout, n_rounds)
        return result["out"]

    t_jax = best_time(go, repeats=3)
    done, won = (int(x) for x in result["out"])
    jax_rate = batch * n_rounds / t_jax
    py_rate = python_rounds_per_second(2_000 if quick else 20_000)
    return [
        {"name": f"bomb oracle base-1 team-rounds/s, JAX, batch {batch}", "value": jax_rate,
         "unit": "team-rounds/s",
         "notes": f"{n_rounds} rounds, fresh instance per ended episode; {won}/{done} defused"},
        {"name": "bomb oracle base-1 team-rounds/s, pure Python", "value": py_rate,
         "unit": "team-rounds/s", "notes": "one episode at a time, same round logic"},
        {"name": "bomb JAX / pure-Python speed ratio", "value": jax_rate / py_rate, "unit": "x",
         "notes": "same run; target >= 1e6 team-rounds/s on the 2-core CPU"},
    ]
