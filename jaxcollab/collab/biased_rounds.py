"""Biased probability messages in round-by-round training (Narrowing the
Collaboration Gap, Probably, §5 R2, Equation 1, Algorithm 1).

:func:`bias_transform` is a :data:`~jaxcollab.collab.trainer.MessageTransform` for the round
trainer: the speaker's message ``q_k`` (as encoded, two digits) becomes the report ``r_k`` with
``log r_k = β log q_k + γ log r_{k−1} − log Z`` (:func:`jaxcollab.collab.bias.bias_report`),
where ``r_{k−1}`` is the previous round's *sent* report (uniform in round 1), and ``r_k`` is
encoded again. Later agents train on, and read, the biased reports; the trainer keeps the
unbiased test messages as ``test_posterior_messages``.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxcollab.collab.bias import EPS, bias_report, safe_log, validate_bias
from jaxcollab.collab.messages import MessageCodec
from jaxcollab.collab.trainer import MessageTransform


def log_messages(codec: MessageCodec, tokens, prev_tokens, eps: float = EPS):
    """``(log q float [N, C], log r_prev float [N, C])``: encoded messages ``tokens`` and the
    previous round's sent messages ``prev_tokens`` decoded and logged (probabilities floored at
    ``eps``); ``prev_tokens=None`` (round 1) gives the uniform ``r_0``."""
    log_q = safe_log(jnp.asarray(codec.decode(tokens)), eps)
    if prev_tokens is None:
        return log_q, jnp.full_like(log_q, -np.log(codec.n_classes))
    return log_q, safe_log(jnp.asarray(codec.decode(prev_tokens)), eps)


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
    log_q, log_prev = log_messages(codec, tokens, prev_tokens, eps)
    return np.asarray(codec.encode(jnp.exp(bias_report(log_q, log_prev, beta, gamma))), np.uint8)


def bias_transform(codec: MessageCodec, beta: float, gamma: float) -> MessageTransform:
    """The trainer hook that sends biased reports instead of the encoded posteriors.

    Raises:
        ValueError: an ``action`` codec or a bad β, γ (checked here, before any training).
    """
    if codec.kind != "probability":
        raise ValueError(f"biased messages need protocol=probability, got {codec.kind!r}")
    beta, gamma = validate_bias(beta, gamma)
    return lambda r, held_out, rows: bias_messages(codec, rows.messages, rows.previous, beta,
                                                   gamma)
