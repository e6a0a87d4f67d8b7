#!/usr/bin/env bash
# Set up (as run.sh does), lint and type-check (ruff, mypy; configured in pyproject.toml) and run the test suite; extra
# arguments go to pytest.
# As root it first starts the local single-node SLURM (slurm/local/start.sh) so that the tests
# marked `slurm` submit real jobs; PSLE_NO_SLURM=1 skips that, PSLE_REQUIRE_SLURM=1 (CI) makes a
# SLURM that does not come up a failure instead of skipped tests.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$ROOT"
if [ "${PSLE_NO_SLURM:-0}" != 1 ] && [ "$(id -u)" = 0 ]; then
  SLURM_LOG="$VENV/slurm-start.log"
  echo "test.sh: starting the local SLURM (log: $SLURM_LOG) ..." >&2
  if ! bash slurm/local/start.sh >"$SLURM_LOG" 2>&1; then
    tail -n 20 "$SLURM_LOG" >&2
    if [ "${PSLE_REQUIRE_SLURM:-0}" = 1 ]; then echo "test.sh: SLURM did not start" >&2; exit 1; fi
    echo "test.sh: SLURM did not start; the slurm tests will be skipped" >&2
  fi
fi
ruff check --quiet hpc tests scripts hydra_plugins  # the linter and type checker first: seconds, not minutes
mypy --no-error-summary
python -m pytest "$@"
