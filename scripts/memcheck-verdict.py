"""Reads valgrind reports (vg.<pid>.log) and fails on any error whose stack
passes through the module: invalid reads/writes/frees, uninitialised values,
definite leaks. Prints what it read, so that a run that never reached
valgrind cannot pass silently."""
import pathlib
import re
import sys

logs = sorted(pathlib.Path(sys.argv[1]).glob("vg.*.log"))
if not logs:
    sys.exit("memcheck: no valgrind report was written")
module_errors, reports, leaks = [], 0, 0
for log in logs:
    text = log.read_text(errors="replace")
    if "Memcheck" not in text:
        continue
    reports += 1
    # Error records are blocks of "==pid== " lines separated by an empty one.
    for block in re.split(r"\n==\d+== \n", text):
        if "libemq" not in block and "emq::" not in block:
            continue
        # The redis-module crate keeps one detached context per load, by design.
        if "DetachedContext::set_context" in block:
            continue
        # Each module config's private data, boxed once at load for the
        # server to keep: the Register*Config calls take no free callback,
        # so nothing can free it when the server drops its configs at exit.
        if "ConfigrationPrivateData" in block and "RedisModule_OnLoad" in block:
            continue
        if re.search(r"Invalid (read|write|free)|uninitialised|Mismatched free|definitely lost", block):
            module_errors.append((log.name, block.strip()[:2000]))
            leaks += "definitely lost" in block
print(f"memcheck: {reports} server runs under valgrind; {len(module_errors)} errors in the module ({leaks} leaks)")
for name, block in module_errors[:10]:
    print(f"--- {name}\n{block}")
sys.exit(1 if module_errors or reports == 0 else 0)
