"""Bad input never yields nonsense (issues 17 and 24): a table of bad command-line overrides per
entry point, each refused before any work (before the run directory gets a file) with an error
naming the key, the value and what was expected; output paths checked up front; results files
finite; run directories never shared.

Rows run in-process as Hydra's ``main`` runs them: the entry point's ``run`` on the config Hydra
composes from the overrides, with the job's Hydra config (its command-line overrides) set; a few
subprocesses check the real command's exit status.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import open_dict

from jaxcollab.io.results import ResultsFile
from jaxcollab.io.run import RunCollision, compose, start_run
from tests.conftest import ENTRY_POINTS

ROOT = Path(__file__).resolve().parent.parent

#: the output key of each entry point
OUT_KEY = {"eval/bench.py": "out", "eval/export.py": "out"}

NOT_INT = "could not be converted to Integer"
#: an LLM run of the bomb on an endpoint nothing serves (refused before any request)
LLM = ["agent=llm", "llm.base_url=http://127.0.0.1:9/v1"]
CAL = "experiment=parity_calibration"

#: (entry point, overrides, expected error text). ``{file}`` is an existing file (not JSON),
#: ``{dir}`` an existing directory, ``{json}`` the results.json of a bank run of another protocol.
ROWS = [
    ("train/collab.py", ["train.steps=abc"], rf"train\.steps=abc.*Value 'abc'.*{NOT_INT}"),
    ("train/collab.py", ["train.steps=2.5"], rf"train\.steps=2\.5.*{NOT_INT}"),
    ("train/collab.py", ["train.batch_size=0"],
     r"train\.batch_size=0 is invalid; expected an integer >= 1"),
    ("train/collab.py", ["train.lr=nan"], r"train\.lr=nan is invalid; expected finite numbers"),
    ("train/collab.py", ["train.warmup_steps=-1"],
     r"train\.warmup_steps=-1 is invalid; expected an integer >= 0"),
    ("train/collab.py", ["train.lr=1e-4", "train.min_lr=1e-3"],
     r"train\.min_lr=0\.001 is invalid; expected a number <= train\.lr=0\.0001"),
    ("train/collab.py", ["train.steps=10", "train.warmup_steps=11"],
     r"train\.warmup_steps=11 is invalid; expected an integer <= train\.steps=10"),
    ("train/collab.py", ["seed=-1"], r"seed=-1 is invalid; expected an integer >= 0"),
    ("train/collab.py", ["seeds=[0,3,0]"], r"seeds=\[0, 3, 0\] is invalid; expected null or "
     r"a non-empty list of distinct integers >= 0"),
    ("train/collab.py", ["seeds=[2,-1]"], r"seeds=\[2, -1\] is invalid"),
    ("train/collab.py", ["seeds=[]"], r"seeds=\[\] is invalid"),
    ("train/collab.py", ["seeds=[0,x]"], r"seeds.*'x'"),
    ("train/maze.py", ["experiment=maze_messages", "seeds=[0,1]"], r"seeds=\[0, 1\] is invalid; "
     r"expected null: vmapped seeds run the parity protocol conversations"),
    ("train/collab.py", ["model.n_embd=65"],
     r"model\.n_embd=65 is invalid; expected a multiple of model\.n_head=6"),
    ("train/collab.py", ["model.dropout=1.0"],
     r"model\.dropout=1\.0 is invalid; expected a number >= 0\.0 and < 1\.0"),
    ("train/collab.py", ["model.activation=tanh"],
     r"Invalid value 'tanh', expected one of \[gelu, relu\].*full_key: model\.activation"),
    ("train/collab.py", ["model.dtype=float16"], r"Invalid value 'float16'.*model\.dtype"),
    ("train/collab.py", ["protocols=[action,gesture]"],
     r"Invalid value 'gesture', expected one of \[action, probability\].*full_key: protocols"),
    ("train/collab.py", ["protocols=[]"], r"protocols=\[\] is invalid"),
    ("train/collab.py", ["cpu_devices=many"], r"cpu_devices='many' is invalid; expected null, "
     r"a count >= 1 or 'cores'$"),
    ("train/collab.py", ["cpu_devices=3", "preset=cpu"], r"cpu_devices=3 is invalid; expected "
     r"a count that divides the batch size 256 \(3 does not\), or 'cores'$"),
    ("train/collab.py", ["xla_cpu_opt_level=5"], r"xla_cpu_opt_level=5 is invalid; expected "
     r"null or an optimisation level 0\.\.3$"),
    ("train/collab.py", ["protocol=gesture"], r"Could not find 'protocol/gesture'"),
    ("train/collab.py", ["preset=gpu"], r"Could not find 'preset/gpu'"),
    ("train/collab.py", ["logger.mode=cloud"],
     r"Invalid value 'cloud', expected one of \[disabled, offline, online\]"),
    ("train/collab.py", ["task.name=maze9"], r"task\.name='maze9' is invalid; expected 'parity' "
     r"in task/parity"),
    ("train/collab.py", ["task.name=maze"], r"task\.name='maze' is invalid; expected 'parity'"),
    ("train/collab.py", ["task.bogus=1"], r"Key 'bogus' not in 'ParityTask'"),
    ("train/collab.py", ["task.test_fraction=1.5"],
     r"task\.test_fraction=1\.5 is invalid; expected a number > 0\.0 and < 1\.0"),
    ("train/collab.py", ["task.alpha_sum=0.7"], r"task\.alpha_sum=0\.7 is invalid"),
    ("train/collab.py", ["task.n_bits=0"], r"task\.n_bits=0 is invalid; expected an integer >= 1"),
    ("train/collab.py", ["task=maze", "task.view=own"],
     r"Invalid value 'own', expected one of \[masked\].*task\.view"),
    ("train/collab.py", ["task=maze", "task.wall_prob=1"], r"task\.wall_prob=1\.0 is invalid"),
    ("train/collab.py", ["experiment=parity_separation", "protocols=[action]"],
     r"protocols=\['action'\] is invalid; expected both"),
    ("train/collab.py", ["experiment=parity_separation", "task.n_rounds=2"],
     r"separation=\[3, 3, 5, 3, 4, 5\] is invalid; expected rounds in 1\.\.n_rounds=2"),
    ("train/collab.py", ["out_dir={file}"], r"out_dir='.*file' is invalid; expected a directory, "
     r"but it is an existing file"),
    ("train/collab.py", ["out_dir={file}/run"], r"but .*file is an existing file"),
    ("train/maze.py", ["experiment=maze_messages", "bayes_mazes=-1"],
     r"bayes_mazes=-1 is invalid; expected an integer >= 0"),
    ("train/maze.py", ["experiment=maze_messages", "task.height=1"], r"task\.height=1"),
    ("train/calibration.py", [CAL, "calibration=null"], r"calibration=None is invalid; expected "
     r"a calibration block together with bias\.conditions"),
    ("train/calibration.py", [CAL, "bias.beta=0"],
     r"bias\.beta=0\.0 is invalid; expected a number > 0\.0"),
    ("train/calibration.py", [CAL, "bias.gamma=inf"],
     r"bias\.gamma=inf is invalid; expected finite numbers"),
    ("train/calibration.py", [CAL, "calibration.n_bins=0"], r"calibration\.n_bins=0"),
    ("train/calibration.py", [CAL, "bias.conditions.global.beta=0"],
     r"bias\.conditions\.global\.beta=0\.0 is invalid; expected a number > 0\.0"),
    ("train/calibration.py", [CAL, "data.cross_fit=maybe"], r"data\.cross_fit"),
    ("train/calibration.py", [CAL, "protocol=action"], r"protocol\.name='action' is invalid"),
    ("eval/calibration.py", ["n_bins=0"], r"n_bins=0 is invalid; expected an integer >= 1"),
    ("eval/calibration.py", ["n_fit=abc"], rf"n_fit=abc.*{NOT_INT}"),
    ("eval/calibration.py", ["decoder=oracle"], r"Invalid value 'oracle', expected one of "
     r"\[ideal\]"),
    ("eval/calibration.py", ["fit=bootstrap"], r"Invalid value 'bootstrap'.*full_key: fit"),
    ("eval/calibration.py", ["bias.beta=-1"], r"bias\.beta=-1\.0 is invalid"),
    ("eval/calibration.py", ["bias.gamma=nan"], r"bias\.gamma=nan is invalid"),
    ("eval/calibration.py", ["task.split=halves"], r"Invalid value 'halves'.*task\.split"),
    ("eval/calibration.py", ["task=maze"],
     r"task='maze' is invalid; expected a task with ideal decoders: one of \['parity'\]"),
    ("eval/calibration.py", ["out_dir={file}"], r"out_dir=.* existing file"),
    ("eval/theory.py", ["method=magic"], r"Invalid value 'magic'.*full_key: method"),
    ("eval/theory.py", ["n_rounds=0"], r"n_rounds=0 is invalid; expected an integer >= 1"),
    ("eval/theory.py", ["task=maze"],
     r"task='maze' is invalid; expected a task with an exact theory: one of \['parity'\]"),
    ("eval/theory.py", ["task.alphas=[0.2,0.1]", "task.n_bits=1"],
     r"task\.alphas=\[0\.2, 0\.1\] is invalid; expected at most task\.n_bits=1"),
    ("eval/theory.py", ["task.alphas=[0.2,abc]"], r"task\.alphas.*Value 'abc'"),
    ("eval/bench.py", ["only=[nosuch]"], r"only=\['nosuch'\] is invalid; expected benchmark names"),
    ("eval/bench.py", ["quick=maybe"], r"Value 'maybe' is not a valid bool.*full_key: quick"),
    ("eval/bench.py", ["out={dir}"], r"out=.* expected a file path, but it is an existing "
     r"directory"),
    ("eval/rollout.py", ["episodes=abc"], rf"episodes=abc.*{NOT_INT}.*full_key: episodes"),
    ("eval/rollout.py", ["episodes=2.5"], rf"episodes=2\.5.*{NOT_INT}"),
    ("eval/rollout.py", ["episodes=0"], r"episodes=0 is invalid; expected an integer >= 1"),
    ("eval/rollout.py", ["seed=-3"], r"seed=-3 is invalid; expected an integer >= 0"),
    ("eval/rollout.py", ["env=bomb/nope"], r"env='bomb/nope' is invalid; expected an "
     r"environment or group name: unknown environment 'bomb/nope'.*Valid names: .*bomb/all"),
    ("eval/rollout.py", ["env=parity/action"], r"env='parity/action' is invalid; expected an "
     r"environment whose family has scripted agents"),
    ("eval/rollout.py", ["agent=smart"], r"agent='smart' is invalid; expected a team of "
     r"bomb/base-1: \[.*'oracle'"),
    ("eval/rollout.py", ["env=ktane/all", "agent=counting"], r"agent='counting' is invalid"),
    ("eval/rollout.py", ["out_dir={file}"], r"out_dir=.* existing file"),
    ("eval/rollout.py", ["extra=1"], r"Key 'extra' not in 'Rollout'"),
    ("eval/rollout.py", ["+extra=1"], r"extra=1 is invalid; expected a key of the config, "
     r"one of \['env', 'agent'"),
    ("train/collab.py", ["+task.bogus=1"], r"task\.bogus=1 is invalid; expected a key of task, "
     r"one of \['name'"),
    ("eval/export.py", ["n=0"], r"n=0 is invalid; expected an integer >= 1"),
    ("eval/export.py", ["n=abc"], rf"n=abc.*{NOT_INT}"),
    ("eval/export.py", ["env=maze/nope"], r"env='maze/nope' is invalid.*Valid names: .*maze/all"),
    ("eval/export.py", ["out={dir}"], r"out=.* expected a file path, but it is an existing "
     r"directory"),
    ("eval/export.py", ["out={file}"], r"file exists and is not an export of env=maze/split-6x6 "
     r"seed=0"),
    ("eval/export.py", ["out={file}/x.jsonl"], r"but .*file is an existing file"),
    ("eval/protocols.py", ["teams=[]"], r"teams=\[\] is invalid; expected at least one team"),
    ("eval/protocols.py", ["teams=[onebit,telepathy]"], r"teams=\['telepathy'\] is invalid; "
     r"expected bomb teams from"),
    ("eval/protocols.py", ["env=ktane/all"], r"env='ktane/all' is invalid; expected bomb"),
    ("eval/protocols.py", ["episodes=0"], r"episodes=0 is invalid"),
    # issue 38: LLM settings no server serves, and choices Hydra reported in six lines
    ("eval/rollout.py", [*LLM, "llm.temperature=-1"], r"llm\.temperature=-1\.0 is invalid; "
     r"expected a number in 0\.\.2"),
    ("eval/rollout.py", [*LLM, "llm.context_tokens=0"], r"llm\.context_tokens=0 is invalid; "
     r"expected null \(the server's reported context\) or a positive number of tokens"),
    ("eval/rollout.py", [*LLM, "llm.context_tokens=2048"], r"llm\.context_tokens=2048 is "
     r"invalid; expected more than llm\.max_tokens=2048: room for a prompt"),  # bomb's default
    ("eval/rollout.py", [*LLM, "llm.concurrency=100000000000"], r"llm\.concurrency="
     r"100000000000 is invalid; expected an integer in 1\.\.4096"),
    ("eval/rollout.py", [*LLM, "llm.base_url=not-a-url"], r"^llm\.base_url='not-a-url' is "
     r"invalid; expected an http:// or https:// URL"),
    ("eval/rollout.py", [*LLM, "+llm.roles.mute.temperature=3"], r"^llm\.roles\.mute\."
     r"temperature=3 is invalid; expected a number in 0\.\.2"),
    ("eval/rollout.py", [*LLM, "llm.tools=nope"], r"^llm\.tools='nope' is invalid; expected "
     r"one of \[text, native\]"),
    ("eval/rollout.py", ["env=maze/split-6x6", "maze.setting=nope"], r"^maze\.setting='nope' "
     r"is invalid; expected one of \[full, action, verbalized, verbalized_calibrated"),
    # issue 24: values that used to fail only after the work, or after the first file
    ("train/collab.py", ["experiment=maze_messages", "separation={}"], r"separation=\{\} is "
     r"invalid; expected null: this run has no separation block, and an empty block on the "
     r"command line does not add one"),
    ("train/collab.py", ["experiment=maze_messages", "task.height=9"], r"task\.height=9 is "
     r"invalid; expected an integer in 4\.\.7 with task\.width=6 and bayes_mazes=1000 .*"
     r"H·W <= 44\), or bayes_mazes=0"),
    ("train/collab.py", ["task=maze", "task.height=7", "task.width=7", "bayes_mazes=0"],
     r"task\.height=7 is invalid; expected an even number with the odd task\.width=7"),
    ("train/collab.py", ["experiment=maze_messages", "preset=cpu", "train.batch_size=100000"],
     r"train\.batch_size=100000 is invalid; expected at most 87952, a round's training rows "
     r"\(the smallest round chunk, 90000 examples, less train\.val_examples=2048"),
    ("train/collab.py", ["preset=cpu", "train.val_examples=300000"], r"train\.val_examples="
     r"300000 is invalid; expected at most 13500, half the smallest round chunk"),
    ("train/collab.py", ["task.n_examples=4"], r"task\.n_examples=4 is invalid; expected "
     r"enough examples for 2 per round chunk: 3 training examples in 5 round chunks"),
    ("train/collab.py", ["bayes_mazes=5"], r"bayes_mazes=5 is invalid; expected 0: the "
     r"exact-Bayes first-move check belongs to the maze protocol experiment"),
    ("train/collab.py", ["seed=4294967296"],
     r"seed=4294967296 is invalid; expected an integer >= 0 and < 4294967296"),
    ("train/collab.py", ["seeds=[0,4294967296]"], r"seeds=\[0, 4294967296\] is invalid; "
     r"expected null or a non-empty list of distinct integers >= 0 and < 4294967296"),
    ("train/collab.py", ["train.steps=9223372036854775808"], r"train\.steps=9223372036854775808"
     r" is invalid; expected integers in int64's range \(-2\*\*63 \.\. 2\*\*63 - 1\)"),
    ("eval/rollout.py", ["episodes=100000000000000000000"], r"episodes=100000000000000000000 is "
     r"invalid; expected integers in int64's range"),
    ("eval/rollout.py", ["episodes=9223372036854775807"], r"episodes=9223372036854775807 is "
     r"invalid; expected an integer >= 1 and < 2147483648 \(episode indices are int32 in JAX"),
    ("eval/rollout.py", ["env=maze/split-6x6", "agent=oracle", "episodes=1073741824",
                         "maze.rollouts=2"], r"episodes=1073741824 is invalid; expected at most "
     r"1073741823 with maze\.rollouts=2 \(1073741824 x 2 episodes; episode indices are int32"),
    ("eval/export.py", ["n=2147483648"], r"n=2147483648 is invalid; expected an integer >= 1 "
     r"and < 2147483648 \(episode indices are int32"),
    ("eval/protocols.py", ["episodes=2147483648"], r"episodes=2147483648 is invalid"),
    ("eval/rollout.py", ["seed=4294967296"], r"seed=4294967296 is invalid; expected an integer "
     r">= 0 and < 4294967296"),
    ("eval/rollout.py", ["env=ktane/wires", "ruleset=random", "ruleset_seed=2147483648"],
     r"ruleset_seed=2147483648 is invalid; expected an integer >= 0 and < 2147483648"),
    ("eval/rollout.py", ["turn_order=[mute,mute,blind]"], r"turn_order=\['mute', 'mute', "
     r"'blind'\] is invalid; expected 'cycle' or a permutation of deaf, mute, blind"),
    ("eval/rollout.py", ["agent=symbol", "bank=true", "solo={file}"], r"solo='.*file' is "
     r"invalid; expected a team \(oracle, .*\) or an earlier bank run's results\.json: not a "
     r"JSON file"),
    ("eval/rollout.py", ["agent=symbol", "bank=true", "solo={json}"], r"solo='.*json' is "
     r"invalid; expected .*results\.json: solo results were played under protocol "
     r"\{'repeats': 1\}"),
    ("eval/rollout.py", ["agent=symbol", "bank=true", "solo={dir}/none.json"],
     r"solo=.* is invalid; expected .*results\.json: no such file"),
    ("eval/rollout.py", ["solo=solo"], r"solo='solo' is invalid; expected null without "
     r"bank=true"),
    ("eval/rollout.py", ["repeats=5"], r"repeats=5 is invalid; expected 3 without bank=true"),
    # the learned team's key is read by every family with an RL view, and by no other
    ("eval/rollout.py", ["env=ktane/wires", "agent=learned", "checkpoint={file}"],
     r"^checkpoint='.*file' is invalid; expected the out_dir \(or its team/\) of a "
     r"train/marl\.py run"),
    ("eval/rollout.py", ["env=maze/split-6x6", "checkpoint={dir}"], r"^checkpoint='.*dir' is "
     r"invalid; expected None: maze/split-6x6 does not read 'checkpoint'"),
    ("eval/export.py", ["seed=4294967296"], r"seed=4294967296 is invalid; expected an integer "
     r">= 0 and < 4294967296"),
    ("eval/theory.py", ["task.alphas=[0.3,0.25]"], r"task\.alphas=\[0\.3, 0\.25\] is invalid; "
     r"expected coefficients >= 0 summing to at most task\.alpha_sum=0\.49"),
    ("train/collab.py", ["task.alphas=[-0.1]"], r"task\.alphas=\[-0\.1\] is invalid; expected "
     r"coefficients >= 0"),
    ("eval/calibration.py", ["n_rounds=40"],
     r"n_rounds=40 is invalid; expected an integer in 1\.\.task\.n_bits=30"),
    ("eval/seeds.py", ["runs=[{dir}]"], r"runs=\['.*dir'\] is invalid; expected two or more "
     r"finished train/collab\.py run directories of one sweep: no results\.json in"),
    ("train/collab.py", ["task=maze", "task.height=3"],
     r"task\.height=3 is invalid; expected an integer >= 4"),
    ("train/collab.py", ["task=maze", "task.width=16"],
     r"task\.width=16 is invalid; expected an integer >= 4 and <= 15"),
    ("train/collab.py", ["preset=cpu", "model.block_size=8"], r"model\.block_size=8 is invalid; "
     r"expected null \(sized to the task\) or an integer >= 29, the tokens round 5 needs"),
    ("eval/bench.py", ["only=[]"], r"only=\[\] is invalid; expected null \(every benchmark\)"),
    # a key inside a block the experiment leaves null (Hydra failed with "Unexpected type for
    # root: NoneType")
    ("train/collab.py", ["experiment=maze_messages", "preset=cpu", "bias.beta=3"],
     r"bias\.beta=3 is invalid; expected no key inside bias: experiment=maze_messages has no "
     r"bias block \(it is null\); experiment=maze_calibration or experiment=parity_calibration "
     r"has one"),
    ("train/collab.py", ["experiment=maze_messages", "bias={beta:3}"], r"bias=\{'beta': 3\} is "
     r"invalid; expected no key inside bias: experiment=maze_messages has no bias block"),
    ("train/collab.py", ["calibration.n_bins=3"], r"calibration\.n_bins=3 is invalid; expected "
     r"no key inside calibration: experiment=null has no calibration block"),
]


def error_text(exc: BaseException) -> str:
    """The exception and its causes, as Hydra prints them, on one line."""
    parts = []
    while exc is not None:
        parts.append(str(exc))
        exc = exc.__cause__
    return " | ".join(parts).replace("\n", " ")


@pytest.mark.parametrize(("script", "overrides", "expected"), ROWS,
                         ids=[f"{c}:{' '.join(o) or '(none)'}" for c, o, _ in ROWS])
def as_main(script: str, *overrides: str):
    """``python <script> <overrides>`` in-process, as the script's ``main`` runs it (composed by
    :func:`jaxcollab.io.run.compose`, which names a key set inside a null block): the job's Hydra
    config (where :func:`jaxcollab.io.run.check_overrides` reads the command line) is set
    while ``run`` works."""
    module, name = ENTRY_POINTS[script]
    run = importlib.import_module(module).run  # importing it registers the schemas
    with initialize_config_dir(str(ROOT / "configs"), version_base=None):
        cfg = compose(name, overrides=list(overrides), return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    try:
        with open_dict(cfg):
            del cfg["hydra"]
        return run(cfg)
    finally:
        HydraConfig.instance().cfg = None


def _row(tmp_path: Path, script: str, overrides: list[str]) -> tuple[Path, list[str]]:
    """The output path and the row's overrides, its placeholders filled in."""
    (tmp_path / "file").write_text("not a directory")
    (tmp_path / "dir").mkdir()
    (tmp_path / "results.json").write_text(json.dumps({"summary": {}, "protocol": {"repeats": 1}}))
    out = tmp_path / "out"
    places = {"{file}": tmp_path / "file", "{dir}": tmp_path / "dir",
              "{json}": tmp_path / "results.json"}
    for place, path in places.items():
        overrides = [o.replace(place, str(path)) for o in overrides]
    out_key = OUT_KEY.get(script, "out_dir")
    if not any(o.startswith(f"{out_key}=") for o in overrides):
        overrides.append(f"{out_key}={out}")
    return out, overrides


