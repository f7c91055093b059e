"""Vectorised rejection sampler of split-mask mazes (Narrowing the Collaboration Gap, Probably,
App. E).

A maze is an ``H×W`` grid (6×6 in the paper) whose non-terminal cells are walls independently
with probability ``wall_prob`` (0.3); start (0, 0) and goal (H-1, W-1) are always open. A draw is
accepted iff there is **exactly one simple path** from start to goal.

Acceptance test (exact, fixed shape, no path search). Run BFS from the start and from the goal
at once and record, for every open edge, whether the distance from the start (``d_s``) and from
the goal (``d_t``) grows along it. Call an edge *crossing* when exactly one of them grows. Accept
iff the goal is reachable and the number of crossing edges equals ``L = d_s(goal)``.

Why this is exact. Every edge of a shortest path is crossing, so ``L`` crossing edges means they
are exactly one shortest path ``P`` and every other edge keeps ``δ = d_s − d_t`` constant. A
second simple path would leave ``P`` at ``p_i`` and rejoin it at ``p_j ≠ p_i`` through non-path
edges, but ``δ(p_i) = 2i − L ≠ 2j − L = δ(p_j)``. Conversely, when ``P`` is the only path every
off-path component hangs from a single ``p_i``, where ``d_s`` and ``d_t`` both grow with the
distance to ``p_i``, so no other edge is crossing. Tests confirm the rule against an
independent brute-force count of simple paths. The crossing edges are then the path itself.

Grids are bitboards inside the test: one int32 per row (bit ``j`` = column ``j``, ``W ≤ 15``)
with the batch axis last, so a BFS step is a handful of integer operations per row.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

HEIGHT = WIDTH = 6
WALL_PROB = 0.3  # Narrowing the Collaboration Gap, Probably, App. E
_HALF = 16  # bit offset of the goal search in a packed row
#: The grids the sampler draws: ``MIN_SIDE <= H`` and ``MIN_SIDE <= W <= MAX_WIDTH`` (ours: the
#: smallest grid with room for walls; a row's two searches share one int32, 15 bits each).
MIN_SIDE, MAX_WIDTH = 4, _HALF - 1
#: Moves in the order of their characters ``d r u l`` (row and column deltas).
MOVE_CHARS = "drul"
MOVE_DELTAS = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]], np.int32)


def _rows_down(x: jax.Array) -> jax.Array:
    """Row ``r`` of the result is row ``r − 1`` of ``x`` (axis −2); zeros enter at the top."""
    return jnp.concatenate([jnp.zeros_like(x[..., :1, :]), x[..., :-1, :]], axis=-2)


def _rows_up(x: jax.Array) -> jax.Array:
    """Row ``r`` of the result is row ``r + 1`` of ``x`` (axis −2); zeros enter at the bottom."""
    return jnp.concatenate([x[..., 1:, :], jnp.zeros_like(x[..., :1, :])], axis=-2)


def _to_bits(open_: jax.Array) -> jax.Array:
    """bool ``[B, H, W]`` → int32 row bitboards ``[H, B]`` (bit ``j`` = column ``j``)."""
    weights = jnp.left_shift(1, jnp.arange(open_.shape[-1], dtype=jnp.int32))
    return jnp.moveaxis((open_.astype(jnp.int32) * weights).sum(-1), 0, -1)


def _from_bits(bits: jax.Array, width: int) -> jax.Array:
    """int32 ``[H, B]`` row bitboards → bool ``[B, H, W]``."""
    cols = (jnp.moveaxis(bits, -1, 0)[..., None] >> jnp.arange(width, dtype=jnp.int32)) & 1
    return cols.astype(bool)


def _crossing(rows: jax.Array, width: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Crossing edges of row bitboards ``rows`` int32 ``[H, B]`` (module docstring).

    Both searches share one int32 per row: the start's BFS in bits 0–15, the goal's in 16–31.

    Returns ``(right, down, length)``: int32 ``[H, B]`` bitboards (bit ``j`` of row ``r`` in
    ``right`` is the edge ``(r, j)–(r, j+1)``, in ``down`` the edge ``(r, j)–(r+1, j)``) and
    int32 ``[B]`` the start→goal BFS distance, −1 if the goal is unreachable.
    """
    h, b = rows.shape
    goal_bit = 1 << (width - 1)
    both = rows | (rows << _HALF)
    front = jnp.zeros((h, b), jnp.int32).at[0].set(1).at[-1].set(goal_bit << _HALF) & both
    zeros = jnp.zeros_like(front)

    def step(c):
        front, reach, right, down, length, k = c
        grow = front | (front << 1) | (front >> 1) | _rows_down(front) | _rows_up(front)
        new = grow & both & ~reach
        right = right | (front & (new >> 1))  # distance grows from (r, j) to (r, j+1)
        down = down | (front & _rows_up(new))  # distance grows from (r, j) to (r+1, j)
        hit = (length < 0) & ((new[-1] & goal_bit) != 0)
        return new, reach | new, right, down, jnp.where(hit, k + 1, length), k + 1

    init = (front, front, zeros, zeros, jnp.full((b,), -1, jnp.int32), jnp.int32(0))
    _, _, right, down, length, _ = jax.lax.while_loop(lambda c: jnp.any(c[0] != 0), step, init)
    low = (1 << _HALF) - 1
    right = (right ^ (right >> _HALF)) & low & rows & (rows >> 1)
    down = (down ^ (down >> _HALF)) & low & rows & _rows_up(rows)
    return right, down, length


