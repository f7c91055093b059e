"""Bomb benchmark: the oracle team on base-1 at batch 65,536 through the generic rollout
(:func:`jaxcollab.rollout`: generate, then play every episode to its end), in team-rounds per
second, against a straightforward pure-Python implementation of the same logic, same run.

A *team-round* is one round (three turns: Deaf, Mute, Blind) of one episode; only rounds an
episode actually began are counted.
"""

from __future__ import annotations

import os
import random
import time

import jax
import numpy as np

from eval.benchmarks._timing import best_time
from jaxcollab.agents.bomb import play, rounds_used
from jaxcollab.core.registry import make
from jaxcollab.core.rollout import episode_keys
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
    env = make("bomb/base-1")
    keys = episode_keys(0, batch)
    params = jax.tree.map(lambda x: np.broadcast_to(x, (batch,) + x.shape).copy(),
                          env.default_params)
    final = play(env, "oracle", keys, params)
    t_play = best_time(lambda: play(env, "oracle", keys, params), repeats=3)
    cpu = time.process_time()
    for _ in range(3):
        jax.block_until_ready(play(env, "oracle", keys, params))
    cpu_play = (time.process_time() - cpu) / 3
    rounds = int(np.sum(rounds_used(final)))
    defused = int((np.asarray(final.ending) == T.DEFUSED).sum())
    py_round, py_play = python_rates(2_000 if quick else 20_000)
    jax_play = rounds / t_play
    return [
        {"name": f"bomb oracle base-1 team-rounds/s, jaxcollab.rollout, batch {batch}",
         "value": jax_play, "unit": "team-rounds/s",
         "notes": f"generation + play to the end (while-loop stops when all ended); "
                  f"{defused}/{batch} defused in {rounds} rounds; load average "
                  f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"},
        {"name": f"bomb oracle base-1 episodes/s, jaxcollab.rollout, batch {batch}",
         "value": batch / t_play, "unit": "episodes/s"},
        {"name": "bomb oracle base-1 team-rounds per CPU-second, jaxcollab.rollout",
         "value": rounds / cpu_play, "unit": "team-rounds/CPU-s",
         "notes": "per second of this process's CPU time (all threads)"},
        {"name": "bomb oracle base-1 team-rounds/s, round logic, pure Python",
         "value": py_round, "unit": "team-rounds/s", "notes": "one game at a time"},
        {"name": "bomb oracle base-1 team-rounds/s, with generation, pure Python",
         "value": py_play, "unit": "team-rounds/s"},
        {"name": "bomb with-generation JAX / pure-Python ratio", "value": jax_play / py_play,
         "unit": "x", "notes": "same run"},
    ]
