"""The Keep-Talking family's sections of a run's report (``eval/report.py``; the plug-in's
:attr:`~jaxcollab.core.family.Family.report`): success by module (GPTNT Tables 4-5) and the
behaviour analysis (GPTNT §8, Table 7)."""

from __future__ import annotations

from collections.abc import Mapping

from jaxcollab.report.html import Html, keyvalue, rate, table
from jaxcollab.report.rundir import RunDir
from jaxcollab.report.sections import Section, per_entry_table


def modules(run: RunDir) -> Html:
    """Keep Talking's ``per_module`` rows."""
    return per_entry_table(run.results["per_module"],
                            "Success rate by module (layout of GPTNT Tables 4–5; message rates "
                            "as Table 7)", "modules", run.family)


def _behaviour(b: Mapping) -> Html:
    """Keep-Talking behaviour (``analysis.json`` ``behaviour``, GPTNT §8 and Table 7): each
    role's step shares by outcome and game phase, message rates, what followed strikes."""
    parts = []
    for role in ("defuser", "expert"):
        kinds = [k for k in next(iter(b[role].values()))["all"] if k != "steps"]
        rows = [[f"{g} · {p}", *[rate(v[k], None) for k in kinds], v["steps"]]
                for g, phases in b[role].items() for p, v in phases.items() if v["steps"]]
        parts.append(table(["outcome · phase", *kinds, "steps"], rows,
                           caption=f"{role.capitalize()} steps by outcome and game phase "
                           f"(GPTNT §8; phases: {b['phases']})", id=f"behaviour-{role}"))
    parts.append(table(["role", "share of steps with a message"],
                       [[k, rate(v, None)] for k, v in b["message_rate"].items()],
                       caption="Communication rates (as GPTNT Table 7)", id="message-rates"))
    parts.append(keyvalue(b["after_strike"], caption="After each strike (GPTNT §8)",
                          id="after-strike"))
    return Html("".join(parts))


def behaviour(run: RunDir) -> Html:
    """``analysis.json`` ``behaviour`` (:func:`_behaviour`)."""
    return _behaviour(run.analysis["behaviour"])


#: The Keep-Talking family's report sections.
SECTIONS = (
    Section("modules", "By module", ("per_module",), modules, after="variants"),
    Section("behaviour", "Behaviour (GPTNT §8)", (), behaviour,
            lambda run: isinstance((run.analysis or {}).get("behaviour"), Mapping),
            after="analysis"),
)
