#!/usr/bin/env python3
"""Ray and Dask on the same work bench-cluster gives Cohort, to check Cohort's claims on your
own machine (docs/performance.md). Optional: it needs `pip install ray "dask[distributed]"`.

    python3 Benchmarks/peers/compare.py [--noops 10000] [--round-trips 300] [--chain 200]
                                        [--workers 2] [--only ray|dask] [--json]

Each peer runs on this host only (Ray with num_cpus=WORKERS, Dask with WORKERS worker processes
of one thread each, both on 127.0.0.1) and measures what bench-cluster measures:
  throughput   NOOPS no-op tasks submitted at once, submit to all finished (tasks/s)
  round trip   one no-op task, submit to result (p50, p99), ROUND_TRIPS times
  chain        CHAIN tasks, each taking the previous one's result (per link)
Compare ratios run on the same day beside `bench-cluster`: absolute figures on a shared
machine vary several times between days. Every process it starts is stopped before it exits.
"""

import argparse
import json
import sys
import time


def noop(x=None):
    return x


def percentile(samples, p):
    ordered = sorted(samples)
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, int(round(len(ordered) * p + 0.4999)) - 1))
    return ordered[index]


def summary(name, throughput, round_trips, chain_seconds, links):
    micros = [s * 1e6 for s in round_trips]
    return {
        "peer": name,
        "throughputPerSecond": throughput,
        "roundTripP50Micros": percentile(micros, 0.50),
        "roundTripP99Micros": percentile(micros, 0.99),
        "chainPerLinkMicros": chain_seconds / links * 1e6,
    }


def measure_ray(args):
    import ray

    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    try:
        task = ray.remote(noop)
        ray.get([task.remote(i) for i in range(min(500, args.noops))])  # warm-up: workers started
        start = time.perf_counter()
        ray.get([task.remote(i) for i in range(args.noops)])
        throughput = args.noops / (time.perf_counter() - start)
        samples = []
        for i in range(50 + args.round_trips):
            start = time.perf_counter()
            ray.get(task.remote(i))
            if i >= 50:
                samples.append(time.perf_counter() - start)
        start = time.perf_counter()
        ref = task.remote(0)
        for _ in range(args.chain - 1):
            ref = task.remote(ref)
        ray.get(ref)
        chain = time.perf_counter() - start
        return summary("ray " + ray.__version__, throughput, samples, chain, args.chain)
    finally:
        ray.shutdown()


def measure_dask(args):
    import dask
    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=args.workers, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    )
    client = Client(cluster)
    try:
        client.gather(client.map(noop, range(min(500, args.noops)), pure=False))
        start = time.perf_counter()
        client.gather(client.map(noop, range(args.noops), pure=False))
        throughput = args.noops / (time.perf_counter() - start)
        samples = []
        for i in range(50 + args.round_trips):
            start = time.perf_counter()
            client.submit(noop, i, pure=False).result()
            if i >= 50:
                samples.append(time.perf_counter() - start)
        start = time.perf_counter()
        future = client.submit(noop, 0, pure=False)
        for _ in range(args.chain - 1):
            future = client.submit(noop, future, pure=False)
        future.result()
        chain = time.perf_counter() - start
        return summary("dask " + dask.__version__, throughput, samples, chain, args.chain)
    finally:
        client.close()
        cluster.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--noops", type=int, default=10_000)
    parser.add_argument("--round-trips", type=int, default=300)
    parser.add_argument("--chain", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", choices=["ray", "dask"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if min(args.noops, args.round_trips, args.chain, args.workers) < 1:
        parser.error("every count must be at least 1")

    peers = {"ray": measure_ray, "dask": measure_dask}
    results = []
    for name, measure in peers.items():
        if args.only and name != args.only:
            continue
        try:
            results.append(measure(args))
        except ImportError as error:
            print(f"compare.py: {name} is not installed ({error}); pip install ray \"dask[distributed]\"",
                  file=sys.stderr)
            if args.only:
                return 69
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"{'peer':<16} {'throughput/s':>14} {'p50 µs':>10} {'p99 µs':>10} {'chain µs/link':>14}")
        for r in results:
            print(f"{r['peer']:<16} {r['throughputPerSecond']:>14.0f} {r['roundTripP50Micros']:>10.0f} "
                  f"{r['roundTripP99Micros']:>10.0f} {r['chainPerLinkMicros']:>14.0f}")
    return 0 if results else 69


if __name__ == "__main__":
    sys.exit(main())
