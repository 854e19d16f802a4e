#!/usr/bin/env bash
# make perf-guard: instructions per call at the command's dispatcher (the
# whole command, as a client pays for it; scripts/profile.sh), each budget
# in bench/perf-budget (`instructions | scenario | what`) against one
# profile of all their scenarios (native blocks and floors only); fails when
# one is more than 5% over. The floors are budgeted too, so that a server
# upgrade that moves them shows here.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
budgets="$(grep -v '^\s*\(#\|$\)' bench/perf-budget)"
only="$(awk -F' [|] ' '{print "=" $2}' <<<"$budgets" | awk '!seen[$0]++' | paste -sd'|')"
out="$(mktemp -d)"
PROFILE_DIR="$out" EMQ_BENCH_NATIVE_ONLY=1 EMQ_BENCH_FLOORS=1 scripts/profile.sh "$only"
while IFS='|' read -r budget scenario what; do
  trim() { sed 's/^ *//; s/ *$//' <<<"$1"; }
  budget="$(trim "$budget")" scenario="$(trim "$scenario")" what="$(trim "$what")"
  measured="$(awk -F'\t' -v s="$scenario" -v w="$what" '$1 == s && $2 == w {print $3}' "$out/dispatch.tsv")"
  limit=$((budget * 105 / 100))
  if [ -z "$measured" ]; then
    echo "perf-guard: no measurement of \"$what\" in \"$scenario\""
    status=1
  elif [ "$measured" -gt "$limit" ]; then
    echo "perf-guard: FAIL  $scenario: $what $measured instructions per call, budget $budget (+5% = $limit)"
    status=1
  else
    echo "perf-guard: ok    $scenario: $what $measured instructions per call, budget $budget"
  fi
done <<<"$budgets"
exit "$status"
