"""Seed-sweep summary: per-seed curves, mean ± std by round, refusals (in-process entry point)."""

from __future__ import annotations

import json

import numpy as np
import pytest

MSE = {0: [0.10, 0.04, 0.02], 1: [0.12, 0.05, 0.01], 2: [0.11, 0.03, 0.03]}


def _run(path, seed, mse, **config):
    path.mkdir()
    entry = {"rounds": [1, 2, 3], "test_mse_vs_pstar": mse, "test_accuracy": [0.6, 0.7, 0.8],
             "test_ce": [0.6, 0.5, 0.4]}
    results = {"config": {"seed": seed, "out_dir": str(path), "n_rounds": 3, **config},
               "protocols": {"probability": entry}}
    (path / "results.json").write_text(json.dumps(results))
    return str(path)


def test_mean_and_spread_by_round(cli, tmp_path):
    runs = [_run(tmp_path / f"s{s}", s, m) for s, m in MSE.items()]
    out = cli("eval/seeds.py", f"runs=[{','.join(runs)}]", f"out_dir={tmp_path / 'summary'}")
    mse = out["protocols"]["probability"]["test_mse_vs_pstar"]
    values = np.array(list(MSE.values()))
    np.testing.assert_allclose(mse["mean"], [0.11, 0.04, 0.02])
    np.testing.assert_allclose(mse["std"], values.std(0))
    assert mse["per_seed"] == list(MSE.values()) and mse["max"] == [0.12, 0.05, 0.03]
    assert out["seeds"] == [0, 1, 2] and out["run"]["devices"] >= 1
    assert (tmp_path / "summary" / "seeds.png").stat().st_size > 0


def test_refuses_runs_that_differ_beyond_the_seed(cli, tmp_path):
    runs = [_run(tmp_path / "a", 0, MSE[0]), _run(tmp_path / "b", 1, MSE[1], n_rounds=4)]
    with pytest.raises(ValueError, match=r"differs .* in \['n_rounds'\], not only in seed"):
        cli("eval/seeds.py", f"runs=[{','.join(runs)}]", f"out_dir={tmp_path / 'summary'}")
    with pytest.raises(ValueError, match="repeat a seed"):
        cli("eval/seeds.py", f"runs=[{runs[0]},{runs[0]}]", f"out_dir={tmp_path / 'x'}")


def test_over_seeds_t_interval():
    from jaxcollab.io.seeds import over_seeds

    out = over_seeds([0.5, 0.7, 0.9])
    # t_{0.95, 2} = 2.919986 (Student-t table), s = 0.2: half width 2.919986 * 0.2 / sqrt(3)
    assert out["per_seed"] == [0.5, 0.7, 0.9] and out["seeds"] == 3 and out["level"] == 0.9
    assert out["mean"] == pytest.approx(0.7)
    assert (out["low"], out["high"]) == pytest.approx((0.7 - 0.337171, 0.7 + 0.337171), abs=1e-6)
    same = over_seeds([1.0, 1.0, 1.0, 1.0])
    assert (same["mean"], same["low"], same["high"]) == (1.0, 1.0, 1.0)
    one = over_seeds([0.25])
    assert (one["mean"], one["low"], one["high"]) == (0.25, None, None)
    for bad, match in (([], "one finite value per seed"), ([0.5, float("nan")], "finite"),):
        with pytest.raises(ValueError, match=match):
            over_seeds(bad)
    with pytest.raises(ValueError, match=r"level=1\.5"):
        over_seeds([0.1, 0.2], level=1.5)
