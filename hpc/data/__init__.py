"""Data: the bnlearn network library, the benchmark generator, problem and data files."""
