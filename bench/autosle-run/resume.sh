#!/usr/bin/env bash
# The Auto-SLE training of BENCHMARKS.md ("Auto-SLE trained here") as a self-requeueing SLURM job: starts
# it, or resumes it from the state kept here: checkpoint.h5, preempt.jsonl (scripts/preempt_training.py's
# requeues) and logs/ (the jobs' logs, where --audit looks for them: .submitit/ beside the checkpoint).
# RUN (default /work/runs/autosle) holds the live files; to carry the run over to another machine, hold the
# job (scontrol requeuehold JOB), then copy $RUN/checkpoint.h5, $RUN/preempt.jsonl and
# $RUN/.submitit/*_log.err back into this folder (the logs into logs/).
# CPUS sets how many member runs go at once and is not one of the checkpoint's settings; the 20 s limit
# per member run is a clock, so a run near it can land either side on a slower or busier machine.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RUN="${RUN:-/work/runs/autosle}"
mkdir -p "$RUN"
if [ ! -f "$RUN/checkpoint.h5" ] && [ -f "$HERE/checkpoint.h5" ]; then
  mkdir -p "$RUN/.submitit"
  cp "$HERE/checkpoint.h5" "$HERE/preempt.jsonl" "$RUN/"
  cp "$HERE"/logs/*_log.err "$RUN/.submitit/"
fi
psle train --slurm --cpus "${CPUS:-2}" --mem-gb 10 --time-min 1440 --requeues 50 \
  --k 4 --trials 12 --problems 60 --min-nodes 5 --max-nodes 250 --seed 7 --time-limit 20 \
  --space fges,pc-stable,boss,grasp,flop \
  --networks andes arth150 barley ecoli70 hepar2 insurance magic-irri magic-niab munin1 pathfinder \
             sachs water win95pts plc geo modular \
  --checkpoint "$RUN/checkpoint.h5" -o "$RUN/trained-sle.yaml"
