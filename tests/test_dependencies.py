"""Imports hold: every third-party import is declared in ``pyproject.toml`` (so a fresh
``pip install -e ".[dev]"`` runs everything), and the library's layers import only downward
(``core ← envs ← agents/collab/llm/… ← train/eval``; ``io`` does not import ``collab``).

The imports are read from the source (``ast``), every statement including those inside
functions, so an import on a rarely run path is checked too.
"""

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("jaxcollab", "eval", "train", "tests")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: Top-level names that are this repository's own code (packages and modules at the root,
#: and test helpers imported by their file name).
LOCAL = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists() or p.suffix == ".py"}
LOCAL |= {p.stem for p in (ROOT / "tests").glob("*.py")} | {"jaxcollab", "eval", "train", "tests"}
#: Top-level import name → the installed distributions providing it (one scan of site-packages).
PROVIDERS = importlib.metadata.packages_distributions()


def _normal(name: str) -> str:
    """A distribution name in PEP 503 normal form (``Orbax_Checkpoint`` → ``orbax-checkpoint``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _name(requirement: str) -> str:
    return _normal(re.match(r"[A-Za-z0-9._-]+", requirement.strip()).group(0))


def _declared(*extras: str) -> set[str]:
    """Distributions in ``dependencies`` plus the given extras, following ``jaxcollab[...]``."""
    project = PYPROJECT["project"]
    optional = project.get("optional-dependencies", {})
    names, todo, seen = {_name(r) for r in project["dependencies"]}, list(extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for req in optional[extra]:
            own = re.fullmatch(r"\s*jaxcollab\[([^\]]+)\].*", req)
            if own:
                todo += [e.strip() for e in own.group(1).split(",")]
            else:
                names.add(_name(req))
    return names


def _imports(path: Path) -> list[tuple[str, int]]:
    """``(absolute module name, line)`` of every import statement in ``path``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.module, node.lineno))
    return out


def _files(*dirs: str) -> list[Path]:
    return sorted(p for d in dirs for p in (ROOT / d).rglob("*.py"))


def _distributions(module: str) -> set[str]:
    """Distributions that provide top-level ``module`` (its own name when none installed does:
    an optional extra such as ``torch`` need not be installed to be checked)."""
    found = PROVIDERS.get(module, [module])
    return {_normal(d) for d in found}


def _undeclared(dirs: tuple[str, ...], declared: set[str]) -> list[str]:
    bad = []
    for path in _files(*dirs):
        for module, line in _imports(path):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top in LOCAL or top == "__future__":
                continue
            if not _distributions(top) & declared:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module!r}, provided by "
                           f"{sorted(_distributions(top))}, not declared in pyproject.toml")
    return bad


def test_library_and_entry_point_imports_are_declared():
    everything = _declared(*PYPROJECT["project"].get("optional-dependencies", {}))
    assert not _undeclared(("jaxcollab", "eval", "train"), everything)


#: Slow-tier tests that need an extra beyond ``dev`` (llama.cpp compiles for ~40 min on 2 cores,
#: too long for every install of the test tools); the README says how to install it.
OPT_IN = {"tests/test_llm_real.py": "llm-real"}


def test_every_test_import_comes_with_the_dev_extra():
    bad = _undeclared(("tests",), _declared("dev"))
    assert not [b for b in bad if b.split(":")[0] not in OPT_IN]
    assert not _undeclared(("tests",), _declared("dev", *OPT_IN.values()))


def test_an_undeclared_import_is_reported(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("import numpy\n\ndef f():\n    import tqdm\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert _undeclared(("pkg",), {"numpy"}) == [
        "pkg/mod.py:4 imports 'tqdm', provided by ['tqdm'], not declared in pyproject.toml"]


# --- layers -----------------------------------------------------------------------------------

#: Sub-package → the jaxcollab sub-packages it may import (``core ← envs ← the rest``).
LOWER = {"core": {"core"}, "envs": {"core", "envs"}}
#: Pairs that stay apart although neither is below the other.
APART = {("io", "collab")}


def _layer(path: Path) -> str:
    parts = path.relative_to(ROOT / "jaxcollab").parts
    return parts[0] if len(parts) > 1 else "core"  # jaxcollab/__init__.py: the core facade


def _layer_violations(rule) -> list[str]:
    bad = []
    for path in _files("jaxcollab"):
        layer = _layer(path)
        for module, line in _imports(path):
            parts = module.split(".")
            if parts[0] in ("eval", "train"):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports the entry point {module}")
            elif parts[0] == "jaxcollab" and len(parts) > 1 and not rule(layer, parts[1]):
                bad.append(f"{path.relative_to(ROOT)}:{line} ({layer}) imports {module}")
    return bad


def test_core_and_envs_import_nothing_above_them():
    assert not _layer_violations(lambda layer, target: target in LOWER.get(layer, {target}))


def test_io_does_not_import_collab():
    assert not _layer_violations(lambda layer, target: (layer, target) not in APART)