@pytest.mark.parametrize(("script", "overrides", "expected"), ROWS,
                         ids=[f"{c}:{' '.join(o) or '(none)'}" for c, o, _ in ROWS])
def test_bad_input_is_refused_by_name(tmp_path, script, overrides, expected):
    out, overrides = _row(tmp_path, script, overrides)
    with pytest.raises(Exception) as info:  # noqa: B017 - the row says which
        as_main(script, *overrides)
    assert re.search(expected, error_text(info.value)), error_text(info.value)
    assert not out.exists()  # refused before anything was written
    assert (tmp_path / "file").read_text() == "not a directory"


#: Rows also run as real commands (an interpreter start each): exit status 1, the named error
#: alone on stderr (no traceback), no output written.
COMMANDS = [("eval/theory.py", ["n_rounds=0"], "n_rounds=0 is invalid; expected an integer >= 1"),
            ("eval/rollout.py", ["env=bomb/nope"], "env='bomb/nope' is invalid; expected an "
             "environment or group name: unknown environment 'bomb/nope'"),
            ("eval/collabgap.py", ["experiment=r3", "rollouts=10", "calibration_mazes=214748365"],
             "calibration_mazes=214748365 is invalid; expected at most 214748364 with rollouts=10"),
            ("eval/rollout.py", ["episodes=0"], "episodes=0 is invalid; expected an integer >= 1"
             " and < 2147483648 (episode indices are int32 in JAX"),
            pytest.param("train/marl.py", ["ppo.episodes=-1"],
                         "ppo.episodes=-1 is invalid; expected an integer >= 1",
                         marks=pytest.mark.full),
            # a -m sweep: every job is composed first (Hydra failed with "Unexpected type for
            # root: NoneType"); the second job is refused before the first one trains
            ("train/collab.py", ["-m", "experiment=maze_calibration,maze_messages",
                                 "bias.beta=3,4", "seed=0,1"],
             "bias.beta=3 is invalid; expected no key inside bias: experiment=maze_messages"),
            ("train/collab.py", ["experiment=maze_messages", "separation={}"],
             "separation={} is invalid; expected null"),
            ("eval/rollout.py", ["env=maze/split-6x6", "maze.setting=nope"],
             "maze.setting='nope' is invalid; expected one of [full, action, verbalized, "),
            pytest.param("eval/rollout.py", ["agent=llm", "llm.tools=nope"],
                         "llm.tools='nope' is invalid; expected one of [text, native]",
                         marks=pytest.mark.full),
            pytest.param("train/collab.py", ["experiment=maze_messages", "bias.beta=3"],
                         "bias.beta=3 is invalid; expected no key inside bias: "
                         "experiment=maze_messages", marks=pytest.mark.full),
            pytest.param("train/collab.py", ["experiment=maze_messages", "task.height=9"],
                         "task.height=9 is invalid; expected an integer in 4..7",
                         marks=pytest.mark.full),
            pytest.param("eval/rollout.py", ["agent=symbol", "bank=true", "solo={file}"],
                         "expected a team (oracle", marks=pytest.mark.full)]


