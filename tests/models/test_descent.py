"""The descent engine (transferkit.models.descent): stopping rule, bookkeeping, divergence,
step-size control, on problems whose iterates are known in closed form."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from transferkit.models.descent import (
    ConvergenceWarning,
    Descent,
    DivergenceError,
    TrainInfo,
    bold_driver,
    keep_where,
)


def _quadratic_run(curv, *, tol, max_steps, check_every=1, compact=0.0, per_instance=True):
    """Gradient descent with step 1/2 on 0.5 * curv * x^2 from x = 1: x_t = (1 - curv/2)^t."""
    x = torch.ones(len(curv), dtype=torch.float64)
    out = x.clone()
    curv_w = curv.clone()
    rule = Descent(len(curv), tol=tol, max_steps=max_steps, check_every=check_every,
                   device=x.device, per_instance=per_instance)
    while True:
        loss = 0.5 * curv_w * x ** 2
        if rule.due():
            if rule.stop(loss):
                break
            keep = rule.compact(compact)
            if keep is not None:
                out[rule.dropped] = x[~keep]
                x, curv_w = x[keep], curv_w[keep]
                continue
        x = x - rule.masked(torch.full_like(x, 0.5)) * curv_w * x
        rule.advance()
    if rule.idx is None:
        out = x
    else:
        out[rule.idx] = x
    return out, rule.finish(0.5 * curv * out ** 2, warn=False), rule


def test_each_instance_stops_at_the_first_step_below_its_tolerance():
    curv = torch.tensor([1.0, 0.5, 0.25, 0.1], dtype=torch.float64)
    tol = 1e-8
    x, info, _ = _quadratic_run(curv, tol=tol, max_steps=10_000)
    # 0.5 c (1 - c/2)^(2t) <= tol first at t*
    expect = [math.ceil(math.log(tol / (0.5 * c)) / (2 * math.log(1 - c / 2))) for c in curv.tolist()]
    assert info.steps.tolist() == expect
    np.testing.assert_allclose(x.numpy(), [(1 - c / 2) ** t for c, t in zip(curv.tolist(), expect)],
                               rtol=1e-12)
    assert info.converged.all() and isinstance(info, TrainInfo)


def test_check_every_stops_at_a_multiple_of_the_period():
    curv = torch.tensor([1.0, 0.5], dtype=torch.float64)
    _, every1, _ = _quadratic_run(curv, tol=1e-8, max_steps=10_000)
    _, every7, _ = _quadratic_run(curv, tol=1e-8, max_steps=10_000, check_every=7)
    # the instance is checked at multiples of 7, so it stops at the first multiple >= t*
    assert every7.steps.tolist() == [7 * math.ceil(s / 7) for s in every1.steps.tolist()]


def test_compaction_gives_the_same_iterates_and_steps():
    curv = torch.linspace(0.05, 1.0, 9, dtype=torch.float64)
    x0, info0, r0 = _quadratic_run(curv, tol=1e-10, max_steps=10_000)
    x1, info1, r1 = _quadratic_run(curv, tol=1e-10, max_steps=10_000, compact=0.9)
    assert r0.idx is None and r1.idx is not None          # it did compact
    assert torch.equal(x0, x1)
    assert np.array_equal(info0.steps, info1.steps)


def test_budget_flags_and_warns():
    curv = torch.tensor([1.0, 1e-3], dtype=torch.float64)
    x = torch.ones(2, dtype=torch.float64)
    rule = Descent(2, tol=1e-8, max_steps=50, device=x.device, desc="toy")
    while True:
        loss = 0.5 * curv * x ** 2
        if rule.stop(loss):
            break
        x = x - rule.masked(torch.full_like(x, 0.5)) * curv * x
        rule.advance()
    assert rule.t == 50
    with pytest.warns(ConvergenceWarning, match="1 of 2 instances of 'toy'"):
        info = rule.finish(0.5 * curv * x ** 2)
    assert info.converged.tolist() == [True, False] and info.steps.tolist()[1] == 50


def test_non_finite_loss_raises_divergence_error_naming_the_fix():
    rule = Descent(2, tol=1e-8, max_steps=10, device="cpu", desc="toy", hint="lower eta")
    with pytest.raises(DivergenceError, match="toy diverged .* step 0.*lower eta"):
        rule.stop(torch.tensor([1.0, float("nan")]))
    assert issubclass(DivergenceError, ValueError) and issubclass(DivergenceError, FloatingPointError)


def test_diverged_is_the_error_of_stop_for_a_compiled_engine():
    """``diverged(step)``: what a compiled engine raises for a non-finite loss it found, the
    same message as :meth:`Descent.stop`'s."""
    rule = Descent(2, tol=1e-8, max_steps=10, device="cpu", desc="toy", hint="lower eta")
    err = rule.diverged(7)
    assert isinstance(err, DivergenceError)
    assert str(err) == "toy diverged (non-finite loss at step 7): lower eta"
    assert str(Descent(1, tol=1.0, max_steps=1, device="cpu", desc="toy").diverged(0)) == \
        "toy diverged (non-finite loss at step 0)"


def test_per_instance_false_keeps_every_instance_stepping():
    rule = Descent(2, tol=0.5, max_steps=10, device="cpu", per_instance=False)
    assert not rule.stop(torch.tensor([0.1, 1.0]))
    assert rule.active.tolist() == [False, True]
    assert not rule.stop(torch.tensor([1.0, 0.1]))          # the first is above again
    assert rule.active.tolist() == [True, False]
    assert rule.stop(torch.tensor([0.1, 0.1]))


def test_retire_and_counted_steps():
    rule = Descent(3, tol=0.0, max_steps=5, device="cpu")
    rule.stop(torch.ones(3))
    rule.retire(torch.tensor([False, True, False]))
    rule.advance(counted=torch.tensor([True, False, False]))
    assert rule.active.tolist() == [True, False, True]
    assert rule.steps.tolist() == [1, 0, 0] and rule.t == 1


def test_bold_driver_grows_halves_and_caps():
    eta = torch.tensor([1.0, 1.0, 1.0, 1.0], dtype=torch.float64)
    accepted = torch.tensor([True, False, False, True])
    active = torch.tensor([True, True, False, True])
    out = bold_driver(eta, accepted, active, grow=1.5, max_step=1.2)
    assert out.tolist() == [1.2, 0.5, 1.0, 1.2]
    assert bold_driver(eta, accepted, active, grow=1.5).tolist() == [1.5, 0.5, 1.0, 1.5]


def test_keep_where_selects_whole_instances():
    new, old = torch.ones(3, 2, 2), torch.zeros(3, 2, 2)
    out = keep_where(torch.tensor([True, False, True]), new, old)
    assert out[0].eq(1).all() and out[1].eq(0).all() and out[2].eq(1).all()


def test_no_warning_when_all_converge():
    curv = torch.tensor([1.0], dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _quadratic_run(curv, tol=1e-6, max_steps=1000)
