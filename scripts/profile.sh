#!/usr/bin/env bash
# Where a native command's time goes: runs bench scenarios (native blocks only)
# against a Valkey 9.1 under `valgrind --tool=callgrind`, collecting only
# inside the module's command callbacks, and prints the inclusive profile.
#   scripts/profile.sh [scenario [function]]
#   scenario: a bench scenario's whole name (default "WCLAIM K=1, 100 lanes");
#   function: where collection starts (default emq::commands::claim::wclaim).
# Instructions are deterministic: compare two builds by their totals per call.
set -euo pipefail
cd "$(dirname "$0")/.."
only="${1:-WCLAIM K=1, 100 lanes}"
function="${2:-emq::commands::claim::wclaim}"
out="$(mktemp -d)"
command -v valgrind >/dev/null || (apt-get update -qq && apt-get install -y -qq valgrind)
real="$(scripts/servers.sh valkey9)"
printf '#!/bin/sh\nexec valgrind --tool=callgrind --collect-atstart=no --compress-strings=no --toggle-collect="%s" --callgrind-out-file=%s/cg.%%p "%s" "$@"\n' \
  "$function" "$out" "$real" >"$out/server"
chmod +x "$out/server"
EMQ_SERVER="$out/server" EMQ_SLOW=30 EMQ_BENCH_ONLY="=$only" EMQ_BENCH_NATIVE_ONLY=1 \
  cargo bench --locked --bench report >"$out/bench.txt"
grep -A3 "^scenario\|^-" "$out/bench.txt" | head -8 || true
file="$(ls "$out"/cg.* | head -1)"
calls="$(grep -A1 -F "$function" "$file" | awk -F'[= ]' '/^calls=/ {n += $2} END {print n}')"
total="$(grep -o '^summary: [0-9]*' "$file" | cut -d' ' -f2)"
echo "$function: $calls calls, $total instructions, $((total / calls)) per call"
callgrind_annotate --inclusive=yes "$file" 2>/dev/null | sed -n '/file:function/,$p' | head -70
echo "profile: $file"
