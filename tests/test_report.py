"""eval/report.py: the HTML run report, opened in a real headless browser (Debian's chromium).

Run directories are real: an LLM run against the local stub server, an exact-theory run, and
(slow) scripted rollouts, the bank protocol and a tiny training run. Each page is loaded with
``chromium --dump-dom``; the tests read the DOM the browser built after running the page's
script: no script error, the tables hold the run's numbers, a URL hash opens an episode's
transcript, and model output that holds markup is shown as text and never run.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from llm_server import LLMServer

from jaxcollab.core.errors import ConfigValueError
from jaxcollab.io.llm_run import RunConfig, evaluate
from jaxcollab.llm.client import LLMConfig
from jaxcollab.llm.run import transcript_path
from jaxcollab.report import NotARunError, write_report
from jaxcollab.report.stats import Z90, wilson

ROOT = Path(__file__).resolve().parent.parent
INJECTED = ('<script>document.title="pwned"</script><img src=x onerror="document.title='
            "'pwned'\">")
INSTALL = "apt-get update && apt-get install -y chromium"


# --- the browser --------------------------------------------------------------------------------

def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail(f"chromium is not installed; the report tests need a real headless browser: "
                    f"{INSTALL} (Debian's chromium, as .ci/run installs it)")
    return found


def dump_dom(page: Path, tmp_path: Path, fragment: str = "") -> str:
    """The DOM chromium builds from ``page`` (after its script ran), serialised."""
    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--no-first-run", f"--user-data-dir={tmp_path / 'chromium-profile'}",
           "--virtual-time-budget=3000", "--dump-dom", url]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "<html" in out.stdout, out.stderr[-2000:]
    return out.stdout


class Dom(HTMLParser):
    """Elements by id, every table's rows (cell attributes and text) and every element's
    attributes in document order."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.by_id, self.tables, self.elements, self._open = {}, {}, [], []
        self._table = self._row = self._cell = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        el = {"tag": tag, "attrs": attrs, "text": ""}
        self.elements.append(el)
        if "id" in attrs:
            self.by_id[attrs["id"]] = el
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("id") or f"#{len(self.tables)}", [])
        elif tag == "tr" and self._table is not None:
            self._row = []
            self._table.append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = el
            self._row.append(el)
        if tag not in ("img", "meta", "br", "input", "link"):  # void elements never close
            self._open.append(el)

    def handle_endtag(self, tag):
        if any(el["tag"] == tag for el in self._open):
            while self._open.pop()["tag"] != tag:
                pass
        if tag == "table":
            self._table = None

    def handle_data(self, data):
        for el in self._open:
            el["text"] += data

    def rows(self, table_id: str) -> dict[str, list[dict]]:
        """Body rows of a table, keyed by their first cell's text."""
        return {r[0]["text"].strip(): r[1:] for r in self.tables[table_id][1:]}


def assert_loaded(dom: Dom) -> None:
    status, errors = dom.by_id["report-status"], dom.by_id["report-errors"]
    assert errors["text"] == "" and "hidden" in errors["attrs"], errors["text"]
    assert status["attrs"]["data-state"] == "ready" and status["text"] == "report loaded"


def value(cell: dict):
    return json.loads(cell["attrs"]["data-value"])


# --- run directories ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def llm_run(tmp_path_factory) -> Path:
    """Two bomb episodes by the stub server's well-formed team, with markup injected into one
    reply (as a model could write it) and an ``analysis.json`` coding episode 0."""
    out = tmp_path_factory.mktemp("llm")
    with LLMServer() as server:
        evaluate(LLMConfig(base_url=server.url, model="good", backoff_s=0.01),
                 RunConfig(env="bomb/base-1", episodes=2, batch=2), out)
    path = transcript_path(out, "bomb/base-1")
    records = [json.loads(x) for x in path.read_text().splitlines()]
    records[0]["agents"]["deaf"][0]["reply"] = INJECTED
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    (out / "analysis.json").write_text(json.dumps({
        "lost_episodes": 1, "episodes": [{"env": "bomb/base-1", "episode": 0,
                                          "failure_mode": "omission", "dead_channel": True,
                                          "wrong_round": False}]}))
    return out


def _report(run: Path, tmp_path: Path, fragment: str = "") -> tuple[Dom, str]:
    text = dump_dom(write_report([run]), tmp_path, fragment)
    dom = Dom(text)
    assert_loaded(dom)
    return dom, text


def report_cli(*overrides: str):
    """``python eval/report.py <overrides>`` in-process (the config Hydra composes)."""
    from hydra import compose, initialize_config_dir

    from eval.report import run

    with initialize_config_dir(str(ROOT / "configs"), version_base=None):
        return run(compose("report", overrides=list(overrides)))


