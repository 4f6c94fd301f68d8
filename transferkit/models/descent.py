r"""The descent engine shared by every full-batch trainer.

A trainer in :mod:`transferkit.models` supplies its loss, its gradient and its update; this
module supplies everything else, once:

* the **stopping rule** (:class:`Descent`): every instance of a batch of ``B`` independent
  problems stops on its own when its loss falls to its tolerance,

  .. math::
      \text{active}_b \leftarrow \text{active}_b \wedge \big(\ell_b > \text{tol}_b\big),

  checked every ``check_every`` steps and after the last step of the budget ``max_steps``;
  a stopped instance takes steps of size zero (or is dropped from the working tensors,
  :meth:`Descent.compact`), so its iterate is the one whose loss was checked;
* the **convergence bookkeeping**: steps per instance, the progress bar, the
  :class:`TrainInfo` record, a :class:`ConvergenceWarning` naming the instances that ran out
  of budget;
* the **divergence error**: a non-finite loss raises :class:`DivergenceError` (never a NaN
  result);
* the **compiled engines**: :func:`check_engine` (the ``engine`` argument of a trainer that
  has a compiled CPU kernel) and :func:`run_kernel` (such a kernel on a batch, each instance
  to its own stop, with the rule's bookkeeping and divergence error);
* the **step-size control** of the trainers whose step is not fixed by a curvature bound:
  :func:`bold_driver` (accept and grow, or reject and halve, per instance) and
  :func:`keep_where` (the accepted iterate, per instance).

The trainers that use it: :func:`transferkit.models.deep_linear.gradient_descent`,
:func:`transferkit.models.deep_linear.finetune_chain`,
:func:`transferkit.models.deep_linear.frozen_first_layer_gd`,
:func:`transferkit.models.relu.descend_init_scale`,
:func:`transferkit.models.relu.train_population` / :func:`transferkit.models.relu.train_samples`,
:func:`transferkit.models.relu.train_ntk`, :func:`transferkit.models.relu.train_units` and
:func:`transferkit.models.diagonal.train_diagonal`.  The LeNet trainer
(:func:`transferkit.models.lenet.train_lenet`) is stochastic (minibatches over a fixed number
of epochs, paper 002 App. B) and uses ``torch.optim`` instead.
"""

from __future__ import annotations

import math
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from .. import config
from .._validate import InputTypeError

__all__ = ["ConvergenceWarning", "DivergenceError", "TrainInfo", "Descent", "bold_driver",
           "keep_where", "check_engine", "run_kernel"]


class ConvergenceWarning(UserWarning):
    """Some instances did not reach the loss tolerance within ``max_steps``."""


class DivergenceError(ValueError, FloatingPointError):
    """Training produced a non-finite loss: the step size (``step_scale``) is too large
    for this problem, or the inputs were not finite.

    A :class:`ValueError` (bad input: the step size) and a :class:`FloatingPointError`
    (what happened), so either ``except`` clause catches it.
    """


@dataclass
class TrainInfo:
    """Per-instance diagnostics of a training run (numpy arrays of length ``B``).

    Attributes
    ----------
    steps : ndarray of int
        Steps taken by each instance before it stopped.
    converged : ndarray of bool
        The loss reached its tolerance.
    excess_loss : ndarray
        The stopping quantity at the end (the loss, or the excess loss over its minimum).
    imbalance_drift, row_error : ndarray or None
        Only from :func:`transferkit.models.deep_linear.finetune_chain` (see there).
    """

    steps: np.ndarray
    converged: np.ndarray
    excess_loss: np.ndarray
    imbalance_drift: np.ndarray | None = None
    row_error: np.ndarray | None = None

    @property
    def all_converged(self) -> bool:
        return bool(self.converged.all())