@pytest.mark.full  # one rejection round of the maze generator: a compile, about 2 s
def test_a_maze_sampler_that_cannot_reach_its_mazes_is_refused_first(tmp_path):
    out, overrides = _row(tmp_path, "train/collab.py", ["task=maze", "preset=cpu",
                                                        "task.wall_prob=0.95", "bayes_mazes=0"])
    with pytest.raises(Exception, match=r"task\.wall_prob=0\.95 is invalid; expected a wall "
                       r"probability whose 6x6 grids have exactly one path often enough: 0 of "
                       r"16384 candidates do"):
        as_main("train/collab.py", *overrides)
    assert not out.exists()


@pytest.mark.parametrize(("script", "overrides", "expected"), COMMANDS)
def test_the_command_exits_1_and_prints_the_named_error(tmp_path, script, overrides, expected):
    out, overrides = _row(tmp_path, script, overrides)
    done = subprocess.run([sys.executable, str(ROOT / script), *overrides], capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1, done.stderr
    assert expected in done.stderr
    assert not out.exists() and not (tmp_path / "multirun").exists()


#: A script of :func:`jaxcollab.io.run.hydra_main` whose ``run`` raises what ``kind`` says.
SCRIPT = """
from hydra.core.hydra_config import HydraConfig
from jaxcollab.io.run import hydra_main
from jaxcollab.core.errors import ConfigValueError

def run(cfg):
    print("job", HydraConfig.get().job.name)
    if cfg.kind == "bug":
        raise KeyError("a bug")
    raise ConfigValueError("kind", cfg.kind, "bug")

main = hydra_main(run, ".", "job")
if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(("kind", "full", "expected"), [
    ("bad", "", "Error: kind='bad' is invalid; expected bug\n"),
    ("bug", "", "KeyError: 'a bug'"),
    ("bad", "1", "ConfigValueError: kind='bad' is invalid; expected bug"),
])
def test_a_bad_value_gets_one_line_and_a_bug_its_traceback(tmp_path, kind, full, expected):
    """``hydra_main`` prints a user error (:data:`jaxcollab.io.run.USER_ERRORS`) alone; any
    other exception, and every error under ``HYDRA_FULL_ERROR=1``, keeps its traceback."""
    (tmp_path / "job.py").write_text(SCRIPT)
    (tmp_path / "job.yaml").write_text("kind: none\n")
    done = subprocess.run([sys.executable, "job.py", f"kind={kind}"], capture_output=True,
                          text=True, cwd=tmp_path, env={**os.environ, "HYDRA_FULL_ERROR": full})
    assert done.returncode == 1
    assert done.stdout == "job job\n"  # Hydra names the job after the script, as before
    if expected.startswith("Error: "):
        assert done.stderr == expected
    else:
        assert "Traceback (most recent call last)" in done.stderr and expected in done.stderr


def test_a_sweep_composes_the_jobs_that_can_differ_in_their_blocks():
    """Group sweeps and sweeps over a block set inside are expanded, every other sweep is
    taken at its first value, Hydra's own overrides are left out."""
    from jaxcollab.io.run import sweep_jobs

    with initialize_config_dir(str(ROOT / "configs"), version_base=None):
        jobs = sweep_jobs(["experiment=maze_messages,maze_calibration", "seed=0,1,2",
                           "bias.beta=3,4", "bias=null,{beta:2}", "hydra/launcher=slurm"])
        assert sweep_jobs(["train.lr=interval(0.1,1)"]) is None  # the basic sweeper's refusal
        assert sweep_jobs(["seed=3"]) == [["seed=3"]]
    assert jobs == [[f"experiment={e}", "seed=0", "bias.beta=3", f"bias={b}"]
                    for e in ("maze_messages", "maze_calibration") for b in ("null", "{beta:2}")]


def test_main_names_a_key_inside_a_null_block_before_hydra_runs(tmp_path, monkeypatch, capsys):
    """The script's ``main`` (:func:`jaxcollab.io.run.hydra_main`) composes the command line
    first: Hydra alone failed with "Unexpected type for root: NoneType"."""
    from train.collab import main

    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["train/collab.py", "experiment=maze_messages",
                                      "bias.gamma=1", f"out_dir={out}"])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 1
    assert capsys.readouterr().err == (
        "Error: bias.gamma=1 is invalid; expected no key inside bias: experiment=maze_messages "
        "has no bias block (it is null); experiment=maze_calibration or "
        "experiment=parity_calibration has one\n")
    assert not out.exists()


