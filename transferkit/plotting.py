"""Plotting helpers shared by the notebooks of the book.

``use_style()`` applies the one matplotlib style used by every figure
(``transferkit/style.mplstyle``, shipped inside the package);
``show_plotly(fig)`` embeds a plotly figure in a notebook/book page without
pulling plotly.js or MathJax from a CDN.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["use_style", "show_plotly", "phase_surface", "sign_map", "value_map", "theta_label"]

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


# ---------------------------------------------------------------- phase diagrams

#: colours for negative / positive transfer in sign maps
NEGATIVE, POSITIVE = "#d6604d", "#4393c3"


def _mesh(gammas, thetas):
    import numpy as np

    return np.meshgrid(np.asarray(gammas, float), np.asarray(thetas, float), indexing="ij")


def phase_surface(ax, gammas, thetas, T, clip=(-1.0, 1.0), cmap="RdBu"):
    r"""3-d surface of a transferability :math:`\mathcal T(\gamma, \theta)` (Fig. 1a style).

    ``T`` has shape ``(len(gammas), len(thetas))``; values are clipped to ``clip`` for
    display (the surface diverges at :math:`\gamma = 1`), and the zero level set is
    drawn on the surface.  ``ax`` must be a 3-d axis.
    """
    import numpy as np

    G, Th = _mesh(gammas, thetas)
    Tc = np.clip(np.asarray(T, float), *clip)
    ax.plot_surface(G, Th, Tc, cmap=cmap, vmin=clip[0], vmax=clip[1], linewidth=0,
                    antialiased=True, alpha=0.9, rcount=200, ccount=200)
    ax.contour(G, Th, Tc, levels=[0.0], colors="#7fd3ff", linewidths=2, offset=None)
    ax.set_xlabel(r"$\gamma = n/d$")
    ax.set_ylabel(r"$\theta$")
    ax.set_zlabel(r"$\mathcal{T}$")
    ax.set_zlim(*clip)
    return ax


def sign_map(ax, gammas, thetas, T, *, boundaries=(), label_boundaries=True):
    r"""Top-down sign map of :math:`\mathcal T` (Fig. 1b style): red negative, blue positive.

    ``boundaries`` is a sequence of ``(gamma_values, theta_values, label)`` curves drawn
    on top (the theoretical phase boundaries).
    """
    import numpy as np
    from matplotlib.colors import ListedColormap

    G, Th = _mesh(gammas, thetas)
    S = np.sign(np.asarray(T, float))
    ax.pcolormesh(G, Th, S, cmap=ListedColormap([NEGATIVE, "white", POSITIVE]), vmin=-1.5,
                  vmax=1.5, shading="nearest", rasterized=True)
    for gb, tb, lab in boundaries:
        ax.plot(gb, tb, color="k", lw=1.5, label=lab if label_boundaries else None)
    ax.set_xlabel(r"$\gamma = n/d$")
    ax.set_ylabel(r"$\theta$")
    ax.set_xlim(np.min(gammas), np.max(gammas))
    ax.set_ylim(np.min(thetas), np.max(thetas))
    return ax


def value_map(ax, gammas, thetas, T, clip=(-1.0, 1.0), cmap="RdBu", label=r"$\mathcal{T}$"):
    r"""Heat map of :math:`\mathcal T(\gamma,\theta)` shaded by value (Fig. 8 style)."""
    import numpy as np

    G, Th = _mesh(gammas, thetas)
    im = ax.pcolormesh(G, Th, np.clip(np.asarray(T, float), *clip), cmap=cmap, vmin=clip[0],
                       vmax=clip[1], shading="nearest", rasterized=True)
    ax.figure.colorbar(im, ax=ax, label=label)
    ax.set_xlabel(r"$\gamma = n/d$")
    ax.set_ylabel(r"$\theta$")
    return ax


def theta_label(theta) -> str:
    """``theta`` as a readable multiple of pi (for legends)."""
    import numpy as np

    for num, den in ((0, 1), (1, 12), (1, 8), (1, 6), (1, 4), (1, 3), (3, 8), (5, 12),
                     (1, 2), (2, 3), (3, 4), (1, 1)):
        if np.isclose(theta, np.pi * num / den):
            if num == 0:
                return r"$\theta=0$"
            top = r"\pi" if num == 1 else rf"{num}\pi"
            return rf"$\theta={top}$" if den == 1 else rf"$\theta={top}/{den}$"
    return rf"$\theta={theta:.2f}$"
