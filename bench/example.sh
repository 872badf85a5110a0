#!/usr/bin/env bash
# example.sh: the complete result the Your service page offers as an
# example (web/example/lab.csv and lab.json): the course's own lab run
# through cmd/load exactly as a learner runs load against their service,
# with nothing of the lab's control API but its /metrics.
#
# The lab: 4 workers of 20 ms (1 ms of processor), CPUS=1, and the
# admission limit the course derives for a 250 ms budget (4 × (250 − 20)
# ÷ 20 = 46, rounded down), on processor 1; load on processor 0:
#
#   load --control none --knee 50:400 --seconds 5 --max-p99 1s
#        --metrics CONTROL/metrics --gauge lab_queued --gauge lab_in_service
#        --counter process_cpu_seconds_total --queue-header X-Queue-Wait-Ms
#        --report web/example/lab
#
# Re-record it (on a quiet machine) when the lab or the generator changes
# what it measures. Usage: bench/example.sh   (PORT=18270); the report
# made from them goes to docs/examples/lab-report.html.
set -euo pipefail
PORT=${PORT:-18270}
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
control=http://127.0.0.1:$((PORT + 1))
WORKERS=4 SPIN_MS=1 WAIT_MS=19 CPUS=1 LIMIT=46 taskset -c 1 "$work/lab" --addr "127.0.0.1:$PORT" --control "127.0.0.1:$((PORT + 1))" \
	>"$work/lab.out" 2>"$work/lab.err" &
lab_pid=$!
for _ in $(seq 100); do
	curl -sf "$control/stats" >/dev/null && break
	sleep 0.1
done
curl -sf "$control/stats" >/dev/null || { echo "example.sh: the lab did not start: $(cat "$work/lab.err")" >&2; exit 1; }

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg); tree $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'); $(go version)"
taskset -c 0 "$work/load" --control none --target "http://127.0.0.1:$PORT" --knee 50:400 --seconds 5 --max-p99 1s \
	--metrics "$control/metrics" --gauge lab_queued --gauge lab_in_service --counter process_cpu_seconds_total \
	--queue-header X-Queue-Wait-Ms --report web/example/lab
# The report made from them is kept for readers of the repository; the
# server makes its own from the two files.
mkdir -p docs/examples
mv web/example/lab.html docs/examples/lab-report.html
