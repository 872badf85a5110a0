#!/usr/bin/env bash
# policy.sh: the lab's ceilings with POLICY=queue against the lab before
# admission policies existed, side by side.
#
# Builds cmd/lab twice, from BASE (a git revision, default where this
# branch left main: the lab as it was, nothing else changed) and from this
# working tree (the door asking package admit), and
# cmd/load from this working tree. For each lab setting below and each of
# REPS rounds it starts the old lab, runs one closed-loop window of WINDOW
# seconds against it, stops it, then does the same with the new lab
# (POLICY=queue, spelt out), so both meet the same machine within seconds
# of each other. Closed loop with more callers than the lab can serve at
# once measures the ceiling itself: ok_per_sec is what the lab delivers
# flat out.
#
#   WORKERS=1  SPIN_MS=2 WAIT_MS=18 LIMIT=0            4 callers    the worker ceiling, 1 ÷ 20 ms ≈ 50/s
#   WORKERS=4  SPIN_MS=2 WAIT_MS=18 LIMIT=8            12 callers   4 workers ≈ 200/s, the LIMIT checked (full, never passed)
#   WORKERS=64 SPIN_MS=2 WAIT_MS=18 LIMIT=0 (CPUS=1)   128 callers  the processor ceiling, ≈ 1 ÷ 2.1 ms
#
# Prints one line per window: the setting, which lab, and cmd/load's row
# (offered is the callers). cmd/load pins itself off the lab's processor.
#
# Usage: bench/policy.sh                     (BASE=$(git merge-base main HEAD) REPS=3 WINDOW=10)
#        BASE=7f7a746 REPS=5 WINDOW=5 bench/policy.sh
set -euo pipefail

BASE=${BASE:-$(git merge-base main HEAD)}
REPS=${REPS:-3}
WINDOW=${WINDOW:-10}
cd "$(dirname "$0")/.."

work=$(mktemp -d)
lab_pid=""
stop_lab() {
	if [ -n "$lab_pid" ]; then kill "$lab_pid" 2>/dev/null || true; wait "$lab_pid" 2>/dev/null || true; fi
	lab_pid=""
}
trap 'stop_lab; rm -rf "$work"' EXIT

mkdir "$work/base"
git archive "$BASE" | tar -x -C "$work/base"
(cd "$work/base" && go build -o "$work/lab-before" ./cmd/lab)
go build -o "$work/lab-queue" ./cmd/lab
go build -o "$work/load" ./cmd/load

# one LAB CALLERS KNOBS...: one closed-loop window against a fresh lab.
one() {
	local lab=$1 callers=$2
	shift 2
	env "$@" "$work/$lab" --addr 127.0.0.1:0 --control 127.0.0.1:0 >"$work/lab.out" 2>"$work/lab.err" &
	lab_pid=$!
	for _ in $(seq 200); do
		grep -q "listening on" "$work/lab.out" 2>/dev/null && break
		sleep 0.1
	done
	local line target control
	line=$(head -n1 "$work/lab.out")
	target=$(sed -n 's/.*listening on \(http:[^ ]*\) (requests).*/\1/p' <<<"$line")
	control=$(sed -n 's/.* and \(http:[^ ]*\) (control).*/\1/p' <<<"$line")
	[ -n "$target" ] && [ -n "$control" ] || { echo "policy.sh: the lab did not start: $(cat "$work/lab.err")" >&2; exit 1; }
	"$work/load" --target "$target" --control "$control" --closed "$callers" --seconds "$WINDOW" >"$work/load.out" 2>"$work/load.err"
	[ -e "$work/header" ] || { printf '%-45s %-8s %s\n' setting lab "$(grep -v '^#' "$work/load.out" | head -n1)" >&3; touch "$work/header"; }
	grep -v '^#' "$work/load.out" | tail -n1
	stop_lab
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg); base $(git rev-parse --short "$BASE"), tree $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'); $(go version)"
exec 3>&1
settings=(
	"4 WORKERS=1 SPIN_MS=2 WAIT_MS=18 LIMIT=0 CPUS=1"
	"12 WORKERS=4 SPIN_MS=2 WAIT_MS=18 LIMIT=8 CPUS=1"
	"128 WORKERS=64 SPIN_MS=2 WAIT_MS=18 LIMIT=0 CPUS=1"
)
for s in "${settings[@]}"; do
	read -r callers knobs <<<"$s"
	for _ in $(seq "$REPS"); do
		# shellcheck disable=SC2086
		printf '%-45s %-8s %s\n' "$knobs" before "$(one lab-before "$callers" $knobs)"
		# shellcheck disable=SC2086
		printf '%-45s %-8s %s\n' "$knobs" queue "$(one lab-queue "$callers" $knobs POLICY=queue)"
	done
done
echo "# $(date -u '+%H:%M UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
