#!/usr/bin/env bash
# retrystorm.sh: issue 34's goals for the retry storm, on the real lab and
# in the simulator, at three seeds.
#
# The lab of lessons/content/retry-storm.md: WORKERS=4 SPIN_MS=1 WAIT_MS=19
# LIMIT=200 CPUS=1 (about 200 a second), 100 arrivals a second for 30 s,
# callers' timeout 500 ms, WAIT_MS=79 from 5 s to 10 s (a slow release:
# about 50 a second). For each seed it runs, with --over-time --samples,
#
#   retries=3             no defence
#   retries=3,budget=0.1  a retry budget
#
# against the lab and with --simulate, and prints each run's ok a second,
# then the goals:
#   no defence: ok a second below a quarter of capacity (50) in every
#               second of the 20 s after the release ends (10 s to 30 s);
#   budget:     a second of at least 90 (within 10% of the 100 offered)
#               starting within 3 s of the release's end (by 13 s);
#   simulator:  Σ |sim − lab| ÷ Σ lab over the 30 seconds at most 10%.
#
# Usage: bench/retrystorm.sh          (SEEDS="34 35 36" PORT=18220)
set -euo pipefail

SEEDS=${SEEDS:-34 35 36}
PORT=${PORT:-18220}
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
knobs=(--workers 4 --spin-ms 1 --wait-ms 19 --limit 200 --cpus 1)
WORKERS=4 SPIN_MS=1 WAIT_MS=19 LIMIT=200 CPUS=1 "$work/lab" --addr "127.0.0.1:$PORT" --control "127.0.0.1:$((PORT + 1))" >"$work/lab.out" 2>"$work/lab.err" &
lab_pid=$!
for _ in $(seq 100); do
	curl -sf "$control/stats" >/dev/null && break
	sleep 0.1
done
curl -sf "$control/stats" >/dev/null || { echo "retrystorm.sh: the lab did not start: $(cat "$work/lab.err")" >&2; exit 1; }

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg); tree $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'); $(go version)"
echo "# lab WORKERS=4 SPIN_MS=1 WAIT_MS=19 LIMIT=200 CPUS=1; 100/s for 30 s, timeout 500ms, WAIT_MS=79 from 5 s to 10 s"

run() { # run NAME SEED SPEC [--simulate]
	local name=$1 seed=$2 spec=$3
	shift 3
	"$work/load" "$@" --rate 100 --seconds 30 --timeout 500ms \
		--at 5s:WAIT_MS=79 --at 10s:WAIT_MS=19 --retry "$spec" --seed "$seed" --over-time --samples "$work/$name.csv" \
		--json >"$work/$name.json" 2>"$work/$name.err"
}
for seed in $SEEDS; do
	for v in "none:retries=3" "budget:retries=3,budget=0.1"; do
		name=${v%%:*} spec=${v#*:}
		run "lab-$name-$seed" "$seed" "$spec" --target "$target" --control "$control"
		run "sim-$name-$seed" "$seed" "$spec" --simulate "${knobs[@]}"
	done
done

python3 - "$work" $SEEDS <<'PY'
import csv, json, sys
work, seeds = sys.argv[1], sys.argv[2:]
def ok(name):
    rows = list(csv.DictReader(open(f"{work}/{name}.csv")))
    per = {}
    for r in rows:
        k = int(float(r["at_s"]))
        if k < 30:
            per[k] = per.get(k, 0) + int(r["ok"])
    return [per.get(k, 0) for k in range(30)]
def amp(name):
    return json.loads(open(f"{work}/{name}.json").readline())["amplification"]
allmet = True
for seed in seeds:
    for v in ("none", "budget"):
        lab, sim = ok(f"lab-{v}-{seed}"), ok(f"sim-{v}-{seed}")
        print(f"seed {seed} {v:6} lab ok/s: {' '.join(map(str, lab))}  (amplification {amp(f'lab-{v}-{seed}')})")
        print(f"seed {seed} {v:6} sim ok/s: {' '.join(map(str, sim))}  (amplification {amp(f'sim-{v}-{seed}')})")
        err = sum(abs(a - b) for a, b in zip(sim, lab)) / max(1, sum(lab))
        if v == "none":
            worst = max(lab[10:30])
            met = worst < 50
            print(f"  no defence: most ok in a second from 10 s to 30 s: {worst} (goal: below 50 in every one): {'met' if met else 'NOT met'}")
        else:
            back = next((k for k in range(10, 30) if lab[k] >= 90), None)
            met = back is not None and back <= 12
            print(f"  budget: first second from 10 s with at least 90 ok starts at {back} s (goal: by 12 s, ending by 13 s): {'met' if met else 'NOT met'}")
        simmet = err <= 0.10
        print(f"  simulator: sum |sim - lab| / sum lab = {err:.3f} (goal: at most 0.10): {'met' if simmet else 'NOT met'}")
        allmet = allmet and met and simmet
print("all goals met" if allmet else "some goal NOT met")
PY
