#!/usr/bin/env bash
# compare.sh: cmd/load and vegeta, side by side, against the same lab.
#
# Starts cmd/lab (knobs from the environment: WORKERS SPIN_MS WAIT_MS LIMIT
# CPUS, the lessons' defaults 1/2/18/0/1) on free loopback ports, then for
# each rate in RATES runs one window of cmd/load and one vegeta attack of
# WINDOW seconds each, draining the lab between runs (and, before each run,
# waiting for the connections the last one left in TIME_WAIT: see settle),
# and prints one line per
# rate, for both tools: ok answers a second, that as a percentage of the
# offered rate (achieved), p50 and p99 latency, and the lab's done counter;
# for cmd/load also its late sends (> 1 ms), arrivals not sent and send-lag
# p99, which vegeta does not report. Both tools run off the lab's processors
# (cmd/load pins itself; vegeta is started with taskset on the others).
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
#        bench/compare.sh fast         (the generator's own limits: a lab doing
#                                       no work, WORKERS=64 SPIN_MS=0 WAIT_MS=0,
#                                       RATES="1000 2000 5000 8000 10000" WINDOW=5)
set -euo pipefail

if [ "${1:-}" = fast ]; then
	export WORKERS=${WORKERS:-64} SPIN_MS=${SPIN_MS:-0} WAIT_MS=${WAIT_MS:-0}
	RATES=${RATES:-"1000 2000 5000 8000 10000"}
	WINDOW=${WINDOW:-5}
fi
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
# vegeta runs on the processors the lab does not use, as cmd/load does.
lab_cpus=$(curl -fsS "$control/config" | tr -d ' \n' | sed -n 's/.*"processors":\[\([0-9,]*\)\].*/\1/p')
others=$(awk -v lab=",$lab_cpus," 'BEGIN{ n = split("'"$(seq -s, 0 $(($(nproc) - 1)))"'", c, ","); s = ""; for (i = 1; i <= n; i++) if (index(lab, "," c[i] ",") == 0) s = s (s == "" ? "" : ",") c[i]; print s }')
PIN=()
if [ -n "$others" ] && command -v taskset >/dev/null; then PIN=(taskset -c "$others"); fi
echo "# $line"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg); vegeta on processor(s) ${others:-any} (${PIN[*]:-not pinned})"
echo "# vegeta at $VEGETA (install v12.13.0, as above); $(go version)"
"$work/load" --target "$target" --control "$control" --check 2>&1 | grep '^load:' | sed 's/^/# cmd\//' || true
echo "# each run: $WINDOW s, evenly spaced arrivals, fresh connection per request, 2 s timeout"

# field NAME JSON: the first number after "NAME": in a JSON text.
field() { sed -n "s/.*\"$1\": *\([-0-9.e+]*\).*/\1/p" <<<"$2" | head -n1; }

# settle waits (at most 70 s) until fewer than 1000 connections toward the
# lab are in TIME_WAIT on this machine's side, and says so when it waited.
# A tool that gave up on many requests closed them first, and each such
# connection holds its local port for 60 s: the next tool's connect(2) then
# searches the crowded port range for each request (measured: cmd/load's
# sender spent over half its processor in that search right after
# vegeta collapsed, and some connects failed with EADDRNOTAVAIL;
# docs/benchmarks-archive.md). Each tool starts with the ports as clear as the
# other had them.
lab_port=${target##*:}
lab_port=${lab_port%%/*}
tw_toward_lab() {
	awk -v p="$(printf '%04X' "$lab_port")" '$4 == "06" { split($3, a, ":"); if (a[2] == p) n++ } END { print n + 0 }' /proc/net/tcp /proc/net/tcp6
}
settle() {
	local before n waited=0
	before=$(tw_toward_lab)
	n=$before
	while [ "$n" -ge 1000 ] && [ "$waited" -lt 70 ]; do
		sleep 1
		waited=$((waited + 1))
		n=$(tw_toward_lab)
	done
	if [ "$waited" -gt 0 ]; then echo "#   before $1 at $rate/s: waited $waited s for $before connections in TIME_WAIT toward the lab to clear (now $n)"; fi
}

# drain waits until the lab has nothing queued or in service, then resets it.
drain() {
	for _ in $(seq 300); do
		s=$(curl -fsS "$control/stats")
		[ "$(field queued "$s")" = 0 ] && [ "$(field in_service "$s")" = 0 ] && break
		sleep 0.1
	done
	curl -fsS -X POST -H "Content-Type: application/json" "$control/reset" >/dev/null
}

printf '%6s | %9s %7s %7s %7s %6s %5s %8s %7s | %9s %7s %7s %7s %6s | %7s\n' \
	rate load_ok/s ach_% p50_ms p99_ms done late not_sent lag_p99 vegeta_ok/s ach_% p50_ms p99_ms done diff_%
for rate in $RATES; do
	settle cmd/load
	# cmd/load resets and drains the lab itself before its window.
	row=$("$work/load" --target "$target" --control "$control" --rate "$rate" --seconds "$WINDOW" --schedule uniform --timeout 2s --json 2>/dev/null)
	l_ok=$(field ok_per_sec "$row"); l_p50=$(field p50_ms "$row"); l_p99=$(field p99_ms "$row"); l_done=$(field done "$row")
	l_late=$(field late "$row"); l_ns=$(field not_sent "$row"); l_lag=$(field send_lag_p99_ms "$row")

	drain
	settle vegeta
	rep=$(echo "GET $target/" | "${PIN[@]}" "$VEGETA" attack -rate="$rate/1s" -duration="${WINDOW}s" -keepalive=false -timeout=2s | "$VEGETA" report -type=json)
	v_done=$(field done "$(curl -fsS "$control/stats")")
	v_ok=$(field throughput "$rep")
	v_p50=$(awk -v ns="$(field 50th "$rep")" 'BEGIN{printf "%.3f", ns/1e6}')
	v_p99=$(awk -v ns="$(field 99th "$rep")" 'BEGIN{printf "%.3f", ns/1e6}')
	diff=$(awk -v a="$l_ok" -v b="$v_ok" 'BEGIN{ if (b > 0) printf "%+.2f", 100*(a-b)/b; else print "n/a" }')
	pct() { awk -v a="$1" -v r="$rate" 'BEGIN{printf "%.2f", 100*a/r}'; }
	printf '%6s | %9.2f %7s %7.1f %7.1f %6s %5s %8s %7.3f | %9.2f %7s %7.1f %7.1f %6s | %7s\n' \
		"$rate" "$l_ok" "$(pct "$l_ok")" "$l_p50" "$l_p99" "$l_done" "$l_late" "$l_ns" "$l_lag" "$v_ok" "$(pct "$v_ok")" "$v_p50" "$v_p99" "$v_done" "$diff"
	drain
done
