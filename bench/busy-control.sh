#!/usr/bin/env bash
# busy-control.sh: how long a run's lab child takes to answer its control
# API on a busy machine. Starts the server (cmd/server, its own SQLite in
# a temporary directory, on PORT), queues one sweep of PRESET through
# POST /api/sweeps (bottleneck-moves' 64-worker preset by default: the lab
# overloaded from the third window), starts HOGS busy loops for as long
# as the run may take (each bounded by timeout), and meanwhile reads the
# lab child's GET /stats every 0.2 s with curl, as the run's load child
# does between windows. Prints the run's end and how long the reads took:
# median, 90th percentile and the longest, in seconds.
# loadrun.Control's attempt and budget (loadrun/control.go) are sized from
# these figures.
#
# Usage: bench/busy-control.sh                  (HOGS=2 PORT=18431)
#        HOGS=0 bench/busy-control.sh           (nothing else busy but the machine's own work)
set -euo pipefail

HOGS=${HOGS:-2}
PORT=${PORT:-18431}
PRESET=${PRESET:-'{"workers":64,"spin_ms":2,"wait_ms":18,"cpus":1,"rates":[200,300,400,500,600],"seconds":5,"seed":5}'}
cd "$(dirname "$0")/.."

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/server" ./cmd/server
"$work/server" --addr "127.0.0.1:$PORT" --data "$work/data" >"$work/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break
	sleep 0.1
done
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg); $(go version); $HOGS busy loops"
for _ in $(seq "$HOGS"); do
	timeout 60 sh -c 'while :; do :; done' &
	pids+=($!)
done
id=$(curl -s -X POST -H 'Content-Type: application/json' -H 'Accept: application/json' -d "$PRESET" "http://127.0.0.1:$PORT/api/sweeps" |
	sed -n 's/.*"id": *"\([0-9a-f]*\)".*/\1/p')
[ -n "$id" ] || { echo "busy-control.sh: the sweep was not queued" >&2; exit 1; }
status() { curl -s "http://127.0.0.1:$PORT/api/runs/$id" | sed -n 's/^  "status": *"\([a-z]*\)".*/\1/p'; }
control=""
for _ in $(seq 100); do
	lab=$(pgrep -f "$work/server lab-child" | head -n1 || true)
	if [ -n "$lab" ]; then
		control=$(ss -ltnp | grep "pid=$lab,fd=4" | awk '{print $4}' | head -n1)
		[ -n "$control" ] && break
	fi
	sleep 0.1
done
[ -n "$control" ] || { echo "busy-control.sh: no lab child's control listener found" >&2; exit 1; }
while st=$(status) && { [ "$st" = queued ] || [ "$st" = running ]; }; do
	curl -s -m 30 -o /dev/null -w '%{time_total}\n' "http://$control/stats" >>"$work/took" || true
	sleep 0.2
done
echo "run $id: $(status); $(curl -s "http://127.0.0.1:$PORT/api/runs/$id" | sed -n 's/^  "reason": *\(.*\),$/\1/p')"
sort -n "$work/took" | awk '$1 > 0 {a[++n]=$1} END {printf "GET /stats of the lab child: %d reads, median %.3f s, p90 %.3f s, longest %.3f s\n", n, a[int(n/2)+1], a[int(n*0.9)], a[n]}'
