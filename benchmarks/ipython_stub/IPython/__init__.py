"""A stand-in for IPython, for running the jupytext chapters as plain scripts where IPython is
not installed (``benchmarks/gpu_check.sh``): ``display`` prints markdown and the text of raw
outputs, so that two runs of a chapter can be compared line by line.  Never on the path of
the book or the tests."""

version_info = (9, 0, 0)     # matplotlib reads it when IPython is imported


def get_ipython():
    return None
