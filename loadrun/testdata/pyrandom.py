"""Writes the CPython random vectors that loadrun's PyRandom is held to.

    python3 loadrun/testdata/pyrandom.py > loadrun/testdata/pyrandom.json

For each seed: the first 32-bit outputs after random.seed(seed)
(getrandbits(32)), then after re-seeding the first random() values and the
first expovariate(80) values (as repr, which round-trips a float exactly).
For each schedule: the arrival times in nanoseconds that a script makes by
re-seeding and accumulating expovariate(rate) gaps (poisson) or placing
arrivals at random() * gap + k * gap (uniform) while below the window's
length, rounded half up to the nanosecond as loadrun rounds them; the count,
the first five, the last, and the SHA-256 of all of them written one a line.
"""
import hashlib
import json
import math
import platform
import random


def ns(t):
    return int(math.floor(t * 1e9 + 0.5))


def schedule(kind, rate, seconds, seed):
    random.seed(seed)
    out = []
    if kind == "poisson":
        t = 0.0
        while True:
            t += random.expovariate(rate)
            if t >= seconds:
                return out
            out.append(ns(t))
    gap = 1 / rate
    phase = random.random() * gap
    k = 0
    while True:
        t = phase + k * gap
        if t >= seconds:
            return out
        out.append(ns(t))
        k += 1


def main():
    seeds = []
    for s in [0, 1, 21, 2**32 - 1, 2**32 + 5, 2**63, 2**64 - 1]:
        random.seed(s)
        bits = [random.getrandbits(32) for _ in range(8)]
        random.seed(s)
        rnd = [repr(random.random()) for _ in range(8)]
        random.seed(s)
        exp = [repr(random.expovariate(80)) for _ in range(8)]
        seeds.append({"seed": str(s), "uint32": bits, "random": rnd, "expovariate80": exp})
    cases = [("poisson", r, 30, 21) for r in (60, 80, 90)]
    cases += [("poisson", 80, 30, s) for s in range(1, 21)]
    cases += [("uniform", 80, 30, 21), ("poisson", 2000, 10, 7)]
    schedules = []
    for kind, rate, seconds, seed in cases:
        xs = schedule(kind, rate, seconds, seed)
        text = "".join("%d\n" % x for x in xs)
        schedules.append({
            "kind": kind, "rate": rate, "seconds": seconds, "seed": seed,
            "count": len(xs), "first": xs[:5], "last": xs[-1],
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
        })
    print(json.dumps({"python": platform.python_version(), "seeds": seeds, "schedules": schedules}, indent=1))


if __name__ == "__main__":
    main()
