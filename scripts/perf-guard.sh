#!/usr/bin/env bash
# make perf-guard: instructions per native call under callgrind
# (all but deterministic for the same build and inputs), each budget in
# bench/perf-budget (instructions, function, scenario) against one profile of
# its scenario; fails when one is more than 5% over.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
# The budget lines, their columns one space apart.
budgets="$(grep -v '^\s*\(#\|$\)' bench/perf-budget | tr -s ' ')"
# One profile per scenario, collecting in every function budgeted in it.
scenarios="$(cut -d' ' -f3- <<<"$budgets" | awk '!seen[$0]++')"
while read -r scenario; do
  functions=($(awk -v s="$scenario" '{f=$2; $1=""; $2=""; sub(/^ +/, ""); if ($0 == s) print f}' <<<"$budgets"))
  profile="$(scripts/profile.sh "$scenario" "${functions[@]}")"
  while read -r budget function rest; do
    [ "$rest" == "$scenario" ] || continue
    line="$(grep -F "  $function " <<<"$profile" | head -1 || true)"
    measured="$(awk '{print $4}' <<<"$line")"
    limit=$((budget * 105 / 100))
    if [ -z "$measured" ]; then
      echo "perf-guard: no measurement for ${function##*::} in \"$scenario\""
      status=1
    elif [ "$measured" -gt "$limit" ]; then
      echo "perf-guard: FAIL  $scenario: ${function##*::} $measured instructions per call, budget $budget (+5% = $limit)"
      status=1
    else
      echo "perf-guard: ok    $scenario: ${function##*::} $measured instructions per call, budget $budget"
    fi
  done <<<"$budgets"
done <<<"$scenarios"
exit "$status"
