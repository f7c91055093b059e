"""PNG screenshots of one replayed step, taken by headless Chromium (``eval/report.py
screenshots=DIR``; the README's pictures).

The screenshot is of a page holding only that episode's replay (the report's own markup, style
and script, :mod:`jaxcollab.report.replay`) opened at the step (``#replay-<episode>/s<step>``),
so what it shows is what the report shows at that step.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from jaxcollab.report.html import page
from jaxcollab.report.replay import episodes_html, reels
from jaxcollab.report.rundir import RunDir

#: The browser window (CSS pixels): wide enough for the state and every role side by side.
WINDOW = (1200, 1100)


def chromium() -> str:
    """The Chromium executable. Raises RuntimeError naming how to install it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise RuntimeError("screenshots need headless Chromium: apt-get install -y chromium")
    return found


def screenshot(run: RunDir, out: Path) -> Path | None:
    """``out`` (a PNG) of the middle step of ``run``'s first replayed episode, or ``None``
    when the run replays none (:func:`jaxcollab.report.replay.reels`).

    Raises:
        RuntimeError: no Chromium, or Chromium failed (its last output quoted).
    """
    shown = reels(run)
    if not shown:
        return None
    reel = shown[0]
    body = episodes_html(run, [reel])
    anchor = body.split('id="', 1)[1].split('"', 1)[0]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "step.html"
        html.write_text(page(reel.env_name, str(run.path), [("replay", "Replay", body)]),
                        encoding="utf-8")
        url = f"{html.as_uri()}#{anchor}/s{(len(reel.states) - 1) // 2}"
        cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--no-first-run", f"--user-data-dir={Path(tmp) / 'profile'}",
               f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=3000",
               f"--screenshot={out.resolve()}", url]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or not out.is_file():
        raise RuntimeError(f"chromium could not take the screenshot: {done.stderr[-800:]}")
    return out


__all__ = ["WINDOW", "chromium", "screenshot"]
