"""Plotting helpers shared by the notebooks of the book.

``use_style()`` applies the one matplotlib style used by every figure
(``transferkit/style.mplstyle``, shipped inside the package);
``show_plotly(fig)`` embeds a plotly figure in a notebook/book page without
pulling plotly.js or MathJax from a CDN (the book serves ``_assets/plotly.min.js``);
``plotly_surface`` and ``plotly_heatmap`` build the interactive figures of the book.
"""

from __future__ import annotations

from importlib import resources

import matplotlib.pyplot as plt
import numpy as np
import plotly.graph_objects as go
from matplotlib.colors import ListedColormap

__all__ = ["use_style", "tight_layout", "plotly_surface", "plotly_heatmap", "phase_surface", "sign_map", "value_map", "theta_label"]


STYLE_NAME = "style.mplstyle"


def use_style() -> None:
    """Apply the transferkit matplotlib style (``transferkit/style.mplstyle``).

    The style file is read through :mod:`importlib.resources`, so this works
    from a source checkout, an editable install and an installed wheel alike.
    """

    style = resources.files("transferkit").joinpath(STYLE_NAME)
    with resources.as_file(style) as path:
        plt.style.use(str(path))


def tight_layout(fig) -> None:
    """Lay ``fig`` out once with matplotlib's tight layout, in place of the style's engine.

    The style (``figure.constrained_layout.use``) gives every new figure the constrained
    layout engine; a figure builder that wants the tight layout instead detaches that engine
    first, so ``fig.tight_layout()`` does not warn that it replaced it.  The figure is laid
    out exactly as ``fig.tight_layout()`` alone lays it out (no draw happens in between).
    """
    fig.set_layout_engine("none")
    fig.tight_layout()


def plotly_surface(gammas, thetas, T, *, clip=(-1.0, 1.0), title="", zlabel="T",
                   hover="transferability", points=None):
    r"""Interactive 3-d surface of :math:`\mathcal T(\gamma, \theta)` (Fig. 1a / 2a style).

    Same conventions as :func:`phase_surface`: ``T`` has shape
    ``(len(gammas), len(thetas))`` and is clipped to ``clip`` for the colour and height
    (the hover label shows the unclipped value, ``inf`` included); the zero level is
    drawn on the surface in light blue.  ``points``, optional, is a dict with arrays
    ``gamma, theta, value`` (and optional ``text`` for the hover label, ``name`` for the
    legend): simulated values drawn as markers over the surface (clipped like it).
    Returns a ``plotly.graph_objects.Figure``.
    """

    g = np.asarray(gammas, float)
    t = np.asarray(thetas, float)
    T = np.asarray(T, float)
    Tc = np.clip(T, *clip)
    text = np.vectorize(lambda v: f"{v:.4g}")(T.T)
    fig = go.Figure(go.Surface(
        x=g, y=t, z=Tc.T, surfacecolor=Tc.T, cmin=clip[0], cmax=clip[1], colorscale="RdBu",
        text=text, colorbar=dict(title=dict(text=zlabel)),
        contours=dict(z=dict(show=True, start=0.0, end=0.0, size=1.0, color="#7fd3ff", width=6,
                             highlight=True)),
        hovertemplate=("γ = n/d = %{x:.3f}<br>θ = %{y:.3f} rad<br>" + hover
                       + " = %{text}<extra>theory</extra>")))
    if points is not None:
        v = np.asarray(points["value"], float).ravel()
        fig.add_trace(go.Scatter3d(
            x=np.asarray(points["gamma"], float).ravel(),
            y=np.asarray(points["theta"], float).ravel(), z=np.clip(v, *clip),
            mode="markers", name=points.get("name", "simulation"),
            marker=dict(size=3.5, color="black", symbol="circle"),
            text=(np.asarray(points["text"]).ravel() if "text" in points
                  else [f"{x:.4g}" for x in v]),
            hovertemplate=("γ = %{x:.3f}<br>θ = %{y:.3f} rad<br>%{text}"
                           "<extra>simulation</extra>")))
        fig.update_layout(legend=dict(x=0.01, y=0.99))
    fig.update_layout(
        title=dict(text=title), height=560, margin=dict(l=0, r=0, t=40 if title else 10, b=0),
        scene=dict(xaxis_title="γ = n/d", yaxis_title="θ (rad)", zaxis_title=zlabel,
                   zaxis=dict(range=list(clip)), camera=dict(eye=dict(x=1.6, y=-1.6, z=0.9))))
    return fig


