"""Learners: Tetrad's fGES and PC-Stable as ensemble members (JVM in a worker process), and BIC."""

from hpc.learners.members import FGES, PCStable, Member, member_from_spec

__all__ = ["FGES", "PCStable", "Member", "member_from_spec"]
