"""Cross-play of learned teams: every assignment of roles to seeds, each role's actor taken
from its own seed (jaxcollab.marl.crossplay)."""

import jax
import numpy as np
import pytest

from jaxcollab.marl.crossplay import assignments, mixed_params
from jaxcollab.marl.ppo import PPOConfig, Trainer, _stack


def _seeds(cfg: PPOConfig, n: int) -> dict:
    trainer = Trainer(cfg)
    return _stack([trainer.init_params(jax.random.PRNGKey(s)) for s in range(n)])


def test_every_assignment_in_order():
    a = assignments(2, 3)
    assert a.shape == (8, 3)
    np.testing.assert_array_equal(a[:3], [[0, 0, 0], [0, 0, 1], [0, 1, 0]])
    np.testing.assert_array_equal(a[-1], [1, 1, 1])
    assert len({tuple(r) for r in assignments(3, 2)}) == 9


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_each_role_plays_its_own_seed_s_actor():
    cfg = PPOConfig(env="ktane/wires", shared=False, algo="mappo", hidden=8, episodes=4,
                    minibatches=2)
    params = _seeds(cfg, 3)
    assign = assignments(3, 2)
    mixed_cfg, mixed = mixed_params(cfg, params, assign)
    assert not mixed_cfg.shared
    w, m = params["actor"]["pi"]["w"], mixed["actor"]["pi"]["w"]   # [seeds, roles, ...]
    assert m.shape == (9,) + w.shape[1:]
    for row, (i, j) in enumerate(assign):
        np.testing.assert_array_equal(m[row, 0], w[i, 0])   # Defuser of seed i
        np.testing.assert_array_equal(m[row, 1], w[j, 1])   # Expert of seed j
        np.testing.assert_array_equal(mixed["critic"]["v"]["w"][row],
                                      params["critic"]["v"]["w"][i])


def test_a_shared_actor_is_copied_per_role():
    cfg = PPOConfig(env="ktane/wires", shared=True, hidden=8, episodes=4, minibatches=2)
    params = _seeds(cfg, 2)
    mixed_cfg, mixed = mixed_params(cfg, params, assignments(2, 2))
    tok = params["actor"]["embed"]["tok"]          # [seeds, 1, vocab, embed]
    got = mixed["actor"]["embed"]["tok"]           # [4, 2, vocab, embed]
    np.testing.assert_array_equal(got[1, 0], tok[0, 0])
    np.testing.assert_array_equal(got[1, 1], tok[1, 0])
    assert jax.tree.leaves(Trainer(mixed_cfg).init_params(jax.random.PRNGKey(0))["actor"])[
        0].shape[0] == 2   # the mixed config is per-role, as the mixed params


def test_other_play_relabels_the_expert_and_its_inverse_reaches_it():
    trainer = Trainer(PPOConfig(env="ktane/keypad", other_play=True, symbols=3, alphabet=8,
                                episodes=4, minibatches=2, hidden=8))
    relabel = np.asarray(trainer.new_relabel(jax.random.PRNGKey(1), 5))
    assert (np.sort(relabel, 1) == np.arange(8)).all()             # permutations
    assert len({tuple(r) for r in relabel}) > 1                       # one per episode
    sigma = jax.numpy.asarray(relabel[0])
    action = jax.numpy.asarray([1, 2, 3, 0, 7])                     # verb, target, 3 words
    expert = np.asarray(trainer.relabeled(action, 1, sigma))
    defuser = np.asarray(trainer.relabeled(action, 0, sigma))
    np.testing.assert_array_equal(expert, [1, 2, *relabel[0][[3, 0, 7]]])
    np.testing.assert_array_equal(relabel[0][defuser[2:]], [3, 0, 7])  # the relabeled Expert
    # reads the Defuser's words as sent; an echo comes back unchanged
    np.testing.assert_array_equal(trainer.relabeled(jax.numpy.asarray(defuser), 1, sigma),
                                  action)
    plain = Trainer(PPOConfig(env="ktane/keypad", episodes=4, minibatches=2, hidden=8))
    np.testing.assert_array_equal(plain.new_relabel(jax.random.PRNGKey(1), 2),
                                  np.tile(np.arange(8), (2, 1)))


@pytest.mark.full
def test_other_play_on_a_broadcast_channel_relabels_each_sender_for_every_receiver():
    trainer = Trainer(PPOConfig(env="bomb/base-1", other_play=True, symbols=2, alphabet=5,
                                episodes=4, minibatches=2, hidden=8))
    relabel = np.asarray(trainer.new_relabel(jax.random.PRNGKey(2), 6))
    assert relabel.shape == (6, 3, 2, 5)                              # sender x channel
    assert (np.sort(relabel, -1) == np.arange(5)).all()              # permutations
    assert len({tuple(r) for r in relabel.reshape(-1, 5)}) > 1       # drawn independently
    sigma = jax.numpy.asarray(relabel[0])
    action = jax.numpy.asarray([0, 3, 4, 1, 2, 4, 0, 3])            # act, target, 2 x (to, w, w)
    for sender in range(3):
        got = np.asarray(trainer.relabeled(action, sender, sigma))
        np.testing.assert_array_equal(got[[0, 1, 2, 5]], [0, 3, 4, 4])   # not symbols
        np.testing.assert_array_equal(got[[3, 4]], relabel[0, sender, 0][[1, 2]])
        np.testing.assert_array_equal(got[[6, 7]], relabel[0, sender, 1][[0, 3]])


@pytest.mark.full
def test_a_relabeled_sender_reads_its_own_message_as_it_chose_it():
    trainer = Trainer(PPOConfig(env="bomb/base-1", other_play=True, symbols=2, alphabet=5,
                                episodes=4, minibatches=2, hidden=8))
    slots, tokens = trainer.view.inbox                               # [2, 3, 2], [2, 5]
    relabel = np.asarray(trainer.new_relabel(jax.random.PRNGKey(3), 1))
    enc = np.zeros((1, 3, trainer.view.obs_size), np.int32)
    for row in range(3):                   # every row holds Deaf's speech as sent: relabeled
        enc[0, row, slots[0, 0]] = tokens[0, relabel[0, 0, 0, [1, 4]]]
    enc[0, 1, slots[1, 2]] = [7, 0]        # not an alphabet token: left as it is
    got = np.asarray(trainer._own_as_sent(jax.numpy.asarray(enc), jax.numpy.asarray(relabel)))
    np.testing.assert_array_equal(got[0, 0, slots[0, 0]], tokens[0, [1, 4]])   # Deaf: as chosen
    np.testing.assert_array_equal(got[0, 1:], enc[0, 1:])            # the receivers: relabeled
