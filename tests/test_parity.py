"""Chained-parity generator, dataset builder and env (Narrowing the Collaboration Gap, Probably,
§3, App. E)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxcollab
from jaxcollab.core.wrappers import AutoResetWrapper
from jaxcollab.envs import parity as P

ALPHAS = P.make_alphas()
MASKS = P.split_masks(30)


def sample(key, batch=1024, alphas=ALPHAS):
    return P.sample_parity(key, jnp.asarray(alphas, jnp.float32), jnp.asarray(MASKS), batch)


def test_seed_alphas_follow_spec():
    np.testing.assert_allclose(ALPHAS[:4], [0.20, 0.15, 0.10, 0.02])
    np.testing.assert_allclose(ALPHAS[4:], 0.02 / 26)
    assert len(ALPHAS) == 30 and ALPHAS.sum() == pytest.approx(0.49, abs=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"head": [0.3, 0.3], "n_bits": 2}, r"0.6 > 0.5"),
        ({"head": [0.3, 0.3]}, r"alpha_sum=0.49 is below"),
        ({"head": [0.2, -0.1]}, r"alpha_2=-0.1"),
        ({"head": [0.1] * 31}, r"n_bits=30"),
        ({"head": [0.3, 0.2], "alpha_sum": 0.4}, r"alpha_sum=0.4"),
        ({"head": [0.3], "alpha_sum": None}, r"alpha_sum"),
    ],
)
def test_bad_alphas_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        P.make_alphas(**kwargs)


def test_masks_are_disjoint_and_cover():
    for split in P.SPLITS:
        for n in (1, 7, 30):
            m = P.split_masks(n, split)
            assert not np.any(m[0] & m[1]) and np.all(m[0] | m[1])
    assert P.split_masks(4).tolist() == [[True, False, True, False], [False, True, False, True]]
    with pytest.raises(ValueError, match="'diagonal'"):
        P.split_masks(4, "diagonal")


def test_pstar_matches_definition():
    b = sample(jax.random.key(1), 256)
    signs = 2 * np.asarray(b.bits) - 1
    expected = 0.5 + np.cumprod(signs, axis=1) @ ALPHAS
    np.testing.assert_allclose(np.asarray(b.pstar), expected, atol=1e-6)


def test_label_mean_matches_pstar_mean_within_3_sigma():
    b = sample(jax.random.key(2), 400_000)
    label, pstar = np.asarray(b.label, np.float64), np.asarray(b.pstar, np.float64)
    sigma = np.sqrt(np.mean(pstar * (1 - pstar)) / len(label))
    assert abs(label.mean() - pstar.mean()) < 3 * sigma
    # Bits are fair and p* averages 1/2 (each S_j is a uniform sign).
    assert abs(np.asarray(b.bits).mean() - 0.5) < 3 * np.sqrt(0.25 / b.bits.size)


def test_views_strings_and_tokens_agree():
    b = sample(jax.random.key(3), 64)
    bits, views = np.asarray(b.bits), np.asarray(b.views)
    for agent in (P.BOB, P.ALICE):
        strings = P.view_strings(views[:, agent])
        for row, s in zip(range(64), strings):
            assert len(s) == 30
            for j, c in enumerate(s):
                assert c == (str(bits[row, j]) if MASKS[agent, j] else "?")
            np.testing.assert_array_equal(P.encode(s), views[row, agent])
            assert P.decode(views[row, agent]) == s
    with pytest.raises(ValueError, match="'x'"):
        P.encode("01x")


def test_same_key_same_data_and_jit_matches_no_jit():
    key = jax.random.key(4)
    a, b = sample(key, 64), sample(key, 64)
    with jax.disable_jit():
        c = sample(key, 64)
    for x, y, z in zip(jax.tree.leaves(a), jax.tree.leaves(b), jax.tree.leaves(c)):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(x, z)
    assert not np.array_equal(sample(jax.random.key(5), 64).bits, a.bits)


def test_build_dataset_split_and_determinism():
    key = jax.random.key(6)
    train, test = P.build_dataset(key, 10_000, ALPHAS, chunk_size=4096)
    assert (len(train), len(test)) == (9_000, 1_000)
    assert train.bits.dtype == np.uint8 and train.bits.shape == (9_000, 30)
    again, _ = P.build_dataset(key, 10_000, ALPHAS, chunk_size=4096)
    np.testing.assert_array_equal(train.bits, again.bits)
    # Stored p* is the function of the stored bits; chunks are distinct draws.
    np.testing.assert_allclose(
        train.pstar, 0.5 + np.cumprod(2 * train.bits.astype(int) - 1, axis=1) @ ALPHAS, atol=1e-6
    )
    assert not np.array_equal(train.bits[:4096], train.bits[4096:8192])
    with pytest.raises(ValueError, match="test_fraction"):
        P.build_dataset(key, 100, ALPHAS, test_fraction=1.5)


def test_env_rounds_messages_and_rewards():
    env = jaxcollab.make("parity/probability")
    obs, state = env.reset(jax.random.key(7))
    assert obs.shape == env.observation_space().shape == (2, 30 + 5 * 3)
    texts = []
    for r, value in enumerate([57, 31, 88, 12, 64]):
        actions = jnp.array([value, 99 - value]) if r % 2 == 0 else jnp.array([99 - value, value])
        obs, state, reward, term, trunc, info = env.step(jax.random.key(r), state, actions)
        assert int(info["speaker"]) == r % 2 and int(info["message"]) == value
        assert float(reward[0]) == pytest.approx(-((int(state.label) - value / 100) ** 2), abs=1e-6)
        assert bool(term) == (r == 4) and not bool(trunc)
        texts.append(env.render_text(state, r % 2))
    assert texts[-1].endswith("|57|31|88|12|64")
    assert texts[0].endswith("|57") and "|" not in texts[0][:30]
    for role in (0, 1):
        assert env.render_text(state, role) == P.decode(obs[role])


def test_action_env_and_bad_configuration():
    env = jaxcollab.make("parity/action")
    _, state = env.reset(jax.random.key(8))
    _, state, *_ = env.step(jax.random.key(9), state, jnp.array([1, 0]))
    assert env.render_text(state, 1).endswith("|1")
    with pytest.raises(ValueError, match="'shout'"):
        P.ParityEnv(protocol="shout")
    with pytest.raises(ValueError, match="role"):
        env.render_text(state, 2)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), agent=st.sampled_from([0, 1]))
def test_observation_never_changes_with_hidden_bits(seed, agent):
    env = P.ParityEnv()
    _, state = env.reset(jax.random.key(seed))
    rng = np.random.default_rng(seed)
    hidden = ~MASKS[agent]
    flipped = np.asarray(state.bits).copy()
    flipped[hidden] = rng.integers(0, 2, hidden.sum())
    other = state.replace(bits=jnp.asarray(flipped), label=1 - state.label)
    np.testing.assert_array_equal(env.observe(state)[agent], env.observe(other)[agent])


def test_auto_reset_keeps_final_observation():
    env = AutoResetWrapper(P.ParityEnv(n_rounds=1))
    obs, state = env.reset(jax.random.key(10))
    nobs, nstate, _, term, _, info = jax.jit(env.step)(
        jax.random.key(11), state, jnp.array([42, 0])
    )
    assert bool(term)
    assert P.decode(info["final_obs"][0]).endswith("|42")
    assert int(nstate.round) == 0 and P.decode(nobs[0]).count("|") == 0


def test_env_step_compiles_once_and_matches_no_jit():
    env = P.ParityEnv()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def rollout(key, alphas):
        params = P.ParityParams(alphas=alphas)
        obs, state = env.reset(key, params)
        actions = jnp.array([[50, 0], [0, 61], [70, 0], [0, 20], [90, 0]], jnp.int32)

        def body(state, a):
            obs, state, reward, *_ = env.step(key, state, a, params)
            return state, (obs, reward)

        return jax.lax.scan(body, state, actions)[1]

    alphas = jnp.asarray(ALPHAS, jnp.float32)
    for seed in range(3):  # new keys and new alphas reuse the one compilation
        jitted = rollout(jax.random.key(seed), alphas * (1 - 0.1 * seed))
    with jax.disable_jit():
        eager = rollout.__wrapped__(jax.random.key(2), alphas * 0.8)
    for x, y in zip(jax.tree.leaves(jitted), jax.tree.leaves(eager)):
        np.testing.assert_allclose(x, y, atol=1e-6)


def test_env_and_dataset_builder_draw_the_same_instances():
    key = jax.random.key(5)
    train, _ = P.build_dataset(key, 10, ALPHAS, chunk_size=1)  # example i from fold_in(key, i)
    env = P.ParityEnv(alphas=ALPHAS)
    keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(np.arange(len(train)))
    _, states = jax.vmap(env.reset)(keys)
    np.testing.assert_array_equal(train.bits, states.bits)
    np.testing.assert_array_equal(train.label, states.label)
    np.testing.assert_allclose(train.pstar, states.pstar, atol=1e-6)  # same bits; fp fusion
