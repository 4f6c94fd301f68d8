r"""One module per chapter of the book: the experiment a chapter runs, built on the models and
the sweep engine. :mod:`~transferkit.experiments.deep_linear` is the deep-linear pipeline
(pretraining, linear transfer, fine-tuning of batched draws) that several chapters share.
"""

from . import (
    dataset_distances,
    deep_linear,
    diagonal_networks,
    finetuning,
    lazy_rich,
    lenet_transfer,
    linear_teachers,
    linear_transfer,
    mnist_table,
    ntk_similarity,
    predictors,
    ptft_relu,
    regularisation,
    relu_student_teacher,
)

__all__ = ["deep_linear", "linear_transfer", "finetuning", "regularisation", "dataset_distances", "relu_student_teacher", "lazy_rich", "linear_teachers", "mnist_table", "ntk_similarity", "lenet_transfer", "ptft_relu", "diagonal_networks", "predictors"]