def test_presets_serve_every_task_they_are_offered_with(tmp_path, composed):
    """``task=maze preset=cpu`` used to fail with "unknown maze view 'own'"."""
    for script in ("train/collab.py", "train/maze.py"):
        _, cfg = composed(script, "task=maze", "preset=cpu", f"out_dir={tmp_path}")
        assert cfg.task.view == "masked" and cfg.model.n_embd == 64


def test_a_group_works_wherever_a_name_does(tmp_path, cli):
    """``eval/export.py env=bomb/all n=3`` used to say "unknown environment"."""
    path = cli("eval/export.py", "env=bomb/base", "n=2", f"out={tmp_path / 'b.jsonl'}")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["env"], r["index"]) for r in records] == [
        (f"bomb/base-{v}", i) for v in range(1, 6) for i in range(2)]
    again = cli("eval/export.py", "env=bomb/base", "n=2", f"out={tmp_path / 'b.jsonl'}")
    assert again.read_text() == path.read_text()  # the same export may replace itself


def test_default_run_directories_are_unique(composed):
    dirs = {composed("eval/rollout.py")[1].out_dir for _ in range(3)}
    assert len(dirs) == 3
    for d in dirs:  # runs/rollout/<date>_<time to the microsecond>-<6 hex digits>
        assert re.fullmatch(r"runs/rollout/\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d\.\d{6}-[0-9a-f]{6}", d)


