"""Errors a user can act on: the CLI prints them as one line, without a traceback."""


class PsleError(Exception):
    """Bad input or an unusable environment, described in one line."""


class GraphError(PsleError):
    """A graph that is not what the operation needs (a cycle, a duplicate pair, ...)."""