def _accept(rows: jax.Array, width: int) -> jax.Array:
    right, down, length = _crossing(rows, width)
    count = jax.lax.population_count(right).sum(0) + jax.lax.population_count(down).sum(0)
    return (length >= 0) & (count == length)


@jax.jit
def unique_path(open_: jax.Array) -> jax.Array:
    """Whether each grid has exactly one simple start→goal path (module docstring).

    Args:
        open_: bool ``[B, H, W]`` (True = open), ``W ≤ 15``; start ``(0, 0)`` and goal
            ``(H-1, W-1)`` are taken as they are (the sampler always opens them).

    Returns:
        bool ``[B]``.
    """
    open_ = jnp.asarray(open_, bool)
    return _accept(_to_bits(open_), open_.shape[-1])


def _corners(shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices of the six cells next to start and goal, and of all other inner cells."""
    h, w = shape
    corner = np.array([1, w, w + 1, (h - 2) * w + w - 1, (h - 1) * w + w - 2, (h - 2) * w + w - 2])
    rest = np.setdiff1d(np.arange(1, h * w - 1), corner)
    return corner, rest


def _doomed(corner_open: jax.Array) -> jax.Array:
    """Draws that cannot have a unique path, from the six corner cells alone (bool ``[n, 6]``).

    A terminal with both neighbours walled has no path. A terminal whose 2×2 corner block is
    all open lies on a 4-cycle through both of its edges; every path uses one of them, so a
    second path exists.
    """
    s, t = corner_open[:, :3], corner_open[:, 3:]
    bad = lambda c: ~(c[:, 0] | c[:, 1]) | c.all(-1)  # noqa: E731
    return bad(s) | bad(t)


def _open_cells(key: jax.Array, n: int, wall_prob: float) -> jax.Array:
    """bool ``[n, m]`` i.i.d. open cells: 32 random bits per cell against ``wall_prob·2³²``."""
    threshold = np.uint32(min(round(wall_prob * 2**32), 2**32 - 1))
    return jax.random.bits(key, n, jnp.uint32) >= threshold


@partial(jax.jit, static_argnames=("n", "wall_prob", "shape"))
def draw_and_check(key: jax.Array, n: int, wall_prob: float = WALL_PROB, shape=(HEIGHT, WIDTH)):
    """One rejection round over ``n`` candidate grids (paper, App. E: walls i.i.d. with
    ``wall_prob``).

    The six cells next to start and goal are drawn first; candidates that :func:`_doomed` rules
    out are dropped, the survivors are packed into the first ``capacity = 3n/8`` slots
    (about 32% survive at ``wall_prob`` = 0.3; any excess is dropped in index order without
    looking at it, which keeps the sample exact) and only then get their other cells.

    Returns:
        ``(open_, accept)``: bool ``[capacity, H, W]`` grids and bool ``[capacity]`` whether each
        is a filled slot that passes :func:`unique_path`. Compiled once per
        ``(n, wall_prob, shape)``.
    """
    h, w = shape
    corner, rest = _corners(shape)
    capacity = 3 * n // 8
    k_corner, k_rest = jax.random.split(key)
    corner_open = _open_cells(k_corner, (n, corner.size), wall_prob)
    keep = ~_doomed(corner_open)
    (idx,) = jnp.nonzero(keep, size=capacity, fill_value=0)
    filled = jnp.arange(capacity) < keep.sum()
    flat = jnp.ones((capacity, h * w), bool)
    flat = flat.at[:, corner].set(corner_open[idx])
    flat = flat.at[:, rest].set(_open_cells(k_rest, (capacity, rest.size), wall_prob))
    open_ = flat.reshape(capacity, h, w)
    return open_, filled & unique_path(open_)


def sample_mazes(
    key: jax.Array,
    n: int,
    wall_prob: float = WALL_PROB,
    shape: tuple[int, int] = (HEIGHT, WIDTH),
    chunk: int = 1 << 14,
) -> tuple[np.ndarray, int, int]:
    """Rejection-sample ``n`` mazes with exactly one simple path (host loop over chunks).

    Round ``i`` uses ``fold_in(key, i)``, so the result depends on ``key`` and ``chunk``.

    Args:
        key: PRNG key.
        n: number of accepted mazes wanted (≥ 1).
        wall_prob: probability that an inner cell is a wall, in ``[0, 1)``.
        shape: ``(H, W)`` with ``4 ≤ H`` and ``4 ≤ W ≤ 15``.
        chunk: candidates drawn per round (≥ 8).

    Returns:
        ``(open_, accepted, draws)``: bool ``[n, H, W]`` (True = open; the first ``n`` accepted),
        the number accepted over all rounds (≥ n) and the number of candidates drawn; the
        acceptance rate is ``accepted / draws``.

    Raises:
        ValueError: naming the bad argument.
    """
    h, w = shape
    if (n < 1 or chunk < 8 or not 0 <= wall_prob < 1 or h < MIN_SIDE
            or not MIN_SIDE <= w <= MAX_WIDTH):
        raise ValueError(
            f"need n >= 1 (got {n}), chunk >= 8 (got {chunk}), 0 <= wall_prob < 1 (got "
            f"{wall_prob}) and shape (H, W) with H >= {MIN_SIDE}, {MIN_SIDE} <= W <= "
            f"{MAX_WIDTH} (got {shape})"
        )
    found, total, i = [], 0, 0
    while total < n:
        open_, accept = jax.device_get(
            draw_and_check(jax.random.fold_in(key, i), chunk, float(wall_prob), tuple(shape))
        )
        found.append(open_[accept])
        total += int(accept.sum())
        i += 1
    return np.concatenate(found)[:n], total, i * chunk


def _previous(x: jax.Array, axis: int) -> jax.Array:
    """``y[i] = x[i − 1]`` along ``axis``, False at ``i = 0`` (edge bits seen from the far cell)."""
    first = jax.lax.slice_in_dim(x, 0, 1, axis=axis)
    rest = jax.lax.slice_in_dim(x, 0, x.shape[axis] - 1, axis=axis)
    return jnp.concatenate([jnp.zeros_like(first), rest], axis=axis)


@jax.jit
def path_of(open_: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The start→goal path of accepted grids.

    Args:
        open_: bool ``[B, H, W]`` of grids that passed :func:`unique_path` (other grids give
            meaningless paths).

    Returns:
        ``(moves, n_moves)``: int32 ``[B, H·W − 1]`` move ids (indices into :data:`MOVE_CHARS`)
        from start to goal, padded with −1; int32 ``[B]`` the number of moves.
    """
    b, h, w = open_.shape
    right, down, length = _crossing(_to_bits(open_), w)
    right, down = _from_bits(right, w), _from_bits(down, w)  # [B, H, W]
    # exits[b, cell, move]: the path uses the edge leaving ``cell`` by ``move`` (d r u l)
    exits = jnp.stack([down, right, _previous(down, 1), _previous(right, 2)], -1).reshape(
        b, h * w, 4
    )
    step = jnp.asarray(MOVE_DELTAS @ np.array([w, 1]), jnp.int32)  # flat index change per move

    def walk(exits_b, n):
        def body(carry, i):
            cell, back = carry
            options = exits_b[cell] & (jnp.arange(4) != back)
            move = jnp.where(i < n, jnp.argmax(options), -1)
            nxt = jnp.where(i < n, cell + step[move], cell)
            return (nxt, (move + 2) % 4), move

        return jax.lax.scan(body, (jnp.int32(0), jnp.int32(-1)), jnp.arange(h * w - 1))[1]

    return jax.vmap(walk)(exits, length), length