def test_evaluations_never_write_into_another_runs_results(tmp_path, cli):
    out = f"out_dir={tmp_path}"
    first = cli("eval/theory.py", out)
    assert cli("eval/theory.py", out) == first  # the same run again: redone in place
    with pytest.raises(RunCollision, match=r"different config \(method: 'closed_form' -> "
                                           r"'enumeration'\)"):
        cli("eval/theory.py", out, "method=enumeration")
    with pytest.raises(RunCollision, match=r"another kind of run \(config keys \['method'"):
        cli("eval/rollout.py", "env=ktane/wires", "agent=random", out)
    assert json.loads((tmp_path / "results.json").read_text()) == first
    (tmp_path / "results.json").write_text('{"success_rate": 1.0}')  # results of unknown origin
    with pytest.raises(RunCollision, match="no recorded config"):
        cli("eval/theory.py", out)


def test_training_resume_under_a_changed_config_names_the_keys(tmp_path, cli, composed):
    """``train/calibration.py`` used to resume silently under a changed config."""
    from jaxcollab.collab.run import FROZEN

    out = f"out_dir={tmp_path}"
    start_run(composed("train/calibration.py", CAL, "preset=cpu", out)[1], frozen=FROZEN)
    (tmp_path / "round_1").mkdir()
    (tmp_path / "round_1" / "metrics.json").write_text("{}")  # the run did some work
    with pytest.raises(RunCollision, match=r"bias\.beta: 2\.0 -> 3\.0"):
        cli("train/calibration.py", CAL, "preset=cpu", out, "bias.beta=3")


