"""The import graph: the library's modules import one another without a circle, and the entry
points are leaves: no script under ``train/`` or ``eval/`` imports another entry point (what two
scripts share lives in the library), and no file changes ``sys.path`` (a script runs with the
installed package; tests import the scripts through pytest's ``pythonpath``).

Read from the source (``ast``): for the circle, the module-level imports, type-only
(``if TYPE_CHECKING:``) ones too, since a circle of types is a circle of ideas; for the entry
points, every import statement, those inside functions too.
"""

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def module_name(path: Path) -> str:
    """``jaxcollab/envs/ktane/env.py`` → ``jaxcollab.envs.ktane.env`` (a package: its
    ``__init__``'s folder)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_imports(path: Path) -> set[str]:
    """Every module ``path`` imports at module level (also under ``if`` / ``try``), each
    ``from a import b`` as both ``a`` and ``a.b`` (``b`` may be a module)."""
    found, todo = set(), list(ast.parse(path.read_text(), str(path)).body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If | ast.Try | ast.ExceptHandler):
            todo += [n for f in ("body", "orelse", "handlers", "finalbody")
                     for n in getattr(node, f, [])]
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module → the modules under ``root`` it imports at module level, less its own packages
    (importing ``a.b.c`` runs ``a.b`` first: no edge of ours)."""
    modules = {module_name(p): p for p in root.rglob("*.py")}
    return {m: {d for d in module_imports(p) & set(modules) if not m.startswith(d + ".")} - {m}
            for m, p in modules.items()}


def test_the_library_has_no_import_circle():
    graph = import_graph(ROOT / "jaxcollab")
    # the Keep-Talking helpers take the env's static Board, not the env: no circle through it
    assert "jaxcollab.envs.ktane.board" in graph["jaxcollab.envs.ktane.rules"]
    assert "jaxcollab.envs.ktane.env" not in graph["jaxcollab.envs.ktane.rules"]
    assert circles(graph) == []


def test_the_check_finds_a_type_only_circle(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg.a import A\n")
    (tmp_path / "pkg" / "a.py").write_text("from pkg import b\nA = 1\n")
    (tmp_path / "pkg" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.c import C\n")
    (tmp_path / "pkg" / "c.py").write_text("import pkg.a\n\ndef f():\n    import pkg.b\n")
    # a -> b -> c -> a (the type-only edge counts; the import inside f does not close b-c)
    assert circles(import_graph(tmp_path / "pkg")) == [["pkg.a", "pkg.b", "pkg.c"]]


#: The entry points: the scripts ``train/*.py`` and ``eval/*.py``, as modules (``eval.rollout``).
SCRIPTS = {f"{p.parent.name}.{p.stem}" for d in ("train", "eval") for p in (ROOT / d).glob("*.py")
           if p.stem != "__init__"}


def _files(*dirs: str) -> list[Path]:
    return sorted(p for d in dirs for p in (ROOT / d).rglob("*.py"))


def entry_point_imports(path: Path, scripts: set[str] = SCRIPTS) -> list[str]:
    """``"line: module"`` of every import in ``path`` of a module of ``scripts`` (``import
    eval.rollout``, ``from eval.rollout import run``, ``from eval import rollout``) and every
    relative import (which, in a script, can only reach its neighbours)."""
    bad = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            names = ["." * node.level + (node.module or "")]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        bad += [f"{node.lineno}: {n if n.startswith('.') else '.'.join(n.split('.')[:2])}"
                for n in names if n.startswith(".") or ".".join(n.split(".")[:2]) in scripts]
    return list(dict.fromkeys(bad))


def path_changes(path: Path) -> list[int]:
    """Lines of ``path`` that touch ``sys.path`` (``sys.path.insert(…)``, ``sys.path = …``,
    ``sys.path += …``)."""
    return [node.lineno for node in ast.walk(ast.parse(path.read_text(), str(path)))
            if isinstance(node, ast.Attribute) and node.attr == "path"
            and isinstance(node.value, ast.Name) and node.value.id == "sys"]


def test_no_entry_point_imports_another():
    assert {"train.marl", "eval.rollout", "eval.learned"} <= SCRIPTS  # the scripts were found
    bad = {str(p.relative_to(ROOT)): entry_point_imports(p) for p in _files("train", "eval")}
    assert not {p: b for p, b in bad.items() if b}


def test_nothing_changes_sys_path():
    bad = {str(p.relative_to(ROOT)): path_changes(p)
           for p in _files("jaxcollab", "train", "eval", "tests")}
    assert not {p: b for p, b in bad.items() if b}


@pytest.mark.parametrize(("source", "found"), [
    ("from eval.rollout import run\n", ["1: eval.rollout"]),
    ("def f():\n    from train import marl\n", ["2: train.marl"]),
    ("import train.collab as c\n", ["1: train.collab"]),
    ("from . import rollout\n", ["1: ."]),
    ("from jaxcollab.agents.driver import run\nimport evaluate\n", []),
    ("from eval import benchmarks\nfrom eval.benchmarks._timing import best_time\n", []),
])
def test_the_check_finds_entry_point_imports(tmp_path, source, found):
    (tmp_path / "script.py").write_text(source)
    assert entry_point_imports(tmp_path / "script.py", {"eval.rollout", "train.marl",
                                                        "train.collab"}) == found


def test_the_check_finds_sys_path_changes(tmp_path):
    (tmp_path / "script.py").write_text(
        "import sys\nsys.path.insert(0, '.')\nx = sys.argv\nsys.path += ['a']\n")
    assert sorted(path_changes(tmp_path / "script.py")) == [2, 4]
