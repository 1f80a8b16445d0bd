#!/usr/bin/env python3
"""Allocation calls per message from heaptrack's collapsed stacks (`heaptrack_print
--flamegraph-cost-type allocations -F FILE`), by the innermost ringmq function of each stack.

    alloc_count.py STACKS MESSAGES [IDLE_STACKS] [--top N]

IDLE_STACKS (the same broker started and stopped with no load) is subtracted site by site, so
the figures are what the workload's messages cost, not the broker's start and stop."""
import argparse
import collections
import re

HASH = re.compile(r"::h[0-9a-f]{16}")


def sites(path):
    """Allocation calls by site: the innermost frame of ringmq's own code, else the innermost."""
    counts = collections.Counter()
    for line in open(path):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        ours = [f for f in frames if f.startswith("ringmq") or "ringmq.." in f]
        site = HASH.sub("", ours[-1] if ours else "(outside ringmq) " + frames[-1])
        counts[site] += int(n)
    return counts


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("stacks")
    p.add_argument("messages", type=int)
    p.add_argument("idle", nargs="?")
    p.add_argument("--top", type=int, default=25)
    a = p.parse_args()
    counts = sites(a.stacks)
    if a.idle:
        counts.subtract(sites(a.idle))
    total = sum(v for v in counts.values() if v > 0)
    print(f"| allocation calls per message | {total / a.messages:.2f} | ({total} calls, {a.messages} messages) |")
    print("|---|---|---|")
    for site, n in counts.most_common(a.top):
        if n / a.messages >= 0.01:
            print(f"| {n / a.messages:.2f} | `{site[:140]}` | |")


if __name__ == "__main__":
    main()
