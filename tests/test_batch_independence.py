"""Instance i does not depend on how many instances are drawn (issue 17): the library sets
``jax_threefry_partitionable``, whose random bits at an index depend on that index only; with the
older default a batch of 5 and the first 5 of a batch of 12 differed."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcollab
from jaxcollab.core.registry import family_names
from jaxcollab.envs.maze.generator import sample_mazes
from jaxcollab.envs.parity import make_alphas, sample_parity, split_masks

KEY = jax.random.key(3)
#: Every family by its example environment (:attr:`jaxcollab.core.family.Family.example`).
FAMILIES = [e for f in family_names() if (e := jaxcollab.family(f).example)]


def _assert_prefix(small, large):
    """Discrete leaves equal exactly; floats (e.g. p*) up to the last bit of a reduction, whose
    summation order XLA may vectorise differently for another batch size."""
    for a, b in zip(jax.tree.leaves(small), jax.tree.leaves(large), strict=True):
        a, b = np.asarray(a), np.asarray(b)[: len(a)]
        if np.issubdtype(a.dtype, np.floating):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=0)
        else:
            np.testing.assert_array_equal(a, b)


def test_the_library_sets_partitionable_threefry():
    assert jax.config.jax_threefry_partitionable


@pytest.mark.parametrize("name", FAMILIES)
def test_reset_instances_do_not_depend_on_the_batch_size(name):
    env = jaxcollab.make(name)
    reset = jax.jit(jax.vmap(lambda k: env.reset(k, env.default_params)))
    _assert_prefix(reset(jax.random.split(KEY, 5)), reset(jax.random.split(KEY, 12)))


def test_training_builders_do_not_depend_on_the_batch_size():
    alphas, masks = jnp.asarray(make_alphas()), split_masks(30, "alternate")
    _assert_prefix(sample_parity(KEY, alphas, masks, 5), sample_parity(KEY, alphas, masks, 12))
    _assert_prefix(sample_mazes(KEY, 5)[0], sample_mazes(KEY, 12)[0])
