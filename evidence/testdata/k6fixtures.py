# Writes k6.json, k6.csv and k6-seconds.csv: k6 output made by hand from
# k6's documented formats (see README.md), since k6 itself cannot be used
# here. Run from this directory: python3 k6fixtures.py
import datetime, json

T0 = datetime.datetime(2024, 5, 9, 14, 34, 45, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
URL = "http://127.0.0.1:18220/"

# (scenario, send offset in µs from T0, duration in µs, status, error_code)
reqs = []
steady = [(200, 2137), (200, 1810), (503, 402), (200, 2904), (0, 60000000), (200, 1999), (200, 2420), (200, 2001)]
for i, (st, d) in enumerate(steady):
    reqs.append(("steady", i * 100000 + 137 * i, d, st, "1050" if st == 0 else ""))
arrivals = [(200, 3100), (200, 2870), (500, 990), (200, 4400), (429, 310), (200, 2050), (200, 9000), (200, 12500), (200, 30100), (200, 45000)]
for i, (st, d) in enumerate(arrivals):
    reqs.append(("arrivals", 1000000 + i * 50000 + 11 * i, d, st, ""))
drops = [("arrivals", 1000000 + (10 + j) * 50000) for j in range(3)]

def ts(us):
    t = T0 + datetime.timedelta(microseconds=us)
    # Go's RFC3339Nano: fraction without trailing zeros, zone as +02:00.
    s = t.strftime("%Y-%m-%dT%H:%M:%S")
    frac = ("%06d" % t.microsecond).rstrip("0")
    if frac:
        s += "." + frac
    return s + "+02:00"

def tags(sc, st, code):
    t = {"expected_response": "true" if 200 <= st < 400 else "false", "group": "", "method": "GET",
         "name": URL, "proto": "HTTP/1.1" if st else "", "scenario": sc, "status": str(st), "url": URL}
    if code:
        t["error"] = "request timeout"
        t["error_code"] = code
    return t

# JSON: each request's samples stamped at its end, in the order k6 emits
# them; a Metric line the first time each metric appears.
events = []
for sc, send, d, st, code in reqs:
    events.append((send + d, "req", (sc, send, d, st, code)))
for sc, at in drops:
    events.append((at, "drop", sc))
events.sort(key=lambda e: e[0])
seen = set()
out = []
def metric(name, typ, contains):
    if name not in seen:
        seen.add(name)
        out.append(json.dumps({"type": "Metric", "data": {"name": name, "type": typ, "contains": contains, "thresholds": [], "submetrics": None}, "metric": name}, separators=(",", ":")))
def point(name, at, value, tg):
    out.append(json.dumps({"type": "Point", "data": {"time": ts(at), "value": value, "tags": tg}, "metric": name}, separators=(",", ":")))
metric("vus", "gauge", "default")
point("vus", 0, 3, None)
for at, kind, x in events:
    if kind == "drop":
        metric("dropped_iterations", "counter", "default")
        point("dropped_iterations", at, 1, {"scenario": x})
        continue
    sc, send, d, st, code = x
    tg = tags(sc, st, code)
    metric("http_reqs", "counter", "default")
    point("http_reqs", at, 1, tg)
    metric("http_req_duration", "trend", "time")
    point("http_req_duration", at, d / 1000, tg)
    metric("http_req_blocked", "trend", "time")
    point("http_req_blocked", at, 0.004, tg)
    metric("http_req_failed", "rate", "default")
    point("http_req_failed", at, 0 if 200 <= st < 400 else 1, tg)
with open("k6.json", "w") as f:
    f.write("\n".join(out) + "\n")

# CSV: the documented header; times as timeFormat unix_micro (k6.csv) or
# the default unix, whole seconds (k6-seconds.csv).
HEAD = "metric_name,timestamp,metric_value,check,error,error_code,group,method,name,proto,scenario,status,subproto,tls_version,url,extra_tags"
def csvfile(name, stamp):
    rows = [HEAD]
    for at, kind, x in events:
        if kind == "drop":
            rows.append("dropped_iterations,%s,1.000000,,,,,,,,%s,,,,," % (stamp(at), x))
            continue
        sc, send, d, st, code = x
        err = "request timeout" if code else ""
        proto = "HTTP/1.1" if st else ""
        for m, v in (("http_reqs", 1.0), ("http_req_duration", d / 1000), ("http_req_blocked", 0.004)):
            rows.append("%s,%s,%.6f,,%s,%s,,GET,%s,%s,%s,%d,,,%s,expected_response=%s" % (m, stamp(at), v, err, code, URL, proto, sc, st, URL, "true" if 200 <= st < 400 else "false"))
    with open(name, "w") as f:
        f.write("\n".join(rows) + "\n")
epoch_us = int(T0.timestamp()) * 1000000
csvfile("k6.csv", lambda at: "%d" % (epoch_us + at))
csvfile("k6-seconds.csv", lambda at: "%d" % ((epoch_us + at) // 1000000))
