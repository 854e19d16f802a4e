#!/usr/bin/env python3
"""Cache misses per call at the dispatcher, from a `PROFILE_CACHE=1 make
profile` run (callgrind's cache simulation): for each scenario and command
measured, the mean per call over its blocks of the instructions (Ir), the
L1 instruction misses (I1mr), the L1 data read and write misses (D1mr,
D1mw) and the last-level ones (DLmr, DLmw); and, of the module's own code
(libemq.so, or floor.so for the C floor) in the measured blocks, its
instructions and L1 instruction misses (the module's cron and timers that
ran meanwhile included: a few hundred instructions a second, nothing per
call). The dumps name functions in full (`--compress-strings=no`); the
inclusive cost of a call is the line after its `calls=` line.

  scripts/profile-cache.py <profile directory>
"""
import sys
from collections import defaultdict

ENTRY = ("ValkeyModuleCommandDispatcher", "evalShaCommand")


def costs(path, mine):
    """(entry events summed, calls of it, own code's events) of one dump;
    `mine`: the object whose code is counted as its own."""
    events, entry, calls, own = [], None, 0, None
    obj, callee, pending = "", "", None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
                entry, own = [0] * len(events), [0] * len(events)
            elif line.startswith("ob="):
                obj = line[3:].strip()
            elif line.startswith("cfn="):
                callee = line[4:].strip()
            elif line.startswith("calls="):
                pending = int(line[6:].split()[0])
            elif line[:1].isdigit() or line[:1] in "+-*":
                figures = [int(x) for x in line.split()[1:]]
                if pending is not None:
                    if callee.endswith(ENTRY):
                        calls += pending
                        for i, v in enumerate(figures):
                            entry[i] += v
                    pending = None
                elif obj.endswith(mine):
                    for i, v in enumerate(figures):
                        own[i] += v
    return events, entry, calls, own


def main(directory):
    sums = defaultdict(lambda: None)
    names = None
    with open(f"{directory}/blocks.tsv") as f:
        blocks = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    for dump, scenario, what, *_ in blocks:
        mine = "floor.so" if what.startswith("C floor") else "libemq.so"
        events, entry, calls, own = costs(dump, mine)
        if not calls or "I1mr" not in events:
            continue
        names = events
        s = sums[(scenario, what)]
        if s is None:
            s = sums[(scenario, what)] = [[0] * len(events), 0, [0] * len(events)]
        s[0] = [a + b for a, b in zip(s[0], entry)]
        s[1] += calls
        s[2] = [a + b for a, b in zip(s[2], own)]
    if names is None:
        sys.exit("profile-cache: no dump with cache events (PROFILE_CACHE=1)")
    shown = ["Ir", "I1mr", "D1mr", "D1mw", "DLmr", "DLmw"]
    at = [names.index(e) for e in shown]
    ir, i1 = names.index("Ir"), names.index("I1mr")
    print("\ncache misses per call at the dispatcher (callgrind's cache simulation);")
    print("own: the module's (or the C floor's) own code in the blocks, instructions / L1 instruction misses")
    print(f"{'scenario':<56} {'what':<20}" + "".join(f"{e:>9}" for e in shown) + f"{'own':>16}")
    for (scenario, what), (entry, calls, own) in sums.items():
        figures = "".join(f"{entry[i] / calls:>9.0f}" for i in at)
        mine = f"{own[ir] / calls:.0f} / {own[i1] / calls:.0f}" if what.startswith(("native", "C floor")) else "-"
        print(f"{scenario[:56]:<56} {what[:20]:<20}{figures}{mine:>16}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
