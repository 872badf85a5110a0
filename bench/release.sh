#!/usr/bin/env bash
# release.sh: the bad release on the real lab, scaled to 1/10 of the
# capacity demo's time (issue 17): the four experiments and the three
# adaptive policies side by side.
#
# Each run starts a fresh lab (cmd/lab, CPUS=1, pinned to its processor as
# the README says; cmd/load keeps off it, at normal priority, as the
# server's load child runs) with 100 ms of work a request
# (SPIN_MS=0 WAIT_MS=100: 7 workers serve 70 a second), and sends one
# open-loop window of WINDOW seconds (default 30, the runner's cap) from
# cmd/load: 50 a second, Poisson, from a client of 10 workers, each caller
# waiting at most 250 ms; RELEASE seconds in (default 10) the work doubles
# (--at ${RELEASE}s:WAIT_MS=200: capacity 35 a second). Meanwhile
# "release watch" polls the lab's /stats and /config every 100 ms (its
# policy's limit), and afterwards "release summary" prints one line from
# the records (a second is loadrun.Sample's: answers by the second they
# ended in), before the release (from 2 s to it) and after it (from 3 s
# after it to the window's last whole second): ok, refused, gave up and
# client_busy a second, the generator's mean in flight, the ok answers'
# p99, the lab's median service time (ms, from its X-Service-Ms), the
# policy's limit (least/mean/most) and the seconds from the release until
# the service delivers GOAL ok a second (default 31.5, 90% of 35; see
# converged in bench/release/persec.go).
#
#   1 queue               WORKERS=7  POLICY=queue      the origin drowns
#   2 service up          WORKERS=20 POLICY=queue      capacity 100 after the release
#   3 quota               WORKERS=7  POLICY=inflight,quota=5   N = X × R = 50 × 0.1
#   3u quota, uniform     the same, arrivals evenly spaced (--schedule uniform)
#   4 aimd, gradient, sojourn (and sojourn without timeout_ms), parameters below
#
# Usage: bench/release.sh                         (SEEDS="1 2 3" WINDOW=30 RELEASE=10)
#        SEEDS=7 ONLY="sojourn" bench/release.sh  (only the experiments whose name contains ONLY)
#        KEEP=dir bench/release.sh                (keep records, watch logs and per-second tables in dir)
set -euo pipefail

SEEDS=${SEEDS:-1 2 3}
WINDOW=${WINDOW:-30}
RELEASE=${RELEASE:-10}
ONLY=${ONLY:-}
cd "$(dirname "$0")/.."

work=$(mktemp -d)
lab_pid="" watch_pid=""
stop() {
	for p in $watch_pid $lab_pid; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	lab_pid="" watch_pid=""
}
trap 'stop; rm -rf "$work"' EXIT
keep=${KEEP:-}
[ -z "$keep" ] || mkdir -p "$keep"

go build -o "$work/lab" ./cmd/lab
go build -o "$work/load" ./cmd/load
go build -o "$work/release" ./bench/release

# one NAME SEED LOADFLAGS -- KNOBS...: one window against a fresh lab.
one() {
	local name=$1 seed=$2 flags=()
	shift 2
	while [ "$1" != -- ]; do flags+=("$1"); shift; done
	shift
	env "$@" SPIN_MS=0 WAIT_MS=100 CPUS=1 "$work/lab" --addr 127.0.0.1:0 --control 127.0.0.1:0 >"$work/lab.out" 2>"$work/lab.err" &
	lab_pid=$!
	local line target="" control=""
	for _ in $(seq 200); do
		line=$(head -n1 "$work/lab.out" 2>/dev/null || true)
		target=$(sed -n 's/.*listening on \(http:[^ ]*\) (requests).*/\1/p' <<<"$line")
		control=$(sed -n 's/.* and \(http:[^ ]*\) (control).*/\1/p' <<<"$line")
		[ -n "$target" ] && [ -n "$control" ] && break
		sleep 0.1
	done
	[ -n "$target" ] && [ -n "$control" ] || { echo "release.sh: the lab did not start: $(cat "$work/lab.out" "$work/lab.err")" >&2; exit 1; }
	"$work/release" watch "$control" >"$work/watch" &
	watch_pid=$!
	"$work/load" --target "$target" --control "$control" --rate 50 --seconds "$WINDOW" --timeout 250ms \
		--max-inflight 10 --at "${RELEASE}s:WAIT_MS=200" --seed "$seed" "${flags[@]}" \
		--records "$work/records.csv" >"$work/load.out" 2>"$work/load.err" ||
		{ echo "release.sh: load failed: $(cat "$work/load.err")" >&2; exit 1; }
	stop
	"$work/release" summary "$name, seed $seed" "$RELEASE" "$work/records.csv" "$work/watch"
	if [ -n "$keep" ]; then
		local f
		f="$keep/$(tr -c 'a-z0-9\n' _ <<<"$name" | tr -d '\n')-s$seed"
		cp "$work/records.csv" "$f.csv"
		cp "$work/watch" "$f.watch"
		"$work/release" seconds "$RELEASE" "$work/records.csv" "$work/watch" >"$f.seconds"
		grep -v '^#' "$work/load.out" >"$f.row"
	fi
}

experiments=(
	"1 queue|-- WORKERS=7 POLICY=queue"
	"2 service up, 20 workers|-- WORKERS=20 POLICY=queue"
	"3 inflight,quota=5|-- WORKERS=7 POLICY=inflight,quota=5"
	"3u inflight,quota=5, uniform|--schedule uniform -- WORKERS=7 POLICY=inflight,quota=5"
	"4 aimd,latency_ms=245,backoff=0.9,increase=0.2,interval_ms=200|-- WORKERS=7 POLICY=aimd,latency_ms=245,backoff=0.9,increase=0.2,interval_ms=200"
	"4 gradient,start=10,tolerance=1.2,headroom=2,long=300|-- WORKERS=7 POLICY=gradient,start=10,tolerance=1.2,headroom=2,long=300"
	"4 sojourn,target_ms=24,interval_ms=1|-- WORKERS=7 POLICY=sojourn,target_ms=24,interval_ms=1"
	"4 sojourn,target_ms=24,timeout_ms=245|-- WORKERS=7 POLICY=sojourn,target_ms=24,timeout_ms=245"
	"4u sojourn,target_ms=24,timeout_ms=245, uniform|--schedule uniform -- WORKERS=7 POLICY=sojourn,target_ms=24,timeout_ms=245"
	"4u aimd,latency_ms=245,backoff=0.9,increase=0.2,interval_ms=200, uniform|--schedule uniform -- WORKERS=7 POLICY=aimd,latency_ms=245,backoff=0.9,increase=0.2,interval_ms=200"
	"4u gradient,start=10,tolerance=1.2,headroom=2,long=300, uniform|--schedule uniform -- WORKERS=7 POLICY=gradient,start=10,tolerance=1.2,headroom=2,long=300"
)

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg); tree $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'); window ${WINDOW} s, release at ${RELEASE} s, seeds ${SEEDS}"
"$work/release" header
for e in "${experiments[@]}"; do
	name=${e%%|*}
	[ -z "$ONLY" ] || [[ "$name" == *"$ONLY"* ]] || continue
	read -r -a args <<<"${e#*|}"
	for seed in $SEEDS; do
		one "$name" "$seed" "${args[@]}"
	done
done
echo "# $(date -u '+%H:%M UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
