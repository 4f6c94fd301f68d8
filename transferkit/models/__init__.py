r"""Networks and their training (torch, batched over a leading dimension).

- :mod:`~transferkit.models.descent`: what every trainer shares (convergence warning, divergence error);
- :mod:`~transferkit.models.device`: device and dtype;
- :mod:`~transferkit.models.deep_linear`: deep linear networks (paper 000 Eq. 7, paper 001 Sec. 5);
- :mod:`~transferkit.models.relu`: two-layer ReLU networks in the parametrisations of papers 000, 002, 003/004;
- :mod:`~transferkit.models.diagonal`: diagonal linear networks (paper 004);
- :mod:`~transferkit.models.lenet`: LeNet (paper 002, Sec. 5).
"""

from . import deep_linear, descent, device, diagonal, lenet, relu

__all__ = ["descent", "device", "deep_linear", "relu", "diagonal", "lenet"]
