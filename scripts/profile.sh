#!/usr/bin/env bash
# Where a native command's time goes: runs one bench scenario (native blocks
# only) against a Valkey 9.1 under `valgrind --tool=callgrind`, collecting
# only inside the named functions, and prints instructions per call of each
# and the inclusive profile of the first.
#   scripts/profile.sh [scenario [function ...]]
#   scenario: a bench scenario's whole name (default "WCLAIM K=1, 100 lanes");
#   functions: where collection happens (default emq::commands::claim::wclaim).
#   scripts/profile.sh "WCLAIM K=1, 100 lanes" emq::commands::claim::wclaim \
#     lmoveCommand zpopminCommand zaddCommand hsetCommand hincrbyCommand
# (the second form counts the core commands of the scenario's floor alone;
# name evalShaCommand to count the Lua twin's calls, which run the same core
# commands, and the floor's with them).
# Instructions are all but deterministic (the server's hash seeds move them a
# few tenths of a percent): compare two builds by their figures per call.
set -euo pipefail
cd "$(dirname "$0")/.."
only="${1:-WCLAIM K=1, 100 lanes}"
shift || true
functions=("$@")
[ ${#functions[@]} -gt 0 ] || functions=(emq::commands::claim::wclaim)
out="$(mktemp -d)"
scripts/deps.sh valgrind
real="$(scripts/servers.sh valkey9)"
toggles=""
for f in "${functions[@]}"; do toggles="$toggles --toggle-collect=$f"; done
printf '#!/bin/sh\nexec valgrind --tool=callgrind --collect-atstart=no --compress-strings=no%s --callgrind-out-file=%s/cg.%%p "%s" "$@"\n' \
  "$toggles" "$out" "$real" >"$out/server"
chmod +x "$out/server"
# The Lua blocks run only when the twin's calls are asked for; the floors
# when a core command is.
native_only=1
floors=0
for f in "${functions[@]}"; do
  case "$f" in
    emq::*) ;;
    evalShaCommand) native_only=0 ;;
    *) floors=1 ;;
  esac
done
EMQ_SERVER="$out/server" EMQ_SLOW=30 EMQ_BENCH_ONLY="=$only" EMQ_BENCH_NATIVE_ONLY=$native_only EMQ_BENCH_FLOORS=$floors \
  cargo bench --locked --bench report >"$out/bench.txt"
file="$(ls "$out"/cg.* | head -1)"
callgrind_annotate --inclusive=yes --threshold=100 "$file" 2>/dev/null >"$out/annotate.txt"
echo "$only (Valkey 9.1, callgrind, instructions inside each function):"
for f in "${functions[@]}"; do
  calls="$(grep -A1 -F "cfn=$f" "$file" | awk -F'[= ]' '/^calls=/ {n += $2} END {printf "%.0f", n}')"
  # The largest figure among the function's lines is its inclusive total
  # (printed whole: awk would print a total past 2^31 as 2.66329e+10).
  total="$(grep -F ":$f" "$out/annotate.txt" | awk '{gsub(",", "", $1); if ($1 + 0 > max) max = $1 + 0} END {printf "%.0f", max}')"
  if [ "${calls:-0}" -gt 0 ] && [ -n "$total" ]; then
    printf '  %-40s %8d calls %12d per call %14d in all\n' "$f" "$calls" "$((total / calls))" "$total"
  fi
done
sed -n '/file:function/,$p' "$out/annotate.txt" | grep -v '???:0x\|below main' | head -60 || true
echo "profile: $file"
