"""IPPO and MAPPO with recurrent (GRU) policies on an RL view
(:class:`~jaxcollab.marl.views.View`, the family's: a bomb variant's, a Keep-Talking module's),
the whole update under one ``jit``: rollout through the environment's vmapped ``reset`` /
``step`` / ``observe`` (auto-reset), GAE, PPO epochs over minibatches of episodes, seeds
vmapped; optionally gradients through the channel (DIAL) and an auxiliary answer-prediction
loss (:class:`PPOConfig`).

One environment step is one turn (only the acting role's row of the joint action is read by
the environment), so each step runs the acting agent's policy on its own observation vector and
advances that agent's GRU state; every agent keeps its own state, reset when the episode ends.
The team reward drives one GAE over the team's turns (each agent's value estimates the team
return from its own view, IPPO; or one centralised critic over all agents' views, MAPPO). PPO:
Schulman et al. (2017), "Proximal Policy Optimization Algorithms", eq. 7 and 11; GAE: Schulman
et al. (2016), "High-Dimensional Continuous Control Using Generalized Advantage Estimation";
IPPO / MAPPO: Yu et al. (2022), "The Surprising Effectiveness of PPO in Cooperative
Multi-Agent Games".
"""

from __future__ import annotations

import functools
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import NamedSharding, PartitionSpec

from jaxcollab.core.errors import ConfigValueError
from jaxcollab.core.rollout import Policy, policy, rollout
from jaxcollab.io.schema import PPOConfig
from jaxcollab.marl import networks as nn
from jaxcollab.marl.views import NOBODY, View, view_of
from jaxcollab.scale.mesh import DATA, data_mesh


@chex.dataclass
class TrainState:
    """Everything one seed's training carries (leading seed axis when vmapped)."""

    params: Any
    opt_state: Any
    env_state: Any
    env_params: Any       # BombParams [B]: each episode's variant and turn order
    enc: jax.Array        # int32 [B, n_agents, D] observation vectors (view.encode)
    turn: jax.Array       # int32 [B]: turns played in each episode
    hidden: jax.Array     # float32 [B, 3, H]
    relabel: jax.Array    # int32 [B, *Trainer.relabel_shape]: each episode's symbol relabeling
    key: jax.Array
    update: jax.Array     # int32: updates done


def _stack(trees: list):
    """Pytrees stacked on a new leading axis. Initialisation builds seeds and roles one by one
    and stacks them instead of vmapping: a vmapped orthogonal initialiser is one batched QR
    per layer, and on the CPU jaxlib runs a large batched QR by scheduling chunks on the
    intra-op thread pool and blocking a pool thread until they finish; independent layers
    run in parallel, so on a 2-core machine both pool threads could block, each waiting for
    chunks that no thread is left to run (observed: ``Trainer.init`` hung with every thread
    idle in 6 of 6 starts at two seeds). An unbatched QR runs inline."""
    return jax.tree.map(lambda *x: jnp.stack(x), *trees)


def _optimiser(cfg: PPOConfig):
    lr = cfg.lr
    if cfg.anneal_updates:  # optax counts gradient steps: epochs x minibatches per update
        lr = optax.linear_schedule(cfg.lr, 0.0,
                                   cfg.anneal_updates * cfg.epochs * cfg.minibatches)
    return optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(lr, eps=1e-5))


