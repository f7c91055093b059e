"""Mixed teams: a model per role (``llm.roles.<role>.*``), one client per distinct model.

GPTNT §7 pairs every Defuser model with every Expert model (other-play); a SANZARU trio may
hold three models. ``llm.roles.<role>`` overrides any of :data:`ROLE_KEYS` for one role, each
falling back to ``llm.*``; the pacing keys (concurrency, timeouts, retries) stay team-wide.
Roles with equal settings share one :class:`~jaxcollab.llm.client.ChatClient`, and every client
shares one request cache, whose keys hold the model and base URL, so replies never mix.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from jaxcollab.llm.client import (
    ChatClient,
    LLMConfig,
    Reply,
    ReplyCache,
    Request,
    Usage,
    check_llm_values,
)

#: What a role may set for itself (the model and its sampling; pacing is team-wide).
ROLE_KEYS = ("base_url", "model", "api_key_env", "temperature", "max_tokens",
             "reasoning_effort", "thinking_budget", "context_tokens")


def role_configs(base: LLMConfig, roles: Mapping[str, Mapping[str, Any]] | None,
                 valid: tuple[str, ...] = ()) -> dict[str, LLMConfig]:
    """Each overridden role's settings: ``base`` with the role's non-null keys. A role on
    another ``base_url`` is sent no API key unless it names its own ``api_key_env`` (the team's
    key never goes to another endpoint).

    Args:
        base: the team's settings (``llm.*``, family defaults applied).
        roles: ``llm.roles`` (role → keys of :data:`ROLE_KEYS`), or None.
        valid: the family's role names (empty: any name).

    Raises:
        ValueError: a role not in ``valid`` or a key not in :data:`ROLE_KEYS` (names both and
            what is valid).
        ConfigValueError: a bad value of a role's key (names ``llm.roles.<role>.<key>``).
    """
    out = {}
    for role, keys in dict(roles or {}).items():
        if valid and role not in valid:
            raise ValueError(f"llm.roles.{role}: unknown role {role!r}; valid: "
                             f"{', '.join(valid)}")
        bad = sorted(set(keys or {}) - set(ROLE_KEYS))
        if bad:
            raise ValueError(f"llm.roles.{role}.{bad[0]} is not a role setting; valid: "
                             f"{', '.join(ROLE_KEYS)}")
        set_keys = {k: v for k, v in dict(keys or {}).items() if v is not None}
        check_llm_values(set_keys, f"llm.roles.{role}")
        if set_keys.get("base_url", base.base_url) != base.base_url:
            set_keys.setdefault("api_key_env", "")
        out[role] = dataclasses.replace(base, **set_keys)
    return out


def _identity(cfg: LLMConfig) -> str:
    return json.dumps(dataclasses.asdict(cfg), sort_keys=True, default=str)


class TeamClient:
    """The team's client: routes each request to its agent's :class:`ChatClient`.

    Quacks like one :class:`ChatClient` where :class:`~jaxcollab.llm.play.Host` and the LLM
    team use it (``complete_many``, ``usage``, ``retries``, ``prompt_budget``,
    ``usage_json``). A batch that spans clients (a Keep-Talking reflection asks both players)
    is sent to each of them at once, on threads.

    Args:
        base: settings of every agent without a role block.
        roles: role → its settings (:func:`role_configs`).
        cache_path: the shared request cache (JSONL path, or None: in memory).
        salt: :class:`ChatClient` ``salt`` (the run's seed).
    """

    def __init__(self, base: LLMConfig, roles: Mapping[str, LLMConfig],
                 cache_path: str | Path | None = None, salt: str = ""):
        cache = ReplyCache(cache_path)
        self.default = ChatClient(base, cache, salt)
        by_identity = {_identity(base): self.default}
        self.route: dict[str, ChatClient] = {}
        for role, cfg in roles.items():
            key = _identity(cfg)
            if key not in by_identity:
                by_identity[key] = ChatClient(cfg, cache, salt)
            self.route[role] = by_identity[key]
        self.clients = list(by_identity.values())

    def check_fresh(self, agents: Sequence[str]) -> None:
        """Check the endpoint of each of ``agents`` now (:meth:`ChatClient.check_once`) when
        the cache holds no reply: a fresh run will send requests, so an unreachable URL or
        unknown model fails before the rollout compiles; a run with cached replies checks at
        its first miss (one replayed wholly from the cache needs no server). No ``agents``
        (a family that names none): the team's client."""
        if not self.default.cache.entries:
            used = {id(self.client(a)): self.client(a) for a in agents} or {0: self.default}
            for c in used.values():
                c.check_once()

    def client(self, agent: str) -> ChatClient:
        """The client of ``agent`` (its role's, else the team's)."""
        return self.route.get(agent, self.default)

    def complete_many(self, reqs: list[Request]) -> list[Reply]:
        """All replies in order (:meth:`ChatClient.complete_many`, per client)."""
        groups: dict[int, list[int]] = defaultdict(list)
        for i, req in enumerate(reqs):
            groups[id(self.client(req.agent))].append(i)
        if len(groups) <= 1:
            return self.client(reqs[0].agent).complete_many(reqs) if reqs else []
        out: list[Reply | None] = [None] * len(reqs)

        def send(rows: list[int]) -> None:
            replies = self.client(reqs[rows[0]].agent).complete_many([reqs[i] for i in rows])
            for i, reply in zip(rows, replies):
                out[i] = reply

        with ThreadPoolExecutor(max_workers=len(groups)) as pool:
            list(pool.map(send, groups.values()))  # re-raises the first error
        return out  # type: ignore[return-value]

    async def acomplete_many(self, reqs: list[Request]) -> list[Reply]:
        """:meth:`complete_many` on the running event loop
        (:meth:`ChatClient.acomplete_many`, per client, concurrently)."""
        groups: dict[int, list[int]] = defaultdict(list)
        for i, req in enumerate(reqs):
            groups[id(self.client(req.agent))].append(i)
        out: list[Reply | None] = [None] * len(reqs)
        sent = await asyncio.gather(*(self.client(reqs[rows[0]].agent).acomplete_many(
            [reqs[i] for i in rows]) for rows in groups.values()))
        for rows, replies in zip(groups.values(), sent):
            for i, reply in zip(rows, replies):
                out[i] = reply
        return out  # type: ignore[return-value]

    @property
    def usage(self) -> dict[str, Usage]:
        """Per-agent totals over every client."""
        total: dict[str, Usage] = defaultdict(Usage)
        for c in self.clients:
            for agent, u in list(c.usage.items()):
                acc = total[agent]
                for f in dataclasses.fields(Usage):
                    setattr(acc, f.name, getattr(acc, f.name) + getattr(u, f.name))
        return total

    @property
    def retries(self) -> Counter:
        """Retries by class over every client."""
        return sum((c.retries for c in self.clients), Counter())

    def prompt_budget(self) -> int | None:
        """The smallest prompt budget of the team's clients (a game fits every role's prompts
        to one budget), or None when none is known."""
        budgets = [b for b in (c.prompt_budget() for c in self.clients) if b]
        return min(budgets) if budgets else None

    def usage_json(self) -> dict:
        return {a: dataclasses.asdict(u) for a, u in sorted(self.usage.items())}

    def adapted(self) -> dict[str, dict]:
        """``{model: what its endpoint's errors taught}`` for the clients that adapted
        (:attr:`ChatClient.adapted`)."""
        fresh = {"token_limit_key": "max_tokens", "dropped": []}
        return {c.cfg.model: dict(c.adapted) for c in self.clients if c.adapted != fresh}


__all__ = ["ROLE_KEYS", "TeamClient", "role_configs"]
