#!/usr/bin/env python3
"""Writes docs/performance.md (to stdout) from the JSON that scripts/bench-report collected.

    python3 scripts/render-performance.py RAW_DIR RUNS COMMIT

RAW_DIR holds cluster-N.json (bench-cluster --json), growth-N.json (bench-growth --json) and
procedures-N.json (bench-procedures --json) for N = 1..RUNS, cluster-growth.json
(bench-cluster --growth --json), metrics.json (bench-cluster --metrics-comparison --json),
curve.json (bench-cluster --curve --json) and, optionally, peers.json
(Benchmarks/peers/compare.py).
Every figure in the output comes from those files; the targets are docs/performance.md's.
"""

import datetime
import json
import os
import platform
import subprocess
import sys


def load(path):
    try:
        with open(path) as handle:
            text = handle.read()
        return json.loads(text) if text.strip() else None
    except (OSError, json.JSONDecodeError):
        return None


def span(values, digits=0, unit=""):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    low, high = min(values), max(values)
    fmt = f"{{:,.{digits}f}}"
    text = fmt.format(low) if fmt.format(low) == fmt.format(high) else f"{fmt.format(low)}–{fmt.format(high)}"
    return text + unit


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory = ""
    try:
        with open("/proc/meminfo") as handle:
            kib = int(handle.readline().split()[1])
            memory = f", {kib / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{platform.system()} {platform.release()} {platform.machine()}, {os.cpu_count()} cores ({cpu}){memory}"


def swift_version():
    try:
        out = subprocess.run(["swift", "--version"], capture_output=True, text=True, timeout=60).stdout
        return out.splitlines()[0].strip() if out else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def postgres_version(raw):
    try:
        with open(os.path.join(raw, "postgres-version.txt")) as handle:
            return handle.read().strip()
    except OSError:
        return "(version unknown)"


def verdict(ok):
    if ok is None:
        return "-"
    return "met" if ok else "**missed**"


