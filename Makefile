# drover's developer entry points. `make help` lists them.
# Every test target installs what is missing (scripts/ensure-deps.sh) and
# starts its own servers: redis-server, PostgreSQL, Node BullMQ, Chromium.

GO        ?= go
# Core packages run with the race detector.
PKGS_RACE ?= . ./internal/...
TIMEOUT   ?= 20m

.PHONY: help
help: ## show this help
	@grep -E '^[a-zA-Z_/-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-16s %s\n", $$1, $$2}'

.PHONY: deps
deps: ## install missing test dependencies (redis-server, npm packages)
	./scripts/ensure-deps.sh

.PHONY: test
test: deps ## run every test (race on the core packages) with real servers
	$(GO) vet ./...
	$(GO) vet -tags lab ./cmd/drover/
	$(GO) vet -tags cluster ./internal/testkit/clustertest/
	$(GO) test -race -timeout $(TIMEOUT) $(PKGS_RACE)
	$(GO) test -tags lab -timeout $(TIMEOUT) $$($(GO) list ./... | grep -v -E '^github.com/seed40057009/drover(/internal/.*)?$$')
	$(GO) test -tags cluster -timeout $(TIMEOUT) ./internal/testkit/clustertest/
	$(MAKE) soak DURATION=60s
	$(MAKE) lint

.PHONY: test/race
test/race: deps ## run the core packages with the race detector
	$(GO) test -race -timeout $(TIMEOUT) $(PKGS_RACE)

.PHONY: test-interop
# One result line per scenario; the full log only when something failed, and
# go test's exit status (a plain pipe into grep would hide a failure).
test-interop: deps ## run the Node BullMQ oracle and differential suites alone
	@log=$$(mktemp); \
	$(GO) test -count=1 -timeout $(TIMEOUT) -v -run 'Interop|Differential' ./internal/interoptest/ >$$log 2>&1; rc=$$?; \
	grep -E '^ *--- |^(PASS|FAIL|ok)' $$log; \
	if [ $$rc -ne 0 ]; then echo "--- full output:"; cat $$log; fi; \
	rm -f $$log; exit $$rc

.PHONY: test-differential
# The randomized differential tester (internal/testkit/difftest). Without
# variables it runs the fixed seeds `make test` runs; SEEDS=N (N new seeds),
# SEEDS=A-B or SEEDS=A,B,C and/or DURATION=30m run a campaign; KNOWN=1 also
# generates the inputs of the known divergences; STEPS=n sets the length.
test-differential: deps ## run the randomized differential tester (SEEDS=, DURATION=, KNOWN=1, STEPS=)
	DIFFTEST_SEEDS="$(SEEDS)" DIFFTEST_DURATION="$(DURATION)" DIFFTEST_KNOWN="$(KNOWN)" DIFFTEST_STEPS="$(STEPS)" \
	$(GO) test -count=1 -timeout $(if $(DURATION),0,$(TIMEOUT)) -v -run '^TestDifferentialRandom$$' ./internal/interoptest/

.PHONY: test-timed
test-timed: deps ## time-driven differential scenarios vs Node BullMQ (short delays, backoffs, ttls, limiters, stalls; ALL=1: every drover/Node mix; ONLY=<scenario>)
	DIFFTEST_TIMED=1 DIFFTEST_TIMED_ALL="$(ALL)" DIFFTEST_TIMED_ONLY="$(ONLY)" \
	$(GO) test -count=1 -parallel 32 -timeout $(TIMEOUT) -v -run '^TestDifferentialTimed$$' ./internal/interoptest/

.PHONY: soak-schedulers
soak-schedulers: deps ## 5-minute soak: an every-200ms and a cron scheduler, a Node and two drover worker processes SIGKILLed at random; counts skipped slots by cause (SOAK=5m; DROVER_SOAK_WORKERS=node: three Node workers, the baseline; DROVER_SOAK_SEED=n)
	DROVER_SOAK=$${SOAK:-5m} $(GO) test -count=1 -timeout 20m -v -run TestSoakJobSchedulers ./internal/interoptest/

.PHONY: soak-fleet
soak-fleet: deps ## mixed-fleet soak: Node and drover producers and worker processes on one queue under worker kills, connection drops, Redis stops and restarts (FLEET=5m; `make test` runs 15 s)
	DROVER_MIXED_FLEET=$${FLEET:-5m} $(GO) test -count=1 -timeout 30m -v -run '^TestMixedFleetSoak$$' ./internal/interoptest/

.PHONY: test-cluster
test-cluster: deps ## run the Redis Cluster + Sentinel suite alone (starts and stops its own servers)
	$(GO) vet -tags cluster ./internal/testkit/clustertest/
	$(GO) test -tags cluster -count=1 -timeout $(TIMEOUT) -v ./internal/testkit/clustertest/

DURATION     ?= 60s
SOAK_TIMEOUT ?= 3h

.PHONY: soak
soak: deps ## chaos soak on loopback: producers, 4 worker processes and the outbox relay under random faults, then invariant checks (DURATION=10m for a long run)
	DROVER_SOAK_DURATION=$(DURATION) $(GO) test -count=1 -v -timeout $(SOAK_TIMEOUT) -run '^TestSoak$$' ./internal/testkit/soak/

.PHONY: bench
bench: deps ## go test benchmarks of the engine and the hot paths
	$(GO) test -run '^$$' -bench . -benchmem ./ ./internal/jobcodec/
	$(GO) test -tags cluster -run '^$$' -bench ClusterThroughput -benchtime 100000x ./internal/testkit/clustertest/

.PHONY: bench-compare
bench-compare: ## side-by-side benchmark against Node BullMQ, asynq and River (bench/README.md); ARGS="-n 5000 -runs 1" for a quick one
	$(MAKE) -C bench compare ARGS="$(ARGS)"

.PHONY: bench-ab
bench-ab: deps ## processing cost of two revisions on one harness, alternating (A=rev B=rev [ROUNDS=5] [JOBS=300000]); scripts/bench-ab.sh
	./scripts/bench-ab.sh $(A) $(B) $(or $(ROUNDS),5) $(or $(JOBS),300000)

GOLANGCI ?= $(shell go env GOPATH)/bin/golangci-lint

.PHONY: lint
lint: ## golangci-lint with the project's rules (installs v2.15.0 if missing)
	@test -x $(GOLANGCI) || $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
	$(GOLANGCI) run --allow-serial-runners --build-tags cluster,lab ./...

.PHONY: build
build: ## build the drover binary into ./bin
	$(GO) build -o bin/drover ./cmd/drover

.PHONY: demo
demo: ## run the demo on the embedded engine
	$(GO) run ./cmd/drover demo

.PHONY: fmt
fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')
