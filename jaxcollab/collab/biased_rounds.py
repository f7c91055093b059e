"""Round-by-round training with biased probability messages (spec ``collab-learning.md`` §4).

:class:`BiasedRoundTrainer` is the round trainer of :mod:`jaxcollab.collab.trainer` with the
bias model of :mod:`jaxcollab.collab.bias` applied to every probability message before it is
appended to later prefixes: the speaker's message ``q_k`` (as encoded, two digits) becomes the
report ``r_k`` with ``log r_k = β log q_k + γ log r_{k−1} − log Z``, where ``r_{k−1}`` is the
previous round's *sent* report (uniform in round 1), and ``r_k`` is encoded again. Later agents
train on, and read, the biased reports. The unbiased messages of the test set are kept in
``round.npz`` as ``test_posterior_messages``.
"""

from __future__ import annotations

import os

import jax.numpy as jnp
import numpy as np

from jaxcollab.collab.bias import EPS, bias_report, safe_log, validate_bias
from jaxcollab.collab.messages import MessageCodec
from jaxcollab.collab.trainer import RoundOutput, RoundTrainer


def bias_messages(codec: MessageCodec, tokens, prev_tokens, beta: float, gamma: float,
                  eps: float = EPS) -> np.ndarray:
    """Apply the bias model to encoded probability messages.

    Args:
        codec: a ``probability`` codec. tokens: uint8 ``[N, width]`` round-k messages.
        prev_tokens: uint8 ``[N, width]`` the previous round's sent reports, or ``None`` for
            round 1 (uniform ``r_0``).
        beta, gamma: bias parameters; eps: probability floor before the log.

    Returns:
        uint8 ``[N, width]`` the encoded reports.

    Raises:
        ValueError: an ``action`` codec (the bias model acts on probabilities) or a bad β, γ.
    """
    if codec.kind != "probability":
        raise ValueError(f"the bias model needs probability messages, got kind={codec.kind!r}")
    beta, gamma = validate_bias(beta, gamma)
    log_q = safe_log(jnp.asarray(codec.decode(tokens)), eps)
    if prev_tokens is None:
        log_prev = jnp.full_like(log_q, -np.log(codec.n_classes))
    else:
        log_prev = safe_log(jnp.asarray(codec.decode(prev_tokens)), eps)
    return np.asarray(codec.encode(jnp.exp(bias_report(log_q, log_prev, beta, gamma))), np.uint8)


class BiasedRoundTrainer(RoundTrainer):
    """A :class:`RoundTrainer` whose appended messages are biased reports (module docstring).

    Args:
        beta, gamma: the bias; every other argument as :class:`RoundTrainer`.

    Raises:
        ValueError: bad β, γ, an action codec, or anything :class:`RoundTrainer` rejects.
    """

    def __init__(self, *args, beta: float, gamma: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.beta, self.gamma = validate_bias(beta, gamma)
        if self.codec.kind != "probability":
            raise ValueError(f"biased messages need protocol=probability, got {self.codec.kind!r}")

    def _play(self, r: int, outputs: list[RoundOutput]) -> RoundOutput:
        out = super()._play(r, outputs)
        prev = outputs[-1] if outputs else None
        train = bias_messages(self.codec, out.train_messages,
                              None if prev is None else prev.train_messages, self.beta, self.gamma)
        test = bias_messages(self.codec, out.test_messages,
                             None if prev is None else prev.test_messages, self.beta, self.gamma)
        path = self.round_dir(r) / "round.npz"
        with np.load(path) as z:
            arrays = dict(z)
        arrays.update(train_messages=train, test_messages=test,
                      test_posterior_messages=out.test_messages)
        tmp = path.with_name("round.biased.tmp.npz")
        np.savez(tmp, **arrays)
        os.replace(tmp, path)
        return RoundOutput(train, test, out.metrics)
