"""The attached-tracer overhead: chunks of one process's work (loop.py ...
chunks) matched to the windows in which each tracer ran.

usage: windows.py CHUNKS WINDOWS
CHUNKS: "chunk START_NS END_NS" lines; WINDOWS: "ROUND VARIANT START_NS END_NS"
lines, the part of each window in which the variant was surely active.
Prints per variant the mean chunk time, the median over rounds of its ratio
to the untraced window of the same round, and the per-round ratios."""
import statistics
import sys


def main():
    chunks = [tuple(map(int, l.split()[1:3])) for l in open(sys.argv[1]) if l.startswith("chunk ")]
    means = {}
    for line in open(sys.argv[2]):
        rnd, variant, lo, hi = line.split()
        inside = [e - s for s, e in chunks if s >= int(lo) and e <= int(hi)]
        if inside:
            means.setdefault(variant, {})[rnd] = (statistics.mean(inside), len(inside))
    base = means.get("untraced", {})
    for variant, rounds in means.items():
        ratios = [m / base[r][0] for r, (m, _) in rounds.items() if r in base]
        per_chunk = statistics.median(m for m, _ in rounds.values()) / 1e6
        n = sum(k for _, k in rounds.values())
        print(f"{variant:<10} chunk median {per_chunk:8.2f} ms over {len(rounds)} windows ({n} chunks); "
              f"x untraced, paired by round: median {statistics.median(ratios):.3f}, "
              f"rounds {' '.join(f'{x:.3f}' for x in ratios)}")


if __name__ == "__main__":
    main()
