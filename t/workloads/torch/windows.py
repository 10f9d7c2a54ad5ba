"""The attached-tracer overhead: chunks of one process's work (loop.py ...
chunks) matched to the windows in which each tracer ran.

usage: windows.py CHUNKS WINDOWS
CHUNKS: "chunk START_NS END_NS" lines; WINDOWS: "ROUND VARIANT START_NS END_NS"
lines, the part of each window in which the variant was surely active.
Prints per variant its chunks' median time and, set against the untraced
window of the same round, the median over rounds of two ratios: of the
windows' median chunks, and of their lower quartiles. The machine has slow
stretches of its own that last seconds and only ever add time; the lower
quartile leaves them out best."""
import statistics
import sys


def quantile(values, q):
    values = sorted(values)
    return values[int(q * (len(values) - 1))]


def paired(windows, base, q):
    """The median over rounds of the q-quantile chunk of each window against the untraced one's."""
    return statistics.median(quantile(w, q) / quantile(base[r], q) for r, w in windows.items() if r in base)


def main():
    chunks = [tuple(map(int, l.split()[1:3])) for l in open(sys.argv[1]) if l.startswith("chunk ")]
    windows = {}
    for line in open(sys.argv[2]):
        rnd, variant, lo, hi = line.split()
        inside = [e - s for s, e in chunks if s >= int(lo) and e <= int(hi)]
        if inside:
            windows.setdefault(variant, {})[rnd] = inside
    base = windows.get("untraced", {})
    for variant, rounds in windows.items():
        every = [d for w in rounds.values() for d in w]
        print(f"{variant:<10} chunk median {statistics.median(every) / 1e6:8.2f} ms over {len(rounds)} windows "
              f"({len(every)} chunks); x untraced, paired by round: median {paired(rounds, base, 0.5):.3f}, "
              f"lower quartile {paired(rounds, base, 0.25):.3f}")


if __name__ == "__main__":
    main()
