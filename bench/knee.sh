#!/usr/bin/env bash
# knee.sh: load's knee search against a full sweep, on the same lab.
#
# Starts cmd/lab at WORKERS=4 SPIN_MS=0 WAIT_MS=20 CPUS=1 (4 workers ÷ 20
# ms: a ceiling of 200 a second; the lab on one processor, cmd/load pinning
# itself off it through the control API), then runs against it
#
#   a full sweep   --rate 40,60,...,400 (FROM to TO by STEP_RATE), WINDOW s each
#   a knee search  --knee 40:400 --step 1.25 --max-p99 MAX_P99, WINDOW s each,
#                  its recovery window included
#
# and prints both ceilings (the most ok answers a second of any window),
# their ratio, the windows each used, and how many of the knee search's
# windows passed the p99 bound. The issue's goal: the search's ceiling
# within 3% of the sweep's, in fewer windows, and no more than one window
# past the p99 bound.
#
# Usage: bench/knee.sh                          (WINDOW=10 MAX_P99=500ms PORT=18210)
#        WINDOW=2 bench/knee.sh                 (a quick look)
set -euo pipefail

WINDOW=${WINDOW:-10}
MAX_P99=${MAX_P99:-500ms}
FROM=${FROM:-40}
TO=${TO:-400}
STEP_RATE=${STEP_RATE:-20}
PORT=${PORT:-18210}
cd "$(dirname "$0")/.."

work=$(mktemp -d)
lab_pid=""
cleanup() {
	if [ -n "$lab_pid" ]; then kill "$lab_pid" 2>/dev/null || true; wait "$lab_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/lab" ./cmd/lab
go build -o "$work/load" ./cmd/load
target=http://127.0.0.1:$PORT
control=http://127.0.0.1:$((PORT + 1))
WORKERS=4 SPIN_MS=0 WAIT_MS=20 CPUS=1 "$work/lab" --addr "127.0.0.1:$PORT" --control "127.0.0.1:$((PORT + 1))" >"$work/lab.out" 2>"$work/lab.err" &
lab_pid=$!
for _ in $(seq 100); do
	curl -sf "$control/stats" >/dev/null && break
	sleep 0.1
done
curl -sf "$control/stats" >/dev/null || { echo "knee.sh: the lab did not start: $(cat "$work/lab.err")" >&2; exit 1; }

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg); tree $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'); $(go version)"
echo "# lab WORKERS=4 SPIN_MS=0 WAIT_MS=20 CPUS=1 (ceiling 200/s); windows of $WINDOW s"

rates=$(seq -s, "$FROM" "$STEP_RATE" "$TO")
start=$(date +%s)
"$work/load" --target "$target" --control "$control" --rate "$rates" --seconds "$WINDOW" --json >"$work/sweep.json" 2>"$work/sweep.err"
sweep_s=$(($(date +%s) - start))
start=$(date +%s)
"$work/load" --target "$target" --control "$control" --knee "$FROM:$TO" --step 1.25 --max-p99 "$MAX_P99" --seconds "$WINDOW" \
	--json >"$work/knee.json" 2>"$work/knee.err"
knee_s=$(($(date +%s) - start))

echo "full sweep: $rates"
jq -r '"  \(.offered)/s: ok/s \(.ok_per_sec)  p99 \(.p99_ms) ms  n \(.n)"' "$work/sweep.json"
echo "knee search: --knee $FROM:$TO --step 1.25 --max-p99 $MAX_P99"
grep -v '"summary"' "$work/knee.json" | jq -r '"  \(.offered)/s: ok/s \(.ok_per_sec)  p99 \(.p99_ms) ms  n \(.n)\(if .note then "  # " + .note else "" end)"'
grep '"summary"' "$work/knee.json" | jq -r '.summary | "  stopped: \(.stopped)\n  first saturation point: \(if .knee then "\(.knee.offered)/s: \(.knee_why)" else "none" end)"'

sweep_ceiling=$(jq -s 'map(.ok_per_sec) | max' "$work/sweep.json")
sweep_at=$(jq -s 'max_by(.ok_per_sec) | .offered' "$work/sweep.json")
sweep_windows=$(jq -s 'length' "$work/sweep.json")
knee_ceiling=$(grep '"summary"' "$work/knee.json" | jq '.summary.ceiling.ok_per_sec')
knee_at=$(grep '"summary"' "$work/knee.json" | jq '.summary.ceiling.offered')
knee_windows=$(grep '"summary"' "$work/knee.json" | jq '.summary.windows')
bound_ms=$(awk -v d="$MAX_P99" 'BEGIN { if (d ~ /ms$/) print d + 0; else if (d ~ /s$/) print (d + 0) * 1000; else print d }')
past=$(grep -v '"summary"' "$work/knee.json" | jq -s --argjson b "$bound_ms" '[.[] | select((.note // "" | startswith("recovery") | not) and .p99_ms > $b)] | length')

echo "ceiling, full sweep:  $sweep_ceiling ok/s at $sweep_at/s; $sweep_windows windows, $sweep_s s"
echo "ceiling, knee search: $knee_ceiling ok/s at $knee_at/s; $knee_windows windows (the recovery window included), $knee_s s"
awk -v k="$knee_ceiling" -v s="$sweep_ceiling" 'BEGIN { printf "ratio knee ÷ sweep: %.4f (%+.1f%%; the goal: within 3%%)\n", k / s, 100 * (k / s - 1) }'
echo "knee search windows past --max-p99 $MAX_P99: $past (the goal: at most 1)"
