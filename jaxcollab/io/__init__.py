"""Checkpoints, logging, results files and plots."""
