"""Maze (the vanilla KTANE Bomb Defusal Manual, Mazes): walk the light to the goal through an unseen
maze.

State: ``maze`` (0–8; the Defuser sees only its two green markers), ``light`` and ``goal``
(cells ``row * 6 + col``, 0-based from the top left). Targets: ``[A]`` up, ``[B]`` down,
``[C]`` left, ``[D]`` right. A move into a wall (the border included) is a strike and the
light stays; reaching the goal solves the module.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.draw import randint, uniforms
from jaxcollab.envs.ktane.modules.base import PRESS, Layout, ModuleType, view_tokens

N = T.MAZE_SIZE
N_CELLS = N * N
LAYOUT = Layout({"maze": (), "light": (), "goal": ()})
_FAR = N_CELLS  # larger than any path length


def neighbour(cell: jax.Array) -> jax.Array:
    """int32 ``[..., 4]`` cell reached by each move from ``cell`` (clipped at the border)."""
    row, col = cell // N, cell % N
    step = jnp.asarray(T.MAZE_STEP)
    r = jnp.clip(row[..., None] + step[:, 1], 0, N - 1)
    c = jnp.clip(col[..., None] + step[:, 0], 0, N - 1)
    return (r * N + c).astype(jnp.int32)


def distances(walls: jax.Array, goal: jax.Array) -> jax.Array:
    """int32 ``[36]`` moves from each cell to ``goal`` in a maze with ``walls[6, 6, 4]``
    (breadth-first, as 35 rounds of relaxation; ``36`` where unreachable)."""
    cells = jnp.arange(N_CELLS)
    nxt, open_ = neighbour(cells), ~walls.reshape(N_CELLS, 4)

    def relax(_, d):
        return jnp.minimum(d, jnp.min(jnp.where(open_, d[nxt] + 1, _FAR), axis=1))

    start = jnp.where(cells == goal, 0, _FAR)
    return jax.lax.fori_loop(0, N_CELLS - 1, relax, start)


def generate(key, facts, rules):
    """A uniform maze and light; the goal uniform among cells not touching the light's
    (not the light's cell or any of its 8 neighbours)."""
    u = uniforms(key, 2 + N_CELLS)
    light = randint(u[1], 0, N_CELLS)
    cells = jnp.arange(N_CELLS)
    near = (jnp.abs(cells // N - light // N) <= 1) & (jnp.abs(cells % N - light % N) <= 1)
    goal = jnp.argmax(jnp.where(near, -1.0, u[2:])).astype(jnp.int32)
    n_mazes = rules.maze_walls.shape[0]
    return {"maze": randint(u[0], 0, n_mazes), "light": light, "goal": goal}


def act(key, m, verb, target, ctx):
    """PRESS a direction: through an opening the light moves (solving at the goal); into a
    wall it strikes and stays."""
    valid = verb == PRESS
    row, col = m["light"] // N, m["light"] % N
    wall = ctx.rules.maze_walls[m["maze"], row, col, target]
    light = jnp.where(valid & ~wall, neighbour(m["light"])[target], m["light"])
    return dict(m, light=light), valid & wall, valid & ~wall & (light == m["goal"]), valid


def oracle(m, ctx):
    """A move along a shortest path to the goal (int32 scalars)."""
    walls = ctx.rules.maze_walls[m["maze"]]
    d = distances(walls, m["goal"])
    row, col = m["light"] // N, m["light"] % N
    cost = jnp.where(walls[row, col], _FAR + 1, d[neighbour(m["light"])])
    return jnp.int32(PRESS), jnp.argmin(cost).astype(jnp.int32)


def _cell(cell):
    """Tokens ``col row`` (1-based) of a cell."""
    return jnp.asarray(V.DIGIT)[jnp.stack([cell % N, cell // N]) + 1]


def view(m, rules):
    """``markers c r c r ; light c r ; goal c r ; [A] up [B] down [C] left [D] right``
    (columns and rows 1-based from the top left)."""
    markers = rules.maze_markers[m["maze"]]  # [2, (col, row)] 0-based
    buttons = jnp.stack([jnp.asarray(V.LABEL[:4]), jnp.asarray(V.toks(T.MAZE_MOVES))], 1)
    return view_tokens(
        [
            V.tok("markers"),
            jnp.asarray(V.DIGIT)[markers.reshape(-1) + 1],
            V.tok(";"),
            V.tok("light"),
            _cell(m["light"]),
            V.tok(";"),
            V.tok("goal"),
            _cell(m["goal"]),
            V.tok(";"),
            buttons.reshape(-1),
        ]
    )


def describe(m, rules):
    """Host-side JSON-ready dict of the module (numpy fields in; see the export schema);
    cells are ``[col, row]``, 1-based from the top left."""
    cell = lambda c: [int(c) % N + 1, int(c) // N + 1]  # noqa: E731
    maze = int(m["maze"])
    return {
        "maze": maze + 1,
        "markers": [[int(c) + 1, int(r) + 1] for c, r in rules.maze_markers[maze]],
        "light": cell(m["light"]),
        "goal": cell(m["goal"]),
    }


def _drawing(walls) -> list[str]:
    """ASCII drawing of one maze: ``o`` cells, ``|`` and ``---`` walls."""
    lines = ["  +" + "---+" * N]
    for r in range(N):
        row = "  |" + "".join(" o " + ("|" if walls[r, c, 3] else " ") for c in range(N))
        below = "  +" + "".join(("---" if walls[r, c, 1] else "   ") + "+" for c in range(N))
        lines += [row, below]
    return lines


def manual(rules) -> str:
    """The Expert's manual page, written from the rule tables."""
    lines = [
        "MAZE. A 6x6 grid shows a white light, a red goal and two green markers; the walls are",
        "invisible. Find the maze whose markers match (columns and rows counted 1-6 from the",
        "top left), then guide the light to the goal with up, down, left and right. Moving",
        "into a wall, the outer border included, is a strike and the light does not move.",
    ]
    for k, (walls, markers) in enumerate(zip(rules.maze_walls, rules.maze_markers, strict=True), 1):
        marks = " and ".join(f"(col {c + 1}, row {r + 1})" for c, r in markers)
        lines += [f"Maze {k}: markers at {marks}", *_drawing(walls)]
    return "\n".join(lines)


MAZE = ModuleType(
    name="maze",
    title="Maze",
    layout=LAYOUT,
    n_targets=4,
    verbs=(PRESS,),
    generate=generate,
    act=act,
    oracle=oracle,
    view=view,
    describe=describe,
    manual=manual,
)
