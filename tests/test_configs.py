"""Every default is stated once: each entry point's YAML names its schema and states none of its
defaults; no config class restates another's (the schemas of ``jaxcollab.io.schema``, the
families' configs in ``jaxcollab/agents/<family>/config.py``, the LLM and trainer settings); and
no code reads a config key with a literal fallback (``cfg.get(key, default)``). A default lives
in one place, its dataclass field, with the comment saying what it does."""

from __future__ import annotations

import ast
import dataclasses
import enum
import inspect
import textwrap
import typing
from pathlib import Path

import pytest
from omegaconf import OmegaConf

import jaxcollab
from jaxcollab.collab import config as collab_config
from jaxcollab.core import registry
from jaxcollab.io import schema

ROOT = Path(__file__).resolve().parents[1]
#: schema name -> its top-level YAML (the training driver's collab.yaml has its own test)
FILES = {name: ROOT / "configs" / f"{name}.yaml" for name in schema.SCHEMAS}
FILES |= {"marl": ROOT / "configs" / "marl" / "marl.yaml",
          "learned": ROOT / "configs" / "marl" / "learned.yaml",
          "collabgap": ROOT / "configs" / "collabgap" / "collabgap.yaml"}
FILES |= {f"task/{name}": ROOT / "configs" / "task" / f"{name}.yaml"
          for name in schema.TASK_SCHEMAS}
SCHEMAS = schema.SCHEMAS | {f"task/{n}": c for n, c in schema.TASK_SCHEMAS.items()}


def _leaves(tree: dict, prefix: str = ""):
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            yield from _leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


@pytest.mark.parametrize("name", sorted(FILES))
def test_yaml_states_no_schema_default(name):
    raw = OmegaConf.to_container(OmegaConf.load(FILES[name]), resolve=False)
    assert f"{name.split('/')[-1]}_schema" in raw.pop("defaults")
    raw.pop("hydra", None)
    defaults = dict(_leaves(OmegaConf.to_container(OmegaConf.structured(SCHEMAS[name]),
                                                   resolve=False)))
    restated = {k: v for k, v in _leaves(raw)
                if not (isinstance(v, str) and "${" in v) and defaults.get(k, object()) == v}
    assert not restated, f"{FILES[name].name} restates defaults of its schema: {restated}"


# -- every default is stated once -----------------------------------------------------------

#: Names of the run-config mappings the library reads (``options``, ``cfg``, a block, ...):
#: a literal fallback ``<name>.get(key, default)`` for a key of a schema restates its default.
CONFIG_NAMES = {"options", "o", "cfg", "block", "plain", "log", "config", "settings", "spec"}


def _config_classes() -> set[type]:
    """Every config dataclass an entry point composes: the schemas, their blocks, the family
    configs they hold, recursively."""
    found: set[type] = set()

    def visit(cls: type) -> None:
        if cls in found:
            return
        found.add(cls)
        for t in typing.get_type_hints(cls).values():
            for c in (t, *typing.get_args(t)):
                if dataclasses.is_dataclass(c):
                    visit(c)

    families = [jaxcollab.family(name) for name in registry.family_names()]
    for cls in (*schema.SCHEMAS.values(), *schema.TASK_SCHEMAS.values(), collab_config.Collab,
                schema.RolloutKeys, schema.ExportKeys,
                *(c for f in families for c in (f.config, f.export_config) if c is not None)):
        visit(cls)
    return found


def _default(f: dataclasses.Field):
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def test_config_classes_cover_every_family_and_block():
    names = {c.__name__ for c in _config_classes()}
    assert {"BombConfig", "BombBlock", "KtaneConfig", "KtaneBlock", "MazeConfig", "MazeBlock",
            "LLMConfig", "PPOConfig", "JudgeBlock", "Collabgap"} <= names
    rollout = {f.name for f in dataclasses.fields(schema.Rollout)}
    assert {"bank", "bomb", "ktane", "maze", "ruleset", "checkpoint", "llm"} <= rollout