# --- tests --------------------------------------------------------------------------------------

def test_wilson_interval():
    lo, hi = wilson(0, 9)  # k = 0: [0, z^2 / (n + z^2)]
    assert lo == 0.0 and hi == pytest.approx(Z90**2 / (9 + Z90**2), rel=1e-12)
    lo, hi = wilson(5, 10)  # symmetric about 1/2
    assert lo + hi == pytest.approx(1.0) and 0.25 < lo < 0.5
    assert wilson(9, 9) == pytest.approx((1 - wilson(0, 9)[1], 1.0))
    with pytest.raises(ValueError, match=r"k=3, n=2"):
        wilson(3, 2)


def test_llm_report_tables_and_transcripts(llm_run, tmp_path):
    results = json.loads((llm_run / "results.json").read_text())
    records = [json.loads(x) for x in transcript_path(llm_run, "bomb/base-1").read_text()
               .splitlines()]
    dom, text = _report(llm_run, tmp_path, fragment="ep-bomb-base-1-1")
    # the tables hold the run's numbers
    (cell,) = dom.rows("overall")["all"][1:]
    assert value(cell) == results["success_rate"]
    assert int(cell["attrs"]["data-episodes"]) == results["episodes"] == 2
    assert cell["text"].startswith(f"{100 * results['success_rate']:.1f} %")
    assert {k: value(v[0]) for k, v in dom.rows("endings").items()} == results["endings"]
    variant = dom.rows("variants")["bomb/base-1"]
    assert value(variant[1]) == results["variants"]["bomb/base-1"]["success_rate"]
    tokens = dom.rows("tokens")
    assert {a: (value(c[0]), value(c[1])) for a, c in tokens.items()} == {
        a: (t["prompt"], t["completion"]) for a, t in results["tokens"].items() if a != "total"}
    # the hash opened episode 1 (and only it); every turn is there, by step and role
    opened = dom.by_id["ep-bomb-base-1-1"]
    assert "open" in opened["attrs"] and "open" not in dom.by_id["ep-bomb-base-1-0"]["attrs"]
    turns = [e["attrs"] for e in dom.elements if "turn" in e["attrs"].get("class", "")]
    assert len(turns) == sum(len(t) for r in records for t in r["agents"].values())
    assert [(t["data-agent"], int(t["data-step"])) for t in turns[:3]] == [
        ("deaf", 0), ("mute", 1), ("blind", 2)]
    blind = records[1]["agents"]["blind"][0]
    assert blind["seen"] in opened["text"] and blind["reply"] in opened["text"]
    assert '"Cut wire 1."' in opened["text"]  # what Blind heard from Deaf
    # the injected markup is text on the page, and nothing of it ran
    assert INJECTED in dom.by_id["ep-bomb-base-1-0"]["text"]
    assert dom.by_id.get("report-status") and "pwned" not in text.split("</title>")[0]
    assert [e["tag"] for e in dom.elements].count("script") == 1
    assert not any(e["tag"] == "img" and e["attrs"].get("src") == "x" for e in dom.elements)
    # analysis codes beside the episode they code
    flags = [e["attrs"]["data-flag"] for e in dom.elements if "data-flag" in e["attrs"]]
    assert flags == ["failure_mode", "dead_channel"]
    assert "failure_mode: omission" in dom.by_id["ep-bomb-base-1-0"]["text"]
    assert value(dom.rows("analysis-summary")["lost_episodes"][0]) == 1
    shares = dom.rows("flag-shares")  # one coded (lost) episode: dead_channel set, wrong_round not
    assert {f: value(c[0]) for f, c in shares.items()} == {"dead_channel": 1, "wrong_round": 0}


def test_hash_opens_one_turn_of_one_role(llm_run, tmp_path):
    dom, _ = _report(llm_run, tmp_path, fragment="ep-bomb-base-1-0-s1-mute")
    turn = dom.by_id["ep-bomb-base-1-0-s1-mute"]
    assert turn["attrs"]["data-agent"] == "mute" and turn["attrs"]["data-step"] == "1"
    assert "open" in dom.by_id["ep-bomb-base-1-0"]["attrs"]
    assert "open" not in dom.by_id["ep-bomb-base-1-1"]["attrs"]