class Trainer:
    """IPPO / MAPPO for one :class:`PPOConfig`; :meth:`train` is the jitted update loop."""

    def __init__(self, cfg: PPOConfig, view: View | None = None):
        self.cfg = cfg
        try:
            self.view = view or view_of(cfg.env, cfg.symbols, cfg.alphabet, cfg.rulesets)
        except ValueError as e:
            raise ConfigValueError("ppo.rulesets", cfg.rulesets, f"a ruleset mode of {cfg.env} "
                                   f"({e})") from e
        self.env = self.view.env
        self.n = self.view.n_agents
        try:
            self.orders = self.view.episode_table(cfg.turn_order)
            self.heldout = self.view.episode_table(cfg.turn_order, heldout=True)
        except ValueError as e:
            raise ConfigValueError("ppo.turn_order", cfg.turn_order,
                                   f"a turn order of {cfg.env} ({e})") from e
        self.roles = 1 if cfg.shared else self.n
        if cfg.dial and self.view.inbox is None:
            raise ConfigValueError("ppo.dial", cfg.dial, f"false on {cfg.env}: dial needs a "
                                   "view with a symbol inbox (the bomb families)")
        if cfg.other_play and self.view.inbox is None and self.n != 2:
            raise ConfigValueError("ppo.other_play", cfg.other_play, f"false on {cfg.env}: "
                                   "other-play relabels the words of a two-role view or the "
                                   "symbols of a broadcast view's inbox (Keep Talking, bomb)")

    def episode_params(self, key, n: int):
        """Params of ``n`` new episodes: the variant under turn orders drawn uniformly from
        the configured ones (:attr:`PPOConfig.turn_order`; Keep Talking under
        ``rulesets=episode``: rulesets drawn from the training pool)."""
        k = jax.tree.leaves(self.orders)[0].shape[0]
        pick = jax.random.randint(key, (n,), 0, k) if k > 1 else jnp.zeros(n, jnp.int32)
        return jax.tree.map(lambda x: jnp.asarray(x)[pick], self.orders)

    def heldout_params(self, n: int):
        """Params of ``n`` held-out episodes: turn order ``i % k`` of the configured ones
        (the bank protocol's ``TURN_ORDERS[i % 6]`` under ``"cycle"``; Keep Talking under
        ``rulesets=episode``: ruleset ``i % k`` of the held-out pool)."""
        pick = np.arange(n) % jax.tree.leaves(self.heldout)[0].shape[0]
        return jax.tree.map(lambda x: jnp.asarray(x[pick]), self.heldout)

    # ---- parameters and the acting agent ---------------------------------------------------

    def init_params(self, key) -> dict:
        """Fresh parameters: per-role actors stacked on a leading role axis (and MAPPO's
        critic). Roles are initialised one by one, not under ``vmap``: see :func:`_stack`."""
        v, c = self.view, self.cfg
        ka, kc = jax.random.split(key)
        actor = _stack([nn.actor_init(k, v.vocab_size, v.obs_size, v.n_logits, c.hidden,
                                      c.embed, sum(v.answer_sizes))
                        for k in jax.random.split(ka, self.roles)])
        params = {"actor": actor}
        if c.algo == "mappo":
            params["critic"] = nn.critic_init(kc, v.vocab_size, v.obs_size, self.n, c.hidden,
                                              c.embed)
        return params

    def act(self, params, enc, actor, hidden):
        """Acting agent's forward pass for one episode: ``enc`` int32 ``[3, D]``, ``actor``
        role, ``hidden`` ``[3, H]`` → (per-head log-probs, value, new ``hidden``)."""
        pre = nn.torso_input(params["actor"], enc[actor], actor % self.roles)
        logp, value, hidden = self._act_from(params, actor, hidden, pre,
                                             self.view.action_mask(enc, actor))
        if self.cfg.algo == "mappo":
            value = nn.critic_apply(params["critic"], enc)
        return logp, value, hidden

    def _act_from(self, params, actor, hidden, pre, mask):
        """:meth:`act` from the torso's pre-activation ``pre`` ``[H]`` and the actor's
        ``view.action_mask`` (IPPO's value). The actor's row of ``hidden`` is read and
        written by masks, not an index: their gradient is dense (no scatter)."""
        me = (jnp.arange(self.n) == actor)[:, None]
        h = jnp.where(me, hidden, 0.0).sum(0)
        logits, value, h = nn.actor_step(params["actor"], pre, h, actor % self.roles)
        logp = nn.head_log_probs(logits, mask, self.view.head_sizes)
        return logp, value, jnp.where(me, h, hidden)

    def joint(self, action, actor):
        """The actor's discrete action ``[n_heads]`` as a joint env action (others idle)."""
        rows = jnp.where(jnp.arange(self.n)[:, None] == actor, action, 0)
        return self.view.to_env(rows)

    @property
    def relabel_shape(self) -> tuple[int, ...]:
        """One episode's relabeling (:meth:`new_relabel`): ``(alphabet,)``, the Expert's
        permutation of the words, on a two-role view; ``(n_agents, 2, alphabet)``, one
        permutation per sender and channel, on a broadcast view (one with a symbol inbox)."""
        a = self.view.alphabet
        return (a,) if self.view.inbox is None else (self.n, 2, a)

    def new_relabel(self, key, b: int) -> jax.Array:
        """int32 ``[b, *relabel_shape]``: each new episode's symbol relabeling: uniform random
        permutations (each row of the last axis its own) under ``ppo.other_play``, else the
        identity."""
        ident = jnp.broadcast_to(jnp.arange(self.view.alphabet, dtype=jnp.int32),
                                 (b,) + self.relabel_shape)
        if not self.cfg.other_play:
            return ident
        return jax.random.permutation(key, ident, axis=-1, independent=True)

    def relabeled(self, action, actor, relabel):
        """Other-play's channel (Hu et al. 2020, "Other-Play for Zero-Shot Coordination",
        §4): a convention survives only if it survives every relabeling of the symbols, so no
        arbitrary symbol-to-meaning code is learned. ``action`` ``[n_heads]`` of one episode,
        ``relabel`` its ``relabel_shape`` permutations; heads other than the symbols unchanged.

        Two roles (Keep Talking; the words are the heads after the view's first two): the
        Expert plays as its relabeled self ``phi(pi)``, so the words it sends arrive as
        ``relabel[w]`` and the Defuser's words arrive as ``argsort(relabel)[w]`` (what the
        relabeled Expert reads as ``w``).

        A broadcast channel (the bomb: a message to ``everyone`` reaches each teammate as the
        channel allows, so no receiver can be given its own relabeling of it): the symbols
        carry no meaning of their own (speech bytes and gesture ids the environment only
        delivers), so renaming the symbols of one sender on one channel, in its action and in
        every observation that shows them, maps the game onto itself: it is a symmetry in Hu
        et al.'s sense. Playing sender ``s`` as its relabeled self ``phi_s(pi_s)`` renames
        what it sends, so symbol ``w`` arrives as ``relabel[s, ch][w]`` at every receiver alike,
        while the receivers play their own policies, and it reads its own message in its inbox
        back through the inverse, as it chose it (:meth:`_own_as_sent`). One independent
        permutation per sender and channel (the symmetry group is their product) relabels
        every speaker against its listeners at once."""
        if self.view.inbox is None:
            table = jnp.where(actor == 1, relabel, jnp.argsort(relabel))
            return action.at[2:].set(table[action[2:]])
        for ch in range(2):
            at = self._symbol_heads(ch)
            action = action.at[at].set(relabel[actor, ch][action[at]])
        return action

    def _own_as_sent(self, enc, relabel):
        """Observation vectors int32 ``[b, n_agents, obs_size]`` of a broadcast view with each
        sender's own latest message (its inbox shows what it sent) read through the inverse of
        its relabeling ``relabel`` ``[b, n_agents, 2, alphabet]``, as the relabeled sender
        ``phi_s(pi_s)`` of :meth:`relabeled` reads it: as it chose it. Receivers' slots are
        unchanged."""
        slots, tokens = self.view.inbox  # [2, n, symbols] positions, [2, alphabet] tokens
        own = np.arange(self.n)[:, None]
        for ch in range(2):
            shown = enc[:, own, slots[ch]]                                 # [b, n, symbols]
            hit = shown[..., None] == jnp.asarray(tokens[ch])              # [b, n, symbols, A]
            inverse = jnp.argsort(relabel[:, :, ch], -1)                   # [b, n, A]
            chosen = jnp.take_along_axis(inverse, hit.argmax(-1), -1)
            enc = enc.at[:, own, slots[ch]].set(
                jnp.where(hit.any(-1), jnp.asarray(tokens[ch])[chosen], shown))
        return enc

    def _symbol_heads(self, ch: int) -> slice:
        """The action heads of channel ``ch``'s message symbols (a broadcast view)."""
        h = self.view.recipient_head(ch)
        return slice(h + 1, h + 1 + self.cfg.symbols)

    def _factors(self, action):
        """bool ``[..., n_heads]``: the heads of PPO's ratio: the view's relevant heads, less
        the message symbols under ``dial``, which (as in DIAL) learn their meaning only from
        the listeners' gradients through the channel. The entropy bonus covers every relevant
        head, the symbols sent included, so codes do not collapse before they mean anything."""
        rel = self.view.relevant(action)
        if not self.cfg.dial:
            return rel
        symbol = np.zeros(len(self.view.head_sizes), bool)
        for ch in range(2):
            symbol[self._symbol_heads(ch)] = True
        return rel & ~symbol

    # ---- differentiable channel (dial) -----------------------------------------------------

    def _heard(self, enc_row, actor, sent):
        """Straight-through weights of what ``actor`` hears now: for each inbox slot holding
        the symbol its sender last sent (delivered in full), ``p - stop_gradient(p)`` of the
        sender's probabilities for that symbol; zero elsewhere (bounced, blanks, nothing).
        float32 ``[2 * 3 * symbols, alphabet]``, in the order of ``view.inbox``'s slots."""
        probs, symbol = sent  # [2, 3, k, A] float, [2, 3, k] int (-1: not sent)
        slots, tokens = (jnp.asarray(a) for a in self.view.inbox)
        expect = tokens[jnp.arange(2)[:, None, None], jnp.maximum(symbol, 0)]
        other = (jnp.arange(self.n) != actor)[None, :, None]
        match = (symbol >= 0) & (enc_row[slots] == expect) & other
        weights = jnp.where(match[..., None], probs - jax.lax.stop_gradient(probs), 0.0)
        return weights.reshape(-1, self.view.alphabet)

    def _symbol_columns(self) -> np.ndarray:
        """int ``[2, symbols, alphabet]``: the logit columns of each channel's message-symbol
        heads."""
        start = np.cumsum((0,) + self.view.head_sizes)
        return np.stack([[start[i] + np.arange(self.view.head_sizes[i])
                          for i in range(h + 1, h + 1 + self.cfg.symbols)]
                         for h in map(self.view.recipient_head, range(2))])

    def _sent(self, sent, probs, action, actor):
        """``sent`` with the actor's row replaced by this turn's message probabilities
        (``probs`` ``[2, symbols, A]``) and symbols (-1 on a channel it sent nothing on)."""
        old_p, symbol = sent
        new_s = []
        for ch in range(2):
            h = self.view.recipient_head(ch)
            new_s.append(jnp.where(action[h] != NOBODY, action[h + 1:h + 1 + self.cfg.symbols],
                                   -1))
        me = (jnp.arange(self.n) == actor)[None, :, None]
        return (jnp.where(me[..., None], probs[:, None], old_p),
                jnp.where(me, jnp.stack(new_s)[:, None], symbol))

    def _no_messages(self, b: int):
        k, a = self.cfg.symbols, self.view.alphabet
        return (jnp.zeros((b, 2, self.n, k, a), jnp.float32),
                jnp.full((b, 2, self.n, k), -1, jnp.int32))

    # ---- rollout -------------------------------------------------------------------------

    def init_state(self, key) -> TrainState:
        kp, kr, ko, key = jax.random.split(key, 4)
        params = self.init_params(kp)
        env_params = self.episode_params(ko, self.cfg.episodes)
        keys = jax.random.split(kr, self.cfg.episodes)
        obs, env_state = jax.vmap(self.env.reset)(keys, env_params)
        enc = self.view.encode(obs)
        hidden = jnp.zeros((self.cfg.episodes, self.n, self.cfg.hidden), jnp.float32)
        return TrainState(params=params, opt_state=_optimiser(self.cfg).init(params),
                          env_state=env_state, env_params=env_params, enc=enc,
                          turn=jnp.zeros(self.cfg.episodes, jnp.int32), hidden=hidden,
                          relabel=self.new_relabel(jax.random.fold_in(ko, 1),
                                                   self.cfg.episodes),
                          key=key, update=jnp.int32(0))

    def _env_step(self, params, carry, key):
        """One turn of every episode, with auto-reset: an episode that ends is replaced by a
        fresh one (new instance and turn order). The step's and the reset's observations are
        not used (XLA drops them): one ``observe`` of the state that carries on."""
        env_state, env_params, enc, turn, hidden, relabel = carry
        before = env_state  # the turn's own start (env_state becomes the auto-reset one)
        actor = self.view.actor(enc, turn)
        k_act, k_env, k_reset, k_order = jax.random.split(key, 4)
        logp, value, new_hidden = jax.vmap(self.act, (None, 0, 0, 0))(params, enc, actor, hidden)
        action = nn.sample(k_act, logp)
        old_logp = nn.log_prob(logp, action, self._factors(action))
        sent = jax.vmap(self.relabeled)(action, actor, relabel) if self.cfg.other_play else action
        joint = jax.vmap(self.joint)(sent, actor)
        b = enc.shape[0]
        answer = jax.vmap(self.view.answer)(env_state, env_params)
        _, state, reward, term, trunc, info = jax.vmap(self.env.step)(
            jax.random.split(k_env, b), env_state, joint, env_params)
        done = term | trunc
        fresh_params = self.episode_params(k_order, b)
        _, fresh = jax.vmap(self.env.reset)(jax.random.split(k_reset, b), fresh_params)
        pick = lambda new, old: jnp.where(  # noqa: E731
            done.reshape((b,) + (1,) * (old.ndim - 1)), new, old)
        env_state = jax.tree.map(pick, fresh, state)
        env_params = jax.tree.map(pick, fresh_params, env_params)
        next_relabel = pick(self.new_relabel(jax.random.fold_in(k_order, 1), b), relabel)
        enc2 = self.view.encode(jax.vmap(self.env.observe)(env_state, env_params))
        if self.cfg.other_play and self.view.inbox is not None:
            enc2 = self._own_as_sent(enc2, next_relabel)
        team = self.training_reward(reward[:, 0], before, state)
        new_hidden = jnp.where(done[:, None, None], 0.0, new_hidden)
        record = dict(enc=enc, actor=actor, action=action, logp=old_logp, value=value,
                      answer=answer, reward=team, done=done,
                      defused=done & self.view.success(state))
        if self.cfg.other_play and self.cfg.dial:  # the replay's channel hears the relabeling
            record["relabel"] = relabel
        turn = jnp.where(done, 0, turn + 1)
        return (env_state, env_params, enc2, turn, new_hidden, next_relabel), record

    def training_reward(self, reward, before, after):
        """The team's training reward float32 ``[b]`` of a turn from the environment's
        ``reward`` ``[b]`` and the states ``before`` and ``after`` it (before auto-reset): a
        wrong action's -1 scaled by ``wrong_penalty``, plus ``progress_reward`` for each
        correct step (``view.progress``) on a turn that does not win the episode (the winning
        turn keeps the environment's +1). Success is always the environment's ending."""
        c = self.cfg
        team = jnp.where(reward < 0, c.wrong_penalty * reward, reward)
        steps = jax.vmap(self.view.progress)(after) - jax.vmap(self.view.progress)(before)
        won = jax.vmap(self.view.success)(after)
        return team + jnp.where(won, 0.0, c.progress_reward * steps.astype(jnp.float32))

    def _gae(self, traj, last_value):
        c = self.cfg

        def back(next_, t):
            adv_next, v_next = next_
            keep = 1.0 - t["done"]
            delta = t["reward"] + c.gamma * v_next * keep - t["value"]
            adv = delta + c.gamma * c.gae_lambda * keep * adv_next
            return (adv, t["value"]), adv

        _, adv = jax.lax.scan(back, (jnp.zeros_like(last_value), last_value), traj, reverse=True)
        return adv, adv + traj["value"]

    def _replay(self, params, traj, hidden0):
        """Recompute log-probs, values and entropies along a stored trajectory ``[T, b, ...]``
        from its first GRU state ``hidden0`` ``[b, 3, H]`` (reset where episodes ended); with
        ``dial`` the carry also holds each agent's latest message probabilities, so what a
        listener hears is differentiable in what its speaker sent (in this segment).

        The scan carries only the GRU states and, under ``dial``, the messages; what needs no
        recurrent state (embedding, torso, the GRU's input projection, heads, MAPPO's
        critic) is computed for every turn at once, as large matmuls."""
        p, actor = params["actor"], traj["actor"]
        role = actor % self.roles
        own = jnp.take_along_axis(traj["enc"], actor[..., None, None], -2)[..., 0, :]
        pre = nn.torso_input(p, own, role)  # [T, b, H]
        gx = nn.role_dense(p["gru_x"], jax.nn.relu(pre), role)
        mask = jax.vmap(jax.vmap(self.view.action_mask))(traj["enc"], actor)  # [T, b, logits]
        xs = dict(gx=gx, actor=actor, done=traj["done"])
        if self.cfg.dial:
            xs.update(enc=traj["enc"], action=traj["action"], live=pre > 0,
                      symbol_mask=mask[..., self._symbol_columns()])
            if self.cfg.other_play:
                xs.update(relabel=traj["relabel"])
            slots, tokens = self.view.inbox
            ids = np.broadcast_to(tokens[:, None, None, :], slots.shape + tokens.shape[-1:])
            table = nn.heard_table(p, slots.reshape(-1), ids.reshape(-1, tokens.shape[-1]))
            step = functools.partial(self._replay_dial_step, p, table)
            carry = (hidden0, self._no_messages(hidden0.shape[0]))
        else:
            step = lambda c, t: self._replay_step(p, c, t)  # noqa: E731
            carry = hidden0
        _, h = jax.lax.scan(step, carry, xs)  # the actor's new GRU state [T, b, H]
        logits, value, _ = nn.actor_heads(p, h, role)
        logp = nn.head_log_probs(logits, mask, self.view.head_sizes)
        if self.cfg.algo == "mappo":
            value = nn.critic_apply(params["critic"], traj["enc"])
        rel = self._factors(traj["action"])
        aux = nn.aux_logits(p, h, role)
        parts = jnp.split(aux, np.cumsum(self.view.answer_sizes)[:-1], -1)
        ce = sum(-(jax.nn.one_hot(traj["answer"][..., i], x.shape[-1]) *
                   jax.nn.log_softmax(x)).sum(-1) for i, x in enumerate(parts))
        return (nn.log_prob(logp, traj["action"], rel), value,
                nn.entropy(logp, self.view.relevant(traj["action"])), ce)

    def _replay_step(self, p, hidden, t, gx=None):
        """One turn of the replay's GRUs: ``hidden`` ``[b, 3, H]`` → (carry with the actor's
        row advanced and ended episodes reset, the actor's new state ``[b, H]``)."""
        gx = t["gx"] if gx is None else gx
        me = (t["actor"][:, None] == jnp.arange(self.n))[..., None]
        h = jnp.where(me, hidden, 0.0).sum(1)
        role = t["actor"] % self.roles
        h = nn.gru_update(gx, nn.role_dense(p["gru_h"], h, role), h)
        new = jnp.where(me, h[:, None], hidden)
        return jnp.where(t["done"][:, None, None], 0.0, new), h

    def _replay_dial_step(self, p, table, carry, t):
        """:meth:`_replay_step` with the channel: what the actor hears enters its torso as
        :func:`~jaxcollab.marl.networks.heard_input` (zero in value: only its gradient passes,
        through the ReLU's mask into the GRU's input projection), and its message-symbol
        probabilities replace its row of ``sent``."""
        hidden, sent = carry
        role = t["actor"] % self.roles
        weights = jax.vmap(lambda e, a, s: self._heard(e[a], a, s))(t["enc"], t["actor"], sent)
        heard = jnp.where(t["live"], nn.heard_input(table, weights, role), 0.0)
        gru_x = {"w": p["gru_x"]["w"], "b": jnp.zeros_like(p["gru_x"]["b"])}
        hidden, h = self._replay_step(p, hidden, t, t["gx"] + nn.role_dense(gru_x, heard, role))
        cols = self._symbol_columns()
        pi = {"w": p["pi"]["w"][..., cols.reshape(-1)], "b": p["pi"]["b"][..., cols.reshape(-1)]}
        mask = t["symbol_mask"]  # [b, 2, symbols, A]: the symbol heads' view.action_mask
        logits = nn.role_dense(pi, h, role).reshape(mask.shape)
        probs = jnp.exp(jax.nn.log_softmax(jnp.where(mask, logits, nn.NEG), -1))
        action = t["action"]
        if self.cfg.other_play:  # the listeners hear symbol relabel[w] with the speaker's p(w)
            action = jax.vmap(self.relabeled)(action, t["actor"], t["relabel"])
            table = t["relabel"][jnp.arange(probs.shape[0]), t["actor"]]  # [b, 2, A]
            probs = jnp.take_along_axis(probs, jnp.argsort(table, -1)[:, :, None, :], -1)
        sent = jax.vmap(self._sent)(sent, probs, action, t["actor"])
        done = t["done"]
        reset = lambda x, v: jnp.where(  # noqa: E731
            done.reshape(done.shape + (1,) * (x.ndim - 1)), v, x)
        return (hidden, (reset(sent[0], 0.0), reset(sent[1], -1))), h

    # ---- loss and update -----------------------------------------------------------------

    def _loss(self, params, traj, hidden0, adv, target):
        c = self.cfg
        logp, value, ent, aux = self._replay(params, traj, hidden0)
        ratio = jnp.exp(logp - traj["logp"])
        norm = (adv - adv.mean()) / (adv.std() + 1e-8)
        pg = -jnp.minimum(ratio * norm, jnp.clip(ratio, 1 - c.clip, 1 + c.clip) * norm).mean()
        vf = 0.5 * ((value - target) ** 2).mean()
        ent, aux = ent.mean(), aux.mean()
        loss = pg + c.vf_coef * vf - c.ent_coef * ent + c.aux_coef * aux
        return loss, dict(policy_loss=pg, value_loss=vf, entropy=ent, aux_loss=aux)

    def rollout(self, ts: TrainState):
        """``steps`` turns of every episode with the current policy: the carry after them
        (env state, params, observation vectors, GRU state) and the trajectory ``[steps, B]``."""
        return jax.lax.scan(functools.partial(self._env_step, ts.params),
                            (ts.env_state, ts.env_params, ts.enc, ts.turn, ts.hidden,
                             ts.relabel),
                            jax.random.split(ts.key, self.cfg.steps))

    def update(self, ts: TrainState) -> tuple[TrainState, dict]:
        """One PPO update for one seed: :meth:`rollout`, GAE, ``epochs`` x ``minibatches``
        gradient steps. Returns the new state and the update's metrics (episodes ended and
        defused in this batch, losses)."""
        c = self.cfg
        key, k_roll, k_perm = jax.random.split(ts.key, 3)
        carry, traj = self.rollout(ts.replace(key=k_roll))
        env_state, env_params, enc, turn, hidden, relabel = carry
        _, last_value, _ = jax.vmap(self.act, (None, 0, 0, 0))(
            ts.params, enc, self.view.actor(enc, turn), hidden)
        adv, target = self._gae(traj, last_value)
        opt = _optimiser(c)
        grad_fn = jax.value_and_grad(self._loss, has_aux=True)

        def minibatch(state, idx):
            params, opt_state = state
            take = lambda x: x[:, idx]  # noqa: E731  (episode axis 1)
            (_, aux), grads = grad_fn(params, jax.tree.map(take, traj), ts.hidden[idx], take(adv),
                                      take(target))
            updates, opt_state = opt.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), aux

        def epoch(state, k):
            perm = jax.random.permutation(k, c.episodes).reshape(c.minibatches, -1)
            return jax.lax.scan(minibatch, state, perm)

        (params, opt_state), aux = jax.lax.scan(epoch, (ts.params, ts.opt_state),
                                                jax.random.split(k_perm, c.epochs))
        metrics = {k: v.mean() for k, v in aux.items()}
        metrics.update(ended=traj["done"].sum(), defused=traj["defused"].sum())
        return TrainState(params=params, opt_state=opt_state, env_state=env_state,
                          env_params=env_params, enc=enc, turn=turn, hidden=hidden,
                          relabel=relabel, key=key, update=ts.update + 1), metrics

    @functools.partial(jax.jit, static_argnums=(0, 2))
    def train(self, ts: TrainState, n_updates: int) -> tuple[TrainState, dict]:
        """``n_updates`` updates of every seed (leading seed axis) under one ``jit``; metrics
        ``[seeds, n_updates]``."""
        return jax.vmap(lambda s: jax.lax.scan(lambda x, _: self.update(x), s, None,
                                               n_updates))(ts)

    def init(self, seed: int) -> TrainState:
        """Training states of ``cfg.seeds`` seeds from ``seed`` (leading seed axis), the
        episode axis sharded over the ``data`` mesh axis."""
        keys = jax.random.split(jax.random.PRNGKey(seed), self.cfg.seeds)
        ts = jax.jit(lambda ks: _stack([self.init_state(k) for k in ks]))(keys)
        mesh = data_mesh()
        replicated = NamedSharding(mesh, PartitionSpec())
        ts = jax.device_put(ts, replicated)  # every leaf placed: later calls see one sharding
        if self.cfg.episodes % mesh.shape[DATA]:
            return ts
        episodes = NamedSharding(mesh, PartitionSpec(None, DATA))
        return ts.replace(**{f: jax.device_put(getattr(ts, f), episodes)
                             for f in ("env_state", "env_params", "enc", "turn", "hidden",
                                    "relabel")})

    # ---- greedy held-out evaluation --------------------------------------------------------

    def greedy_policy(self, params) -> Policy:
        """The greedy team of one seed's ``params`` as a :func:`jaxcollab.rollout` policy: the
        acting role (the view's ``actor`` of the observation and the turns played) plays the
        most likely choice of every head. Its state is the GRU state float32
        ``[n_agents, hidden]`` and the turns played (int32)."""
        view = self.view

        def act(key, obs, carry):
            hidden, turn = carry
            enc = view.encode(obs)
            actor = view.actor(enc, turn)
            logp, _, hidden = self.act(params, enc, actor, hidden)
            return self.joint(nn.greedy(logp), actor), (hidden, turn + 1)

        return policy(act, init=lambda key: (jnp.zeros((self.n, self.cfg.hidden), jnp.float32),
                                             jnp.int32(0)), name="learned")

    @functools.partial(jax.jit, static_argnums=(0,))
    def evaluate(self, params, keys: jax.Array) -> jax.Array:
        """Greedy play (:meth:`greedy_policy`) of one episode per key through
        :func:`jaxcollab.rollout` (keys by the one convention, e.g. ``episode_keys(seed, n)``;
        turn orders :meth:`heldout_params`): the fraction that succeeded, per seed of
        ``params`` (leading seed axis)."""
        p0 = self.heldout_params(keys.shape[0])

        def one_seed(params):
            out = rollout(self.env, self.greedy_policy(params), keys, p0, batched_params=True,
                          max_steps=self.view.max_turns)
            return self.view.success(out.state).mean()

        return jax.vmap(one_seed)(params)

