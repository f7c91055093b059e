"""A family from another installed package runs with every command-line entry point.

The toy family (``tests/toy_family.py``) becomes the package ``toyfamily``, declared in the
``jaxcollab.families`` entry-point group by its own ``pyproject.toml`` (one line), installed with
pip into a directory of its own (``--target``, this test's venv untouched) and put on the
subprocesses' ``PYTHONPATH``. Nothing in this repository names it: ``eval/rollout.py`` (its
scripted team, then an LLM team against the test server) and ``eval/export.py`` find it through
the entry point alone.
"""

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from llm_server import LLMServer

from jaxcollab.core import registry
from jaxcollab.core.family import Family

ROOT = Path(__file__).resolve().parent.parent

PYPROJECT = """\
[build-system]
requires = ["setuptools>=70.1"]
build-backend = "setuptools.build_meta"

[project]
name = "toyfamily"
version = "0.1.0"

[project.entry-points."jaxcollab.families"]
toy = "toyfamily"
"""

@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The ``PYTHONPATH`` directory holding the installed ``toyfamily``."""
    src, target = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("site")
    (src / "pyproject.toml").write_text(PYPROJECT)
    (src / "toyfamily").mkdir()
    shutil.copy(Path(__file__).parent / "toy_family.py", src / "toyfamily" / "__init__.py")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "--target", str(target), str(src)],
                   check=True, cwd=src)
    return target


def cli(site: Path, script: str, *overrides: str) -> subprocess.CompletedProcess:
    """``python <script> <overrides>`` from the repository root, ``site`` on the path."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, script, *overrides], cwd=ROOT, env=env,
                          capture_output=True, text=True)


@pytest.mark.full
def test_an_installed_family_runs_from_the_shell(installed, tmp_path):
    scripted = cli(installed, "eval/rollout.py", "env=toy/guess", "agent=tell", "episodes=8",
                   f"out_dir={tmp_path / 's'}")
    assert scripted.returncode == 0, scripted.stderr
    res = json.loads((tmp_path / "s" / "results.json").read_text())
    # the seer sends its digit on step 1, the guesser names it on step 2
    assert (res["success_rate"], res["mean_steps"], res["agent"]) == (1.0, 2.0, "tell")

    out = tmp_path / "x.jsonl"
    exported = cli(installed, "eval/export.py", "env=toy/guess", "n=6", "seed=0", f"out={out}")
    assert exported.returncode == 0, exported.stderr
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["env"], r["index"]) for r in recs] == [("toy/guess", i) for i in range(6)]
    targets = [r["target"] for r in recs]
    assert all(r["text"]["seer"] == f"step 0: digit {t}" for r, t in zip(recs, targets))

    with LLMServer() as server:
        llm = cli(installed, "eval/rollout.py", "env=toy/guess", "agent=llm",
                  f"llm.base_url={server.url}", "llm.model=good", "llm.backoff_s=0.01",
                  "episodes=6", "seed=0", f"out_dir={tmp_path / 'l'}")
    assert llm.returncode == 0, llm.stderr
    res = json.loads((tmp_path / "l" / "results.json").read_text())
    # the server answers "~d" (digit 0) to every prompt: episode i, the exported instance i, is
    # won on its first step iff its target is 0, else never (4 steps)
    won = [t == 0 for t in targets]
    assert res["success_rate"] == np.mean(won) and res["episodes"] == 6
    assert res["mean_steps"] == np.mean([1 if w else 4 for w in won])
    assert (res["model"], res["parse_errors"]) == ("good", {})


@pytest.mark.full
def test_an_unknown_name_lists_the_installed_family(installed, tmp_path):
    bad = cli(installed, "eval/export.py", "env=toy/gues", "n=1", f"out={tmp_path / 'x.jsonl'}")
    assert bad.returncode == 1
    assert "'toy/gues'" in bad.stderr and "Did you mean 'toy/guess'?" in bad.stderr
    assert "bomb/base-1" in bad.stderr  # every family's names, the built-ins beside it


@pytest.fixture
def declared(monkeypatch):
    """``declared(**{name: value})``: the registry sees only these entry points (and no family
    registered yet); the module ``fake_family`` holds ``FAKE = Family(name="fake")``."""
    module = types.ModuleType("fake_family")
    module.FAKE = Family(name="fake")
    monkeypatch.setitem(sys.modules, "fake_family", module)
    monkeypatch.setattr(registry, "_PLUGINS", {})

    def declare(**eps: str) -> None:
        found = {n: importlib.metadata.EntryPoint(n, v, registry.GROUP) for n, v in eps.items()}
        monkeypatch.setattr(registry, "entry_points", lambda: found)

    return declare


def test_an_entry_point_may_name_the_family_object(declared):
    declared(fake="fake_family:FAKE")
    assert registry.family("fake/x") is sys.modules["fake_family"].FAKE
    assert registry.family("fake") is sys.modules["fake_family"].FAKE  # registered once


def test_an_entry_point_naming_another_family_is_refused(declared):
    declared(other="fake_family:FAKE")
    with pytest.raises(ValueError, match=r"other = 'fake_family:FAKE'.*a Family named 'other'"):
        registry.family("other/x")


def test_no_family_installed_says_so(declared):
    declared()
    with pytest.raises(KeyError, match=r"known: none \(no package declares the entry-point "
                                        r"group 'jaxcollab.families'; pip install -e \. \?\)"):
        registry.family("bomb/base-1")
