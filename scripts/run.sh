#!/usr/bin/env bash
# The main job on a built-in example, locally: an Alarm-1000 benchmark problem, learned and scored.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
OUT="$ROOT/runs/demo"
mkdir -p "$OUT"
psle generate --network alarm --nodes 1000 --seed 0 -o "$OUT/alarm-1000.h5"
# Until the learners land, score the empty graph (the trivial estimate) against the truth.
python - "$OUT/alarm-1000.h5" "$OUT/estimate.json" <<'PY'
import sys
from hpc.data.problem import read_problem
from hpc.graphs.io import write_json
from hpc.graphs.pdag import PDAG
write_json(sys.argv[2], PDAG.empty(read_problem(sys.argv[1]).variables), {"method": "empty"})
PY
psle evaluate "$OUT/estimate.json" --truth "$OUT/alarm-1000.h5"
echo "results in $OUT"