class Descent:
    r"""Stopping rule and bookkeeping of one batched descent of ``batch`` instances.

    The loop of a trainer reads::

        rule = Descent(B, tol=..., max_steps=..., device=...)
        while True:
            loss = ...                       # at the current iterate, shape (B,)
            if rule.due() and rule.stop(loss):
                break
            eta = rule.masked(step)          # zero step for stopped instances
            ...                              # the update
            rule.advance()
        info = rule.finish(loss)

    Parameters
    ----------
    batch : int
        Number of independent instances ``B``.
    tol : float or tensor ``(B,)``
        An instance stops when its loss is at most ``tol`` (its own ``tol[b]``).
    max_steps : int
        Budget: the loop stops after this many steps (the loss at the last iterate is
        checked first).
    check_every : int
        Check the rule every this many steps (and at ``max_steps``).
    device : torch device
    desc : str
        Name of the run, in the progress bar, the warning and the error.
    progress : bool or None
        Progress bar (``None``: the package setting, :func:`transferkit.config.progress`).
    hint : str
        Appended to the :class:`DivergenceError` message (what to change).
    per_instance : bool
        ``True``: a stopped instance stays stopped.  ``False``: every instance keeps
        stepping until all are at tolerance at once (a fixed-step method that must not
        freeze its instances, e.g. paper 002 Eq. 4); ``active`` is then the set above
        tolerance at the last check.

    Attributes
    ----------
    active : bool tensor
        The instances still training (of the working set).
    steps : long tensor ``(B,)``
        Steps counted per instance.
    t : int
        Steps taken by the loop.
    idx, dropped : long tensor or None
        After a :meth:`compact`: the batch indices of the working set, and of the rows the
        last compaction dropped.
    """

    def __init__(self, batch: int, *, tol, max_steps: int, device, check_every: int = 1,
                 desc: str = "gradient descent", progress: bool | None = False, hint: str = "",
                 per_instance: bool = True):
        self.tol = tol
        self._tol_work = tol       # the tolerance of the working set (a tensor tol is compacted)
        self.max_steps = max_steps
        self.check_every = check_every
        self.desc = desc
        self.hint = hint
        self.per_instance = per_instance
        self.batch = batch
        self.active = torch.ones(batch, dtype=torch.bool, device=device)
        self.steps = torch.zeros(batch, dtype=torch.long, device=device)
        self.idx = None            # rows of the working set after a compaction
        self.dropped = None        # rows dropped by the last compaction
        self.t = 0
        self.bar = tqdm(total=max_steps, desc=desc, disable=not config.progress(progress),
                        leave=False)

    def due(self) -> bool:
        """Whether the rule is checked at this step."""
        return self.t % self.check_every == 0 or self.t == self.max_steps

    def stop(self, loss: torch.Tensor) -> bool:
        """Check the rule on the loss at the current iterate; ``True``: leave the loop.

        Raises :class:`DivergenceError` if any loss is not finite.
        """
        if not bool(torch.isfinite(loss).all()):
            raise self.diverged(self.t)
        if self.per_instance:
            self.active &= loss > self._tol_work
        else:
            self.active = loss > self._tol_work
        if not bool(self.active.any()) or self.t >= self.max_steps:
            self.bar.close()
            return True
        self.bar.update(self.check_every if self.t else 0)
        if self.bar.disable is False:
            self.bar.set_postfix(converged=f"{int((~self.active).sum())}/{self.active.numel()}")
        return False

    def diverged(self, step: int) -> DivergenceError:
        """The :class:`DivergenceError` of a non-finite loss at ``step`` (the progress bar
        closed): ``raise rule.diverged(step)``, also where a compiled engine found it."""
        self.bar.close()
        return DivergenceError(f"{self.desc} diverged (non-finite loss at step {step})"
                               + (f": {self.hint}" if self.hint else ""))

    def retire(self, mask: torch.Tensor) -> None:
        """Stop the instances in ``mask`` for a reason of the trainer's own (a stall, a horizon)."""
        self.active &= ~mask

    def masked(self, eta: torch.Tensor) -> torch.Tensor:
        """``eta`` where the instance is active, 0 elsewhere."""
        return torch.where(self.active, eta, torch.zeros_like(eta))

    def advance(self, counted: torch.Tensor | None = None) -> None:
        """One step was taken: count it (for the active instances, or for ``counted``)."""
        inc = self.active if counted is None else counted
        if self.idx is None:
            self.steps += inc
        else:
            self.steps[self.idx] += inc
        self.t += 1

    def compact(self, fraction: float) -> torch.Tensor | None:
        """Drop the stopped instances from the working set once fewer than ``fraction`` of
        it are active (the same iterates, less work; ``0`` never compacts).

        Returns the boolean mask of the rows to keep (the trainer subsets its tensors with
        it, after saving the rows ``~keep`` at the batch indices ``self.dropped``), or
        ``None`` when nothing was dropped.  Call it only right after :meth:`stop`.
        """
        n_act = int(self.active.sum())
        if not fraction or n_act >= fraction * self.active.numel():
            return None
        keep = self.active
        if self.idx is None:
            self.idx = torch.arange(self.batch, device=keep.device)
        self.dropped = self.idx[~keep]
        self.idx = self.idx[keep]
        if torch.is_tensor(self._tol_work) and self._tol_work.ndim:
            self._tol_work = self._tol_work[keep]
        self.active = torch.ones(n_act, dtype=torch.bool, device=keep.device)
        return keep

    def finish(self, loss: torch.Tensor, *, converged: torch.Tensor | None = None,
               warn: bool = True, stacklevel: int = 3) -> TrainInfo:
        """The :class:`TrainInfo` of the run (``loss``: the final stopping quantity of every
        instance, ``(B,)``), with a :class:`ConvergenceWarning` if some did not converge."""
        self.bar.close()
        if converged is None:
            converged = loss <= self.tol
        conv = converged.cpu().numpy()
        info = TrainInfo(self.steps.cpu().numpy(), conv, loss.cpu().numpy())
        if warn and not info.all_converged:
            reach = (f"loss {self.tol:g}" if isinstance(self.tol, (int, float))
                     else "its loss tolerance")
            warnings.warn(f"{int((~conv).sum())} of {conv.size} instances of '{self.desc}' did "
                          f"not reach {reach} within {self.max_steps} steps (largest loss "
                          f"{float(loss.max()):.3g}); they are flagged in TrainInfo.converged",
                          ConvergenceWarning, stacklevel=stacklevel)
        return info


