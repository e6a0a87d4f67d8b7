#!/usr/bin/env bash
# Reproduce the paper's comparisons on this machine, then build the report.
#
#   bash scripts/reproduce.sh [STAGE ...]      stages: alarm table pigs generalization plain report (default: all)
#
# Every run writes results/<experiment>/<method>/<network-nodes>/seed<k>.json (the committed
# reproduction; PSLE_RESULTS moves it) when it finishes, so
# the script can be stopped and restarted at will: finished runs are skipped. Extra Hydra overrides
# go in $PSLE_OVERRIDES (e.g. "hydra/launcher=submitit_slurm" to run the stages as SLURM array jobs).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$ROOT"
export PSLE_RESULTS="${PSLE_RESULTS:-$ROOT/results}"   # this script writes the reproduction tree on purpose
read -r -a extra <<< "${PSLE_OVERRIDES:-}"
stages=("${@:-alarm table pigs generalization plain report}")
read -r -a stages <<< "${stages[*]}"
run() { psle-experiment -m progress=false "$@" "${extra[@]}"; }

NETS=alarm,asia,cancer,child,earthquake,hailfinder,healthcare,mildew,survey   # pigs runs last: it is slow
for stage in "${stages[@]}"; do
  case "$stage" in
    alarm)           # the five PEF methods on Alarm-1000, ten seeds
      run experiment=paper_table_1000 dataset.network=alarm 'seed=range(0,10)'
      run experiment=paper_table_1000 method=p-pc-stable-numpy dataset.network=alarm 'seed=range(0,10)' ;;
    table)           # table results_1000: the other networks, three seeds (the paper used ten)
      run experiment=paper_table_1000 dataset.network=$NETS 'seed=range(0,3)' ;;
    pigs)
      run experiment=paper_table_1000 dataset.network=pigs 'seed=range(0,3)' ;;
    generalization)  # figure generalization: Alarm and Asia up to 10,000 variables, 2 h limit per run
      run experiment=generalization method=p-pc-stable-numpy,p-sle dataset.nodes=1000,2000,5000,10000
      run experiment=generalization method=p-fges dataset.nodes=1000,2000,5000,10000 ;;
    plain)           # plain PC-Stable and fGES on Alarm-1000, 30 minutes each
      run experiment=paper_table_1000 method=pc-stable,pc-stable-numpy,fges dataset.network=alarm seed=0,1 time_limit=1800 ;;
    report)
      psle report results -o results/report --notes results/NOTES.md ;;
    *) echo "reproduce.sh: unknown stage $stage" >&2; exit 2 ;;
  esac
done
