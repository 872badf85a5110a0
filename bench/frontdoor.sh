#!/usr/bin/env bash
# frontdoor.sh: the course server's own ceiling and what it does past it
# (issue 36), vegeta and cmd/load side by side. Each part starts a fresh
# server built from this tree, pinned to CPU 0, and drives lesson 1's page
# (littles-law, as a newcomer sees it) from CPU 1:
#
#   ceiling   vegeta (keep-alive, gzip) at VEGETA_RATES, 10 s each, and
#             cmd/load (a new connection a request, no gzip) at LOAD_RATES,
#             10 s each; for every window the server's and the generator's
#             processor time, so it shows which of the two ran out first
#   overload  vegeta (keep-alive) over widget plots nobody asked for before,
#             each about a millisecond of the server's processor time, so
#             that a generator on one core can offer twice the server's
#             ceiling: OVER_RATE (about the ceiling) for 10 s, twice it for
#             OVER_SECONDS, then half it for 5 s; served and refused apart;
#             with the front door open (--admit queue --admit-wait off) and
#             with the defaults; resident memory before and after
#   memory    resident memory before, right after and up to 3 minutes after
#             twice the ceiling of plots, and after vegeta at 6,000 pages a
#             second for 10 s, past vegeta's own limit on one core (it then
#             opens thousands of connections)
#
# STORMS (plots, pages) and MEMORY_FLAGS (server flags) choose the memory part's runs.
# Needs vegeta on PATH and two or more processors; every
# window is bounded. Usage: bench/frontdoor.sh [ceiling] [overload] [memory]
set -euo pipefail
cd "$(dirname "$0")/.."
PARTS=${*:-ceiling overload memory}
VEGETA_RATES=${VEGETA_RATES:-"1000 2000 3000 4000 5000"}
LOAD_RATES=${LOAD_RATES:-"2500 5000 10000"}
OVER_RATE=${OVER_RATE:-900}
OVER_SECONDS=${OVER_SECONDS:-30}
PORT=${PORT:-18090}
URL=http://127.0.0.1:$PORT/lessons/littles-law
PLOT=http://127.0.0.1:$PORT/widgets/queue-curve/plot.svg

work=$(mktemp -d)
CGO_ENABLED=0 go build -o "$work/server" ./cmd/server
CGO_ENABLED=0 go build -o "$work/load" ./cmd/load
pid=""
stop() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; pid=""; }
trap 'stop; rm -rf "$work"' EXIT

start() { # start [server flags]: a fresh server on CPU 0
	rm -rf "$work/data"
	taskset -c 0 "$work/server" --addr 127.0.0.1:$PORT --data "$work/data" "$@" >"$work/server.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:$PORT/healthz && break; sleep 0.1; done
	curl -sf -o /dev/null -H 'Accept-Encoding: gzip' $URL
	curl -sf -o /dev/null $URL
	sleep 1
}
ticks() { awk '{print $14+$15}' /proc/$1/stat; }
rss() { awk '/VmRSS/{printf "%.0f MB", $2/1024}' /proc/$pid/status; }

vegeta_window() { # vegeta_window RATE SECONDS
	local t0 v
	t0=$(ticks $pid)
	echo "GET $URL" | taskset -c 1 vegeta attack -rate "$1" -duration "${2}s" -keepalive -timeout 5s \
		-header 'Accept-Encoding: gzip' >"$work/v.bin" &
	v=$!
	sleep "$2"
	local vt st
	vt=$(ticks $v)
	st=$(( $(ticks $pid) - t0 ))
	wait $v
	vegeta report -type=json <"$work/v.bin" | python3 -c "
import json,sys; r=json.load(sys.stdin); l=r['latencies']
print('vegeta   offered %6d  served/s %6.0f  ok %6.1f%%  p50 %8.2f ms  p99 %8.2f ms  server cpu %3d%%  vegeta cpu %3d%%  codes %s' % (
  $1, r['throughput'], 100*r['success'], l['50th']/1e6, l['99th']/1e6, $st/$2, $vt/$2, r['status_codes']))"
}

