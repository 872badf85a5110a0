#!/usr/bin/env bash
# pk.sh: issue 35's goal for service-time distributions, on the real lab
# and in the simulator, side by side: an M/G/1 lab (WORKERS=1 SPIN_MS=0
# WAIT_MS=10 CPUS=1, one worker, no processor work, so the worker is the
# only server) with each DIST at utilisations 0.5, 0.65 and 0.8 (50, 65
# and 80 arrivals a second, Poisson), at several seeds (each the seed of
# the arrivals and of DIST). For each it prints the mean wait in the
# lab's queue (lab_wait_ms), the Pollaczek–Khinchine mean wait from the
# measured utilisation, mean service time and its SCV,
# Wq = ρ·S·(1 + cs²) ÷ (2(1 − ρ)), and the simulator's wait for the same
# run (load --simulate, the same arrivals and draws). The goal: the mean
# over the seeds within 10% of P-K, for each distribution and load.
#
# Usage: bench/pk.sh      (SEEDS="1 2 3" SECONDS_EACH=60 PORT=18240 RATES="50 65 80"
#                          DISTS="constant exponential lognormal,scv=2 bimodal,p=0.1,x=10")
set -euo pipefail

SEEDS=${SEEDS:-1 2 3}
SECONDS_EACH=${SECONDS_EACH:-60}
PORT=${PORT:-18240}
DISTS=${DISTS:-constant exponential lognormal,scv=2 bimodal,p=0.1,x=10}
RATES=${RATES:-50 65 80}
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
echo "# lab WORKERS=1 SPIN_MS=0 WAIT_MS=10 CPUS=1; ${SECONDS_EACH} s a run; seeds $SEEDS"
printf '%-22s %5s  %9s %9s %7s  %9s %9s\n' DIST rate wait_ms pk_ms "lab/pk" sim_ms "sim/pk"
met=1
for d in $DISTS; do
	for rate in $RATES; do
		sum_w=0 sum_pk=0 sum_sim=0
		for seed in $SEEDS; do
			spec="$d,seed=$seed"
			WORKERS=1 SPIN_MS=0 WAIT_MS=10 CPUS=1 DIST=$spec "$work/lab" --addr "127.0.0.1:$PORT" --control "127.0.0.1:$((PORT + 1))" >"$work/lab.out" 2>"$work/lab.err" &
			lab_pid=$!
			for _ in $(seq 100); do
				curl -sf "$control/stats" >/dev/null && break
				sleep 0.1
			done
			"$work/load" --target "$target" --control "$control" --rate "$rate" --seconds "$SECONDS_EACH" --timeout 10s --seed "$seed" --json >"$work/lab.json" 2>"$work/load.err"
			stop_lab
			"$work/load" --simulate --workers 1 --spin-ms 0 --wait-ms 10 --cpus 1 --dist "$spec" --rate "$rate" --seconds "$SECONDS_EACH" --timeout 10s --seed "$seed" --json >"$work/sim.json" 2>"$work/sim.err"
			read -r w pk lost < <(jq -r '(.ok_per_sec * .lab_service_ms / 1000) as $rho | "\(.lab_wait_ms) \($rho * .lab_service_ms * (1 + .lab_service_scv) / (2 * (1 - $rho))) \(.lost)"' "$work/lab.json")
			sw=$(jq -r '.lab_wait_ms' "$work/sim.json")
			[ "$lost" = 0 ] || { echo "lost $lost: a generator bug"; met=0; }
			sum_w=$(awk -v a="$sum_w" -v b="$w" 'BEGIN { print a + b }')
			sum_pk=$(awk -v a="$sum_pk" -v b="$pk" 'BEGIN { print a + b }')
			sum_sim=$(awk -v a="$sum_sim" -v b="$sw" 'BEGIN { print a + b }')
		done
		read -r mw mpk msim lr sr ok < <(awk -v w="$sum_w" -v p="$sum_pk" -v s="$sum_sim" -v n="$(echo $SEEDS | wc -w)" \
			'BEGIN { printf "%.2f %.2f %.2f %.3f %.3f %d\n", w/n, p/n, s/n, w/p, s/p, (w/p >= 0.9 && w/p <= 1.1) }')
		[ "$ok" = 1 ] || met=0
		printf '%-22s %5s  %9s %9s %7s  %9s %9s  %s\n' "$d" "$rate" "$mw" "$mpk" "$lr" "$msim" "$sr" "$([ "$ok" = 1 ] && echo met || echo 'NOT met')"
	done
done
[ "$met" = 1 ] && echo "all goals met" || echo "some goal NOT met"
