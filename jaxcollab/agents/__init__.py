"""Scripted JAX policies: oracle, random and protocol teams, one package per env family."""
