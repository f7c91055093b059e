"""Chained parity ("Narrowing the Collaboration Gap, Probably", §3 and App. E).

n bits ``b_j`` are i.i.d. uniform; as signs ``t_j = ±1`` with prefix parities
``S_j = t_1 ··· t_j``. The label is ``Y ~ Bernoulli(p*)`` with ``p* = 1/2 + Σ_j α_j S_j``.
Agent 0 ("Bob") sees the odd-indexed bits (1-based: 1, 3, 5, …), agent 1 ("Alice") the
even-indexed ones; unseen positions show the mask character ``?``.

Everything an agent reads is a string over :data:`VOCAB`; token ids are indices into it, so
``decode(tokens)`` is the exact text the transformer reads. This module holds

* :func:`make_alphas` / :func:`validate_alphas` — the coefficient vector;
* :func:`sample_parity` — the jitted instance generator shared by the env and the builder;
* :func:`build_dataset` — the chunked 90/10 dataset builder (2,000,000 examples in seconds);
* :class:`ParityEnv` — the round-by-round env under the team contract
  (``parity/probability``, ``parity/action``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import partial

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.core.env import Environment
from jaxcollab.core.registry import register
from jaxcollab.core.spaces import Discrete

#: Character vocabulary of parity strings; a token id is an index into it.
VOCAB = "0123456789?|=_"
MASK = VOCAB.index("?")  # an unseen bit
SEP = VOCAB.index("|")  # precedes each message
ANSWER = VOCAB.index("=")  # precedes the label
PAD = VOCAB.index("_")  # a message slot not yet filled (observations only; never in strings)

#: Spec §1 seed coefficients: the first four, then equal tail values up to Σ α = 0.49.
SEED_ALPHA_HEAD = (0.20, 0.15, 0.10, 0.02)
SEED_N_BITS = 30
SEED_ALPHA_SUM = 0.49

BOB, ALICE = 0, 1
ROLE_NAMES = ("bob", "alice")
SPLITS = ("alternate", "halves")
PROTOCOLS = ("action", "probability")


def make_alphas(
    head: Sequence[float] = SEED_ALPHA_HEAD,
    n_bits: int = SEED_N_BITS,
    alpha_sum: float | None = SEED_ALPHA_SUM,
) -> np.ndarray:
    """The coefficient vector α (float64 ``[n_bits]``), paper App. E.

    ``head`` gives the leading coefficients. If it is shorter than ``n_bits``, the remaining
    ``n_bits - len(head)`` entries are equal and bring the total to ``alpha_sum``. If it has
    exactly ``n_bits`` entries it is used as-is and ``alpha_sum`` is ignored.

    Raises:
        ValueError: ``head`` longer than ``n_bits``; a tail needed but ``alpha_sum`` is ``None``
            or smaller than ``sum(head)``; or the result fails :func:`validate_alphas`.
    """
    head = np.asarray(head, np.float64).reshape(-1)
    if n_bits < 1 or len(head) > n_bits:
        raise ValueError(f"need 1 <= len(alphas)={len(head)} <= n_bits={n_bits}")
    if len(head) < n_bits:
        if alpha_sum is None:
            raise ValueError(
                f"alphas has {len(head)} entries for n_bits={n_bits}; give alpha_sum to fill "
                "the tail or give all n_bits coefficients"
            )
        rest = alpha_sum - head.sum()
        if rest < -1e-12:
            raise ValueError(f"alpha_sum={alpha_sum} is below sum(alphas)={head.sum():.6g}")
        head = np.concatenate(
            [head, np.full(n_bits - len(head), max(rest, 0.0) / (n_bits - len(head)))]
        )
    validate_alphas(head)
    return head


def validate_alphas(alphas: Sequence[float]) -> np.ndarray:
    """Check that ``p* = 1/2 + Σ α_j S_j`` is a probability for every sign pattern.

    Returns:
        α as float64 ``[n]``.

    Raises:
        ValueError: naming the bad value if any α_j is negative or not finite, or Σ α_j > 0.5.
    """
    a = np.asarray(alphas, np.float64).reshape(-1)
    if a.size == 0:
        raise ValueError("alphas is empty; expected at least one coefficient")
    bad = np.flatnonzero(~np.isfinite(a) | (a < 0))
    if bad.size:
        j = int(bad[0])
        raise ValueError(f"alpha_{j + 1}={a[j]} is invalid; every coefficient must be >= 0")
    if a.sum() > 0.5 + 1e-12:
        raise ValueError(f"sum(alphas)={a.sum():.6g} > 0.5, so p* would leave [0, 1]")
    return a


def split_masks(n_bits: int, split: str = "alternate") -> np.ndarray:
    """Which bits each agent sees: bool ``[2, n_bits]``, complementary.

    ``"alternate"`` (paper, App. E): agent 0 sees 1-based odd positions, agent 1 even positions.
    ``"halves"``: agent 0 sees the first ``ceil(n/2)`` bits, agent 1 the rest.

    Raises:
        ValueError: unknown ``split``.
    """
    idx = np.arange(n_bits)
    if split == "alternate":
        bob = idx % 2 == 0
    elif split == "halves":
        bob = idx < (n_bits + 1) // 2
    else:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    return np.stack([bob, ~bob])


@chex.dataclass(frozen=True)
class ParityBatch:
    """A batch of chained-parity examples.

    Attributes:
        bits: int32 ``[B, n]`` in {0, 1}; bit 1 is the sign ``t = +1``.
        pstar: float32 ``[B]``, the Bayes probability ``p*`` that ``Y = 1``.
        label: int32 ``[B]``, ``Y ~ Bernoulli(p*)``.
        views: int32 ``[B, 2, n]`` tokens of each agent's masked view (``MASK`` where unseen).
    """

    bits: jax.Array
    pstar: jax.Array
    label: jax.Array
    views: jax.Array


def pstar_from_bits(bits: jax.Array, alphas: jax.Array) -> jax.Array:
    """``p* = 1/2 + Σ_j α_j S_j`` for bits ``[..., n]`` (0/1) → float32 ``[...]``."""
    n = bits.shape[-1]
    # S_j = (-1)^(number of zero bits among b_1..b_j); the count is a matmul with an upper
    # triangle of ones, which XLA runs faster than a cumulative product.
    zeros_so_far = (1 - bits).astype(jnp.float32) @ jnp.triu(jnp.ones((n, n), jnp.float32))
    prefix = 1 - 2 * (zeros_so_far.astype(jnp.int32) & 1)
    return 0.5 + prefix.astype(jnp.float32) @ jnp.asarray(alphas, jnp.float32)


def views_from_bits(bits: jax.Array, masks: jax.Array) -> jax.Array:
    """Masked views: bits ``[..., n]`` and masks bool ``[A, n]`` → int32 tokens ``[..., A, n]``."""
    bits = jnp.asarray(bits, jnp.int32)[..., None, :]
    return jnp.where(jnp.asarray(masks), bits, MASK).astype(jnp.int32)


@partial(jax.jit, static_argnames=("batch_size",))
def sample_parity(
    key: jax.Array, alphas: jax.Array, masks: jax.Array, batch_size: int
) -> ParityBatch:
    """Draw ``batch_size`` examples (jitted; one compile per batch size and n): the instance
    generator shared by :meth:`ParityEnv.reset` (``batch_size=1``) and :func:`build_dataset`.

    Args:
        key: PRNG key.
        alphas: float ``[n]`` coefficients (see :func:`make_alphas`).
        masks: bool ``[2, n]`` from :func:`split_masks`.
        batch_size: number of examples B (static).
    """
    k_bits, k_label = jax.random.split(key)
    n = alphas.shape[-1]
    # One random 32-bit word carries 32 fair bits: ~30x fewer PRNG calls than a Bernoulli each.
    words = jax.random.bits(k_bits, (batch_size, -(-n // 32)), jnp.uint32)
    j = jnp.arange(n)
    bits = ((words[:, j // 32] >> (j % 32).astype(jnp.uint32)) & 1).astype(jnp.int32)
    pstar = pstar_from_bits(bits, alphas)
    label = (jax.random.uniform(k_label, (batch_size,)) < pstar).astype(jnp.int32)
    return ParityBatch(bits=bits, pstar=pstar, label=label, views=views_from_bits(bits, masks))


def decode(tokens) -> str:
    """Token ids (any int sequence) → the exact string over :data:`VOCAB`, dropping ``PAD``."""
    return "".join(VOCAB[int(t)] for t in np.asarray(tokens).reshape(-1) if t != PAD)


def encode(text: str) -> np.ndarray:
    """String over :data:`VOCAB` → int32 token ids. Raises ValueError on a foreign character."""
    try:
        return np.array([VOCAB.index(c) for c in text], np.int32)
    except ValueError:
        bad = next(c for c in text if c not in VOCAB)
        raise ValueError(f"character {bad!r} is not in the parity vocabulary {VOCAB!r}") from None


def view_strings(views) -> list[str]:
    """Masked views ``[B, n]`` → B strings (vectorised through a character table)."""
    table = np.array(list(VOCAB))
    return ["".join(row) for row in table[np.asarray(views)]]


@dataclasses.dataclass
class ParityDataset:
    """Host-side arrays of one split; views are derived per batch to save memory.

    Attributes:
        bits: uint8 ``[N, n]``; pstar: float32 ``[N]``; label: uint8 ``[N]``.
    """

    bits: np.ndarray
    pstar: np.ndarray
    label: np.ndarray

    def __len__(self) -> int:
        return len(self.label)


def n_test_examples(n_examples: int, test_fraction: float) -> int:
    """Examples :func:`build_dataset` holds out for the test split (at least one)."""
    return max(1, int(round(n_examples * test_fraction)))


def build_dataset(
    key: jax.Array,
    n_examples: int,
    alphas: np.ndarray,
    split: str = "alternate",
    test_fraction: float = 0.1,
    chunk_size: int = 65_536,
) -> tuple[ParityDataset, ParityDataset]:
    """Generate ``n_examples`` in chunks and split them into (train, test).

    The paper split is 2,000,000 examples, 90/10 (paper, App. E). Only bits (uint8), p* and
    labels are kept — 35 bytes per example at n = 30 — and each chunk is generated on device with
    one compiled kernel (the last chunk reuses it and is trimmed). The data depend on ``key`` and
    ``chunk_size``; both draw through :func:`sample_parity`, so with ``chunk_size=1`` example
    ``i`` is the instance ``ParityEnv.reset(fold_in(key, i))`` draws.

    Raises:
        ValueError: ``n_examples < 2``, ``test_fraction`` not in (0, 1), or ``chunk_size < 1``.
    """
    if n_examples < 2 or not 0 < test_fraction < 1 or chunk_size < 1:
        raise ValueError(
            f"need n_examples >= 2 (got {n_examples}), 0 < test_fraction < 1 (got "
            f"{test_fraction}) and chunk_size >= 1 (got {chunk_size})"
        )
    alphas_j = jnp.asarray(validate_alphas(alphas), jnp.float32)
    masks = jnp.asarray(split_masks(len(alphas), split))
    n = len(alphas)
    bits = np.empty((n_examples, n), np.uint8)
    pstar = np.empty(n_examples, np.float32)
    label = np.empty(n_examples, np.uint8)
    chunk = min(chunk_size, n_examples)
    for i, start in enumerate(range(0, n_examples, chunk)):
        stop = min(start + chunk, n_examples)
        b = sample_parity(jax.random.fold_in(key, i), alphas_j, masks, chunk)
        b_bits, b_pstar, b_label = jax.device_get((b.bits, b.pstar, b.label))
        bits[start:stop] = b_bits[: stop - start]
        pstar[start:stop] = b_pstar[: stop - start]
        label[start:stop] = b_label[: stop - start]
    cut = n_examples - n_test_examples(n_examples, test_fraction)
    return (
        ParityDataset(bits[:cut], pstar[:cut], label[:cut]),
        ParityDataset(bits[cut:], pstar[cut:], label[cut:]),
    )


# --------------------------------------------------------------------------------------------
# Round-by-round environment
# --------------------------------------------------------------------------------------------


@chex.dataclass(frozen=True)
class ParityParams:
    """Dynamic parameters: ``alphas`` float32 ``[n]``."""

    alphas: jax.Array


@chex.dataclass(frozen=True)
class ParityState:
    """Hidden episode state.

    Attributes:
        bits: int32 ``[n]``; pstar: float32 ``[]``; label: int32 ``[]``;
        round: int32 ``[]`` rounds played so far;
        messages: int32 ``[n_rounds]`` message values sent so far (``-1`` = not yet sent).
    """

    bits: jax.Array
    pstar: jax.Array
    label: jax.Array
    round: jax.Array
    messages: jax.Array


@dataclasses.dataclass(frozen=True)
class ParityEnv(Environment[ParityState, ParityParams]):
    """Two agents exchange messages about the chained-parity label, one speaker per round.

    In round r (0-based) agent ``r mod 2`` speaks: its action is a message value — a bit for
    ``protocol="action"`` (message = 1{posterior ≥ 1/2}), or the probability of ``Y = 1`` in
    units of ``10**-digits`` for ``protocol="probability"`` (two decimal digits, our choice, so
    percent). The other agent's action is ignored. Each agent observes its own masked view
    followed, for every round so far, by ``|`` and the message digits (``PAD`` for rounds not
    yet played). Every agent's reward is the negative Brier score ``-(Y - m)²`` of the round's
    message ``m`` (as a probability). The episode terminates after ``n_rounds`` rounds.

    Equal by value over its static config; ``alphas`` (float tuple, default
    :func:`make_alphas`) only sets :attr:`default_params`, so it is not compared.

    Raises:
        ValueError: unknown protocol or split, ``n_rounds < 1``, ``digits < 1``, or alphas
            that fail :func:`validate_alphas` or do not have ``n_bits`` entries.
    """

    n_bits: int = SEED_N_BITS
    n_rounds: int = 5
    protocol: str = "probability"
    digits: int = 2
    split: str = "alternate"
    alphas: tuple[float, ...] | None = dataclasses.field(default=None, compare=False, repr=False)

    n_agents = 2
    role_names = ROLE_NAMES

    def __post_init__(self):
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"unknown protocol {self.protocol!r}; expected one of {PROTOCOLS}")
        if self.n_rounds < 1 or self.digits < 1:
            raise ValueError(f"need n_rounds >= 1 and digits >= 1, got {self.n_rounds}, "
                             f"{self.digits}")
        alphas = make_alphas() if self.alphas is None else validate_alphas(self.alphas)
        if len(alphas) != self.n_bits:
            raise ValueError(f"len(alphas)={len(alphas)} does not match n_bits={self.n_bits}")
        action = self.protocol == "action"
        derived = dict(alphas=tuple(map(float, alphas)), masks=split_masks(self.n_bits, self.split),
                       width=1 if action else self.digits, levels=2 if action else 10**self.digits,
                       name=f"parity/{self.protocol}")
        for k, v in derived.items():
            object.__setattr__(self, k, v)

    @property
    def max_episode_steps(self) -> int:
        """Every episode ends after ``n_rounds`` steps."""
        return self.n_rounds

    @property
    def default_params(self) -> ParityParams:
        return ParityParams(alphas=jnp.asarray(self.alphas, jnp.float32))

    def observation_space(self, params=None) -> Discrete:
        return Discrete(len(VOCAB), (2, self.n_bits + self.n_rounds * (1 + self.width)))

    def action_space(self, params=None) -> Discrete:
        """One message value per agent (only the round's speaker's is read)."""
        return Discrete(self.levels, (2,))

    def reset(self, key, params=None):
        params = self._params(params)
        b = sample_parity(key, params.alphas, jnp.asarray(self.masks), 1)
        state = ParityState(
            bits=b.bits[0],
            pstar=b.pstar[0],
            label=b.label[0],
            round=jnp.int32(0),
            messages=jnp.full((self.n_rounds,), -1, jnp.int32),
        )
        return self.observe(state, params), state

    def step_env(self, key, state: ParityState, actions, params):
        """One round: the speaker's message is recorded and scored."""
        speaker = state.round % 2
        value = jnp.clip(jnp.asarray(actions, jnp.int32)[speaker], 0, self.levels - 1)
        state = state.replace(messages=state.messages.at[state.round].set(value),
                              round=state.round + 1)
        prob = value / (1 if self.protocol == "action" else self.levels)
        reward = jnp.full((2,), -((state.label - prob) ** 2), jnp.float32)
        return state, reward, {"speaker": speaker, "message": value}

    def end_flags(self, state: ParityState, params=None):
        """Terminated once all ``n_rounds`` are played; never truncated."""
        return state.round >= self.n_rounds, jnp.bool_(False)

    def observe(self, state: ParityState, params=None):
        views = views_from_bits(state.bits, self.masks)  # [2, n]
        powers = 10 ** jnp.arange(self.width - 1, -1, -1)
        digit_tokens = (state.messages[:, None] // powers) % 10  # [R, width]; digit d is token d
        sent = (state.messages >= 0)[:, None]
        body = jnp.where(sent, digit_tokens, PAD)
        sep = jnp.where(sent, SEP, PAD)
        msgs = jnp.concatenate([sep, body], axis=1).reshape(-1)
        return jnp.concatenate([views, jnp.broadcast_to(msgs, (2, msgs.size))], axis=1).astype(
            jnp.int32
        )

    def render_observation(self, obs_row, role: int) -> str:
        """The agent's prefix string: its masked view, then ``|`` + digits per message so far.

        Raises:
            ValueError: ``role`` not 0 (bob) or 1 (alice).
        """
        self._check_role(role)
        return decode(obs_row)


def export_instances(env_name: str, n: int, seed: int) -> list[dict]:
    """``n`` instances of ``env_name`` (``parity/...``) as JSON-ready dicts, drawn as the resets
    of rollout episodes ``0..n-1`` (:mod:`jaxcollab.core.export`).

    Schema: ``env``, ``seed``, ``index``, ``text`` (each agent's prefix at the start), then
    ``bits`` (list of n ints in {0, 1}), ``pstar`` (float, P(Y = 1)), ``label`` (0 or 1) and
    ``masks`` (two lists of n ints, 1 = the agent sees that bit).

    Raises:
        KeyError: unknown environment (lists valid names); ValueError: ``n < 1``.
    """
    from jaxcollab.core.export import record, reset_instances
    from jaxcollab.core.registry import make

    env = make(env_name)
    obs, states = reset_instances(env, n, seed)
    masks = env.masks.astype(int).tolist()
    return [{**record(env, seed, i, obs[i]), "bits": states.bits[i].tolist(),
             "pstar": float(states.pstar[i]), "label": int(states.label[i]), "masks": masks}
            for i in range(int(n))]


for _protocol in ("probability", "action"):
    register(f"parity/{_protocol}", "jaxcollab.envs.parity:ParityEnv", groups=("parity/all",),
             protocol=_protocol)
