"""The errors of a bad run configuration: a user's to fix, not a bug.

Entry points print their message alone, on one line (:data:`jaxcollab.io.run.USER_ERRORS`).
They live in ``core`` so that every package (``llm``, ``analysis``, ``report``, the families)
raises them without importing the entry points' config schema (:mod:`jaxcollab.io.schema`).
"""

from __future__ import annotations

from typing import Any


class ConfigValueError(ValueError):
    """A config value outside its range: the message names the key, the value and the range."""

    def __init__(self, key: str, value: Any, expected: str):
        super().__init__(f"{key}={value!r} is invalid; expected {expected}")
        self.key, self.value = key, value


class EndpointError(RuntimeError):
    """An outside service the run needs (an LLM endpoint) cannot serve it: unreachable, an
    unknown model, a refused key. A user's error to fix, not a bug: entry points print its
    message (which never holds a secret) on one line."""
