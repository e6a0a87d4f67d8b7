#!/usr/bin/env bash
# Set up (as run.sh does) and run the test suite; extra arguments go to pytest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$ROOT"
python -m pytest "$@"
