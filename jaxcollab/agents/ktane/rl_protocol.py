"""What a learned Keep-Talking protocol tells: the information the Expert's messages carry
about the right action (``results.json`` ``protocol`` of ``train/marl.py``).

Held-out episodes are played with :func:`jaxcollab.rollout` (``trajectory=True``; under
``ppo.rulesets=episode`` each on a ruleset of the held-out pool). At every Expert turn of a
running bomb its message (the tuple of words sent, or *none*) is tabulated against the zoomed
module's next correct ``(verb, target)`` under that episode's rules (read from the hidden
state, :meth:`~jaxcollab.envs.ktane.env.KtaneEnv.module_oracle`, to interpret the code only:
no team sees it). The mutual information of that table, in bits, is the plug-in estimate
(counts as probabilities), with the entropy of the right action as its ceiling.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import jaxcollab
from jaxcollab.core.rollout import Policy
from jaxcollab.envs.ktane import tables as KT
from jaxcollab.envs.ktane.mission import EXPERT
from jaxcollab.envs.ktane.modules.base import MESSAGE
from jaxcollab.marl.information import entropy_bits, mutual_information_bits

NONE = "none"


def message_information(policy: Policy, view, episodes: int = 256, seed: int = 0) -> dict:
    """Play ``episodes`` held-out episodes (``view.episode_table(..., heldout=True)``, episode
    ``i`` on entry ``i % k``) and tabulate the Expert's messages against the right action.

    Returns (JSON-ready) ``{"expert": {"turns" (Expert turns of running bombs), "sent" (those
    with a message), "messages" (column labels: ``none``, then word tuples as ``"3-0"``),
    "actions" (row labels ``"verb:target"``), "table" (rows x columns counts),
    "mutual_information_bits", "word_bits" (:func:`word_bits`), "action_entropy_bits"}}``.
    """
    table = view.episode_table("cycle", heldout=True)
    pick = np.arange(episodes) % jax.tree.leaves(table)[0].shape[0]
    params = jax.tree.map(lambda x: jnp.asarray(x[pick]), table)
    env = view.env
    out = jaxcollab.rollout(env, policy, jaxcollab.episode_keys(seed, episodes), params,
                            batched_params=True, max_steps=view.max_turns, trajectory=True)
    state, actions = out.trajectory["state"], out.trajectory["actions"]
    oracle = jax.jit(jax.vmap(jax.vmap(env.module_oracle), (0, None)))
    verb, target = (np.asarray(a) for a in oracle(state, params))
    turns = np.asarray((state.outcome == KT.RUNNING) & (state.turn % 2 == 1))
    sent = np.asarray(actions[..., EXPERT, 0] == MESSAGE)
    words = np.asarray(actions[..., EXPERT, 2:2 + view.symbols])
    message = [NONE if not s else "-".join(map(str, w)) for s, w in
               zip(sent[turns], words[turns])]
    action = [f"{v}:{t}" for v, t in zip(verb[turns], target[turns])]
    cols, rows = sorted(set(message)), sorted(set(action))
    counts = np.zeros((len(rows), len(cols)), np.int64)
    row = np.searchsorted(rows, action)
    np.add.at(counts, (row, np.searchsorted(cols, message)), 1)
    return {"expert": {"turns": int(turns.sum()), "sent": int(sent[turns].sum()),
                       "messages": cols, "actions": rows, "table": counts.tolist(),
                       "mutual_information_bits": mutual_information_bits(counts),
                       "word_bits": word_bits(row, sent[turns], words[turns]),
                       "action_entropy_bits": entropy_bits(counts.sum(1))}}


def word_bits(action: np.ndarray, sent: np.ndarray, words: np.ndarray) -> list[float]:
    """Bits each word position alone carries about the right action: per position ``j``,
    the mutual information of ``action`` int ``[T]`` (row ids) against word ``j`` of
    ``words`` int ``[T, symbols]`` (any word ids; *none* where not ``sent``, bool ``[T]``).
    With many words a message is nearly unique per turn, and the whole-message plug-in
    estimate then nears the action's entropy whatever the code is; a table of at most
    ``alphabet + 1`` columns is far less biased by the finite sample."""
    out = []
    for w in np.where(sent[:, None], words, -1).T:
        _, col = np.unique(w, return_inverse=True)
        table = np.zeros((action.max(initial=0) + 1, col.max(initial=0) + 1), np.int64)
        np.add.at(table, (action, col), 1)
        out.append(mutual_information_bits(table))
    return out
