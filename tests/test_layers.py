"""The layer rule, checked over every module's imports (README "Architecture").

A family is one wing: ``jaxcollab/envs/<f>`` (the pure JAX environment) and
``jaxcollab/agents/<f>`` (everything else of it). The generic packages hold mechanisms only and
import no family; the floors run ``core <- envs <- wings``, and nothing in ``jaxcollab/``
imports an entry point (``train/``, ``eval/``). Imports are read with :mod:`ast`: module-level
and function-level ``import`` statements, relative ones resolved, and ``importlib.import_module``
(or ``__import__``) of a string literal.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "jaxcollab"

#: Packages of mechanisms: never a family's environment or wing, not even lazily (the round
#: trainer and its model too: a task plugs in through its family's ``RoundTask``).
GENERIC = ("core", "io", "scale", "llm", "marl", "analysis", "report", "collab", "models")
#: Entry points that ask the plug-in only (``jaxcollab.family``): they name no family.
FAMILY_BLIND = ("eval/analyze.py", "eval/bounds.py", "eval/export.py", "eval/llm.py",
                "eval/protocols.py", "eval/rollout.py", "jaxcollab/agents/driver.py")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    """Module name → file, for every module of the library and the entry points."""
    files = [*PKG.rglob("*.py"), *(ROOT / "train").glob("*.py"), *(ROOT / "eval").rglob("*.py")]
    return {_module_name(p): p for p in files}


SOURCES = _sources()
FAMILIES = sorted({p.stem if p.is_file() else p.name for p in (PKG / "envs").iterdir()
                   if not p.name.startswith("_") and (p.suffix == ".py" or p.is_dir())})
WINGS = sorted(p.name for p in (PKG / "agents").iterdir() if (p / "__init__.py").is_file())


def _string_arg(call: ast.Call) -> str | None:
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
    if name in ("import_module", "__import__") and call.args and isinstance(
            call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return call.args[0].value
    return None


def imports(module: str) -> set[str]:
    """Every module ``module`` imports (``from a import b`` counts ``a.b`` when that is a
    module, else ``a``), wherever in the file the import stands."""
    path = SOURCES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.add(sub if sub in SOURCES else base)
        elif isinstance(node, ast.Call) and (target := _string_arg(node)):
            out.add(target)
    return out


def unit(module: str) -> str:
    """The layer unit of a module: ``envs.<f>`` / ``agents.<f>`` for a family's (a wing is a
    package: a plain module of ``agents/``, the rollout driver, is the ``agents`` unit), the top
    package (``core``, ``llm``, ...) otherwise; ``train`` / ``eval`` for the entry points."""
    parts = module.split(".")
    if parts[0] != "jaxcollab":
        return parts[0]
    if len(parts) == 1:
        return "jaxcollab"
    if len(parts) > 2 and (parts[1] == "envs" or parts[1] == "agents" and parts[2] in WINGS):
        return f"{parts[1]}.{parts[2]}"
    return parts[1]


def _edges() -> dict[str, set[str]]:
    """Unit → the units its modules import (within the project; external imports dropped)."""
    graph: dict[str, set[str]] = {}
    for module in SOURCES:
        deps = {unit(m) for m in imports(module)
                if m.split(".")[0] in ("jaxcollab", "train", "eval")}
        graph.setdefault(unit(module), set()).update(deps - {unit(module)})
    return graph


GRAPH = _edges()


def _offenders(pred) -> list[tuple[str, str]]:
    return sorted((m, d) for m in SOURCES for d in imports(m) if pred(m, d))


def _is_family(m: str) -> bool:
    return unit(m).split(".")[0] in ("envs", "agents") and "." in unit(m)


def test_the_layers_know_every_family_and_wing():
    assert set(FAMILIES) == {"bomb", "ktane", "maze", "parity"}, FAMILIES
    assert set(WINGS) == set(FAMILIES), WINGS
    assert {"core", "llm", "marl", "envs.bomb", "agents.ktane", "train", "eval"} <= set(GRAPH)


def test_import_parsing_sees_lazy_and_string_imports():
    """The parser itself: a function-level import, a relative one and an ``import_module``
    string all count (else the rules below could pass by not looking)."""
    assert "jaxcollab.agents.bomb.llm" in imports("jaxcollab.agents.bomb")  # in a function
    assert "jaxcollab.agents.bomb.sanzaru" in imports("jaxcollab.agents.bomb")
    assert "jaxcollab.core.registry" in imports("jaxcollab")


def test_generic_packages_import_no_family():
    bad = _offenders(lambda m, d: unit(m) in GENERIC and _is_family(d))
    assert not bad, f"generic modules importing a family (move the code to its wing): {bad}"


def test_floors_core_then_envs_then_wings():
    """``core`` imports nothing of the project above it; a family's environment imports only
    ``core`` and itself; a wing imports no other family."""
    for u, deps in GRAPH.items():
        if u == "core":
            assert not deps, deps
        if u.startswith("envs."):
            assert deps <= {"core"}, (u, deps)
        if u.startswith("agents."):
            others = {d for d in deps if d.split(".")[0] in ("envs", "agents") and "." in d
                      and d.split(".")[1] != u.split(".")[1]}
            assert not others, (u, others)


def test_nothing_in_the_library_imports_an_entry_point():
    bad = _offenders(lambda m, d: m.startswith("jaxcollab") and d.split(".")[0] in ("train",
                                                                                   "eval"))
    assert not bad, bad


def test_no_import_cycle_between_units():
    """The unit graph is acyclic (depth-first search; the cycle is named when found)."""
    state: dict[str, int] = {}

    def visit(u: str, path: list[str]) -> None:
        state[u] = 1
        for d in sorted(GRAPH.get(u, ())):
            assert state.get(d) != 1, f"import cycle: {' -> '.join([*path, u, d])}"
            if d not in state:
                visit(d, [*path, u])
        state[u] = 2

    for u in sorted(GRAPH):
        if u not in state:
            visit(u, [])


def test_family_blind_entry_points_import_no_family():
    """These entry points ask ``jaxcollab.family(name)`` and nothing else (the family's
    teams, evaluation, exporter, analysis and bounds)."""
    for path in FAMILY_BLIND:
        module = _module_name(ROOT / path)
        bad = sorted(d for d in imports(module) if _is_family(d))
        assert not bad, (path, bad)


def _name_switches(module: str) -> list[str]:
    """Where ``module`` branches on a family's name: a comparison with a family name (``==``,
    ``in``) or a ``startswith`` of a family prefix, as source lines."""
    path = SOURCES[module]
    tree = ast.parse(path.read_text(), str(path))

    def names_family(node) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and (
            node.value.split("/")[0] in FAMILIES)

    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(map(names_family, [node.left,
                                                                    *node.comparators])):
            hits.append(node)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "startswith" and node.args
              and any(map(names_family, ast.walk(node.args[0])))):
            hits.append(node)
    return [f"{path.relative_to(ROOT)}:{n.lineno}: {ast.unparse(n)}" for n in hits]


def test_nothing_family_blind_branches_on_a_family_name():
    """Generic modules and the family-blind entry points ask the plug-in; they never test a
    family's name (``family == "bomb"``, ``name.startswith("ktane/")``)."""
    blind = [m for m in SOURCES if unit(m) in GENERIC] + [
        _module_name(ROOT / p) for p in FAMILY_BLIND]
    bad = [hit for m in blind for hit in _name_switches(m)]
    assert not bad, bad
