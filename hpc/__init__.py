"""P/SLE: structure learning of large Gaussian Bayesian networks with learned ensembles."""

__version__ = "0.1.0"
