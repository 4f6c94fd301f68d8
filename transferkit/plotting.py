"""Plotting helpers shared by the notebooks of the book.

``use_style()`` applies the one matplotlib style used by every figure
(``transferkit/style.mplstyle``, shipped inside the package);
``show_plotly(fig)`` embeds a plotly figure in a notebook/book page without
pulling plotly.js or MathJax from a CDN.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["use_style", "show_plotly"]

STYLE_NAME = "style.mplstyle"


def use_style() -> None:
    """Apply the transferkit matplotlib style (``transferkit/style.mplstyle``).

    The style file is read through :mod:`importlib.resources`, so this works
    from a source checkout, an editable install and an installed wheel alike.
    """
    import matplotlib.pyplot as plt

    style = resources.files("transferkit").joinpath(STYLE_NAME)
    with resources.as_file(style) as path:
        plt.style.use(str(path))


def show_plotly(fig):
    """Display a plotly figure as inline HTML that loads nothing from the web.

    The figure is rendered with ``include_plotlyjs=False`` and
    ``include_mathjax=False``: the page must already provide plotly.js (and
    the book's local MathJax), otherwise the figure stays blank. plotly is not
    a dependency of transferkit; it is only needed to build ``fig``.
    Returns the :class:`IPython.display.HTML` object that was displayed.
    """
    from IPython.display import HTML, display

    html = HTML(fig.to_html(include_plotlyjs=False, include_mathjax=False, full_html=False))
    display(html)
    return html
