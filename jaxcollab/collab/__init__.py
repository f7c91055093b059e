"""Collaborative prediction: messages, bias model, calibrators, round trainer, theory."""
