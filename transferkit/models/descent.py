r"""The descent engine shared by every trainer: warnings and errors of the stopping rule."""

from __future__ import annotations

__all__ = ["ConvergenceWarning", "DivergenceError"]


class ConvergenceWarning(UserWarning):
    """Some instances did not reach the loss tolerance within ``max_steps``."""


class DivergenceError(ValueError, FloatingPointError):
    """Training produced a non-finite loss: the step size (``step_scale``) is too large
    for this problem, or the inputs were not finite.

    A :class:`ValueError` (bad input: the step size) and a :class:`FloatingPointError`
    (what happened), so either ``except`` clause catches it.
    """
