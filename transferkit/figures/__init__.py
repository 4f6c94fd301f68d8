r"""Every figure builder of the book, one module per paper; the command line and the notebooks
call the same functions. :mod:`~transferkit.figures.plotting` holds the style and the shared panels.
"""

from . import paper000, paper000_relu, paper001, paper002, paper003_004, plotting, predictors

__all__ = ["plotting", "paper000", "paper000_relu", "paper001", "paper002", "predictors", "paper003_004"]
