"""``python eval/llm.py …`` is ``python eval/rollout.py agent=llm …`` (``configs/llm.yaml``
only sets ``agent=llm``, ``episodes=9`` and ``out_dir``): an LLM team on an environment or
group through any OpenAI-compatible endpoint, played by the one rollout driver. See
:mod:`jaxcollab.agents.driver` for the options and ``results.json`` keys."""

from pathlib import Path

from jaxcollab.agents.driver import run
from jaxcollab.io.run import hydra_main

main = hydra_main(run, str(Path(__file__).resolve().parents[1] / "configs"), "llm")


if __name__ == "__main__":
    main()
