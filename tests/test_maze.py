"""Split-mask mazes: generator, examples, env, maze success, Bayes reference, export (issue 4)."""

from __future__ import annotations

import itertools
import json

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcollab
from jaxcollab.envs import maze
from jaxcollab.envs.maze import generator, reference, success, text
from jaxcollab.envs.maze.env import MazeEnv, state_from_maze

MOVES = {"d": (1, 0), "r": (0, 1), "u": (-1, 0), "l": (0, -1)}


# ---------------------------------------------------------------------------------------------
# Independent brute force (plain Python DFS over simple paths)
# ---------------------------------------------------------------------------------------------


def _neighbours(grid, cell):
    h, w = len(grid), len(grid[0])
    r, c = cell
    for dr, dc in MOVES.values():
        if 0 <= r + dr < h and 0 <= c + dc < w and grid[r + dr][c + dc]:
            yield (r + dr, c + dc)


def _reaches(grid, src, dst, blocked):
    seen, stack = {src}, [src]
    while stack:
        v = stack.pop()
        if v == dst:
            return True
        for u in _neighbours(grid, v):
            if u not in seen and u not in blocked:
                seen.add(u)
                stack.append(u)
    return False


def simple_paths(grid, limit=2):
    """All simple start→goal paths (as cell lists), stopping once ``limit`` are found."""
    h, w = len(grid), len(grid[0])
    goal, found = (h - 1, w - 1), []

    def dfs(path):
        v = path[-1]
        if v == goal:
            found.append(list(path))
            return
        for u in _neighbours(grid, v):
            if len(found) >= limit:
                return
            if u not in path and _reaches(grid, u, goal, set(path)):
                dfs(path + [u])

    if grid[0][0] and grid[h - 1][w - 1]:
        dfs([(0, 0)])
    return found


def _draw(seed, n, wall_prob, shape):
    """Raw candidate grids drawn here with numpy (independent of the library's sampler)."""
    open_ = np.random.default_rng(seed).random((n, *shape)) >= wall_prob
    open_[:, 0, 0] = open_[:, -1, -1] = True
    return open_


def _grid(open_):
    return [[bool(x) for x in row] for row in np.asarray(open_)]


# ---------------------------------------------------------------------------------------------
# Generator
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mazes():
    m, stats = text.make_mazes(jax.random.key(7), 300)
    return m, stats


@pytest.mark.parametrize(
    "shape,wall_prob,n",
    [((3, 3), 0.5, 128), ((4, 5), 0.4, 1500), ((6, 6), 0.3, 1500), ((6, 6), 0.5, 1500)],
)
def test_unique_path_matches_brute_force_count(shape, wall_prob, n):
    open_ = _draw(n, n, wall_prob, shape)
    got = np.asarray(generator.unique_path(jnp.asarray(open_)))
    want = np.array([len(simple_paths(_grid(g))) == 1 for g in open_])
    assert want.sum() > 5  # the case mixes accepted and rejected grids
    np.testing.assert_array_equal(got, want)


def test_sampled_mazes_have_exactly_one_simple_path_and_it_is_the_label_path(mazes):
    m, _ = mazes
    for i in range(len(m)):
        grid = _grid(m.open_[i].reshape(6, 6))
        paths = simple_paths(grid)
        assert len(paths) == 1
        cells = paths[0]
        moves = "".join(
            next(k for k, d in MOVES.items() if (b[0] - a[0], b[1] - a[1]) == d)
            for a, b in zip(cells, cells[1:], strict=False)
        )
        k = int(m.n_moves[i])
        assert "".join(generator.MOVE_CHARS[x] for x in m.moves[i, :k]) == moves
        assert (m.moves[i, k:] == -1).all()


def test_prefilter_never_drops_an_acceptable_draw():
    open_ = _draw(3, 20000, 0.3, (6, 6))
    corner, _ = generator._corners((6, 6))
    doomed = np.asarray(generator._doomed(jnp.asarray(open_.reshape(-1, 36)[:, corner])))
    accepted = np.asarray(generator.unique_path(open_))
    assert doomed.mean() > 0.6 and accepted.sum() > 20
    assert not (doomed & accepted).any()


