"""Smoke test of the paper 001 Sec. 6 figure builder on a tiny synthetic result."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from _helpers import check_figure  # noqa: E402

from transferkit.experiments.linear_teachers import NtkFinetuneResult
from transferkit.figures import paper001

RNG = np.random.default_rng(0)


def _pos(*shape):
    return RNG.uniform(0.01, 1.0, shape)


def _result(configs, converged=True):
    C, S, N, D = len(configs), 3, 2, 4
    ns, dist = np.array([10, 20]), np.array([0.0, 0.5, 1.0, 2.0])
    conv = np.full((C, S, N, D), converged)
    conv[0, 0, 0, 0] = True
    return NtkFinetuneResult(
        configs=tuple(configs), ns=ns, distances=dist, risk=_pos(C, S, N, D),
        risk_se=_pos(C, S, N, D) / 100, risk_dse_distance=_pos(C, S, N, D - 1) / 100,
        risk_dse_n=_pos(C, S, N - 1, D) / 100, risk_pre=_pos(C, S, D), lead=_pos(C, S, N, D),
        cor62=_pos(C, S, N, D), cor62_linear=_pos(S, N, D), cor63=6 * dist / np.sqrt(ns)[:, None],
        pre_err=_pos(C, S, N), pre_term=_pos(C, S, N), pre_err_pop=_pos(C, S), lam0=_pos(S, N),
        move=_pos(C, S, N, D), move_pre=_pos(C, S), init_norm=_pos(C, S) + 10,
        flips=_pos(C, S, N, D) / 10, flips_pre=_pos(C, S) / 10, steps=np.ones((C, S, N), int),
        steps_pre=np.ones((C, S), int), converged=conv, pre_converged=np.ones((C, S), bool),
        seconds=np.ones(C))


@pytest.mark.parametrize("configs", [
    [(64, 1.0, True), (256, 1.0, True), (64, 0.1, False), (64, 1.0, False)],
    [(64, 1.0, True), (256, 1.0, True)],                       # no readings
    [(64, 1.0, True), (256, 1.0, True), (128, 0.1, False)],    # readings at another width
])
def test_ntk_finetune_figure(configs):
    check_figure(paper001.ntk_finetune_figure(_result(configs)), 4)


def test_ntk_finetune_figure_marks_runs_at_their_step_budget():
    # a cell where some run did not converge is drawn (mean of the converged draws) and marked
    check_figure(paper001.ntk_finetune_figure(_result([(64, 1.0, True), (256, 1.0, True)],
                                                      converged=False)), 4)
