"""LLM evaluation path: client, prompts, parser, host-callback bridge."""
