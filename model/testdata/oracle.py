#!/usr/bin/env python3
"""Independent oracle for the queue-curve vectors in vectors.json.

Not used by the tests. It recomputes the M/M/c figures in 50-digit
arithmetic (mpmath) by other routes than model/queue.go and static/js/model.js:
Erlang C from the direct sum, not the Erlang B recursion; the response-time
tail checked against numerical integration of wait + service; percentiles by
root finding; the knee by solving d/dρ (ρ / W(ρ)) = 0. Run it to print the
figures a queue vector should expect:

    python3 model/testdata/oracle.py 4 20 150

and those of the variability-wait (servers, service ms, utilisation, ca², cs²),
fanout-tail (k, p, percentile) and usl (λ, σ, κ, N max) vectors:

    python3 model/testdata/oracle.py variability 4 20 0.7 0.5 2
    python3 model/testdata/oracle.py fanout 100 0.01 0.99
    python3 model/testdata/oracle.py usl 100 0.05 0.001 64
"""
import sys
from mpmath import mp, mpf, factorial, exp, log, quad, inf, findroot, diff

mp.dps = 50


def erlang_c(c, a):
    rho = a / c
    top = a**c / factorial(c) / (1 - rho)
    return top / (sum(a**k / factorial(k) for k in range(c)) + top)


def figures(c, s, lam):
    """c servers, mean service s ms, arrivals lam per second."""
    s, lam = mpf(s), mpf(lam)
    a = lam * s / 1000
    rho = a / c
    if rho >= 1:
        return {"utilisation": rho, "stable": False}
    cw = erlang_c(c, a)
    mu = 1 / s
    theta = c * mu - lam / 1000
    wq = cw / theta
    w = wq + s

    def tail(t):
        if abs(theta - mu) < mpf(10) ** -25 * mu:  # the limit theta -> mu: Erlang-2
            return (1 - cw) * exp(-mu * t) + cw * (1 + mu * t) * exp(-mu * t)
        return (1 - cw) * exp(-mu * t) + cw * (theta * exp(-mu * t) - mu * exp(-theta * t)) / (theta - mu)

    def tail_integral(t):
        # wait w ~ Exp(theta) with probability cw, then service > t - w.
        waited = quad(lambda x: theta * exp(-theta * x) * (exp(-mu * (t - x)) if x < t else 1), [0, t, inf])
        return (1 - cw) * exp(-mu * t) + cw * waited

    for t in (s / 2, s, 3 * s):
        assert abs(tail(t) - tail_integral(t)) < mpf(10) ** -30, (t, tail(t), tail_integral(t))

    def pct(p):
        return findroot(lambda t: tail(t) - p, w * log(1 / p))

    return {
        "utilisation": rho, "prob_wait": cw, "mean_in_system": lam / 1000 * w, "mean_queue": lam / 1000 * wq,
        "mean_wait_ms": wq, "mean_response_ms": w, "p50_response_ms": pct(mpf("0.5")), "p99_response_ms": pct(mpf("0.01")),
    }


def knee(c, s):
    s = mpf(s)

    def w(rho):
        a = rho * c
        return erlang_c(c, a) / (c * (1 - rho) / s) + s

    slope = lambda r: diff(lambda x: x / w(x), r)
    lo, hi = mpf("0.001"), mpf("0.999")
    for _ in range(120):  # bisection on the sign of the slope
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if slope(mid) > 0 else (lo, mid)
    return (lo + hi) / 2


def variability(c, s, rho, ca2, cs2):
    """The variability-wait figures: c servers, mean service s ms, utilisation rho, SCVs ca2 and cs2.
    Pollaczek-Khinchine for c = 1 and ca2 = 1 in its own closed form; else (ca2 + cs2) / 2 times the
    M/M/c wait from Erlang C by the direct sum."""
    s, rho, ca2, cs2 = mpf(s), mpf(rho), mpf(ca2), mpf(cs2)
    lam = rho * c * 1000 / s
    mmc = figures(c, s, lam)["mean_wait_ms"] if rho > 0 else mpf(0)
    if c == 1 and ca2 == 1:
        wait = rho * s * (1 + cs2) / (2 * (1 - rho))
        assert abs(wait - (ca2 + cs2) / 2 * mmc) < mpf(10) ** -40
    else:
        wait = (ca2 + cs2) / 2 * mmc
    return {"arrivals": lam, "mmc_wait_ms": mmc, "mean_wait_ms": wait, "mean_response_ms": wait + s,
            "constant_wait_ms": ca2 / 2 * mmc, "wait_ratio": (ca2 + cs2) / ca2 if ca2 > 0 else None}


def fanout(k, p, pct):
    """The fanout-tail figures: k sub-requests, each slow with chance p; the requests' percentile pct."""
    k, p, pct = mpf(k), mpf(p), mpf(pct)
    half = None
    if p > 0:
        half = 1
        while 1 - (1 - p) ** half < mpf("0.5"):  # by counting, not by logarithms
            half += 1
    return {"slow_share": 1 - (1 - p) ** k, "median_backend_percentile": mpf("0.5") ** (1 / k),
            "backend_percentile": pct ** (1 / k), "half_slow_fanout": half}


def usl(lam, sigma, kappa, nmax):
    """The usl figures: X(N) = lam N / (1 + sigma (N - 1) + kappa N (N - 1)); the peak by setting dX/dN = 0
    numerically (findroot), checked against sqrt((1 - sigma) / kappa)."""
    lam, sigma, kappa, nmax = mpf(lam), mpf(sigma), mpf(kappa), mpf(nmax)
    x = lambda n: lam * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))
    out = {"x_at_max": x(nmax), "speedup_at_max": x(nmax) / lam, "peak_n": None, "peak_x": None}
    if kappa > 0:
        closed = max(mpf(1), mp.sqrt(max(0, 1 - sigma) / kappa))
        if closed > 1:
            root = findroot(lambda n: diff(x, n), closed * mpf("1.1"))
            assert abs(root - closed) < mpf(10) ** -30, (root, closed)
        out["peak_n"], out["peak_x"] = closed, x(closed)
    return out


def show(d):
    for k, v in d.items():
        print(k, mp.nstr(v, 17) if v is not None else None)


if __name__ == "__main__" and sys.argv[1] in ("variability", "fanout", "usl"):
    what, args = sys.argv[1], sys.argv[2:]
    if what == "variability":
        show(variability(int(args[0]), *args[1:]))
    elif what == "fanout":
        show(fanout(*args))
    else:
        show(usl(*args))
elif __name__ == "__main__":
    c, s, lam = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    for k, v in figures(c, s, lam).items():
        print(k, mp.nstr(v, 17) if not isinstance(v, bool) else v)
    k = knee(c, mpf(s))
    print("knee_utilisation", mp.nstr(k, 17), "knee_arrivals", mp.nstr(k * c * 1000 / mpf(s), 17))
    for r in ("0.7", "0.9"):
        print("at", r, {k: mp.nstr(v, 17) for k, v in figures(c, s, mpf(r) * c * 1000 / mpf(s)).items()})
