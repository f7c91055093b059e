"""PyTorch reference for the train benchmark: the same nanoGPT model and optimiser step.

Written here (not copied) to match :mod:`jaxcollab.models.gpt` and :mod:`jaxcollab.collab.fit`:
pre-LN blocks with a fused QKV projection, ``F.scaled_dot_product_attention`` (causal), tanh
GELU (``jax.nn.gelu``'s default), learned positions, final LayerNorm and a tied head applied at
the last position only (nanoGPT's ``targets is None`` path), cross-entropy of the label there,
``clip_grad_norm_(1.0)`` then AdamW β = (0.9, 0.99), weight decay 0.1 on matrices and embeddings.
Eager PyTorch, as nanoGPT trains without ``torch.compile`` on CPU. Needs the optional ``bench``
extra (``pip install -e .[bench]``).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

ACTIVATIONS = {"gelu": nn.GELU(approximate="tanh"), "relu": nn.ReLU()}


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, activation: str):
        super().__init__()
        self.n_head = n_head
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.qkv, self.proj = nn.Linear(n_embd, 3 * n_embd), nn.Linear(n_embd, n_embd)
        self.fc, self.out = nn.Linear(n_embd, 4 * n_embd), nn.Linear(4 * n_embd, n_embd)
        self.act = ACTIVATIONS[activation]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, c))
        return x + self.out(self.act(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """``[B, T]`` int64 tokens → ``[B, V]`` logits at the last position."""

    def __init__(self, vocab_size: int, block_size: int, n_layer: int, n_head: int,
                 n_embd: int, activation: str = "gelu"):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab_size, n_embd), nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head, activation) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        for p in self.parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x[:, -1]) @ self.wte.weight.T


def make_train_step(vocab_size: int, seq_len: int, batch: int, model: dict, seed: int = 0):
    """A closure running one optimiser step on random rows of a fixed random dataset (4 ×
    ``batch`` rows, as the JAX benchmark); returns the loss as a float."""
    torch.manual_seed(seed)
    net = GPT(vocab_size, seq_len, **model)
    decay = [p for p in net.parameters() if p.dim() >= 2]
    no_decay = [p for p in net.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.99))
    rng = np.random.default_rng(seed)
    tokens = torch.as_tensor(rng.integers(0, vocab_size, (4 * batch, seq_len)))
    targets = torch.as_tensor(rng.integers(0, 2, 4 * batch))

    def step() -> float:
        idx = torch.randint(0, len(tokens), (batch,))
        loss = F.cross_entropy(net(tokens[idx]), targets[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        return loss.item()

    return step