def main():
    raw, runs, commit = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    clusters = [load(os.path.join(raw, f"cluster-{n}.json")) for n in range(1, runs + 1)]
    clusters = [c for c in clusters if c]
    growth_runs = [g for g in (load(os.path.join(raw, f"growth-{n}.json")) for n in range(1, runs + 1)) if g]
    procedures = [p for p in (load(os.path.join(raw, f"procedures-{n}.json")) for n in range(1, runs + 1)) if p]
    cluster_growth = load(os.path.join(raw, "cluster-growth.json"))
    peers = load(os.path.join(raw, "peers.json"))
    metrics = load(os.path.join(raw, "metrics.json"))
    curve = load(os.path.join(raw, "curve.json"))
    journal = load(os.path.join(raw, "journal-postgres.json"))
    failovers = [f for f in (load(os.path.join(raw, name)) for name in
                             ("failover-2s.json", "failover-5s.json", "failover-2s-200.json")) if f]

    # When the run ended: the newest raw file, so rendering again later keeps the run's date.
    written = [os.path.getmtime(os.path.join(raw, name)) for name in os.listdir(raw) if name.endswith(".json")]
    ended = datetime.datetime.fromtimestamp(max(written), datetime.timezone.utc) if written else None
    now = (ended or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    out = []
    w = out.append
    w("# Performance")
    w("")
    w("<!-- Written by scripts/bench-report from the run it describes; do not edit by hand. -->")
    w("")
    w(f"Measured {now} at commit `{commit}` on {machine()}; {swift_version()}; release builds; "
      f"{len(clusters)} run{'' if len(clusters) == 1 else 's'}. Regenerate with `scripts/bench-report` (about 10 minutes after the build; `--postgres` adds 6).")
    w("")
    w("Absolute figures on a shared 2-core machine vary up to 5× between days, so every target is a "
      "ratio to a baseline measured in the same run: the raw ZeroMQ relay (`bench-zeromq --processes`: "
      "client → relay → echo and back, three processes, loopback TCP) for the cluster, Foundation's "
      "`OperationQueue` for the local queue, and for growth the same path at a smaller size. "
      "Ranges are the lowest and highest of the runs.")
    w("")

    # The relay.
    w("## The baseline: the raw relay, each run")
    w("")
    w("| run | relay p50 | pipelined round trips/s | time per pipelined round trip |")
    w("|---|---|---|---|")
    for index, cluster in enumerate(clusters, 1):
        base = cluster.get("baseline") or {}
        rate = base.get("relayPipelinedPerSecond")
        w(f"| {index} | {span([base.get('relayP50Micros')], 1, ' µs')} | {span([rate])} | "
          f"{span([1e6 / rate if rate else None], 2, ' µs')} |")
    w("")

    # The cluster.
    def per_run(key, sub=None):
        values = []
        for cluster in clusters:
            value = cluster.get(key)
            if sub and isinstance(value, dict):
                value = value.get(sub)
            values.append(value)
        return values

    def ratio(values, bases):
        return [v / b if v is not None and b else None for v, b in zip(values, bases)]

    p50 = [(c.get("baseline") or {}).get("relayP50Micros") for c in clusters]
    pipelined = [(c.get("baseline") or {}).get("relayPipelinedPerSecond") for c in clusters]
    trip = [1e6 / r if r else None for r in pipelined]

    rows = []
    throughput = per_run("throughputPerSecond")
    t_ratio = ratio(throughput, pipelined)
    rows.append(("10,000 no-op children, journal on (`full`)", span(throughput, 0, "/s"),
                 span(t_ratio, 3, "× the pipelined relay"), "≥ 0.2×",
                 all(r is not None and r >= 0.2 for r in t_ratio) if t_ratio else None))
    cpu = per_run("coordinatorCPUPerChildMicros")
    c_ratio = ratio(cpu, trip)
    rows.append(("coordinator CPU per child (same run)", span(cpu, 1, " µs"),
                 span(c_ratio, 1, "× a pipelined round trip"), "≤ 4× (≤ 15 µs at ≥ 250,000 round trips/s)",
                 all(r is not None and r <= 4 for r in c_ratio) if c_ratio else None))
    bare = per_run("throughputWithoutJournalPerSecond")
    if any(bare):
        cost = [1 - t / b if t and b else None for t, b in zip(throughput, bare)]
        rows.append(("same, journal off", span(bare, 0, "/s"), "journal costs " + span([c * 100 for c in cost if c is not None], 0, " %"), "", None))
    rt50 = per_run("roundTrip", "p50Micros")
    r_ratio = ratio(rt50, p50)
    rows.append(("submit → finished, p50", span(rt50, 0, " µs"), span(r_ratio, 2, "× the relay p50"), "≤ 2×",
                 all(r is not None and r <= 2 for r in r_ratio) if r_ratio else None))
    rt99 = per_run("roundTrip", "p99Micros")
    rows.append(("submit → finished, p99", span(rt99, 0, " µs"), "", "≤ 1 ms",
                 all(v is not None and v <= 1000 for v in rt99) if rt99 else None))
    chain = per_run("chainPerLinkMicros")
    ch_ratio = ratio(chain, p50)
    rows.append(("200-link chain, per link", span(chain, 0, " µs"), span(ch_ratio, 2, "× the relay p50"), "≤ 1.5×",
                 all(r is not None and r <= 1.5 for r in ch_ratio) if ch_ratio else None))
    handoff = per_run("handoff", "p50Micros")
    h_ratio = ratio(handoff, p50)
    rows.append(("lock handoff, p50", span(handoff, 0, " µs"), span(h_ratio, 2, "× the relay p50"), "≤ 1.5×",
                 all(r is not None and r <= 1.5 for r in h_ratio) if h_ratio else None))
    cancel = per_run("cancel", "p99Micros")
    rows.append(("cancel 100 running, p99", span([c / 1000 if c else None for c in cancel], 2, " ms"), "", "≤ 20 ms",
                 all(c is not None and c <= 20000 for c in cancel) if cancel else None))

    w("## The cluster (`bench-cluster`)")
    w("")
    w("A coordinator and two workers (four for the cancel) as real `cohort` processes on 127.0.0.1, "
      "driven by the Swift client; the coordinator journals in SQLite.")
    w("")
    w("| measure | value | ratio, same run | target | |")
    w("|---|---|---|---|---|")
    for label, value, rat, target, ok in rows:
        w(f"| {label} | {value} | {rat} | {target} | {verdict(ok) if target else ''} |")
    w("")

    # Growth.
    w("## Growth: cost per item at two sizes")
    w("")
    w("Each path measured at two sizes in one run; the gate fails when the larger size's cost per "
      "item is more than 1.3× the smaller's. CI (`scripts/test`) runs both gates, `bench-growth` and "
      "`bench-cluster --growth`, in its optimized test build, with a third: `bench-cluster --cpu-limit 35` "
      "fails when the coordinator's CPU per no-op child exceeds 35 times the relay's time per pipelined "
      "round trip of the same run (the target is 4×).")
    w("")
    if growth_runs:
        first = growth_runs[0][0] if growth_runs[0] else {}
        w(f"`bench-growth` (in process; {first.get('small', '?')} and {first.get('large', '?')} children, "
          "best of 5, each run):")
        w("")
        w("| path | small, µs per item | large, µs per item | growth | limit |")
        w("|---|---|---|---|---|")
        for index, row in enumerate(growth_runs[0]):
            rows_all = [g[index] for g in growth_runs if index < len(g)]
            growth = [r["growth"] for r in rows_all]
            ok = all(r["ok"] for r in rows_all)
            w(f"| {row['path']} | {span([r['smallMicrosecondsPerItem'] for r in rows_all], 2)} | "
              f"{span([r['largeMicrosecondsPerItem'] for r in rows_all], 2)} | {span(growth, 2, '×')} | "
              f"≤ {row['limit']}× {'' if ok else '**exceeded**'} |")
        w("")
    if cluster_growth:
        w(f"`bench-cluster --growth` (real processes; {cluster_growth['small']:,} and "
          f"{cluster_growth['large']:,} children, best of 3):")
        w("")
        w("| path | small, µs per child | large, µs per child | growth | limit |")
        w("|---|---|---|---|---|")
        for figure in cluster_growth["figures"]:
            growth = figure["largeMicrosPerChild"] / figure["smallMicrosPerChild"] if figure["smallMicrosPerChild"] else 0
            w(f"| {figure['path'].strip()} | {figure['smallMicrosPerChild']:,.2f} | {figure['largeMicrosPerChild']:,.2f} | "
              f"{growth:.2f}× | ≤ {cluster_growth['limit']}× {'' if figure['ok'] else '**exceeded**'} |")
        w("")
    else:
        w("`bench-cluster --growth` did not complete in this run.")
        w("")

    # The local queue.
    if procedures:
        w("## The local queue (`bench-procedures`)")
        w("")
        w("| case | per second | × `OperationQueue`, same run | target |")
        w("|---|---|---|---|")
        for name in procedures[0]:
            rates = [p[name]["perSecond"] for p in procedures if name in p]
            ratios = [p[name]["ratioToOperationQueue"] for p in procedures if name in p]
            target = "≥ 500,000/s and ≥ 5×" if name == "ProcedureQueue no-op" else ""
            w(f"| {name} | {span(rates, 0)} | {span(ratios, 2, '×')} | {target} |")
        w("")

    # What metrics cost.
    w("## What metrics cost")
    w("")
    if metrics and metrics.get("off") and metrics.get("on"):
        off, on = metrics["off"], metrics["on"]
        w(f"`bench-cluster --metrics-comparison {len(off)}`: a fresh cluster per run, "
          f"{metrics['rounds']} × {metrics['noops']:,} no-op children each, journal "
          f"{'on' if metrics['journal'] else 'off'}, metrics off and on alternating (coordinator and workers "
          "serving Prometheus metrics). CPU from /proc: the coordinator's busiest thread (its loop) and the "
          "whole process, per child. Target: cost < 5 %.")
        w("")
        w("| median | metrics off | metrics on | cost |")
        w("|---|---|---|---|")

        def median(values):
            values = sorted(values)
            mid = len(values) // 2
            return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2

        for label, key, higher, scale, unit, digits in (
                ("throughput", "rate", True, 1, "/s", 0),
                ("loop thread CPU per child", "loopPerChild", False, 1e-3, " µs", 2),
                ("process CPU per child", "processPerChild", False, 1e-3, " µs", 2)):
            a, b = median([x[key] for x in off]), median([x[key] for x in on])
            cost = (1 - b / a) if higher else (b / a - 1)
            w(f"| {label} | {a * scale:,.{digits}f}{unit} | {b * scale:,.{digits}f}{unit} | {cost * 100:.1f} % |")
        w("")
        w(f"The instrumentation alone, timed on the loop's thread: "
          f"{metrics['instrumentationNanosPerChild']:,.0f} ns per child. Runs, off then on: " +
          "; ".join(f"{x['rate']:,.0f}/s" for x in off) + " off, " +
          "; ".join(f"{x['rate']:,.0f}/s" for x in on) + " on.")
    else:
        w("`bench-cluster --metrics-comparison` did not complete in this run.")
    w("")

    # What CURVE costs.
    w("## What CURVE costs")
    w("")
    if curve:
        plain, secure = curve["plaintext"], curve["curve"]
        w("`bench-cluster --curve`: a plaintext and a CURVE cluster (coordinator and 2 workers), alternated "
          "twice, best of each (docs/security.md).")
        w("")
        w("| measure | plaintext | CURVE | CURVE / plaintext |")
        w("|---|---|---|---|")
        for label, a, b, unit, digits in (
                ("connect (handshake + HELLO/WELCOME), p50", plain["connect"]["p50Micros"], secure["connect"]["p50Micros"], " µs", 0),
                (f"throughput, {curve['noops']:,} no-op children", plain["throughput"], secure["throughput"], "/s", 0),
                ("submit → finished, p50", plain["roundTrip"]["p50Micros"], secure["roundTrip"]["p50Micros"], " µs", 0),
                ("submit → finished, p99", plain["roundTrip"]["p99Micros"], secure["roundTrip"]["p99Micros"], " µs", 0)):
            w(f"| {label} | {a:,.{digits}f}{unit} | {b:,.{digits}f}{unit} | {b / a:.2f}× |")
    else:
        w("`bench-cluster --curve` did not complete in this run.")
    w("")

    # The journal in PostgreSQL.
    def median(values):
        values = sorted(v for v in values if v is not None)
        if not values:
            return None
        mid = len(values) // 2
        return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2

    w("## The journal in PostgreSQL")
    w("")
    if journal and journal.get("samples", {}).get("sqlite"):
        samples = journal["samples"]
        names = [n for n in ("sqlite", "postgres", "postgres-standby") if samples.get(n)]
        titles = {"sqlite": "SQLite (`full`)", "postgres": "PostgreSQL", "postgres-standby": "PostgreSQL, standby leader"}
        w(f"`bench-cluster --journal-comparison {journal['runs']}` (docs/operations.md, \"In PostgreSQL\" and "
          "\"High availability\"): clusters side by side (a coordinator and 2 workers each; for the HA set-up two "
          "`--standby` coordinators, the first leading, the workers and the client given both), measured in turn, "
          f"the order rotated every run: {journal['noops']:,} no-op children in one group, then "
          f"{journal['roundTrips']:,} one-child groups one after the other. PostgreSQL {postgres_version(raw)} on "
          "loopback with its defaults (`fsync` and `synchronous_commit` on), started by `scripts/bench-report "
          "--postgres` for the run.")
        w("")
        w("| median of " + str(journal["runs"]) + " runs | " + " | ".join(titles[n] for n in names) + " | " +
          " | ".join(f"{titles[n].split(' (')[0]}/SQLite" for n in names[1:]) + " |")
        w("|---" * (2 * len(names)) + "|")
        for label, key, unit, digits in (
                (f"throughput, {journal['noops']:,} no-ops", "rate", " children/s", 0),
                ("submit → finished p50", "p50Micros", " µs", 0),
                ("submit → finished p99", "p99Micros", " µs", 0)):
            values = {n: median([x[key] for x in samples[n]]) for n in names}
            base = values["sqlite"]
            w(f"| {label} | " + " | ".join(f"{values[n]:,.{digits}f}{unit}" for n in names) + " | " +
              " | ".join(f"{values[n] / base:.2f}" for n in names[1:]) + " |")
        w("")
    else:
        w("Not measured in this run: `scripts/bench-report --postgres` starts a PostgreSQL server of its own "
          "(`scripts/bootstrap --tests` installs it) and measures it.")
        w("")

    w("## Standby failover")
    w("")
    if failovers:
        w("`scripts/measure-failover`: two `--standby` coordinators on one PostgreSQL journal (the same server), "
          "the leader killed with SIGKILL at a random point of its renewal cycle (a random pause of up to L/3 "
          "after the restarted one stands by), the time from the kill to the other's `leading` log line; the "
          "killed one is restarted as a standby. Each database new; a run with queued groups submitted that many "
          "one-child groups first (no worker, so all stay queued and every takeover loads them).")
        w("")
        w("| lease | journal | kills | min | median | max | journal load (logged) |")
        w("|---|---|---|---|---|---|---|")
        for run in failovers:
            times = sorted(run["seconds"])
            loads = [x for x in run["loadSeconds"] if x is not None]
            journal_text = f"{run['groups']} queued groups" if run["groups"] else "empty"
            load_text = (f"{min(loads) * 1000:.0f} – {max(loads) * 1000:.0f} ms" if loads else "-")
            w(f"| {run['lease']} | {journal_text} | {len(times)} | {times[0]:.2f} s | {median(times):.2f} s | "
              f"{times[-1]:.2f} s | {load_text} |")
        w("")
        w("A takeover takes between L − L/3 and L + the standby's try interval (L/3 or 0.5 s, whichever is "
          "shorter), plus the journal's load.")
    else:
        w("Not measured in this run: `scripts/bench-report --postgres`.")
    w("")

    # Peers.
    w("## Peers")
    w("")
    if peers:
        w("Ray and Dask on this machine in the same session (`Benchmarks/peers/compare.py`, two workers):")
        w("")
        w("| system | 10,000 no-ops/s | round trip p50 | p99 | chain per link |")
        w("|---|---|---|---|---|")
        for peer in peers:
            w(f"| {peer['peer']} | {peer['throughputPerSecond']:,.0f} | {peer['roundTripP50Micros']:,.0f} µs | "
              f"{peer['roundTripP99Micros']:,.0f} µs | {peer['chainPerLinkMicros']:,.0f} µs |")
        if throughput:
            best = max(t for t in throughput if t)
            for peer in peers:
                if peer["throughputPerSecond"]:
                    w("")
                    w(f"Cohort's best throughput of this run is {best / peer['throughputPerSecond']:.1f}× {peer['peer']}'s.")
    else:
        w("Not measured in this run. To compare on your own machine: `pip install ray \"dask[distributed]\"`, "
          "then `scripts/bench-report --peers` (or `python3 Benchmarks/peers/compare.py` beside "
          "`bench-cluster`). Compare ratios of the same session only.")
    w("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
