"""Every entry point's YAML names its schema and states none of its defaults: a default lives in
one place, the schema dataclass (``jaxcollab.io.schema``), with the comment saying what it does."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from jaxcollab.io import schema

ROOT = Path(__file__).resolve().parents[1]
#: schema name -> its top-level YAML (the training driver's collab.yaml has its own test)
FILES = {name: ROOT / "configs" / f"{name}.yaml" for name in schema.SCHEMAS}
FILES |= {"marl": ROOT / "configs" / "marl" / "marl.yaml",
          "learned": ROOT / "configs" / "marl" / "learned.yaml",
          "collabgap": ROOT / "configs" / "collabgap" / "collabgap.yaml"}


def _leaves(tree: dict, prefix: str = ""):
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            yield from _leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


@pytest.mark.parametrize("name", sorted(FILES))
def test_yaml_states_no_schema_default(name):
    raw = OmegaConf.to_container(OmegaConf.load(FILES[name]), resolve=False)
    assert f"{name}_schema" in raw.pop("defaults")
    raw.pop("hydra", None)
    defaults = dict(_leaves(OmegaConf.to_container(OmegaConf.structured(schema.SCHEMAS[name]),
                                                   resolve=False)))
    restated = {k: v for k, v in _leaves(raw)
                if not (isinstance(v, str) and "${" in v) and defaults.get(k, object()) == v}
    assert not restated, f"{FILES[name].name} restates defaults of its schema: {restated}"
