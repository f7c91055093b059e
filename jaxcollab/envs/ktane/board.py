"""The bomb's board: which module type sits in each slot, the static value every rule helper
reads (the environment holds one, :attr:`KtaneEnv.board <jaxcollab.envs.ktane.env.KtaneEnv>`;
helpers take it rather than the environment, so they need not import it)."""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane.modules.base import VERBS, ModuleType


@dataclasses.dataclass(frozen=True)
class Board:
    """The module types of a mission's slots (slot ``i`` on face ``i // SLOTS_PER_FACE``;
    GPTNT §4.2.1) and the tables derived from them, compared and hashed by ``types``.

    Attributes:
        types: the module type of each slot, ``n_slots`` of them.
        kinds: the distinct types in slot order (the ``lax.switch`` branches).
        n_slots: ``len(types)``.
        slot_kind: int32 ``[n_slots]``: each slot's index into ``kinds``.
        slot_face: int32 ``[n_slots]``: each slot's face.
        n_targets: int32 ``[len(kinds)]``: each kind's number of labelled targets.
        accepts: bool ``[len(kinds), len(VERBS)]``: the verbs each kind takes.
    """

    types: tuple[ModuleType, ...]
    kinds: tuple[ModuleType, ...] = dataclasses.field(init=False, compare=False, repr=False)
    n_slots: int = dataclasses.field(init=False, compare=False, repr=False)
    slot_kind: np.ndarray = dataclasses.field(init=False, compare=False, repr=False)
    slot_face: np.ndarray = dataclasses.field(init=False, compare=False, repr=False)
    n_targets: np.ndarray = dataclasses.field(init=False, compare=False, repr=False)
    accepts: np.ndarray = dataclasses.field(init=False, compare=False, repr=False)

    def __post_init__(self):
        types = tuple(self.types)
        kinds = tuple(dict.fromkeys(types))
        derived = dict(
            types=types, kinds=kinds, n_slots=len(types),
            slot_kind=np.array([kinds.index(t) for t in types], np.int32),
            slot_face=np.arange(len(types), dtype=np.int32) // T.SLOTS_PER_FACE,
            n_targets=np.array([t.n_targets for t in kinds], np.int32),
            accepts=np.array([[v in t.verbs for v in range(len(VERBS))] for t in kinds]),
        )
        for k, v in derived.items():
            object.__setattr__(self, k, v)
