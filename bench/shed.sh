#!/usr/bin/env bash
# shed.sh: issue 34's goal for shedding by class, on the real lab at three
# seeds: at twice capacity with a fifth of the requests critical, the
# critical share answered ok with one FIFO limit and with shedding by class.
#
# The lab of lessons/content/shed-by-class.md: WORKERS=4 SPIN_MS=1
# WAIT_MS=19 LIMIT=20 CPUS=1 (about 200 a second), 400 arrivals a second
# for 10 s, 20% critical and 30% sheddable, callers' timeout 500 ms; POLICY
# queue (one FIFO queue) and then queue,classes=on. The goal: critical
# served at least 0.95 with classes, at most 0.60 with FIFO.
#
# Usage: bench/shed.sh          (SEEDS="40 41 42" PORT=18230)
set -euo pipefail

SEEDS=${SEEDS:-40 41 42}
PORT=${PORT:-18230}
cd "$(dirname "$0")/.."

work=$(mktemp -d)
lab_pid=""
stop_lab() {
	if [ -n "$lab_pid" ]; then kill "$lab_pid" 2>/dev/null || true; wait "$lab_pid" 2>/dev/null || true; fi
	lab_pid=""
}
trap 'stop_lab; rm -rf "$work"' EXIT

go build -o "$work/lab" ./cmd/lab
go build -o "$work/load" ./cmd/load
target=http://127.0.0.1:$PORT
control=http://127.0.0.1:$((PORT + 1))
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg); tree $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'); $(go version)"
echo "# lab WORKERS=4 SPIN_MS=1 WAIT_MS=19 LIMIT=20 CPUS=1; 400/s for 10 s, 20% critical, 30% sheddable, timeout 500ms"
met=1
for policy in queue queue,classes=on; do
	WORKERS=4 SPIN_MS=1 WAIT_MS=19 LIMIT=20 CPUS=1 POLICY=$policy "$work/lab" --addr "127.0.0.1:$PORT" --control "127.0.0.1:$((PORT + 1))" >"$work/lab.out" 2>"$work/lab.err" &
	lab_pid=$!
	for _ in $(seq 100); do
		curl -sf "$control/stats" >/dev/null && break
		sleep 0.1
	done
	for seed in $SEEDS; do
		"$work/load" --target "$target" --control "$control" --rate 400 --seconds 10 --timeout 500ms --critical 0.2 --sheddable 0.3 \
			--seed "$seed" --json >"$work/out.json" 2>"$work/out.err"
		line=$(jq -r '"ok/s \(.ok_per_sec)  critical \(.by_class[0].ok_share) of \(.by_class[0].arrivals)  default \(.by_class[1].ok_share)  sheddable \(.by_class[2].ok_share)"' "$work/out.json")
		crit=$(jq '.by_class[0].ok_share' "$work/out.json")
		if [ "$policy" = queue ]; then goal="at most 0.60"; ok=$(awk -v c="$crit" 'BEGIN { print (c <= 0.60) }'); else goal="at least 0.95"; ok=$(awk -v c="$crit" 'BEGIN { print (c >= 0.95) }'); fi
		[ "$ok" = 1 ] || met=0
		echo "POLICY=$policy seed $seed: $line  (critical: goal $goal: $([ "$ok" = 1 ] && echo met || echo NOT met))"
	done
	stop_lab
done
[ "$met" = 1 ] && echo "all goals met" || echo "some goal NOT met"
