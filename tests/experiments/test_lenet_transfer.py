"""The presets of the LeNet transfer chapter (paper 002, Sec. 5.1, Fig. 8a; App. A)."""
from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from transferkit import data, stats
from transferkit.experiments.lenet_transfer import (
    LENET_TRANSFER,
    LenetTransferPreset,
    source_data,
    target_data,
    transfer_cell,
)
from transferkit.models.lenet import LAYERS, make_lenet, train_lenet


def _have_data():
    try:
        data.load_mnist(), data.load_fashion_mnist(), data.load_digits_28()
    except (data.DataNotFoundError, FileNotFoundError):
        return False
    return True


needs_data = pytest.mark.skipif(not _have_data(),
                                reason="MNIST / Fashion-MNIST / digits not installed (make data)")


def test_presets_are_frozen_tuples():
    assert set(LENET_TRANSFER) == {"paper", "smoke"}
    for p in LENET_TRANSFER.values():
        assert isinstance(p, LenetTransferPreset)
        assert isinstance(p.snapshots, tuple) and isinstance(p.seeds, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        LENET_TRANSFER["paper"].seeds = (0,)


@pytest.mark.parametrize("scale", ["paper", "smoke"])
def test_preset_is_valid(scale):
    p = LENET_TRANSFER[scale]
    # the keyword arguments the notebook passes to the sweep cell exist
    params = inspect.signature(transfer_cell).parameters
    assert {"n_pretrain", "n_target", "ft_epochs", "batch", "lr", "snapshots"} <= set(params)
    assert p.n_pretrain % 10 == 0 and p.n_target % 10 == 0          # the same count per class
    assert p.n_target // 10 <= 174       # the smallest class of scikit-learn's digits
    assert list(p.snapshots) == sorted(set(p.snapshots)) and min(p.snapshots) >= 1
    assert p.fig8a_epochs == max(p.snapshots)                      # the longest pretrained
    assert p.ft_epochs >= 1 and p.batch >= 1 and p.lr > 0
    assert len(set(p.seeds)) == len(p.seeds) >= 2 and min(p.seeds) >= 0
    assert np.isfinite(stats.critical_value(2, len(p.seeds)))     # the paired checks
    assert p.sim_source % 10 == 0 and p.sim_target % 10 == 0 and p.sim_seed >= 0


def test_paper_preset_states_the_paper_where_cited():
    p = LENET_TRANSFER["paper"]
    assert p.batch == 64             # paper 002, App. A: "The batch-size is set to 64"
    assert p.n_target == 600         # paper 002, Sec. 5.1: 600 target images
    # App. A: weight decay 5e-4, the default of train_lenet that transfer_cell keeps
    assert inspect.signature(train_lenet).parameters["weight_decay"].default == 5e-4
    assert "weight_decay" not in inspect.signature(transfer_cell).parameters
    # ours: five seeds at paper scale, enough to establish Fig. 8a's claims; not at smoke
    assert p.establish_claims and not LENET_TRANSFER["smoke"].establish_claims


@needs_data
@pytest.mark.parametrize("scale", ["paper", "smoke"])
def test_preset_sizes_fit_the_data(scale):
    p = LENET_TRANSFER[scale]
    x, y, _, _ = target_data(p.n_target, p.seeds[0])
    assert len(x) == p.n_target
    for source in ("mnist", "fashion"):
        x, _, _, _ = source_data(source, p.n_pretrain, p.seeds[0])
        assert len(x) == p.n_pretrain
    target_data(p.sim_target, p.sim_seed)
    source_data("mnist", p.sim_source, p.sim_seed)


@needs_data
def test_transfer_cell_returns_both_deviations(one_thread):
    """The cell's flat dict holds the paper's absolute deviation ``dev_abs`` (paper 002,
    Sec. 5.1, Fig. 8a) beside the relative ``dev``; from scratch fine-tuning starts at the
    seed's initialisation, so ``dev_abs / dev`` is the norm of its weights."""
    kw = dict(n_pretrain=100, n_target=100, ft_epochs=1, batch=64)
    out = transfer_cell("scratch", 3, snapshots=(1,), **kw)
    assert set(out) == {"epochs", "pre_acc", "acc", "acc0", "dev", "dev_abs"}
    assert all(isinstance(v, np.ndarray) for v in out.values())       # flat: the sweep cache
    assert out["dev"].shape == out["dev_abs"].shape == (1, len(LAYERS))
    init = make_lenet(3, "cpu").state_dict()
    norms = [float(np.linalg.norm(init[f"{name}.weight"].double().numpy())) for name in LAYERS]
    np.testing.assert_allclose(out["dev_abs"][0] / out["dev"][0], norms, rtol=1e-10)
    pre = transfer_cell("mnist", 3, snapshots=(1, 2), **kw)
    assert pre["dev_abs"].shape == (2, len(LAYERS)) and np.all(pre["dev_abs"] > 0)
