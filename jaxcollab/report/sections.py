"""The sections of a run's report, dispatched on what the run directory holds.

:data:`SECTIONS` is the one table: each :class:`Section` names the ``results.json`` keys it
renders and applies when any of them is present (or, for transcripts, analysis and plots, when
the run directory holds those files). Keys no section claims are shown in a generic key/value
table, so a new results key is never lost from the report.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from jaxcollab.core.registry import family
from jaxcollab.io import plots as figures
from jaxcollab.report.html import Html, flatten, keyvalue, png, rate, table, tag
from jaxcollab.report.replay import replay_section, replays
from jaxcollab.report.rundir import RunDir
from jaxcollab.report.stats import with_intervals
from jaxcollab.report.tables import family_rows, overall_row, variant_rows
from jaxcollab.report.transcripts import analysis_by_episode, episodes_section

INTERVAL_NOTE = tag("p", "Success rates are shown with their 90 % Wilson score intervals "
                    "[low, high] (in %).", class_="note")


@dataclass(frozen=True)
class Section:
    """``id`` (HTML anchor), ``title``, the top-level results ``keys`` it renders, ``render``
    (run -> markup), ``applies`` (default: any of ``keys`` in the results) and, for a family's
    section (:attr:`jaxcollab.core.family.Family.report`), ``after``: the section it follows."""

    id: str
    title: str
    keys: tuple[str, ...]
    render: Callable[[RunDir], Html]
    applies: Callable[[RunDir], bool] | None = None
    after: str = ""  # a family's section: the id of the section it follows

    def wanted(self, run: RunDir) -> bool:
        if self.applies is not None:
            return self.applies(run)
        return any(k in run.results for k in self.keys)


def _scalars(entry: Mapping) -> dict:
    return {k: v for k, v in entry.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
            and k not in ("success_rate", "episodes")}


# -- overview --------------------------------------------------------------------------------

OVERVIEW_KEYS = ("env", "agent", "model", "base_url", "episodes", "success_rate", "endings",
                 "outcomes", "refusals", "episodes_per_second", "wall_seconds", "seed")


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def overview(run: RunDir) -> Html:
    """Who played what, every top-level scalar result, the success rate and the endings."""
    r = run.results
    first = [k for k in OVERVIEW_KEYS if k in r and _is_scalar(r[k]) and k != "success_rate"]
    facts = {k: r[k] for k in first + [k for k in r if k not in first and k != "success_rate"
                                        and _is_scalar(r[k])]}
    parts = [keyvalue(facts, class_="facts")]
    row = overall_row(r)
    if row is not None:
        parts += [table(["", "episodes", "success rate"], [["all", row[2], rate(row[1], row[2])]],
                        id="overall"), INTERVAL_NOTE]
    for key in ("endings", "outcomes"):
        counts = r.get(key)
        if isinstance(counts, Mapping) and counts:
            total = sum(counts.values()) or 1
            parts.append(table([key[:-1], "episodes", "share"],
                               [[k, v, rate(v / total, None)] for k, v in counts.items()],
                               caption=f"How episodes ended ({key})", id=key))
    return Html("".join(parts))


# -- per variant (SANZARU Table 12) -----------------------------------------------------------

def per_entry_table(table_: Mapping, caption: str, tid: str, family: str) -> Html:
    """One row per entry holding a success rate: episodes, rate, ending counts, every other
    number and list; a bar plot when there are several rows (a family's sections use it too,
    e.g. Keep Talking's per-module table)."""
    table_ = {k: e for k, e in table_.items() if isinstance(e, Mapping) and "success_rate" in e}
    rows = variant_rows({"env": family, "variants": table_})
    counts = sorted({k for e in table_.values() for k in (e.get("endings") or e.get("outcomes")
                                                          or {})}, key=str)
    extra = sorted({k for e in table_.values() for k in _scalars(e)},
                   key=lambda k: (k == "episodes_per_second", k))  # throughput last
    lists = sorted({k for e in table_.values() for k, v in e.items() if isinstance(v, list)})
    header = ["", "episodes", "success rate",
              *(k.replace("_", " ") for k in [*counts, *extra, *lists])]
    body = []
    for (name, r, n), entry in zip(rows, table_.values(), strict=True):
        ends = entry.get("endings") or entry.get("outcomes") or {}
        body.append([name, n, rate(r, n), *(ends.get(c, 0) for c in counts),
                     *(entry.get(k) for k in extra), *(entry.get(k) for k in lists)])
    parts = [table(header, body, caption=caption, id=tid)]
    if len(rows) > 1:
        parts.append(tag("figure", png(figures.success_bars(
            [n for n, _, _ in rows], {"": with_intervals([(r, n) for _, r, n in rows])},
            "Success rate"),
            caption)))
    return Html("".join(parts) + INTERVAL_NOTE)


def variants(run: RunDir) -> Html:
    """Families pooled (unless the bank summary has them), then every variant (Table 12)."""
    parts = []
    fams = family_rows(run.results)
    if len(fams) > 1 and "summary" not in run.results:
        parts.append(table(["family", "episodes", "success rate"],
                           [[f, n, rate(r, n)] for f, r, n in fams], id="families",
                           caption="Success rate by family (variants pooled)"))
    parts.append(per_entry_table(run.results["variants"],
                                  "Success rate by variant (layout of SANZARU Table 12)",
                                  "variants", run.family))
    return Html("".join(parts))


# -- LLM usage ---------------------------------------------------------------------------------

def usage(run: RunDir) -> Html:
    """LLM runs: parse errors by GPTNT error class; tokens and inference time by agent."""
    r, parts = run.results, []
    errors = r.get("parse_errors")
    if isinstance(errors, Mapping):
        parts.append(table(["error class (GPTNT)", "count"], list(errors.items()) or
                           [["none", 0]], caption="Parse errors", id="parse-errors"))
    tokens, latency = r.get("tokens", {}), r.get("latency_s", {})
    agents = [a for a in tokens if a != "total"] or list(latency)
    if agents:
        parts.append(table(["agent", "prompt tokens", "completion tokens", "inference (s)"],
                           [[a, tokens.get(a, {}).get("prompt"),
                             tokens.get(a, {}).get("completion"), latency.get(a)]
                            for a in agents], caption=f"Tokens (total {tokens.get('total', '–')})"
                           " and summed inference time", id="tokens"))
    return Html("".join(parts))


# -- training curves (collaboration-gap paper) ------------------------------------------------

def _curve(values) -> list | None:
    """A per-round list of numbers: as stored, or the ``mean`` of a seed sweep's spread."""
    if isinstance(values, Mapping) and isinstance(values.get("mean"), list):
        values = values["mean"]
    if isinstance(values, list) and values and all(
            v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in values):
        return values
    return None


def protocols(run: RunDir) -> Html:
    """Every per-round metric of every protocol: one table per protocol, one plot panel per
    metric (the collaboration-gap paper's curves by round, e.g. Fig. 3's test MSE vs p*)."""
    parts, panels = [], {}
    for name, entry in run.results["protocols"].items():
        if not isinstance(entry, Mapping) or "rounds" not in entry:
            continue
        rounds = entry["rounds"]
        curves = {k: c for k, v in entry.items() if k != "rounds"
                  and (c := _curve(v)) is not None and len(c) == len(rounds)}
        parts.append(table(["metric", *map(str, rounds)], [[k, *c] for k, c in curves.items()],
                           caption=f"{name}: by round", id=f"protocol-{name}"))
        for k, c in curves.items():
            panels.setdefault(k, {})[name] = (rounds, c)
    shown = {k: v for k, v in panels.items() if k not in ("train_seconds", "theory_mse_vs_pstar")}
    for name, entry in run.results["protocols"].items():  # theory beside the learned MSE
        if isinstance(entry, Mapping) and "test_mse_vs_pstar" in shown and (
                c := _curve(entry.get("theory_mse_vs_pstar"))):
            shown["test_mse_vs_pstar"][f"{name} (theory)"] = (entry["rounds"], c)
    if shown:
        parts.append(tag("figure", [png(figures.round_curves(
            shown, log=[k for k in shown if "mse" in k]), "curves by round"),
            tag("figcaption", "Per-round metrics by protocol (log scale for squared errors)")]))
    return Html("".join(parts))


def _rounds_curves(run: RunDir) -> dict:
    rounds = run.results.get("rounds")
    return {k: c for k, v in run.results.items() if k != "rounds"
            and (c := _curve(v)) is not None and len(c) == len(rounds)}


def rounds(run: RunDir) -> Html:
    """Top-level per-round lists (``eval/theory.py``, the calibration experiments)."""
    r = run.results["rounds"]
    curves = _rounds_curves(run)
    parts = [table(["metric", *map(str, r)], [[k, *c] for k, c in curves.items()],
                   caption="By round", id="rounds")]
    if curves:
        parts.append(tag("figure", png(figures.round_curves(
            {k: {"": (r, c)} for k, c in curves.items()},
            log=[k for k in curves if "mse" in k]), "curves by round")))
    return Html("".join(parts))


def _has_round_lists(run: RunDir) -> bool:
    return isinstance(run.results.get("rounds"), list) and bool(_rounds_curves(run))


# -- analysis, plots, config, the rest --------------------------------------------------------

def _flag_shares(entries: list[dict]) -> Html:
    """Share of the lost episodes carrying each true/false flag (SANZARU Table 6's "share");
    the lost ones are the entries with ``success`` false, or every entry when none says."""
    lost = [e for e in entries if e.get("success") is False] or [
        e for e in entries if "success" not in e]
    flags = sorted({k for e in lost for k, v in e.items() if isinstance(v, bool)} - {"success"})
    if not lost or not flags:
        return Html("")
    counts = {f: sum(e.get(f) is True for e in lost) for f in flags}
    return table(["flag", "lost episodes flagged", "share"],
                 [[f, c, rate(c / len(lost), None)] for f, c in counts.items()],
                 caption=f"Perspective flags over {len(lost)} lost episodes (as SANZARU Table 6)",
                 id="flag-shares")


def _family_of(env: str) -> str:
    """The variant family of an environment name (``bomb/base-1`` -> ``base``)."""
    return env.rsplit("/", 1)[-1].rsplit("-", 1)[0]


def _judge(j: Mapping, coded: dict) -> Html:
    """The judge's coding (``analysis.json`` ``judge``): modes by stage (SANZARU Table 5),
    their rings (Fig. 4 / 13: all losses, then per variant family), the judged flags, the
    outcomes and the agreement with the deterministic flags."""
    n = sum(j["modes"].values())
    stage_of = j["mode_stages"]
    parts = [table(["mode", "stage", "coded losses", "share"],
                   [[m, stage_of[m], c, rate(j["shares"][m], None)] for m, c in j["modes"].items()],
                   caption=f"Failure modes of {n} coded losses by {j.get('model')} "
                   f"({j['source']})", id="failure-modes")]
    groups = {"All losses": j["modes"]}
    for (env, _), e in sorted(coded.items()):
        if e.get("failure_mode"):
            g = groups.setdefault(_family_of(env), Counter())
            g[e["failure_mode"]] += 1
    if n:
        groups = groups if len(groups) > 2 else {"All losses": j["modes"]}
        parts.append(tag("figure", png(figures.failure_rings(
            groups, stage_of, "Failure modes of lost episodes (as SANZARU Fig. 4)"),
            "failure modes")))
    parts.append(table(["judge outcome", "lost episodes"], list(map(list, j["outcomes"].items())),
                       caption="Judge replies", id="judge-outcomes"))
    parts.append(table(["judged flag", "episodes answered", "share yes"],
                       [[f, v["answered"], rate(v["share"], None)] for f, v in j["flags"].items()],
                       caption="Judged perspective flags (as SANZARU Table 6)", id="judge-flags"))
    parts.append(table(
        ["deterministic flag vs judge", "coded", "both", "flag only", "judge only", "neither",
         "agreement", "Cohen's kappa"],
        [[k, a["n"], a["both"], a["flag_only"], a["judge_only"], a["neither"],
          rate(a["agreement"], None), "–" if a["kappa"] is None else round(a["kappa"], 3)]
         for k, a in j["agreement"].items()],
        caption="The judge checked by the deterministic flags; ending consistent with the mode: "
        + ("–" if j["ending_consistent"] is None else f"{100 * j['ending_consistent']:.1f} %"),
        id="judge-agreement"))
    return Html("".join(parts))


def analysis(run: RunDir) -> Html:
    """``analysis.json``: its summary keys, flag shares over lost episodes and the judge's
    failure modes (rings by stage when it holds a ``judge`` summary, else stacked by
    environment); a family's own analysis tables are its sections (e.g. Keep Talking's
    ``behaviour``)."""
    a = run.analysis or {}
    summary = {k: v for k, v in a.items() if k not in ("episodes", "judge", "behaviour")
               and not (k == "lost_episodes" and isinstance(v, list))}
    parts = [keyvalue(summary, caption="analysis.json", id="analysis-summary")]
    coded = analysis_by_episode(a)
    if coded:
        parts.append(_flag_shares(list(coded.values())))
    if isinstance(a.get("judge"), Mapping):
        parts.append(_judge(a["judge"], coded))
    else:
        modes = Counter((env, str(e.get("failure_mode"))) for (env, _), e in coded.items()
                        if e.get("failure_mode"))
        if modes:
            envs = sorted({env for env, _ in modes})
            names = sorted({m for _, m in modes})
            parts.append(tag("figure", png(figures.stacked_counts(
                envs, {m: [modes[(e, m)] for e in envs] for m in names},
                "Failure modes of lost episodes (as SANZARU Fig. 4)"), "failure modes")))
    return Html("".join(parts))


def plots(run: RunDir) -> Html:
    """The run's own PNGs, inline."""
    return Html("".join(tag("figure", [png(p.read_bytes(), p.name), tag("figcaption", p.name)])
                        for p in run.pngs))


def config(run: RunDir) -> Html:
    """The resolved config and where the run ran."""
    r = run.results
    parts = [keyvalue(r["config"], caption="Resolved config", id="config")] if isinstance(
        r.get("config"), Mapping) else []
    if isinstance(r.get("run"), Mapping):
        parts.append(keyvalue(r["run"], caption="Where it ran"))
    return Html("".join(parts))


SECTIONS: tuple[Section, ...] = (
    Section("overview", "Overview", OVERVIEW_KEYS, overview, lambda run: True),
    Section("variants", "By variant", ("variants",), variants),
    Section("usage", "Parse errors and tokens", ("parse_errors", "tokens", "latency_s"), usage),
    Section("curves", "Curves by round", ("protocols",), protocols),
    Section("rounds", "By round", ("rounds",), rounds, _has_round_lists),
    Section("analysis", "Analysis", (), analysis, lambda run: run.analysis is not None),
    Section("replay", "Replay, step by step", (), replay_section, replays),
    Section("episodes", "Episodes", (), episodes_section, lambda run: bool(run.transcripts)),
    Section("plots", "The run's plots", (), plots, lambda run: bool(run.pngs)),
)
TAIL = Section("config", "Config", ("config", "run"), config)


def other(run: RunDir, claimed: set[str]) -> Html | None:
    """Results keys no section rendered (scalars are in the overview), as a flat key/value
    table."""
    rest = {k: v for k, v in run.results.items() if k not in claimed and not _is_scalar(v)}
    return keyvalue(flatten(rest), id="other") if rest else None


def _render(section: Section, run: RunDir) -> Html:
    """The section, or, when the run's values are not laid out as it expects (another version
    of an entry point), its keys as a key/value table with a note saying so."""
    try:
        return section.render(run)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        mine = {k: run.results[k] for k in section.keys if k in run.results}
        note = tag("p", f"Not in the layout this section expects ({type(e).__name__}: {e}); "
                   "shown as stored.", class_="note")
        return Html(note + (keyvalue(mine, id=f"{section.id}-as-stored") if mine else ""))


def sections(run: RunDir) -> list[Section]:
    """:data:`SECTIONS` with the run's family's own sections
    (:attr:`jaxcollab.core.family.Family.report`) each after the one it names; none for a
    family this installation does not know."""
    try:
        plugin = family(run.family)
    except KeyError:
        plugin = None
    extra = list(plugin.report()) if plugin is not None and plugin.report is not None else []
    out = []
    for s in SECTIONS:
        out += [s, *(e for e in extra if e.after == s.id)]
    return out


def run_sections(run: RunDir) -> list[tuple[str, str, Html]]:
    """``(id, title, body)`` of every section that applies (:func:`sections`), then the
    unclaimed keys, then the config."""
    out, claimed = [], set(TAIL.keys)
    for s in sections(run):
        if s.wanted(run):
            out.append((s.id, s.title, _render(s, run)))
            claimed |= set(s.keys)
    if (body := other(run, claimed)) is not None:
        out.append(("other", "Other results", body))
    if TAIL.wanted(run):
        out.append((TAIL.id, TAIL.title, TAIL.render(run)))
    return out