plots_offset=0
plots() { # plots RATE SECONDS [seconds]: vegeta over widget plots nobody asked for before; served and refused apart; with "seconds", the p99 of each second's requests
	local n=$(( $1 * $2 )) t0 st
	python3 -c "
for i in range($plots_offset, $plots_offset + $n):
    print('GET $PLOT?service_ms=%d.%03d' % (5 + i // 1000, i % 1000))" >"$work/plots.txt"
	plots_offset=$(( plots_offset + n ))
	t0=$(ticks $pid)
	taskset -c 1 vegeta attack -targets "$work/plots.txt" -rate "$1" -duration "${2}s" -keepalive -timeout 5s \
		-header 'Accept-Encoding: gzip' >"$work/p.bin"
	st=$(( $(ticks $pid) - t0 ))
	vegeta encode --to csv <"$work/p.bin" | python3 -c "
import csv, sys
rows = [(int(r[0]), int(r[1]), int(r[2]) / 1e6) for r in csv.reader(sys.stdin)]
start = min(r[0] for r in rows)
def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float('nan')
ok = [r[2] for r in rows if r[1] == 200]
no = [r[2] for r in rows if r[1] == 503]
print('plots    offered %6d  served/s %6.0f  served p50 %7.2f ms p99 %7.2f ms  refused %5.1f%% p50 %6.2f ms p99 %7.2f ms  gave up %d  server cpu %3d%%' % (
  $1, len(ok) / $2, q(ok, .5), q(ok, .99), 100 * len(no) / len(rows), q(no, .5), q(no, .99), sum(1 for r in rows if r[1] not in (200, 503)), $st / ($2 + 0.0)))
if '${3:-}' == 'seconds':
    for k in range(3):
        xs = [r[2] for r in rows if k * 1e9 <= r[0] - start < (k + 1) * 1e9]
        print('         second %d after: %d sent, p99 %.2f ms, refused %d' % (k + 1, len(xs), q(xs, .99), sum(1 for r in rows if k * 1e9 <= r[0] - start < (k + 1) * 1e9 and r[1] == 503)))
"
}

load_windows() { # load_windows RATES SECONDS: cmd/load windows, the server's processor share beside each
	for r in $1; do
		local t0 st
		t0=$(ticks $pid)
		taskset -c 1 "$work/load" --control none --target $URL --rate "$r" --seconds "$2" --json >"$work/l.json"
		st=$(( $(ticks $pid) - t0 ))
		python3 -c "
import json; w=json.loads(open('$work/l.json').read().splitlines()[-1])
print('cmd/load offered %6d  served/s %6.0f  ok %6.1f%%  p50 %8.2f ms  p99 %8.2f ms  server cpu %3d%%  gave up %d  refused %d  error %d  lost %d' % (
  $r, w['ok_per_sec'], 100*w['ok']/max(w['sent'],1), w['p50_ms'], w['p99_ms'], $st/$2, w['gaveup'], w['refused'], w['error'], w['lost']))"
	done
}

door_counts() {
	curl -s http://127.0.0.1:$PORT/metrics | grep -E '^admit_processor_wait_seconds|^admit_requests_total' | grep -v ' 0$' | tr '\n' ' ' || true
	echo
}

echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD) load average $(cut -d' ' -f1-3 /proc/loadavg)"
for part in $PARTS; do
	case $part in
	ceiling)
		echo "## ceiling: one core each (server CPU 0, generator CPU 1)"
		start
		for r in $VEGETA_RATES; do vegeta_window "$r" 10; sleep 2; done
		stop
		start
		load_windows "$LOAD_RATES" 10
		stop
		;;
	overload)
		echo "## overload: distinct widget plots (about 1 ms of processor time each), vegeta keep-alive; $OVER_RATE a second (about the ceiling), then twice it for ${OVER_SECONDS} s, then half it"
		for flags in "--admit queue --admit-wait off" ""; do
			echo "### server flags: ${flags:-(defaults)}"
			start $flags
			plots 200 10 >/dev/null # past the server's start-up work
			echo "rss at rest $(rss)"
			plots "$OVER_RATE" 10
			plots $((2 * OVER_RATE)) "$OVER_SECONDS"
			plots $((OVER_RATE / 2)) 5 seconds
			echo "rss right after $(rss)"
			door_counts
			stop
		done
		;;
	memory)
		for storm in ${STORMS:-plots pages}; do
			start ${MEMORY_FLAGS:-}
			if [ $storm = plots ]; then
				echo "## memory: twice the ceiling of plots for ${OVER_SECONDS} s (defaults), after 6,000 distinct plots fill the plot cache (4,096)"
				plots 200 30 >/dev/null
				echo "rss at rest $(rss)"
				plots $((2 * OVER_RATE)) "$OVER_SECONDS"
			else
				echo "## memory: vegeta at 6,000 pages a second for 10 s, past vegeta's own limit on one core (${MEMORY_FLAGS:-defaults})"
				echo "rss at rest $(rss)"
				vegeta_window 6000 10
			fi
			echo "rss right after $(rss), connections open $(ss -Htn state established "( sport = :$PORT )" | wc -l)"
			sleep 30
			echo "rss +30 s $(rss)"
			sleep 30
			echo "rss +60 s $(rss)"
			sleep 120
			echo "rss +180 s $(rss)"
			stop
		done
		;;
	esac
done