def test_unknown_keys_are_shown(llm_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(llm_run, run)
    results = json.loads((run / "results.json").read_text())
    results["future_metric"] = {"per_step": 0.25, "label": "<b>x</b>"}
    results["variants"] = [{"name": "base-1", "rate": 0.5}]  # a layout the table cannot read
    (run / "results.json").write_text(json.dumps(results))
    dom, _ = _report(run, tmp_path)
    rows = dom.rows("other")
    assert value(rows["future_metric.per_step"][0]) == 0.25
    assert rows["future_metric.label"][0]["text"] == "<b>x</b>"
    (stored,) = dom.rows("variants-as-stored")["variants"]
    assert json.loads(stored["text"]) == results["variants"]
    assert value(dom.rows("overall")["all"][1]) == results["success_rate"]  # the rest renders


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_theory_run_curves_and_cli(llm_run, tmp_path, cli):
    cli("eval/theory.py", "task=parity", "task.alphas=[0.2,0.15,0.1]", "task.n_bits=3",
        "task.n_rounds=3", "method=enumeration", f"out_dir={tmp_path / 'theory'}")
    results = json.loads((tmp_path / "theory" / "results.json").read_text())
    page = report_cli(f"run={tmp_path / 'theory'}")
    assert page == tmp_path / "theory" / "report.html"
    dom = Dom(dump_dom(page, tmp_path))
    assert_loaded(dom)
    rows = dom.rows("rounds")
    assert [value(c) for c in rows["prob_excess_mse"]] == results["prob_excess_mse"]
    images = [e["attrs"] for e in dom.elements if e["tag"] == "img"]
    assert all(i["src"].startswith("data:image/png;base64,") for i in images)
    assert "theory.png" in [i["alt"] for i in images]  # the run's own plot, inline
    # several runs, through the command line as the README shows it
    runs = f"runs=[{tmp_path / 'theory'},{llm_run}]"
    done = subprocess.run([sys.executable, "eval/report.py", runs], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    page = tmp_path / "theory" / "compare.html"
    assert f"-> {page}" in done.stdout
    dom = Dom(dump_dom(page, tmp_path))
    assert_loaded(dom)
    llm = json.loads((llm_run / "results.json").read_text())
    assert [c["text"] for c in dom.tables["compare-all"][0][1:]] == ["theory", "LLM good"]
    assert value(dom.rows("compare-all")["all"][1]) == llm["success_rate"]


def test_bad_run_names_the_path(llm_run, tmp_path):
    with pytest.raises(NotARunError, match=r"run='.*nowhere' is invalid; expected a run "
                       r"directory holding results.json; it is not a directory"):
        write_report([tmp_path / "nowhere"])
    with pytest.raises(NotARunError, match="it holds none"):
        write_report([tmp_path])
    with pytest.raises(NotARunError, match=f"run='{tmp_path}' is invalid"):
        report_cli(f"run=[{llm_run},{tmp_path}]")
    with pytest.raises(ConfigValueError, match=r"run=\[\] is invalid; expected a run directory "
                       "or a non-empty list"):
        report_cli("run=[]")
    with pytest.raises(ConfigValueError, match=r"runs='a' is invalid; expected runs= or its "
                       r"alias run=, not both \(run='b' given too\)"):
        report_cli("runs=a", "run=b")
    with pytest.raises(ConfigValueError, match=r"runs=None is invalid; expected a run "
                       r"directory or a non-empty list of them \(or run=, its alias\)"):
        report_cli()


CLICKS = """<script>
function pick(selector, value) {
  var s = document.querySelector(selector);
  s.value = value;
  s.dispatchEvent(new Event('change', {bubbles: true}));
}
pick('#ep-bomb-base-1-0 select.role-filter', 'blind');
pick('select.episode-filter', 'false');
</script>"""


def test_role_and_outcome_filters(llm_run, tmp_path):
    """The page's filters, driven by a test script appended to a copy of the page (the copy
    drops the policy that allows only the page's own script)."""
    records = {r["episode"]: r for r in map(json.loads, transcript_path(
        llm_run, "bomb/base-1").read_text().splitlines())}
    text = write_report([llm_run]).read_text()
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
    page = tmp_path / "clicked.html"
    page.write_text(text.replace("</body>", CLICKS + "</body>"))
    dom = Dom(dump_dom(page, tmp_path))
    assert_loaded(dom)
    episodes = [e["attrs"] for e in dom.elements if "episode" in e["attrs"].get("class", "")
                .split()]
    assert {int(e["id"].rsplit("-", 1)[1]): "hidden" in e for e in episodes} == {
        i: bool(r["success"]) for i, r in records.items()}  # 'lost' shows the lost ones
    turns = [e["attrs"] for e in dom.elements if e["attrs"].get("id", "").startswith(
        "ep-bomb-base-1-0-s")]
    assert {t["data-agent"]: "hidden" in t for t in turns} == {"deaf": True, "mute": True,
                                                               "blind": False}


# --- slow: scripted rollouts, the bank protocol, a comparison, a training run -------------------

@pytest.mark.slow
def test_rollout_bank_and_comparison(llm_run, tmp_path, cli):
    bomb = cli("eval/rollout.py", "env=bomb/base-1", "agent=symbol", "episodes=6", "chunk=6",
               f"out_dir={tmp_path / 'bomb'}")
    ktane = cli("eval/rollout.py", "env=ktane/all", "agent=oracle", "episodes=2", "chunk=2",
                f"out_dir={tmp_path / 'ktane'}")
    bank = cli("eval/rollout.py", "env=bomb/carving", "agent=symbol", "bank=true", "repeats=1",
               "solo=solo", f"out_dir={tmp_path / 'bank'}")
    dom, _ = _report(tmp_path / "ktane", tmp_path)
    for name, entry in ktane["per_module"].items():
        row = dom.rows("modules")[name]
        assert value(row[0]) == entry["episodes"] and value(row[1]) == entry["success_rate"]
    dom, _ = _report(tmp_path / "bank", tmp_path)
    s = bank["summary"]
    t3 = dom.rows("bank-table3")["scripted symbol"]
    assert [value(c) for c in t3] == [s["families"]["carving"]["success_rate"],
                                      *(s[g]["success_rate"] for g in ("core", "plus", "all")
                                        if g in s)]  # carving has no Plus variant
    t4 = dom.rows("bank-table4")
    assert value(t4["Solo"][0]) == s["solo"]["families"]["carving"]["success_rate"]
    assert value(t4["Gap (solo − trio, points)"][-1]) == s["gap"]["all"]
    page = write_report([llm_run, tmp_path / "bomb", tmp_path / "bank"], tmp_path / "cmp.html")
    dom = Dom(dump_dom(page, tmp_path))
    assert_loaded(dom)
    llm = json.loads((llm_run / "results.json").read_text())
    row = dom.rows("compare-variants")["bomb/base-1"]
    assert [value(c) for c in row[:2]] == [llm["variants"]["base-1"]["success_rate"],
                                           bomb["variants"]["bomb/base-1"]["success_rate"]]
    assert value(dom.rows("compare-families")["carving"][2]) == s["families"]["carving"][
        "success_rate"]
    assert [c["text"] for c in dom.tables["compare-all"][0][1:]] == [
        "LLM good", "scripted symbol (bomb)", "scripted symbol (bank)"]


@pytest.mark.slow
def test_training_run_curves(tmp_path, cli):
    cli("train/collab.py", "experiment=parity_separation", "preset=cpu", "task.n_examples=2000",
        "train.steps=4", "train.warmup_steps=1", "train.eval_every=2", "train.val_examples=64",
        f"out_dir={tmp_path}")
    results = json.loads((tmp_path / "results.json").read_text())
    dom, _ = _report(tmp_path, tmp_path)
    for name, entry in results["protocols"].items():
        rows = dom.rows(f"protocol-{name}")
        assert [value(c) for c in rows["test_mse_vs_pstar"]] == entry["test_mse_vs_pstar"]
    assert "separation.png" in [e["attrs"].get("alt") for e in dom.elements if e["tag"] == "img"]


@pytest.mark.slow
def test_llm_ktane_and_maze_reports(tmp_path):
    with LLMServer() as server:
        llm = LLMConfig(base_url=server.url, model="good", backoff_s=0.01)
        evaluate(llm, RunConfig(env="ktane/wires", episodes=1), tmp_path / "ktane")
        maze = evaluate(llm, RunConfig(env="maze/split-6x6", episodes=1, options={
            "maze": {"rollouts": 2, "rounds": 2, "setting": "verbalized"}}), tmp_path / "maze")
    (record,) = [json.loads(x) for x in transcript_path(tmp_path / "ktane", "ktane/wires")
                 .read_text().splitlines()]
    dom, _ = _report(tmp_path / "ktane", tmp_path, fragment="ep-ktane-wires-0-s2-defuser")
    turns = [e["attrs"] for e in dom.elements if "turn" in e["attrs"].get("class", "")]
    assert len(turns) == len(record["agents"]["defuser"]) + len(record["agents"]["expert"])
    assert "open" in dom.by_id["ep-ktane-wires-0"]["attrs"]
    assert "Cut the second wire." in dom.by_id["ep-ktane-wires-0-s2-defuser"]["text"]
    dom, _ = _report(tmp_path / "maze", tmp_path)
    rows = dom.rows("protocol-verbalized")  # the LLM maze results by round, as trained runs'
    entry = maze["protocols"]["verbalized"]
    for key in ("step_accuracy", "calibration_loss"):
        assert [value(c) for c in rows[key]] == entry[key]
