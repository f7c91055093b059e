"""nanoGPT-style transformer (Flax NNX)."""

from jaxcollab.models.gpt import GPT, GPTConfig, flops_per_token, n_params

__all__ = ["GPT", "GPTConfig", "flops_per_token", "n_params"]