def test_acceptance_rate_and_wall_frequency(mazes):
    _, stats = mazes
    assert stats["draws"] % (1 << 14) == 0 and stats["accepted"] >= 300
    assert 0.003 < stats["acceptance_rate"] < 0.007  # measured: about 0.5%
    # raw cells: open with probability 0.7 (±5 sd)
    cells = np.asarray(generator._open_cells(jax.random.key(0), (20000, 34), 0.3))
    assert abs(cells.mean() - 0.7) < 5 * np.sqrt(0.21 / cells.size)


def test_sampler_is_deterministic_under_a_key():
    a, acc_a, draws_a = generator.sample_mazes(jax.random.key(1), 50)
    b, acc_b, draws_b = generator.sample_mazes(jax.random.key(1), 50)
    c, _, _ = generator.sample_mazes(jax.random.key(2), 50)
    np.testing.assert_array_equal(a, b)
    assert (acc_a, draws_a) == (acc_b, draws_b)
    assert not np.array_equal(a, c)


def test_sampler_rejects_bad_arguments():
    with pytest.raises(ValueError, match="wall_prob"):
        generator.sample_mazes(jax.random.key(0), 5, wall_prob=1.5)
    with pytest.raises(ValueError, match=r"\(3, 6\)"):
        generator.sample_mazes(jax.random.key(0), 5, shape=(3, 6))


# ---------------------------------------------------------------------------------------------
# Masks, views, examples
# ---------------------------------------------------------------------------------------------


def test_masks_are_complementary_18_18(mazes):
    m, _ = mazes
    assert m.masks.shape == (300, 2, 36)
    assert (m.masks.sum(-1) == 18).all()
    assert (m.masks[:, 0] ^ m.masks[:, 1]).all()
    assert len({row.tobytes() for row in m.masks[:, 0]}) == 300


def test_examples_follow_the_path_and_render_exactly(mazes):
    m, _ = mazes
    ex = m.examples()
    v = m.views()
    assert len(ex["label"]) == m.n_moves.sum() == len(v)
    strings = {role: m.strings(role) for role in (0, 1, text.SOLO)}
    for j in np.flatnonzero(ex["maze"] < 20):
        i, pos = ex["maze"][j], ex["pos"][j]
        grid = np.where(m.open_[i], ".", "#")
        r, c = divmod(int(pos), 6)
        dr, dc = MOVES[generator.MOVE_CHARS[ex["label"][j]]]
        nxt = (r + dr) * 6 + c + dc
        assert m.open_[i, nxt]  # the labelled move goes to an open cell ...
        if ex["step"][j] + 1 < m.n_moves[i]:
            assert ex["pos"][j + 1] == nxt  # ... which is where the next example stands
        else:
            assert nxt == 35
        for role in (0, 1, text.SOLO):
            seen = m.masks[i, role] if role < 2 else np.ones(36, bool)
            want = np.where(seen, grid, "?")
            want[pos] = "@"
            label = generator.MOVE_CHARS[ex["label"][j]]
            assert strings[role][j] == "".join(want) + "=" + label
            assert text.decode(v[j, role]) == "".join(want)


def test_dataset_split_is_by_maze_and_90_10():
    train, test, stats = text.build_dataset(jax.random.key(0), 5000)
    n_train, n_test = train.n_moves.sum(), test.n_moves.sum()
    assert n_train + n_test >= 5000
    assert abs(n_test / (n_train + n_test) - 0.1) < 20 / 5000
    assert not set(map(bytes, train.open_)) & set(map(bytes, test.open_))
    with pytest.raises(ValueError, match="test_fraction"):
        text.build_dataset(jax.random.key(0), 100, test_fraction=1.0)


def test_encode_decode_round_trip_and_error():
    s = "#.?@=|drul0123456789"
    assert text.decode(text.encode(s)) == s
    with pytest.raises(ValueError, match="'x'"):
        text.encode("..x")


# ---------------------------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------------------------


def _state(m, i):
    return state_from_maze(m.open_[i], m.masks[i], m.moves[i].astype(np.int32), m.n_moves[i])


