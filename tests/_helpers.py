"""Helpers shared by several test modules (imported as ``from _helpers import ...``)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
BOOK_ENV_VAR = "TRANSFERKIT_BOOK_HTML"


def built_book_dir() -> Path:
    """The built book to check: ``$TRANSFERKIT_BOOK_HTML`` (must exist) or ``_build/html``.

    Fails when the variable names a missing folder; skips when it is unset and no book
    has been built (``make test`` builds one and sets the variable).
    """
    value = os.environ.get(BOOK_ENV_VAR)
    if value:
        path = Path(value)
        if not path.is_absolute():
            path = Path.cwd() / path
        if not path.is_dir():
            pytest.fail(f"{BOOK_ENV_VAR}={value} is set but {path} is not a folder: "
                        "build the book first")
        return path
    path = REPO / "_build" / "html"
    if not path.is_dir():
        pytest.skip(f"no built book at {path} (run `make book`, or set {BOOK_ENV_VAR}); "
                    "`make test` builds one and runs this test on it")
    return path


def hessian_norm(Ws, Sig, bhat) -> float:
    """Largest |eigenvalue| of the Hessian of 1/2 (beta - bhat)^T Sig (beta - bhat) in all
    weights of one (unbatched) deep linear network, by autograd."""
    shapes = [W.shape for W in Ws]
    sizes = [int(np.prod(s)) for s in shapes]

    def loss(flat):
        mats, i = [], 0
        for s, k in zip(shapes, sizes):
            mats.append(flat[i:i + k].reshape(s))
            i += k
        prod = mats[0]
        for W in mats[1:]:
            prod = prod @ W
        diff = prod[:, 0] - bhat
        return 0.5 * diff @ Sig @ diff

    H = torch.autograd.functional.hessian(loss, torch.cat([W.reshape(-1) for W in Ws]))
    return float(torch.linalg.eigvalsh(H).abs().max())
