"""Errors a user can act on: the CLI prints them as one line, without a traceback (warnings too)."""


class PsleError(Exception):
    """Bad input or an unusable environment, described in one line."""


class GraphError(PsleError):
    """A graph that is not what the operation needs (a cycle, a duplicate pair, ...)."""


def one_line_warning(message, category, filename, lineno, line=None) -> str:
    """`warnings.formatwarning` for a user's terminal: `psle: warning: <first line>`, no source line."""
    text = str(message).strip()
    return f"psle: warning: {text.splitlines()[0] if text else category.__name__}\n"
