#!/usr/bin/env bash
# fidelity.sh: every figure of the lab's and the generator's fidelity
# (issue 16), in one run, each step with its command and the load average
# it started at. Run it on a quiet machine (load average under ~0.5): the
# figures are timings, and other processes on the lab's processor move them.
#
#   1. service time at rest against SPIN_MS + WAIT_MS (goal: within 1%)
#      and the one- and four-worker ceilings against theory (within 2%)
#   2. cmd/load --check on the lessons' default lab (the same goal, as a
#      learner sees it)
#   3. GET /stats under processor-bound overload (within a few ms)
#   4. the generator against a lab doing no work, 1,000 to 10,000 a second,
#      each window paired with the machine's wake-up floor (achieved within
#      1% of offered; send-lag p99 within 0.5 ms of the floor); as root also
#      as the load child runs it (4b)
#   5. cmd/load and vegeta side by side at the same rates (bench/compare.sh fast)
#   6. the two door modes at 64 workers on one processor (bench/doors.sh)
#   7. the processor's turns: four 5 ms spins at once end together
#      (TestSpinsShareTheProcessor), and what the turns cost at saturation
#      (BenchmarkSpinTurns), this build beside one whose quantum is 10 ms
#      (every 2 ms spin in one turn: first come, first served), alternating
#
# Usage: bench/fidelity.sh            (about 8 minutes; 12 as root)
#        STEPS="1 4" bench/fidelity.sh
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${STEPS:-"1 2 3 4 5 6 7"}
work=$(mktemp -d)
lab_pid=""
trap '[ -z "$lab_pid" ] || { kill "$lab_pid" 2>/dev/null; wait "$lab_pid" 2>/dev/null; }; rm -rf "$work"' EXIT

step() { echo; echo "## $*"; echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg)"; }
want() { [[ " $STEPS " == *" $1 "* ]]; }

go test -c -o "$work/labsvc.test" ./labsvc
go test -c -o "$work/loadrun.test" ./loadrun
go build -o "$work/lab" ./cmd/lab
go build -o "$work/load" ./cmd/load
echo "# $(go version); $(uname -r); $(nproc) processors; revision $(git rev-parse --short=12 HEAD)$(git diff --quiet || echo +dirty)"

if want 1; then
	step "1. go test -run '^\$' -bench 'ServiceTimeAtRest|WorkerCeiling' ./labsvc (200 requests; 3 windows of 3 s)"
	(cd labsvc && "$work/labsvc.test" -test.run '^$' -test.bench 'ServiceTimeAtRest' -test.benchtime 200x | grep '^Benchmark')
	(cd labsvc && "$work/labsvc.test" -test.run '^$' -test.bench 'WorkerCeiling' -test.benchtime 3x | grep '^Benchmark')
fi
if want 2; then
	step "2. cmd/lab (WORKERS=1 SPIN_MS=2 WAIT_MS=18 CPUS=1) and cmd/load --check"
	"$work/lab" --addr 127.0.0.1:0 --control 127.0.0.1:0 >"$work/lab.out" 2>&1 &
	lab_pid=$!
	for _ in $(seq 50); do grep -q "listening on" "$work/lab.out" 2>/dev/null && break; sleep 0.1; done
	line=$(head -n1 "$work/lab.out")
	target=$(sed -n 's/.*listening on \(http:[^ ]*\) (requests).*/\1/p' <<<"$line")
	control=$(sed -n 's/.* and \(http:[^ ]*\) (control).*/\1/p' <<<"$line")
	"$work/load" --target "$target" --control "$control" --check 2>&1
	kill "$lab_pid"; wait "$lab_pid" 2>/dev/null || true; lab_pid=""
fi
if want 3; then
	step "3. go test -run TestControlAnswersUnderOverload -v ./labsvc"
	(cd labsvc && CAPACITYLAB_PHYSICS=1 "$work/labsvc.test" -test.run 'TestControlAnswersUnderOverload' -test.v | grep -E 'GET /stats|PASS|FAIL' | sed 's/^ *//')
fi
if want 4; then
	step "4. go test -run '^\$' -bench 'OpenLoopLabOneCore|SleepFloor' -benchtime 3x ./loadrun"
	(cd loadrun && "$work/loadrun.test" -test.run '^$' -test.bench 'OpenLoopLabOneCore|SleepFloor' -test.benchtime 3x | grep '^Benchmark')
fi
if want 5; then
	step "5. bench/compare.sh fast"
	bench/compare.sh fast
fi
if want 6; then
	step "6. bench/doors.sh"
	bench/doors.sh
fi
if want 7; then
	step "7. go test -run TestSpinsShareTheProcessor -v ./labsvc; go test -run '^\$' -bench SpinTurns -benchtime 3x ./labsvc, beside SpinQuantum = 10 ms (-overlay)"
	sed 's/^const SpinQuantum = .*/const SpinQuantum = 10 * time.Millisecond/' labsvc/spin.go >"$work/spin_one_turn.go"
	printf '{"Replace":{"%s":"%s"}}\n' "$PWD/labsvc/spin.go" "$work/spin_one_turn.go" >"$work/one_turn.json"
	go test -c -overlay "$work/one_turn.json" -o "$work/labsvc-one-turn.test" ./labsvc
	(cd labsvc && CAPACITYLAB_PHYSICS=1 "$work/labsvc.test" -test.run 'TestSpinsShareTheProcessor' -test.v -test.count 1 | grep -E 'round|^--- ' | sed 's/^ *//')
	echo "# the same test against the one-turn build (first come, first served): it must fail"
	(cd labsvc && CAPACITYLAB_PHYSICS=1 "$work/labsvc-one-turn.test" -test.run 'TestSpinsShareTheProcessor' -test.v -test.count 1 | grep -E 'answered after|^--- ' | sed 's/^ *//') || true
	for _ in 1 2 3; do
		for build in labsvc labsvc-one-turn; do
			printf '%-16s load %s  ' "$build" "$(cut -d' ' -f1 /proc/loadavg)"
			(cd labsvc && "$work/$build.test" -test.run '^$' -test.bench 'SpinTurns' -test.benchtime 3x | grep '^Benchmark')
		done
	done
fi
