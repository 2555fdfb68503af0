#!/usr/bin/env python3
"""Splits a colltune raw CSV (what `colltune import` writes) into a fit set and
a test set: the fit set is every sample of the named algorithms at the named
rank counts (every size), the test set everything else.

    split.py IN.csv FIT.csv TEST.csv ALGORITHMS RANKS

ALGORITHMS: coll/tuned ids, comma-separated (`2,6`), or colltune's own names
(`bine`); RANKS: rank counts, comma-separated, or `all`. Prints how many
points (algorithm, ranks, bytes) each side holds.
"""
import csv
import sys


def algorithm(spec):
    head = spec.split(",")[0]
    return head.split("=")[1] if "algorithm=" in head else head.split(":")[0]


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    src, fit, test, algs, ranks = sys.argv[1:6]
    algs = set(algs.split(","))
    ranks = None if ranks == "all" else set(ranks.split(","))
    with open(src, newline="") as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    si, ri, bi = head.index("spec"), head.index("ranks"), head.index("bytes")
    chosen = [algorithm(r[si]) in algs and (ranks is None or r[ri] in ranks) for r in body]
    for path, keep in ((fit, True), (test, False)):
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(head)
            w.writerows(r for r, c in zip(body, chosen) if c == keep)

    def points(keep):
        return len({(r[si], r[ri], r[bi]) for r, c in zip(body, chosen) if c == keep})

    total = points(True) + points(False)
    print(f"fit {points(True)} points, test {points(False)} points; the fit {100 * points(True) / total:.1f}% of {total}")


if __name__ == "__main__":
    main()