def _stated(cls: type) -> dict[str, typing.Any]:
    """The defaults ``cls`` states in its own source as values (``4``, ``count(4)``,
    ``bounded(0.5, gt=0)``, ``MazeSetting.action``), not by reference to another class's
    (``count(MazeBlock.rounds)``) nor through a helper's (``seed_field()``)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except OSError:  # made by make_dataclass from the fields of classes that state them
        return {}
    fields = {f.name: _default(f) for f in dataclasses.fields(cls)}
    out = {}
    for node in tree.body[0].body:
        if not (isinstance(node, ast.AnnAssign) and node.value is not None
                and getattr(node.target, "id", None) in fields):
            continue
        value = node.value
        if isinstance(value, ast.Call) and value.args:
            value = value.args[0]
        name = node.target.id
        if isinstance(value, ast.Constant) or (isinstance(value, ast.Attribute)
                                               and isinstance(fields[name], enum.Enum)):
            out[name] = fields[name]
    return out


def test_no_class_restates_another_class_defaults():
    """No config class states most of another's defaults again (as the trainer's settings once
    did beside train/marl.py's ``ppo`` block, and the LLM client's beside the ``llm`` block):
    one class, a subclass that states only what differs, or a reference to the other's
    default (``count(Calibration.n_bins)``)."""
    stated = {c: _stated(c) for c in _config_classes()}
    for a, sa in stated.items():
        for b, sb in stated.items():
            if a is b or issubclass(a, b) or issubclass(b, a) or not sa or not sb:
                continue
            same = sorted(k for k in sa.keys() & sb.keys() if sa[k] == sb[k])
            assert len(same) * 2 <= min(len(sa), len(sb)), (
                f"{a.__qualname__} and {b.__qualname__} both state the defaults of {same}")


def _family_of(path: str) -> str | None:
    """The family whose environment or wing holds ``path`` (``jaxcollab/envs/maze/...``), or
    None for a generic module."""
    parts = Path(path).parts
    return parts[2].removesuffix(".py") if len(parts) > 2 and parts[1] in ("envs",
                                                                           "agents") else None


def _constants() -> dict[str, list[tuple[str, object]]]:
    """Module-level numeric constants of the library (``WALL_PROB = 0.3``,
    ``HEIGHT = WIDTH = 6``) by name: ``[(module path, value)]``."""
    found: dict[str, list[tuple[str, object]]] = {}
    for path in sorted((ROOT / "jaxcollab").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                value = node.value.value
                if isinstance(value, int | float) and not isinstance(value, bool):
                    for target in node.targets:
                        if isinstance(target, ast.Name) and target.id.isupper():
                            found.setdefault(target.id, []).append(
                                (str(path.relative_to(ROOT)), value))
    return found


def _restated_constants(stated: dict[type, dict], constants: dict) -> list[str]:
    """``Class.field = value`` wherever a config class states as a literal the value of a
    library constant named for its field (``wall_prob`` and ``WALL_PROB``, ``n_bits`` and
    ``SEED_N_BITS``): the class should read the constant. A family's class is compared with
    its own family's constants and the generic ones, a generic class with all."""
    out = []
    for cls, fields in ((c, f) for c, f in stated.items() if f):  # made ones state none
        home = _family_of(str(Path(inspect.getsourcefile(cls)).relative_to(ROOT)))
        for name, value in fields.items():
            for const, places in constants.items():
                if const != name.upper() and not const.endswith(f"_{name.upper()}"):
                    continue
                out += [f"{cls.__qualname__}.{name} = {value!r} restates {const} of {where}"
                        for where, v in places if v == value and type(v) is type(value)
                        and home in (None, _family_of(where))]
    return out


def test_no_class_restates_a_library_constant():
    """A config default that is a constant of the environment (the maze generator's
    ``WALL_PROB``, the bomb bank's ``REPEATS``, parity's seed coefficients) reads it: stated
    twice, the two could drift apart."""
    stated = {c: _stated(c) for c in _config_classes()}
    assert not (bad := _restated_constants(stated, _constants())), bad


def test_restated_constant_scan_finds_one():
    """The scan above sees what it looks for: the literal defaults these schemas once held."""
    @dataclasses.dataclass
    class Old:
        wall_prob: float = 0.3
        repeats: int = 3
        n_bits: int = 30
        width: int = 7  # no constant has this value

    bad = _restated_constants({Old: _stated(Old)}, _constants())
    assert sorted(b.split(" restates ")[1].split(" of ")[0] for b in bad) == [
        "REPEATS", "SEED_N_BITS", "WALL_PROB"], bad


