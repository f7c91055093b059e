"""Maze renderings, examples and the chunked dataset builder (Narrowing the
Collaboration Gap, Probably, App. E).

Everything a model reads is a string over :data:`VOCAB`; token ids are indices into it, so
``decode(tokens)`` is the exact text. An agent's view is its masked grid, row-major, one
character per cell: ``#`` wall, ``.`` open, ``?`` unseen, with ``@`` on the current position
(always shown: both agents know where the team stands). The *solo* view is the full maze with
``@``. An example is a view, ``=``, then the next move in ``d r u l``; a maze whose path has ℓ
moves gives ℓ examples, one per position along the path.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.maze.generator import (
    HEIGHT,
    MOVE_CHARS,
    WALL_PROB,
    WIDTH,
    path_of,
    sample_mazes,
)

#: Character vocabulary of maze strings (views, messages, answer); a token id is an index.
VOCAB = "#.?@=|" + MOVE_CHARS + "0123456789"
WALL, OPEN, UNSEEN, AT, ANSWER, SEP = (VOCAB.index(c) for c in "#.?@=|")
MOVE_TOKENS = np.array([VOCAB.index(c) for c in MOVE_CHARS], np.int32)
N_AGENTS = 2
SOLO = N_AGENTS  # role index of the full-maze view in :func:`views`


def sample_masks(key: jax.Array, n: int, n_cells: int = HEIGHT * WIDTH) -> jax.Array:
    """Complementary random masks, bool ``[n, 2, n_cells]``: agent 0 sees a uniformly random
    half of the cells (``n_cells // 2``), agent 1 the rest (paper, App. E: 18/18 on a 6×6 grid).

    Raises:
        ValueError: ``n_cells`` odd.
    """
    if n_cells % 2:
        raise ValueError(f"n_cells={n_cells} must be even to split the cells 50/50")
    rank = jnp.argsort(jnp.argsort(jax.random.uniform(key, (n, n_cells)), axis=-1), axis=-1)
    first = rank < n_cells // 2
    return jnp.stack([first, ~first], axis=1)


def views(open_flat: jax.Array, masks: jax.Array, pos: jax.Array) -> jax.Array:
    """Each role's view tokens: the two masked grids and the solo (full) grid.

    Args:
        open_flat: bool ``[..., C]`` open cells, row-major (``C = H·W``).
        masks: bool ``[..., 2, C]`` cells each agent sees.
        pos: int ``[...]`` flat index of the current position.

    Returns:
        int32 ``[..., 3, C]``: roles 0 and 1 (agents), 2 = :data:`SOLO` (full maze).
    """
    grid = jnp.where(open_flat, OPEN, WALL)[..., None, :]
    seen = jnp.concatenate([masks, jnp.ones_like(masks[..., :1, :])], axis=-2)
    tokens = jnp.where(seen, grid, UNSEEN)
    here = jnp.arange(open_flat.shape[-1]) == jnp.asarray(pos)[..., None, None]
    return jnp.where(here, AT, tokens).astype(jnp.int32)


def positions(moves: jax.Array, n_cols: int = WIDTH) -> jax.Array:
    """Flat cell index before each move: int ``[..., T]`` moves (−1 = padding) → int32
    ``[..., T]`` (start at 0; padding repeats the last cell)."""
    step = jnp.asarray(np.array([n_cols, 1, -n_cols, -1]), jnp.int32)
    delta = jnp.where(moves >= 0, step[jnp.maximum(moves, 0)], 0)
    return jnp.cumsum(delta, axis=-1) - delta


def decode(tokens) -> str:
    """Token ids (any int sequence) → the exact string over :data:`VOCAB`."""
    return "".join(VOCAB[int(t)] for t in np.asarray(tokens).reshape(-1))


def encode(text: str) -> np.ndarray:
    """String over :data:`VOCAB` → int32 ids. Raises ValueError naming a foreign character."""
    bad = [c for c in text if c not in VOCAB]
    if bad:
        raise ValueError(f"character {bad[0]!r} is not in the maze vocabulary {VOCAB!r}")
    return np.array([VOCAB.index(c) for c in text], np.int32)


@dataclasses.dataclass
class MazeSet:
    """Host-side mazes and their examples.

    Attributes:
        open_: bool ``[M, C]`` open cells, row-major (``C = H·W``).
        masks: bool ``[M, 2, C]`` complementary masks.
        moves: int8 ``[M, C − 1]`` path move ids (:data:`MOVE_CHARS`), −1 padded.
        n_moves: int32 ``[M]`` path length in moves.
        shape: ``(H, W)``.
    """

    open_: np.ndarray
    masks: np.ndarray
    moves: np.ndarray
    n_moves: np.ndarray
    shape: tuple[int, int] = (HEIGHT, WIDTH)

    def __len__(self) -> int:
        return len(self.n_moves)

    def subset(self, idx) -> MazeSet:
        """The mazes ``idx`` (slice or index array)."""
        return MazeSet(
            self.open_[idx], self.masks[idx], self.moves[idx], self.n_moves[idx], self.shape
        )

    def examples(self) -> dict[str, np.ndarray]:
        """One example per path step, in maze order.

        Returns a dict of int32 ``[N]`` arrays, ``N = Σ n_moves``: ``maze`` (index), ``step``
        (0-based), ``pos`` (flat cell before the move), ``label`` (move id).
        """
        maze = np.repeat(np.arange(len(self)), self.n_moves).astype(np.int32)
        first = np.cumsum(self.n_moves) - self.n_moves
        step = (np.arange(len(maze)) - first[maze]).astype(np.int32)
        pos = np.asarray(positions(jnp.asarray(self.moves, jnp.int32), self.shape[1]))
        return {
            "maze": maze,
            "step": step,
            "pos": pos[maze, step],
            "label": self.moves[maze, step].astype(np.int32),
        }

    def views(self, chunk: int = 1 << 16) -> np.ndarray:
        """uint8 ``[N, 3, C]`` view tokens of every example (roles 0, 1 and :data:`SOLO`)."""
        ex = self.examples()
        out = np.empty((len(ex["maze"]), 3, self.open_.shape[1]), np.uint8)
        for start in range(0, len(out), chunk):
            m, p = ex["maze"][start : start + chunk], ex["pos"][start : start + chunk]
            out[start : start + chunk] = np.asarray(_views(self.open_[m], self.masks[m], p))
        return out

    def strings(self, role: int) -> list[str]:
        """Every example as text: role's view, ``=``, the move (paper, App. E rendering)."""
        ex = self.examples()
        table = np.array(list(VOCAB))
        body = table[self.views()[:, role]]
        return [
            "".join(row) + "=" + MOVE_CHARS[lab] for row, lab in zip(body, ex["label"], strict=True)
        ]


_views = jax.jit(views)


def make_mazes(
    key: jax.Array,
    n: int,
    wall_prob: float = WALL_PROB,
    shape: tuple[int, int] = (HEIGHT, WIDTH),
    chunk: int = 1 << 14,
) -> tuple[MazeSet, dict[str, float]]:
    """Sample ``n`` mazes with their paths and masks.

    Returns ``(mazes, stats)`` with ``stats = {"accepted", "draws", "acceptance_rate"}``.
    Raises ValueError on bad arguments (see :func:`~.generator.sample_mazes`).
    """
    k_maze, k_mask = jax.random.split(key)
    open_, accepted, draws = sample_mazes(k_maze, n, wall_prob, shape, chunk)
    moves, n_moves = [], []
    for start in range(0, n, chunk):  # the last chunk is padded so one compile serves all
        part = np.zeros((chunk, *shape), bool)
        part[: min(chunk, n - start)] = open_[start : start + chunk]
        m, k = jax.device_get(path_of(jnp.asarray(part)))
        moves.append(m[: n - start].astype(np.int8))
        n_moves.append(k[: n - start])
    masks = np.asarray(sample_masks(k_mask, n, shape[0] * shape[1]))
    mazes = MazeSet(
        open_.reshape(n, -1), masks, np.concatenate(moves), np.concatenate(n_moves), tuple(shape)
    )
    return mazes, {"accepted": accepted, "draws": draws, "acceptance_rate": accepted / draws}


def build_dataset(
    key: jax.Array,
    n_examples: int,
    test_fraction: float = 0.1,
    wall_prob: float = WALL_PROB,
    shape: tuple[int, int] = (HEIGHT, WIDTH),
) -> tuple[MazeSet, MazeSet, dict[str, float]]:
    """Mazes giving at least ``n_examples`` examples, split by maze into (train, test).

    Paper scale is 2,000,000 examples, 90/10 (paper, App. E). The split is by whole mazes (maze
    success needs every step of a test maze) at the first maze where the cumulative example
    count reaches ``1 − test_fraction`` of the total, so the example split is 90/10 to within
    one maze.

    Returns:
        ``(train, test, stats)``; stats from :func:`make_mazes`.

    Raises:
        ValueError: ``n_examples < 2`` or ``test_fraction`` not in (0, 1).
    """
    if n_examples < 2 or not 0 < test_fraction < 1:
        raise ValueError(
            f"need n_examples >= 2 (got {n_examples}) and 0 < test_fraction < 1 "
            f"(got {test_fraction})"
        )
    h, w = shape
    n_mazes = int(n_examples / (h + w - 2)) + 2  # every path has at least h + w − 2 moves
    mazes, stats = make_mazes(key, n_mazes, wall_prob, shape)
    total = np.cumsum(mazes.n_moves)
    n_used = int(np.searchsorted(total, n_examples)) + 1
    cut = int(np.searchsorted(total, (1 - test_fraction) * total[n_used - 1])) + 1
    cut = min(max(cut, 1), n_used - 1)
    return mazes.subset(slice(0, cut)), mazes.subset(slice(cut, n_used)), stats
