# emq-lanes: `make run` starts Valkey 9.1 with the module loaded; `make test`
# runs every test against real servers. Both install what is missing first.

PORT ?= 6379
MODULE := $(CURDIR)/target/release/libemq.so

.PHONY: deps build run test unit lint bench bench-peers criterion profile perf-guard memcheck clean

deps:
	@scripts/deps.sh build

build: deps
	cargo build --release --locked --workspace --lib --bins --examples

run: build
	@server=$$(scripts/servers.sh valkey9); cli=$$(scripts/servers.sh cli); \
	echo "emq: Valkey 9.1 with $(MODULE) on 127.0.0.1:$(PORT)"; \
	echo "emq: connect with  $$cli -p $(PORT)   (or any Redis/Valkey client); Ctrl-C stops it"; \
	echo "emq: watch a queue with  target/release/emq -p $(PORT) top <prefix>"; \
	exec "$$server" --port $(PORT) --bind 127.0.0.1 --save "" --appendonly no \
	  --loadmodule "$(MODULE)"

# The servers the integration suite runs against, each in turn.
SERVERS ?= valkey9 valkey8 redis7

# Unit tests (pure logic, no server), then the integration tests against
# Valkey 9.1, Valkey 8.1 and Redis 7.0.
test: build
	@scripts/deps.sh tmux
	@scripts/deps.sh prometheus
	cargo test --release --locked --workspace --lib --bins
	@for s in $(SERVERS); do \
	  server=$$(scripts/servers.sh $$s) || exit 1; \
	  echo "== integration tests on $$s ($$server)"; \
	  EMQ_MODULE="$(MODULE)" EMQ_SERVER="$$server" cargo test --release --locked -p emq-lanes --test '*' || exit 1; \
	done

# Native vs Lua on one server: a table on stdout, bench/report.json and
# bench/report.svg (the chart the README shows).
bench: build
	EMQ_SERVER="$$(scripts/servers.sh valkey9)" cargo bench --locked --bench report

# emq beside BullMQ (pinned, installed from npm into a temporary folder; Node
# is on the machine) on one Valkey 9.1: server time, CPU and memory per job.
BULLMQ_VERSION := 5.81.5
bench-peers: build
	@command -v node >/dev/null || (echo "make bench-peers: needs Node.js and npm" && exit 1)
	@dir=$$(mktemp -d /tmp/emq-peers.XXXXXX); \
	npm install --prefix "$$dir" --no-audit --no-fund --loglevel=error bullmq@$(BULLMQ_VERSION) >/dev/null && \
	EMQ_SERVER="$$(scripts/servers.sh valkey9)" EMQ_PEERS_NODE_MODULES="$$dir/node_modules" \
	  cargo bench --locked --bench peers; status=$$?; rm -rf "$$dir"; exit $$status

# criterion: the pure scheduling logic and a live claim → COMPLETE →
# ENQUEUE round trip, native and twin.
criterion: build
	EMQ_SERVER="$$(scripts/servers.sh valkey9)" cargo bench --locked --bench schedule --bench roundtrip

# Instructions per command at its dispatcher under callgrind (deterministic):
# native, twin, the core floor and the C floor module (benches/floor) in
# the claim and cycle scenarios; SCENARIOS="=<name>|=<name>" for others,
# PROFILE_OF="native WCLAIM" for where one's instructions go.
SCENARIOS ?=
profile: build
	@scripts/deps.sh valgrind
	scripts/profile.sh $(if $(SCENARIOS),"$(SCENARIOS)")

# Instructions per call at the dispatcher against bench/perf-budget
# (callgrind, deterministic): fails when one is more than 5% over budget.
perf-guard: build
	@scripts/deps.sh valgrind
	scripts/perf-guard.sh

# The integration tests with the server under valgrind; fails on any
# invalid access or definite leak in the module.
memcheck: build
	@scripts/deps.sh valgrind
	scripts/memcheck.sh

unit:
	cargo test --release --locked --workspace --lib

lint: deps
	@scripts/deps.sh lint
	cargo fmt --all --check
	cargo clippy --release --locked --workspace --all-targets -- -D warnings

clean:
	cargo clean
