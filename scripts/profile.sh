#!/usr/bin/env bash
# make profile: instructions per command where a client pays for it — at
# the function the server calls for it (ValkeyModuleCommandDispatcher for a
# module's command, evalShaCommand for a script, lmoveCommand … for a core
# command) — under callgrind on a Valkey 9.1 that also loads the C floor
# module (benches/floor/floor.c, built here against the crate's
# redismodule.h). The bench (benches/report/probe.rs) turns instrumentation
# on around each measured send only, so a setup's commands are not counted.
#   scripts/profile.sh [scenarios]
#   scenarios: EMQ_BENCH_ONLY's form, `|` between them (default: the K=1
#   claim in both modes, K=8, BCLAIM of 32, the batched cycle).
# Prints the table and leaves `dispatch.tsv` (scenario, what, per call, per
# job) and the dumps in the directory it names last; with PROFILE_OF="<what>"
# (e.g. "native WCLAIM") also the inclusive profile of that thing's first
# block in the first scenario.
# PROFILE_TIME=1 runs the scenarios without callgrind instead (see below);
# PROFILE_CACHE=1 adds callgrind's cache simulation and prints, per call at
# the dispatcher, the cache misses beside the instructions
# (scripts/profile-cache.py).
# Instructions are all but deterministic (the server's hash seeds move them a
# few tenths of a percent): compare two builds by their figures per call.
set -euo pipefail
cd "$(dirname "$0")/.."
default="=WCLAIM K=1, 100 lanes|=WCLAIM K=1, 100 lanes, emq.replicate command|=WCLAIM K=8, 100 lanes"
default="$default|=BCLAIM of 32, 1,600 lanes|=batched cycle ENQUEUE×8→WCLAIM K=8→COMPLETE×8, 100 lanes"
only="${1:-$default}"
out="${PROFILE_DIR:-$(mktemp -d)}"
mkdir -p "$out"
scripts/deps.sh valgrind
real="$(scripts/servers.sh valkey9)"
# The C floor needs a C compiler: `cc`, which is also the linker Rust uses.
command -v cc >/dev/null || { echo "profile: no C compiler (cc) for the C floor module" >&2; exit 1; }
# The crate's own header, of the version Cargo.lock pins (its sources are
# in cargo's registry once the module is built).
version="$(grep -A1 '^name = "redis-module"$' Cargo.lock | sed -n 's/^version = "\(.*\)"$/\1/p')"
include="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"redis-module-$version"/src/include | head -1)"
cc -O2 -fPIC -shared -Wall -Wextra -Werror -Wno-unused-parameter -I"$include" -o "$out/floor.so" benches/floor/floor.c
# PROFILE_TIME=1: the same scenarios on a server without callgrind (the C
# floor loaded): server time per job of the native, the C floor and the
# twin, one run (how close a target in µs can come to the floor).
if [ "${PROFILE_TIME:-0}" = 1 ]; then
  printf '#!/bin/sh\nexec "%s" "$@" --loadmodule %s/floor.so\n' "$real" "$out" >"$out/server"
  chmod +x "$out/server"
  EMQ_SERVER="$out/server" EMQ_BENCH_C_FLOOR=1 EMQ_BENCH_ONLY="$only" \
    cargo bench --locked --bench report >"$out/bench.txt"
  grep -F 'per job (INFO commandstats)' "$out/bench.txt"
  echo "profile: $out"
  exit 0
fi
# The simulated caches are fixed (32 KiB L1s, 8 MiB last level), not the
# host's, so that two machines count alike. The simulation is slow: a run
# of the draining row with its twin outlives the bench's 600 s leases (the
# C floor then refuses the claim); run that row with EMQ_BENCH_NATIVE_ONLY=1.
cache=""
if [ "${PROFILE_CACHE:-0}" = 1 ]; then
  cache="--cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64"
fi
printf '#!/bin/sh\nexec valgrind --tool=callgrind %s --instr-atstart=no --compress-strings=no --callgrind-out-file=%s/cg.%%p "%s" "$@" --loadmodule %s/floor.so\n' \
  "$cache" "$out" "$real" "$out" >"$out/server"
chmod +x "$out/server"
EMQ_SERVER="$out/server" EMQ_SLOW=30 EMQ_PROFILE_DIR="$out" EMQ_BENCH_C_FLOOR=1 EMQ_BENCH_ONLY="$only" \
  cargo bench --locked --bench report >"$out/bench.txt"
sed -n '/^instructions at the command/,$p' "$out/bench.txt"
if [ -n "$cache" ]; then
  python3 scripts/profile-cache.py "$out"
fi
if [ -n "${PROFILE_OF:-}" ]; then
  block="$(grep -F -m1 "	$PROFILE_OF	" "$out/blocks.tsv" | cut -f1)"
  callgrind_annotate --inclusive=yes --threshold=99 "$block" 2>/dev/null |
    sed -n '/file:function/,$p' | grep -v '???:0x\|below main' | head -80 || true
fi
echo "profile: $out"