def test_results_files_refuse_non_finite_numbers_by_key(tmp_path):
    results = ResultsFile(tmp_path / "results.json")
    results.set(("rounds",), [1, 2])
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match=rf"results key treatments\.self\.ece\[1\] is {bad}"):
            results.set(("treatments",), {"self": {"ece": [0.1, bad]}})
        with pytest.raises(ValueError, match=rf"results key wall_seconds is {bad}"):
            results.update({"wall_seconds": bad})
    assert json.loads((tmp_path / "results.json").read_text()) == {"rounds": [1, 2]}


def test_extreme_bias_writes_finite_numbers_or_names_the_key(tmp_path, cli):
    """``eval/calibration.py bias.beta=1e6 bias.gamma=1e6`` used to exit 0 and write NaN."""
    try:
        cli("eval/calibration.py", "bias.beta=1e6", "bias.gamma=1e6", "n_fit=2000", "n_eval=2000",
            f"out_dir={tmp_path}")
    except ValueError as e:
        assert re.fullmatch(r"results key \S+ is (nan|inf|-inf); results hold finite numbers "
                            r"only", str(e)), e
        assert "conversation_mse" not in json.loads((tmp_path / "results.json").read_text())
    else:
        json.loads((tmp_path / "results.json").read_text(),
                   parse_constant=lambda c: pytest.fail(f"non-finite {c} written"))
