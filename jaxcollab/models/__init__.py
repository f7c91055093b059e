"""nanoGPT-style transformer (Flax NNX)."""
