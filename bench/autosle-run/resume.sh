#!/usr/bin/env bash
# The Auto-SLE training of BENCHMARKS.md ("Auto-SLE trained here") as a self-requeueing SLURM job: starts
# it, or resumes it from the checkpoint kept here. RUN (default /work/runs/autosle) holds the live files;
# to carry the run over to another machine, hold the job (scontrol requeuehold JOB), then copy
# $RUN/checkpoint.h5, $RUN/preempt.jsonl and $RUN/.submitit/*_log.err back into this folder.
# CPUS sets how many member runs go at once and is not one of the checkpoint's settings; the 20 s limit
# per member run is a clock, so a run near it can land either side on a slower or busier machine.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RUN="${RUN:-/work/runs/autosle}"
mkdir -p "$RUN"
[ -f "$RUN/checkpoint.h5" ] || { [ ! -f "$HERE/checkpoint.h5" ] || cp "$HERE/checkpoint.h5" "$RUN/"; }
psle train --slurm --cpus "${CPUS:-2}" --mem-gb 10 --time-min 1440 --requeues 50 \
  --k 4 --trials 12 --problems 60 --min-nodes 5 --max-nodes 250 --seed 7 --time-limit 20 \
  --space fges,pc-stable,boss,grasp,flop \
  --networks andes arth150 barley ecoli70 hepar2 insurance magic-irri magic-niab munin1 pathfinder \
             sachs water win95pts plc geo modular \
  --checkpoint "$RUN/checkpoint.h5" -o "$RUN/trained-sle.yaml"
