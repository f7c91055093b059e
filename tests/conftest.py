"""Shared pytest settings: tests run on the CPU with 64-bit floats off (the library default)."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("WANDB_MODE", "disabled")
