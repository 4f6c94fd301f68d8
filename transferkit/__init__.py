"""transferkit: the executable companion to the theory of transfer learning.

Closed forms (:mod:`transferkit.theory`), batched deep linear networks
(:mod:`transferkit.models`), their trainers (:mod:`transferkit.trainers`) and end-to-end
simulations (:mod:`transferkit.simulate`) for the papers reproduced in the book.
"""
from . import analysis, data, figures, models, simulate, sweep, theory, trainers
from .config import scale
from .simulate import pretrain, simulate_grid, simulate_transfer
from .trainers import ConvergenceWarning

__version__ = "0.1.0"
__all__ = ["analysis", "data", "figures", "models", "sweep", "theory", "trainers", "simulate", "pretrain", "simulate_grid",
           "simulate_transfer", "ConvergenceWarning", "scale", "__version__"]
