#!/usr/bin/env bash
# make perf-guard: instructions per native claim under callgrind
# (deterministic for the same build and inputs), each scenario against its
# budget in bench/perf-budget; fails when one is more than 5% over.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
while read -r budget scenario; do
  [[ -z "$budget" || "$budget" == \#* ]] && continue
  line="$(scripts/profile.sh "$scenario" emq::commands::claim::wclaim | grep -F 'emq::commands::claim::wclaim' | head -1)"
  measured="$(awk '{print $(NF-2)}' <<<"$line")"
  limit=$((budget * 105 / 100))
  if [ -z "$measured" ]; then
    echo "perf-guard: no measurement for \"$scenario\""
    status=1
  elif [ "$measured" -gt "$limit" ]; then
    echo "perf-guard: FAIL  $scenario: $measured instructions per claim, budget $budget (+5% = $limit)"
    status=1
  else
    echo "perf-guard: ok    $scenario: $measured instructions per claim, budget $budget"
  fi
done < bench/perf-budget
exit "$status"