def test_no_subclass_or_default_instance_restates_a_default():
    """A subclass redeclares a field only to change its default, and a block's default
    instance (``field(default_factory=lambda: PPOConfig(env=...))``) sets only what differs
    from its class."""
    for cls in _config_classes():
        for base in cls.__mro__[1:]:
            if not dataclasses.is_dataclass(base):
                continue
            inherited = {f.name: f for f in dataclasses.fields(base)}
            for name in cls.__dict__.get("__annotations__", {}):
                if name in inherited:
                    mine = next(f for f in dataclasses.fields(cls) if f.name == name)
                    assert _default(mine) != _default(inherited[name]), (
                        f"{cls.__qualname__}.{name} restates {base.__qualname__}'s default")
        for f in dataclasses.fields(cls):
            value = _default(f)
            if dataclasses.is_dataclass(value) and f.default_factory is not type(value):
                plain = type(value)()
                restated = [k for k in _factory_keywords(cls, f.name)
                            if getattr(value, k) == getattr(plain, k)]
                assert not restated, f"{cls.__qualname__}.{f.name} restates {restated}"


def _factory_keywords(cls: type, name: str) -> set[str]:
    """The keywords the default factory of ``cls.name`` passes (read from its source)."""
    source = textwrap.dedent(inspect.getsource(cls))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
            return {k.arg for call in ast.walk(node) if isinstance(call, ast.Call)
                    for k in call.keywords if k.arg != "default_factory"}
    return set()


def _fallbacks(source: str, keys: set[str]):
    """``(line, call)`` of each ``<config>.get(key, default)`` / ``getattr(<config>, key,
    default)`` in ``source`` whose key is one of ``keys`` and whose receiver is named as a
    config (:data:`CONFIG_NAMES`)."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func, args = node.func, node.args
        if isinstance(func, ast.Attribute) and func.attr == "get" and len(args) == 2:
            receiver, key = func.value, args[0]
        elif isinstance(func, ast.Name) and func.id == "getattr" and len(args) == 3:
            receiver, key = args[0], args[1]
        else:
            continue
        name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(
            receiver, "id", None)
        if name in CONFIG_NAMES and isinstance(key, ast.Constant) and key.value in keys:
            yield node.lineno, ast.unparse(node)


def test_no_config_key_read_with_a_literal_fallback():
    """Families and entry points read their options as attributes (or plain items): a
    ``cfg.get(key, default)`` would state the schema's default a second time."""
    keys = {f.name for c in _config_classes() for f in dataclasses.fields(c)}
    found = [f"{path.relative_to(ROOT)}:{line}: {call}"
             for root in ("jaxcollab", "train", "eval")
             for path in sorted((ROOT / root).rglob("*.py"))
             for line, call in _fallbacks(path.read_text(), keys)]
    assert not found, "literal fallbacks of config keys:\n" + "\n".join(found)


def test_literal_fallback_scan_finds_one():
    """The scan above sees what it looks for (a check that can fail)."""
    source = ("def f(options, spec, rows):\n"
              "    a = options.get('bomb', {}).get('hint', 'weak')\n"
              "    b = getattr(spec.options, 'rounds', 4)\n"
              "    return rows.get('hint', 'weak'), options.get('hint'), a, b\n")
    assert sorted(line for line, _ in _fallbacks(source, {"bomb", "hint", "rounds"})) == [2, 3]


def test_typed_reads_a_mapping_as_the_family_config():
    """A family's options as attributes: given keys kept, missing ones at the dataclass's
    defaults (nested blocks too), other families' keys ignored, bounds checked."""
    from jaxcollab.agents.bomb.config import BombConfig
    from jaxcollab.agents.maze.config import MazeConfig
    from jaxcollab.core.config import typed
    from jaxcollab.core.errors import ConfigValueError
    from jaxcollab.llm.client import LLMConfig

    o = typed(BombConfig, {"bank": True, "bomb": {"hint": "strong"}, "maze": {"rounds": 2}})
    assert (o.bank, o.repeats, o.turn_order, o.bomb.hint, o.bomb.solo_player) == (
        True, 3, "cycle", "strong", False)
    assert typed(MazeConfig, {"seed": 5}).maze.rounds == 4 and typed(MazeConfig, None).maze
    with pytest.raises(ConfigValueError, match=r"llm.concurrency=0 is invalid"):
        typed(LLMConfig, {"concurrency": 0})
