"""The README quick start is exactly two lines, and .ci/run runs the second verbatim (its first
test command, after system setup: the headless browser of the report tests)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def quickstart_lines() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


def test_quickstart_has_two_lines_install_then_run():
    main_job, tests = quickstart_lines()
    assert main_job.startswith("pip install -e . && python ")
    assert tests.startswith('pip install -e ".[dev]" && ') and "pytest" in tests


def test_ci_runs_the_readme_test_line():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [
        line for line in ci if line.strip() and not line.lstrip().startswith(("#", "set ", "cd "))
    ]
    tests = [line for line in commands if "pytest" in line]
    assert tests[0] == quickstart_lines()[1]  # verbatim, first; then the full tier and timings


def test_main_job_script_exists():
    script = quickstart_lines()[0].split("python ", 1)[1].split()[0]
    assert (ROOT / script).is_file()
