#!/usr/bin/env bash
# make memcheck: the integration tests with the server under
# `valgrind --leak-check=full`, then a verdict on every valgrind report:
# no invalid access, no uninitialised use and no definite leak whose stack
# passes through the module (libemq.so). The timing-bound blocking and lease
# tests, the large property/differential runs and the 100,000-lane walk are
# left out (valgrind is ~20x slower).
set -euo pipefail
cd "$(dirname "$0")/.."
server=$(scripts/servers.sh "${MEMCHECK_SERVER:-valkey9}")
logs=$(mktemp -d /tmp/emq-memcheck.XXXXXX)
printf '#!/bin/sh\nexec valgrind --leak-check=full --show-leak-kinds=definite --keep-debuginfo=yes --num-callers=40 --log-file=%s/vg.%%p.log "%s" "$@"\n' \
  "$logs" "$server" > "$logs/server"
chmod +x "$logs/server"
status=0
EMQ_SERVER="$logs/server" EMQ_SLOW=30 cargo test --release --locked \
  --test claims --test lanes --test transitions --test sweeps --test errors --test robustness \
  --test damage --test operator --test trust --test flat --test edits -- --test-threads=2 --skip 100000_lane || status=$?
# Blocked clients and the expiry timer: the tests whose outcome does not
# hang on how fast the server runs.
EMQ_SERVER="$logs/server" EMQ_SLOW=30 cargo test --release --locked --test blocking --test timer -- \
  --test-threads=2 never_blocks a_killed_or_unblocked bad_block_arguments can_serve_nothing \
  no_client_waits mending_a_skipped_lane no_timer_outlives in_the_waiters_database \
  a_replica_never_runs_the_timer writes_nothing_while_writes_are_paused || status=$?
# Rates and timed pauses: the turn's rate paths, the timer's re-ring of a
# timed pause, the views and every refusal.
EMQ_SERVER="$logs/server" EMQ_SLOW=30 cargo test --release --locked --test rates -- \
  --test-threads=2 bad_rates damaged_rate_state lane_queue_and_info rung_by_a_script \
  resume_ends_a_timed_pause to_a_waiting_worker || status=$?
# The per-lane figures: recorded by turns and lease ends, read by EMQ.STATS
# (the timing-bound and the largest runs left out).
EMQ_SERVER="$logs/server" EMQ_SLOW=30 cargo test --release --locked --test figures -- \
  --test-threads=2 --skip hundred_thousand --skip sixteen_claimers --skip busy_time || status=$?
# Fairness by time: passes, charges, corrections (the timing-bound ones left
# out: the shares of worker time, the charge of a job of 50 ms).
EMQ_SERVER="$logs/server" EMQ_SLOW=30 cargo test --release --locked --test time_fairness -- \
  --test-threads=2 --skip a_weight_is --skip twenty_lanes --skip a_turn_is_charged || status=$?
python3 scripts/memcheck-verdict.py "$logs" || status=$?
exit "$status"
