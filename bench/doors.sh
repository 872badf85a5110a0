#!/usr/bin/env bash
# doors.sh: the queue you cannot see. The same lab, offered the same
# arrivals, with its door accepting every caller into a queue it counts
# (ACCEPT=door) and with each free worker accepting from the kernel's accept
# queue itself (ACCEPT=workers), side by side.
#
# Starts cmd/lab once per door mode (WORKERS=64 SPIN_MS=2 WAIT_MS=18 CPUS=1
# by default: far more workers than one processor can run, so the processor
# binds near 470 a second) on free loopback ports, and runs cmd/load over
# RATES with WINDOW-second windows (Poisson, seed 1, 2 s caller timeout),
# pinned off the lab's processor. Prints cmd/load's table for each mode:
# queued is the lab's own queue at its longest, backlogged the kernel's.
#
# Usage: bench/doors.sh                          (RATES="450 500 550" WINDOW=20 BACKLOG=128)
#        BACKLOG=0 RATES="500" WINDOW=10 bench/doors.sh
set -euo pipefail

RATES=${RATES:-"450 500 550"}
WINDOW=${WINDOW:-20}
export WORKERS=${WORKERS:-64} SPIN_MS=${SPIN_MS:-2} WAIT_MS=${WAIT_MS:-18} CPUS=${CPUS:-1} BACKLOG=${BACKLOG:-128} LIMIT=0
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
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg); $(go version)"
for mode in door workers; do
	ACCEPT=$mode "$work/lab" --addr 127.0.0.1:0 --control 127.0.0.1:0 >"$work/lab.out" 2>"$work/lab.err" &
	lab_pid=$!
	for _ in $(seq 50); do
		grep -q "listening on" "$work/lab.out" 2>/dev/null && break
		sleep 0.1
	done
	line=$(head -n1 "$work/lab.out")
	target=$(sed -n 's/.*listening on \(http:[^ ]*\) (requests).*/\1/p' <<<"$line")
	control=$(sed -n 's/.* and \(http:[^ ]*\) (control).*/\1/p' <<<"$line")
	[ -n "$target" ] && [ -n "$control" ] || { echo "doors.sh: the lab did not start: $(cat "$work/lab.err")" >&2; exit 1; }
	echo "# $line"
	"$work/load" --target "$target" --control "$control" --rate "${RATES// /,}" --seconds "$WINDOW" --seed 1
	stop_lab
done
