r"""Closed forms of the five papers (numpy), one module per paper or topic.

Every function cites its paper and equation in its docstring; the book's equation index is
generated from those citations. This layer imports nothing outside ``theory/`` but the shared
validation.

- :mod:`~transferkit.theory.deep_linear`: paper 000, Sec. 3 (Eqs. 8-15), ridge and weight decay (Sec. 3.3.1, App. E);
- :mod:`~transferkit.theory.distances`: paper 000, Sec. 2.1 (KL, W1);
- :mod:`~transferkit.theory.relu`: arc-cosine and ReLU kernels (paper 000, Eq. 150; Cho and Saul);
- :mod:`~transferkit.theory.linear_teachers`: paper 001 (Eqs. 2-3, Thms 4.1-5.5);
- :mod:`~transferkit.theory.ntk`: paper 002, Sec. 6 (Thms 1-2);
- :mod:`~transferkit.theory.penalties`: papers 003 and 004 (PT+FT penalties, l1,2).
"""

from . import deep_linear, distances, linear_teachers, ntk, penalties, relu

__all__ = ["deep_linear", "distances", "relu", "linear_teachers", "ntk", "penalties"]
