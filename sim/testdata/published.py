"""An independent simulation of the published experiment, in CPython.

    python3 sim/testdata/published.py

One FIFO server, 10 ms of service, every 200th request (counted from 1 in
arrival order) takes 500 ms instead; 30 s of arrivals. Open loop at 60, 80
and 90 a second, Poisson arrivals from random.seed(21) re-seeded for each
rate; then a closed loop of 5 clients, each sending its next request when
its previous one completes, no think time, sending while less than 30 s
has passed. Every request is served to completion and counted; latency is
completion minus the intended send. Prints one JSON object a line: the
window, how many were sent, and the mean, p50, p95, p99 and max latency in
milliseconds (percentiles by nearest rank).

Written for sim's tests: it shares no code with the simulator, so where
both agree the simulator's queue, stall and arrivals are right.
"""
import collections
import json
import math
import random

SERVICE, STALL, EVERY, SECONDS = 0.010, 0.500, 200, 30.0


def service(n):
    return STALL if n % EVERY == 0 else SERVICE


def summary(name, lat):
    lat = sorted(lat)
    n = len(lat)

    def rank(p):
        return lat[max(1, math.ceil(p * n / 100)) - 1] * 1000

    return {"window": name, "sent": n, "mean_ms": sum(lat) / n * 1000,
            "p50_ms": rank(50), "p95_ms": rank(95), "p99_ms": rank(99), "max_ms": lat[-1] * 1000}


def open_loop(rate):
    random.seed(21)
    t, arrivals = 0.0, []
    while True:
        t += random.expovariate(rate)
        if t >= SECONDS:
            break
        # loadrun rounds intended send times to the nanosecond
        arrivals.append(round(t * 1e9) / 1e9)
    free, lat = 0.0, []
    for n, a in enumerate(arrivals, 1):
        free = max(a, free) + service(n)
        lat.append(free - a)
    return summary("open %g" % rate, lat)


def closed_loop(clients):
    waiting = collections.deque((0.0, c) for c in range(clients))  # (send time, client), in arrival order
    free, n, lat = 0.0, 0, []
    while waiting:
        sent, c = waiting.popleft()
        n += 1
        free = max(sent, free) + service(n)
        lat.append(free - sent)
        if free < SECONDS:
            waiting.append((free, c))
    return summary("closed %d" % clients, lat)


for rate in (60, 80, 90):
    print(json.dumps(open_loop(rate)))
print(json.dumps(closed_loop(5)))
