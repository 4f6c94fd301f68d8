"""transferkit: the executable companion to the theory of transfer learning.

Layers, each importing only from those above it in this list:

- generic pieces: :mod:`~transferkit.config`, :mod:`~transferkit.streams` (keyed random streams),
  :mod:`~transferkit.stats` (Monte Carlo statistics), :mod:`~transferkit.data`,
  :mod:`~transferkit.sweep` (cached, resumable, Dask-able grids), :mod:`~transferkit.provenance`;
- :mod:`transferkit.theory.deep_linear`: closed forms (numpy), one module per paper or topic;
- :mod:`transferkit.models.deep_linear`: networks and their training (torch);
- :mod:`transferkit.experiments`: one module per chapter;
- :mod:`transferkit.figures.paper000`: figure builders, one module per paper;
- :mod:`transferkit.cli` and the Sphinx extension :mod:`transferkit.sphinxext`.
"""
from . import (
           config,
           data,
           experiments,
           figures,
           models,
           provenance,
           stats,
           streams,
           sweep,
           theory,
)
from ._version import __version__
from .config import scale
from .experiments.deep_linear import pretrain, simulate_grid, simulate_transfer
from .models.descent import ConvergenceWarning

__all__ = ["config", "data", "provenance", "stats", "streams", "sweep", "theory", "models", "experiments",
           "figures", "pretrain", "simulate_grid", "simulate_transfer", "ConvergenceWarning", "scale",
           "__version__"]