def bold_driver(eta: torch.Tensor, accepted: torch.Tensor, active: torch.Tensor,
                grow: float, max_step: float = math.inf) -> torch.Tensor:
    r"""Per-instance step-size control: accept and grow, or reject and halve.

    .. math::
        \eta_b \leftarrow \begin{cases} \min(g\,\eta_b, \eta_{\max}) & \text{step accepted} \\
        \eta_b/2 & \text{rejected (instance active)} \\ \eta_b & \text{inactive,}\end{cases}

    which keeps every instance's step near the largest stable one (about
    :math:`2/\lambda_{\max}` of its local curvature; the "bold driver" rule, Battiti 1989).
    """
    grown = eta * grow if max_step == math.inf else torch.clamp(eta * grow, max=max_step)
    return torch.where(accepted, grown, torch.where(active, eta * 0.5, eta))


def keep_where(accepted: torch.Tensor, new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """``new`` for the instances (leading dimension) whose step was accepted, else ``old``."""
    return torch.where(accepted.view(-1, *([1] * (new.dim() - 1))), new, old)


def check_engine(engine, choices, device) -> str:
    """``engine`` if it is one of ``choices`` and, for a compiled one, the weights are on
    the CPU; else a ``ValueError`` naming it (a ``TypeError`` if it is not a string)."""
    names = [repr(c) for c in choices]
    if not isinstance(engine, str):
        raise InputTypeError(f"engine must be a string, {', '.join(names[:-1])} or "
                             f"{names[-1]} (got {type(engine).__name__})")
    if engine not in choices:
        raise ValueError(f"engine must be {', '.join(names[:-1])} or {names[-1]} "
                         f"(got {engine!r})")
    if engine not in ("auto", "torch") and device.type != "cpu":
        raise ValueError(f"engine={engine!r} needs the weights on the CPU (use engine='torch' "
                         f"or 'auto' on other devices)")
    return engine


def run_kernel(kernel, args, B: int, rule: Descent) -> torch.Tensor:
    """Run a compiled kernel (``kernel(*args, lo, hi)`` -> ``(steps, loss, diverged)``) on
    instances ``0..B-1`` in chunks, on a pool of ``torch.get_num_threads()`` threads (the
    kernels release the GIL; each instance's iterates do not depend on the split).  Sets
    ``rule.steps`` and ``rule.t``; returns the final losses (``(B,)``, or ``(B, ...)`` as the
    kernel returns them); a non-finite loss is the :class:`DivergenceError` of the torch
    loop."""
    threads = max(1, min(torch.get_num_threads(), B))
    parts = 4 * threads if threads > 1 else 1
    bounds = [(B * i // parts, B * (i + 1) // parts) for i in range(parts)]
    bounds = [(lo, hi) for lo, hi in bounds if hi > lo]
    if threads == 1:
        out = [kernel(*args, lo, hi) for lo, hi in bounds]
    else:
        with ThreadPoolExecutor(threads) as pool:
            out = list(pool.map(lambda lh: kernel(*args, *lh), bounds))
    for (lo, _), (st, _, bad) in zip(bounds, out):
        if bad >= 0:
            raise rule.diverged(int(st[bad - lo]))
    steps = np.concatenate([o[0] for o in out])
    rule.steps = torch.from_numpy(steps)
    rule.t = int(steps.max(initial=0))
    return torch.from_numpy(np.concatenate([o[1] for o in out]))
