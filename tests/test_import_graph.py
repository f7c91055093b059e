"""The import graph: the library's modules import one another without a circle.

Read from the source (``ast``): the module-level imports, type-only (``if TYPE_CHECKING:``)
ones too, since a circle of types is a circle of ideas.
"""

import ast
import sys
from pathlib import Path

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