def test_env_registered_in_group_and_bad_names():
    assert "maze/split-6x6" in jaxcollab.resolve("maze/all")
    env = jaxcollab.make("maze/split-6x6")
    assert env.observation_space().shape == (2, 36) and env.action_space().n == 4
    with pytest.raises(KeyError, match="maze/split-6x6"):
        jaxcollab.make("maze/split-6x7")
    with pytest.raises(ValueError, match="decider"):
        MazeEnv(decider=2)


def test_env_walks_the_path_to_success_and_a_wrong_move_terminates(mazes):
    m, _ = mazes
    env = MazeEnv()
    step = jax.jit(env.step)
    i = int(np.argmax(m.n_moves))
    path = m.moves[i, : m.n_moves[i]].astype(np.int32)
    state = _state(m, i)
    for k, mv in enumerate(path):
        obs, state, reward, term, trunc, info = step(jax.random.key(0), state, jnp.array([3, mv]))
        assert bool(info["correct"]) and not bool(trunc)
        assert bool(term) == (k == len(path) - 1) == bool(info["success"])
        assert reward.tolist() == ([1.0, 1.0] if k == len(path) - 1 else [0.0, 0.0])
    assert int(state.pos) == 35
    # a wrong move mid-path: step 2 with a move other than the path's
    state = _state(m, i)
    for mv in path[:2]:
        _, state, *_ = step(jax.random.key(0), state, jnp.array([0, mv]))
    wrong = (path[2] + 1) % 4
    _, after, reward, term, _, info = step(jax.random.key(0), state, jnp.array([path[2], wrong]))
    assert bool(term) and not bool(info["correct"]) and not bool(info["success"])
    assert reward.tolist() == [0.0, 0.0] and int(after.pos) == int(state.pos)


