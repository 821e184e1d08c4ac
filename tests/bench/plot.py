"""The harness's two plots (docs/performance.md, "How to measure"): the latency CDF of the webhook and of the
transport floor at the same offered rate (from h2load's --log-file of each), and review
cost by cluster size (review_bench --series). Needs matplotlib (python3-matplotlib);
without it, says so and exits 0: a plot is a report, not a test.

    python3 tests/bench/plot.py OUT_DIR --latency NAME=LOG [NAME=LOG ...] --series CSV
"""

import argparse
import csv
import os
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transport_bench import durations_us  # noqa: E402  (one reader of h2load's log)


def latencies_ms(log_file):
    return [d / 1000.0 for d in durations_us(log_file)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--latency", nargs="*", default=[], help="NAME=h2load log file")
    parser.add_argument("--series", help="review_bench --series CSV")
    args = parser.parse_args()
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot: matplotlib not installed (apt-get install python3-matplotlib); no plots written")
        return 0
    os.makedirs(args.out, exist_ok=True)
    written = []
    if args.latency:
        fig, ax = plt.subplots(figsize=(7, 4))
        for spec in args.latency:
            name, path = spec.split("=", 1)
            values = latencies_ms(path)
            if not values:
                continue
            ax.plot(values, [(i + 1) / len(values) for i in range(len(values))], label=f"{name} ({len(values):,} requests)")
        ax.set_xscale("log")
        ax.set_xlabel("latency (ms, log scale)")
        ax.set_ylabel("fraction of requests")
        ax.set_title("Latency at the same fixed offered rate (half the floor's maximum)")
        ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        path = os.path.join(args.out, "latency-cdf.png")
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        written.append(path)
    if args.series:
        by_case = {}
        with open(args.series) as f:
            for row in csv.DictReader(f):
                by_case.setdefault(row["case"], []).append((int(row["nodes"]), float(row["us"])))
        fig, ax = plt.subplots(figsize=(7, 4))
        for case, points in by_case.items():
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=case)
        ax.set_xlabel("nodes in the view (30 labels each; twice as many PDBs)")
        ax.set_ylabel("us per review (in-process)")
        ax.set_ylim(bottom=0)
        ax.set_title("Review cost by cluster size")
        ax.grid(True, alpha=0.3)
        ax.legend()
        path = os.path.join(args.out, "cost-by-cluster-size.png")
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        written.append(path)
    for path in written:
        print(f"plot: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