def plotly_heatmap(z, x, y, *, xlabel="", ylabel="", zlabel="", title="", zmid=0.0,
                   colorscale="RdBu", fmt=".3g"):
    """Interactive heat map ``z[i, j]`` at ``(x[j], y[i])`` with values on hover.

    For the transfer heat maps of the book (rows: one axis, columns: the other);
    diverging colours centred at ``zmid`` (``None``: no centre).  Returns a plotly Figure.
    """

    z = np.asarray(z, float)
    fig = go.Figure(go.Heatmap(
        z=z, x=np.asarray(x), y=np.asarray(y), colorscale=colorscale, zmid=zmid,
        colorbar=dict(title=dict(text=zlabel)),
        hovertemplate=(f"{xlabel or 'x'} = %{{x}}<br>{ylabel or 'y'} = %{{y}}<br>"
                       f"{zlabel or 'value'} = %{{z:{fmt}}}<extra></extra>")))
    fig.update_layout(title=dict(text=title), height=480, xaxis_title=xlabel, yaxis_title=ylabel,
                      margin=dict(l=60, r=20, t=40 if title else 10, b=50))
    return fig


# ---------------------------------------------------------------- phase diagrams

#: colours for negative / positive transfer in sign maps
NEGATIVE, POSITIVE = "#d6604d", "#4393c3"


def _mesh(gammas, thetas):
    return np.meshgrid(np.asarray(gammas, float), np.asarray(thetas, float), indexing="ij")


def phase_surface(ax, gammas, thetas, T, clip=(-1.0, 1.0), cmap="RdBu"):
    r"""3-d surface of a transferability :math:`\mathcal T(\gamma, \theta)` (Fig. 1a style).

    ``T`` has shape ``(len(gammas), len(thetas))``; values are clipped to ``clip`` for
    display (the surface diverges at :math:`\gamma = 1`), and the zero level set is
    drawn on the surface.  ``ax`` must be a 3-d axis.
    """

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


def value_map(ax, gammas, thetas, T, clip=(-1.0, 1.0), cmap="RdBu", label=None):
    r"""Heat map of :math:`\mathcal T(\gamma,\theta)` shaded by value (Fig. 8 style); the
    colour bar is labelled ``label`` (default :math:`\mathcal T`)."""

    if label is None:
        label = r"$\mathcal{T}$"

    G, Th = _mesh(gammas, thetas)
    im = ax.pcolormesh(G, Th, np.clip(np.asarray(T, float), *clip), cmap=cmap, vmin=clip[0],
                       vmax=clip[1], shading="nearest", rasterized=True)
    ax.figure.colorbar(im, ax=ax, label=label)
    ax.set_xlabel(r"$\gamma = n/d$")
    ax.set_ylabel(r"$\theta$")
    return ax


def theta_label(theta) -> str:
    """``theta`` as a readable multiple of pi (for legends)."""

    for num, den in ((0, 1), (1, 12), (1, 8), (1, 6), (1, 4), (1, 3), (3, 8), (5, 12),
                     (1, 2), (2, 3), (3, 4), (1, 1)):
        if np.isclose(theta, np.pi * num / den):
            if num == 0:
                return r"$\theta=0$"
            top = r"\pi" if num == 1 else rf"{num}\pi"
            return rf"$\theta={top}$" if den == 1 else rf"$\theta={top}/{den}$"
    return rf"$\theta={theta:.2f}$"
