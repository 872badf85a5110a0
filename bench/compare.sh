#!/usr/bin/env bash
# compare.sh: cmd/load and vegeta, side by side, against the same lab.
#
# Starts cmd/lab (knobs from the environment: WORKERS SPIN_MS WAIT_MS LIMIT
# CPUS, the lessons' defaults 1/2/18/0/1) on free loopback ports, then for
# each rate in RATES runs one window of cmd/load and one vegeta attack of
# WINDOW seconds each, draining the lab between runs, and prints one line per rate:
# ok answers a second, p50 and p99 latency, and the lab's done counter, for
# both tools.
#
# Both tools use evenly spaced arrivals (cmd/load --schedule uniform; vegeta's
# constant pacer), a fresh connection per request (vegeta -keepalive=false)
# and a 2 s timeout, so below saturation their ok rates should agree within
# 2%. Their ok rates are computed alike: cmd/load's ok_per_sec is ok ÷
# max(window, last ok answer); vegeta's throughput is successes ÷ (attack
# duration + wait for the last response).
#
# Needs: go, curl, and vegeta on PATH or in $(go env GOPATH)/bin; install it
# with
#   go install github.com/tsenart/vegeta/v12@v12.13.0
#
# Usage: bench/compare.sh            (RATES="20 40 48 60" WINDOW=10)
#        RATES="100 150" WINDOW=5 WORKERS=4 bench/compare.sh
set -euo pipefail

RATES=${RATES:-"20 40 48 60"}
WINDOW=${WINDOW:-10}
cd "$(dirname "$0")/.."

die() { echo "compare.sh: $*" >&2; exit 1; }
command -v curl >/dev/null || die "curl is needed"
VEGETA=$(command -v vegeta || true)
[ -n "$VEGETA" ] || VEGETA="$(go env GOPATH)/bin/vegeta"
[ -x "$VEGETA" ] || die "vegeta not found: go install github.com/tsenart/vegeta/v12@v12.13.0"

work=$(mktemp -d)
lab_pid=""
cleanup() {
	if [ -n "$lab_pid" ]; then kill "$lab_pid" 2>/dev/null || true; wait "$lab_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/lab" ./cmd/lab
go build -o "$work/load" ./cmd/load

"$work/lab" --addr 127.0.0.1:0 --control 127.0.0.1:0 >"$work/lab.out" 2>"$work/lab.err" &
lab_pid=$!
for _ in $(seq 50); do
	grep -q "listening on" "$work/lab.out" 2>/dev/null && break
	sleep 0.1
done
line=$(head -n1 "$work/lab.out")
[ -n "$line" ] || die "the lab did not start: $(cat "$work/lab.err")"
target=$(sed -n 's/.*listening on \(http:[^ ]*\) (requests).*/\1/p' <<<"$line")
control=$(sed -n 's/.* and \(http:[^ ]*\) (control).*/\1/p' <<<"$line")
[ -n "$target" ] && [ -n "$control" ] || die "cannot read the lab's addresses from: $line"
echo "# $line"
echo "# vegeta at $VEGETA (install v12.13.0, as above); $(go version)"
echo "# each run: $WINDOW s, evenly spaced arrivals, fresh connection per request, 2 s timeout"

# field NAME JSON: the first number after "NAME": in a JSON text.
field() { sed -n "s/.*\"$1\": *\([-0-9.e+]*\).*/\1/p" <<<"$2" | head -n1; }

# drain waits until the lab has nothing queued or in service, then resets it.
drain() {
	for _ in $(seq 300); do
		s=$(curl -fsS "$control/stats")
		[ "$(field queued "$s")" = 0 ] && [ "$(field in_service "$s")" = 0 ] && break
		sleep 0.1
	done
	curl -fsS -X POST "$control/reset" >/dev/null
}

printf '%7s | %10s %8s %8s %6s | %10s %8s %8s %6s | %7s\n' \
	rate load_ok/s p50_ms p99_ms done vegeta_ok/s p50_ms p99_ms done diff_%
for rate in $RATES; do
	# cmd/load resets and drains the lab itself before its window.
	row=$("$work/load" --target "$target" --control "$control" --rate "$rate" --seconds "$WINDOW" --schedule uniform --timeout 2s --json)
	l_ok=$(field ok_per_sec "$row"); l_p50=$(field p50_ms "$row"); l_p99=$(field p99_ms "$row"); l_done=$(field done "$row")

	drain
	rep=$(echo "GET $target/" | "$VEGETA" attack -rate="$rate/1s" -duration="${WINDOW}s" -keepalive=false -timeout=2s | "$VEGETA" report -type=json)
	v_done=$(field done "$(curl -fsS "$control/stats")")
	v_ok=$(field throughput "$rep")
	v_p50=$(awk -v ns="$(field 50th "$rep")" 'BEGIN{printf "%.3f", ns/1e6}')
	v_p99=$(awk -v ns="$(field 99th "$rep")" 'BEGIN{printf "%.3f", ns/1e6}')
	diff=$(awk -v a="$l_ok" -v b="$v_ok" 'BEGIN{ if (b > 0) printf "%+.2f", 100*(a-b)/b; else print "n/a" }')
	printf '%7s | %10.2f %8.1f %8.1f %6s | %10.2f %8.1f %8.1f %6s | %7s\n' \
		"$rate" "$l_ok" "$l_p50" "$l_p99" "$l_done" "$v_ok" "$v_p50" "$v_p99" "$v_done" "$diff"
	drain
done
