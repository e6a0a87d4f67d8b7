"""Graphs: the PDAG type, equivalence-class conversions, metrics and files (all pure)."""

from hpc.graphs.equivalence import dag_to_cpdag, is_acyclic, is_dag, pdag_to_dag, to_cpdag, topological_order
from hpc.graphs.metrics import Metrics, compare, evaluate
from hpc.graphs.pdag import PDAG

__all__ = ["PDAG", "Metrics", "compare", "evaluate", "dag_to_cpdag", "pdag_to_dag", "to_cpdag",
           "is_acyclic", "is_dag", "topological_order"]
