"""Auto-SLE: learn an ensemble greedily, one SMAC3-optimised member per round, resumable."""
