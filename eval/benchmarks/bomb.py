"""Bomb benchmark: the oracle team on base-1 at batch 65,536, in team-rounds per second, against
a straightforward pure-Python implementation of the same round logic, measured in the same run.

A *team-round* is one round (three turns: Deaf, Mute, Blind) of one episode. Both sides draw a
fresh instance whenever an episode ends, so every counted round is a live round.
"""

from __future__ import annotations

import os
import random
import time
from functools import partial

import jax
import numpy as np

from eval.benchmarks._timing import best_time
from jaxcollab.agents.bomb.run import play_continuous, team_turn
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


def python_rates(n_games: int, seed: int = 0) -> tuple[float, float]:
    """(round-logic team-rounds/s, end-to-end team-rounds/s incl. generation) of
    :class:`PyBomb` with the oracle, turn order Deaf, Mute, Blind, one game at a time."""
    env = BombEnv("base-1")
    rng = random.Random(seed)
    start = time.perf_counter()
    games = [PyBomb(rng, env.variant, env.speech_bytes, env.gesture_symbols)
             for _ in range(n_games)]
    t_gen = time.perf_counter() - start
    quiet = [bytes(env.speech_bytes), -1, bytes(env.gesture_symbols), -1]
    start = time.perf_counter()
    for game in games:
        for actor in (T.DEAF, T.MUTE, T.BLIND):
            act, arg = game.oracle() if actor == T.BLIND else (T.WAIT, 0)
            game.step(actor, act, arg, quiet)
    t_round = time.perf_counter() - start
    return n_games / t_round, n_games / (t_round + t_gen)


def run(quick: bool) -> list[dict]:
    batch = 4_096 if quick else 65_536
    n_rounds = 8
    env = BombEnv("base-1")
    params = jax.tree.map(lambda x: np.broadcast_to(x, (batch,) + x.shape).copy(),
                          env.default_params)
    key = jax.random.PRNGKey(0)
    fresh = jax.jit(jax.vmap(env.reset))(jax.random.split(key, batch), params)[1]
    step = jax.vmap(partial(team_turn, oracle_team, True, env.layout), in_axes=(None, 0, 0))
    one_round = jax.jit(lambda s: step(key, step(key, step(key, s, params), params), params))
    t_round = best_time(lambda: one_round(fresh))
    cpu = time.process_time()
    for _ in range(5):
        jax.block_until_ready(one_round(fresh))
    cpu_round = (time.process_time() - cpu) / 5
    defused = int((one_round(fresh).ending == T.DEFUSED).sum())
    t_play = best_time(lambda: play_continuous(key, params, oracle_team, True, env.layout,
                                               n_rounds), repeats=3)
    py_round, py_play = python_rates(2_000 if quick else 20_000)
    jax_round, jax_play = batch / t_round, batch * n_rounds / t_play
    return [
        {"name": f"bomb oracle base-1 team-rounds/s, round logic, JAX, batch {batch}",
         "value": jax_round, "unit": "team-rounds/s",
         "notes": f"3 turns on fresh episodes; {defused}/{batch} defused; target >= 1e6; "
                  f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"},
        {"name": "bomb oracle base-1 team-rounds per CPU-second, round logic, JAX",
         "value": batch / cpu_round, "unit": "team-rounds/CPU-s",
         "notes": "per second of this process's CPU time (all threads)"},
        {"name": "bomb oracle base-1 team-rounds/s, round logic, pure Python",
         "value": py_round, "unit": "team-rounds/s", "notes": "one game at a time"},
        {"name": "bomb round logic JAX / pure-Python ratio", "value": jax_round / py_round,
         "unit": "x", "notes": "same run"},
        {"name": f"bomb oracle base-1 team-rounds/s, with generation, JAX, batch {batch}",
         "value": jax_play, "unit": "team-rounds/s",
         "notes": f"{n_rounds} rounds, a fresh instance for every ended episode"},
        {"name": "bomb oracle base-1 team-rounds/s, with generation, pure Python",
         "value": py_play, "unit": "team-rounds/s"},
        {"name": "bomb with-generation JAX / pure-Python ratio", "value": jax_play / py_play,
         "unit": "x", "notes": "same run"},
    ]
