"""Key discipline (the env contract): a policy never receives a key the environment also
consumes, so the random Keep-Talking Defuser's draws are independent of the bomb's.

Before the generic rollout split keys, the random Defuser and the module drew from the same
step key: every random hold of the button lit strip colour 1, and a memory press at position 0
relabelled position 0 to label 1 about 70% of the time. Here those draws must be uniform.
"""

import jax
import numpy as np

import jaxcollab
from jaxcollab.agents.ktane.policies import team
from jaxcollab.envs.ktane.modules.base import HOLD, PRESS

#: Chi-square critical value for 3 degrees of freedom at p = 0.001.
CHI2_3DF_P001 = 16.27
N_EPISODES = 2048


def _chi2_uniform(values: np.ndarray, k: int) -> float:
    counts = np.bincount(values, minlength=k)
    expected = len(values) / k
    return float(((counts - expected) ** 2 / expected).sum())


def _defuser_first_module_turn(name: str):
    """Random team for 3 turns (Defuser zooms in, Expert waits, Defuser acts on the module):
    the Defuser's action on the module and the module state after it, per episode."""
    env = jaxcollab.make(name)
    r = jaxcollab.rollout(env, team("random", env), jaxcollab.episode_keys(0, N_EPISODES),
                          max_steps=3, trajectory=True)
    action = np.asarray(r.trajectory["actions"][2, :, 0])  # [B, 3] Defuser's (verb, target, _)
    layout = env.board.types[0].layout
    module = jax.device_get(jax.vmap(layout.unpack)(r.state.modules[:, 0]))
    assert (np.asarray(r.state.zoom) == 0).all()  # every episode zoomed in first
    return action, module


def test_random_button_holds_light_every_strip_colour():
    action, module = _defuser_first_module_turn("ktane/button")
    held = action[:, 0] == HOLD
    assert 0.15 < held.mean() < 0.35  # HOLD is one of 4 verb slots
    strips = np.asarray(module["strip"])[held]
    assert (strips >= 0).all()
    assert len(np.unique(strips)) == 4
    assert _chi2_uniform(strips, 4) < CHI2_3DF_P001, np.bincount(strips, minlength=4)


def test_random_memory_presses_relabel_uniformly():
    action, module = _defuser_first_module_turn("ktane/memory")
    first = (action[:, 0] == PRESS) & (action[:, 1] == 0)
    assert 0.15 < first.mean() < 0.35  # 4 positions
    labels = np.asarray(module["labels"])[first, 0]
    labels = labels - labels.min()  # labels are 1..4 (or 0..3): one of 4 values
    assert len(np.unique(labels)) == 4
    assert _chi2_uniform(labels, 4) < CHI2_3DF_P001, np.bincount(labels, minlength=4)
