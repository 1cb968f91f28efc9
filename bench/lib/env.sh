# Sourced by bench/*.sh: paths, and the anchors kit's helpers (machine facts, record, wait_quiet, stop_pid...).
# The anchors' scripts are called in place (read-only kit) with RESULTS and SCRATCH pointing here, so their rows
# and ours land in the same results/*.jsonl and the same tables.
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(dirname "$BENCH")
KIT=${KIT:-/work/shared/anchors-bench}
# The project's pinned Node 24 (runs .ts natively). A bare `node` (Node 20 on this machine) is only used by
# the anchors' own drivers, exactly as they were measured.
NODE=$ROOT/node_modules/node/bin/node
export RESULTS=${RESULTS:-$BENCH/results}
export SCRATCH=${SCRATCH:-/tmp/doorman-bench}
# The kit waits up to QUIET_WAIT s for a quiet machine before each run (default 300 there); shorter here so a
# busy machine cannot stretch bench/run.sh far past its ~10 minutes. Each record keeps the CPU use it saw.
export QUIET_WAIT=${QUIET_WAIT:-60}
[ -x "$NODE" ] || { echo "no pinned Node at $NODE (npm ci first)" >&2; exit 2; }
[ -r "$KIT/lib/common.sh" ] || { echo "no anchors kit at $KIT (set KIT=)" >&2; exit 2; }
# shellcheck source=/dev/null
. "$KIT/lib/common.sh"

# Other processes' CPU use, sampled every second while this script runs (bench/lib/cpu-monitor.py): the kit
# only looks in the second before each run.
start_monitor() { # start_monitor NAME -> $RESULTS/NAME.cpu.log
  MONITOR_LOG=$RESULTS/$1.cpu.log MONITOR_SINCE=$(date +%s)
  : > "$MONITOR_LOG"
  python3 "$BENCH/lib/cpu-monitor.py" watch $$ "$MONITOR_LOG" &
}
monitor_report() { # monitor_report JSONL...
  python3 "$BENCH/lib/cpu-monitor.py" report "$MONITOR_SINCE" "$MONITOR_LOG" "$@" || true
}
# Runs during which other processes used more than this (mean % of all CPUs) are left out of the "quiet" tables.
QUIET_DURING=${QUIET_DURING:-5}
# tables JSONL METRIC... : note other processes' CPU use in this script's records, then print the table of the
# newest run of each case and the same for the quiet runs only (also left in JSONL's *.quiet.jsonl)
tables() {
  local jsonl=$1; shift
  sleep 2   # the monitor's last samples
  python3 "$BENCH/lib/cpu-monitor.py" annotate "$MONITOR_SINCE" "$MONITOR_LOG" "$jsonl"
  echo "All runs (newest of each case; $jsonl):"
  python3 "$KIT/lib/summarize.py" "$jsonl" "$@" other_cpu_during_pct.mean:'other CPU during run %'
  python3 "$BENCH/lib/cpu-monitor.py" quiet "$MONITOR_SINCE" "$QUIET_DURING" "$jsonl" > "${jsonl%.jsonl}.quiet.jsonl"
  echo
  echo "Quiet runs only (other processes <= $QUIET_DURING% of the CPUs during the run), this invocation:"
  if [ -s "${jsonl%.jsonl}.quiet.jsonl" ]; then
    python3 "$KIT/lib/summarize.py" "${jsonl%.jsonl}.quiet.jsonl" "$@" other_cpu_during_pct.mean:'other CPU during run %'
  else
    echo "  (none)"
  fi
}

# Squid runs the compiled helpers (dist/, built by npm ci / npm run build): measure those, built from this tree.
(cd "$ROOT" && PATH="$ROOT/node_modules/.bin:$PATH" tsc -p tsconfig.build.json)
