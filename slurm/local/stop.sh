#!/usr/bin/env bash
# Stop the single-node SLURM started by slurm/local/start.sh: cancel all jobs, then stop
# slurmd, slurmctld, slurmdbd, MariaDB and (if start.sh started it) munged.
# Config, job state and the accounting database are kept; the next start.sh continues from them.
#
#   bash slurm/local/stop.sh           # stop
#   bash slurm/local/stop.sh --purge   # stop, then delete state, logs and database
#                                      # (keeps the packages, /etc/munge and the config)
# Environment: PSLE_SLURM_DIR as for start.sh (default /var/lib/psle-slurm).
set -uo pipefail

DIR=${PSLE_SLURM_DIR:-/var/lib/psle-slurm}
RUN=$DIR/run
PURGE=0
case "${1:-}" in
  --purge) PURGE=1 ;;
  "") ;;
  *) echo "usage: $0 [--purge]" >&2; exit 2 ;;
esac
export SLURM_CONF=$DIR/etc/slurm.conf

t0=$(date +%s%N)
log() {
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '[stop.sh %3d.%ds] %s\n' $(( ms / 1000 )) $(( ms % 1000 / 100 )) "$*" >&2
}
stop() {  # stop <name>=<pid file>...: SIGTERM to all, wait up to 30 s for all, then SIGKILL
  local arg name pf pid pids=()
  for arg in "$@"; do
    name=${arg%%=*}; pf=${arg#*=}; pid=$(cat "$pf" 2>/dev/null); rm -f "$pf"
    # only if that pid is still this daemon (after a reboot it may be another process)
    if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] && kill "$pid" 2>/dev/null; then
      pids+=("$pid"); log "stopping $name ($pid)"
    fi
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then log "$pid did not exit within 30 s: SIGKILL"; kill -9 "$pid"; fi
  done
}

[ "$(id -u)" = 0 ] || { echo "stop.sh: must run as root" >&2; exit 1; }
if [ ! -d "$DIR" ]; then log "nothing to stop ($DIR does not exist)"; exit 0; fi

# Cancel every job first, so that no slurmstepd or job process outlives the daemons.
if [ -f "$SLURM_CONF" ] && command -v scontrol >/dev/null && scontrol ping 2>/dev/null | grep -q UP; then
  jobs=$(squeue -h -o %A 2>/dev/null | sort -u)
  if [ -n "$jobs" ]; then
    log "cancelling $(wc -w <<<"$jobs") job(s)"
    # shellcheck disable=SC2086
    scancel $jobs 2>/dev/null
    for _ in $(seq 150); do [ -z "$(squeue -h -o %A 2>/dev/null)" ] && break; sleep 0.2; done
    [ -z "$(squeue -h -o %A 2>/dev/null)" ] || log "warning: jobs still listed after 30 s: $(squeue -h -o '%A %T' | tr '\n' ' ')"
  fi
fi

# slurmctld flushes job records to slurmdbd, slurmdbd to MariaDB, all need munged: stop in that order.
stop slurmd="$RUN/slurmd.pid" slurmctld="$RUN/slurmctld.pid"
stop slurmdbd="$RUN/slurmdbd.pid"
if [ -e "$RUN/munged.ours" ]; then                 # leave alone a munged that start.sh did not start
  stop mariadbd="$RUN/mysqld/mariadbd.pid" munged=/run/munge/munged.pid
  rm -f "$RUN/munged.ours"
else
  stop mariadbd="$RUN/mysqld/mariadbd.pid"
fi

left=$(pgrep -x slurmstepd | tr '\n' ' ')
[ -z "$left" ] || log "warning: slurmstepd processes still running: $left"

if [ "$PURGE" = 1 ]; then
  log "purging $DIR/{state,log,run,mysql}"
  rm -rf "${DIR:?}/state" "$DIR/log" "$RUN" "$DIR/mysql"
fi
log "SLURM stopped"