def test_env_reset_is_deterministic_and_compiles_once():
    env = MazeEnv()
    reset = jax.jit(chex.assert_max_traces(env.reset, n=1))
    obs_a, st_a = reset(jax.random.key(5))
    obs_b, st_b = reset(jax.random.key(5))
    obs_c, st_c = reset(jax.random.key(6))
    for x, y in zip(jax.tree.leaves((obs_a, st_a)), jax.tree.leaves((obs_b, st_b)), strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(st_a.masks, st_c.masks)
    grid = _grid(np.asarray(st_a.open_).reshape(6, 6))
    assert len(simple_paths(grid)) == 1
    assert (np.asarray(obs_a) == np.asarray(env.observe(st_a))).all()


def test_env_step_jit_matches_nojit(mazes):
    m, _ = mazes
    env = MazeEnv()
    state = _state(m, 0)
    for mv in (m.moves[0, 0], m.moves[0, 1], (m.moves[0, 2] + 2) % 4):
        actions = jnp.array([0, mv], jnp.int32)
        fast = jax.jit(env.step)(jax.random.key(0), state, actions)
        with jax.disable_jit():
            slow = env.step(jax.random.key(0), state, actions)
        for x, y in zip(jax.tree.leaves(fast), jax.tree.leaves(slow), strict=True):
            np.testing.assert_array_equal(x, y)
        state = fast[1]
    assert bool(fast[3]) and not bool(fast[5]["correct"])


def test_observation_hides_what_the_role_does_not_see(mazes):
    m, _ = mazes
    env = MazeEnv()
    rng = np.random.default_rng(0)
    for i in range(10):
        state = _state(m, i)
        obs = np.asarray(env.observe(state))
        for role in (0, 1):
            hidden = ~m.masks[i, role]
            flipped = m.open_[i] ^ (hidden & (rng.random(36) < 0.5))
            obs2 = np.asarray(env.observe(state.replace(open_=jnp.asarray(flipped))))
            np.testing.assert_array_equal(obs2[role], obs[role])
            assert (obs2[1 - role] != obs[1 - role]).any() == (flipped != m.open_[i]).any()
        text_rows = env.render_text(state, 0).split("\n")
        assert len(text_rows) == 6 and "".join(text_rows) == text.decode(obs[0])


# ---------------------------------------------------------------------------------------------
# Maze success
# ---------------------------------------------------------------------------------------------


def _solo_oracle(wrong_at=None):
    """Reads the full view (role SOLO), returns the path's next move one-hot; optionally the
    wrong move (next id) at path step ``wrong_at``."""

    def predict(tokens):
        grid = tokens[:, :36] != text.WALL
        moves, _ = generator.path_of(jnp.asarray(grid.reshape(-1, 6, 6)))
        cells = np.asarray(text.positions(moves))
        here = np.argmax(tokens[:, :36] == text.AT, axis=1)
        step = np.argmax(cells == here[:, None], axis=1)
        move = np.asarray(moves)[np.arange(len(step)), step]
        if wrong_at is not None:
            move = np.where(step == wrong_at, (move + 1) % 4, move)
        return np.eye(4)[move]

    return predict


def _one_hot(probs):
    return text.MOVE_TOKENS[np.argmax(probs, -1)][:, None]


def test_maze_success_oracle_and_wrong_move_mid_path(mazes):
    m, _ = mazes
    sub = m.subset(slice(0, 12))
    solo = {text.SOLO: _solo_oracle()}
    r = success.maze_success(sub, solo, [text.SOLO], _one_hot)
    assert r == {"maze_success": 1.0, "step_accuracy": 1.0, "n_mazes": 12}
    r = success.maze_success(sub, {text.SOLO: _solo_oracle(wrong_at=3)}, [text.SOLO], _one_hot)
    # every maze: 3 right moves, then the wrong fourth ends it
    assert r == {"maze_success": 0.0, "step_accuracy": 0.75, "n_mazes": 12}
    # same decisions judged per step along the true path
    ex = sub.examples()
    correct = ex["step"] != 3
    assert success.success_from_steps(correct, ex["maze"], 12) == 0.0
    assert success.success_from_steps(np.ones_like(correct), ex["maze"], 12) == 1.0


def test_messages_reach_the_next_speaker_in_order(mazes):
    m, _ = mazes
    sub = m.subset(slice(0, 6))
    oracle = _solo_oracle()

    def agent0(tokens):  # knows the answer by peeking at the full maze through a side channel
        return oracle(full[: len(tokens)])

    def agent1(tokens):  # only repeats agent 0's message: '|', move, '='
        assert tokens.shape[1] == 36 + 3 and (tokens[:, 36] == text.SEP).all()
        return np.eye(4)[np.searchsorted(text.MOVE_TOKENS, tokens[:, 37])]

    full = None
    views = np.asarray(sub.views())
    ex = sub.examples()
    full = views[ex["step"] == 0][:, text.SOLO]
    probs = success.converse(views[ex["step"] == 0], {0: agent0, 1: agent1}, [0, 1], _one_hot)
    np.testing.assert_array_equal(probs[0], probs[1])
    np.testing.assert_array_equal(np.argmax(probs[1], -1), ex["label"][ex["step"] == 0])
    with pytest.raises(ValueError, match="missing roles \\[1\\]"):
        success.converse(views, {0: agent0}, [0, 1], _one_hot)


# ---------------------------------------------------------------------------------------------
# Bayes reference
# ---------------------------------------------------------------------------------------------


def _brute_bayes(view, shape, wall_prob):
    h, w = shape
    unseen = [k for k in range(1, h * w - 1) if view[k] == "?"]
    mass = np.zeros(4)
    for bits in itertools.product((0, 1), repeat=len(unseen)):  # 1 = wall
        cells = [view[k] != "#" for k in range(h * w)]
        for k, b in zip(unseen, bits, strict=True):
            cells[k] = not b
        cells[0] = cells[-1] = True
        grid = [cells[r * w : (r + 1) * w] for r in range(h)]
        paths = simple_paths(grid)
        if len(paths) == 1:
            first = paths[0][1]
            prior = wall_prob ** sum(bits) * (1 - wall_prob) ** (len(bits) - sum(bits))
            mass["drul".index("d" if first == (1, 0) else "r")] += prior
    return mass / mass.sum()


@pytest.mark.parametrize("view", ["@?.??#.?.?#.#..?", "@.?#.?#.#??..#?#?.?."])
def test_bayes_first_move_matches_brute_force_enumeration(view):
    shape = (4, 4) if len(view) == 16 else (4, 5)
    probs, evidence = reference.bayes_first_move(text.encode(view), shape, 0.3)
    np.testing.assert_allclose(probs, _brute_bayes(view, shape, 0.3), atol=1e-12)
    assert 0 < evidence <= 1


def test_bayes_first_move_is_certain_with_the_full_view_and_rejects_bad_views(mazes):
    m, _ = mazes
    v = m.views()
    j = np.flatnonzero(m.examples()["step"] == 0)[:3]
    for k in j:
        probs, _ = reference.bayes_first_move(v[k, text.SOLO], (6, 6))
        assert probs.tolist() == np.eye(4)[m.examples()["label"][k]].tolist()
    with pytest.raises(ValueError, match="no completion"):
        reference.bayes_first_move(text.encode("@#??#??????????."), (4, 4))
    with pytest.raises(ValueError, match="tokens"):
        reference.bayes_first_move(text.encode("@d?????????????."), (4, 4))


# ---------------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------------


def test_export_schema_verified_independently(tmp_path):
    from eval.export import export

    out = export("maze/split-6x6", 25, 3, tmp_path / "m.jsonl")
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 25
    for rec in records:
        assert set(rec) == {"env", "seed", "index", "text", "grid", "masks", "path", "moves"}
        assert set(rec["text"]) == {"agent0", "agent1"}
        grid = [[ch == "." for ch in row] for row in rec["grid"]]
        assert len(grid) == 6 and all(len(row) == 6 for row in rec["grid"])
        assert all(set(row) <= {"#", "."} for row in rec["grid"])
        a, b = np.array(rec["masks"])
        assert a.sum() == b.sum() == 18 and (a + b == 1).all()
        paths = simple_paths(grid)
        assert len(paths) == 1 and [list(p) for p in paths[0]] == rec["path"]
        cell = (0, 0)
        for ch in rec["moves"]:
            cell = (cell[0] + MOVES[ch][0], cell[1] + MOVES[ch][1])
        assert cell == (5, 5) and len(rec["moves"]) == len(rec["path"]) - 1
    with pytest.raises(KeyError, match="maze/split-6x6"):
        maze.export_instances("maze/split-9x9", 1, 0)


def test_success_by_round_uses_the_decision_after_each_round(mazes):
    m, _ = mazes
    sub = m.subset(slice(0, 8))
    oracle = _solo_oracle()
    full = np.where(sub.open_, text.OPEN, text.WALL)

    def always_down(tokens):  # agent 0 alone: a fixed guess
        return np.tile(np.eye(4)[0], (len(tokens), 1))

    def informed(tokens):  # agent 1: knows the maze (side channel by row), reads '@' from its view
        here = np.argmax(tokens[:, :36] == text.AT, axis=1)
        solo = full.copy()
        solo[np.arange(len(here)), here] = text.AT
        return oracle(solo)

    r = success.success_by_round(sub, {0: always_down, 1: informed}, 2, _one_hot)
    # every path needs a right move, so deciding after round 1 fails at the first 'r'
    first_r = np.argmax(sub.moves == 1, axis=1)
    assert r["maze_success"] == [0.0, 1.0]
    assert r["step_accuracy"][1] == 1.0
    assert r["step_accuracy"][0] == pytest.approx(first_r.sum() / (first_r + 1).sum())


def test_env_and_dataset_builder_draw_the_same_instances():
    key = jax.random.key(11)
    _, state = jax.jit(MazeEnv().reset)(key)
    built, _ = text.make_mazes(key, 1, chunk=maze.env.DRAWS_PER_TRY)
    np.testing.assert_array_equal(built.open_[0], state.open_)
    np.testing.assert_array_equal(built.masks[0], state.masks)
    np.testing.assert_array_equal(built.moves[0, : built.n_moves[0]],
                                  state.moves[: int(state.n_moves)])
