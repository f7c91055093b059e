"""Roll out a team (scripted, oracle, learned or LLM) on an environment or group; write
``results.json``::

    python eval/rollout.py env=bomb/all agent=oracle episodes=1024 seed=0 out_dir=DIR
    python eval/rollout.py env=bomb/all agent=llm llm.base_url=URL llm.model=NAME episodes=9
    python eval/rollout.py env=bomb/all agent=symbol bank=true repeats=3
    python eval/rollout.py env=ktane/wires agent=oracle ruleset=random ruleset_seed=3

The options, resuming, signals and the ``results.json`` keys: :mod:`jaxcollab.agents.driver`.
"""

from pathlib import Path

from jaxcollab.agents.driver import run
from jaxcollab.io.run import hydra_main

main = hydra_main(run, str(Path(__file__).resolve().parents[1] / "configs"), "rollout")


if __name__ == "__main__":
    main()
