"""Smoke tests of the paper 001 figure builders on tiny synthetic results."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from _helpers import check_figure  # noqa: E402

from transferkit.figures import paper001

RNG = np.random.default_rng(0)


def _risk(*shape):
    return RNG.uniform(0.1, 1.0, shape)


def test_eigen_align_figure():
    ns, draws = np.array([2, 5, 8]), 3
    res = {"risk_gd": _risk(2, 3, draws), "risk_thm41": _risk(2, 3, draws)}
    check_figure(paper001.eigen_align_figure(res, ns, _risk(2, 3), m=2, d=10), 1)

def test_depth_figure():
    depths, alphas, scales, draws = [1, 3], np.array([0.5, 1, 2]), np.array([0.5, 2]), 3
    res_a = {"risk_gd": _risk(2, 3, draws), "risk_thm52": _risk(2, 3, draws),
             "risk_eq6": _risk(3, draws)}
    res_b = {"risk_gd": _risk(2, 2, draws), "risk_thm52": _risk(2, 2, draws),
             "risk_thm41": _risk(2, 2, draws)}
    check_figure(paper001.depth_figure(res_a, res_b, depths, alphas, scales, d=10, n=1,
                                 depth_scaled=3), 2)

def test_frozen_figure():
    ns, draws = np.array([2, 4]), 3
    res = {f"risk_{k}": _risk(2, draws)
           for k in ("frozen", "frozen_gd", "vanilla", "finetune", "thm55", "thm52")}
    res["risk_scratch_theory"] = 1 - ns / 10
    check_figure(paper001.frozen_figure(res, ns, cos_angle=0.7, d=10), 1)

@pytest.mark.parametrize("ns", [[10], [10, 20]])
def test_table1_figure(ns):
    reps, K = 2, 4
    names = ("dist", "bartlett", "eq3")
    res = {"errors": _risk(reps, len(ns), K),
           "measures": {k: _risk(len(ns), K) for k in names},
           "r2": {k: (_risk(len(ns)), _risk(len(ns))) for k in names}}
    check_figure(paper001.table1_figure(res, ns, {"eq3": "Eq. 3"}), 3 * len(ns))
