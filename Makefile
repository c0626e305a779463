# drover's developer entry points. `make help` lists them.
# Every test target installs what is missing (scripts/ensure-deps.sh) and
# starts its own servers: redis-server, PostgreSQL, Node BullMQ, Chromium.

GO        ?= go
PKGS_RACE ?= . ./internal/...
TIMEOUT   ?= 20m

.PHONY: help
help: ## show this help
	@grep -E '^[a-zA-Z_/-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-16s %s\n", $$1, $$2}'

.PHONY: deps
deps: ## install missing test dependencies (redis-server, npm packages)
	./scripts/ensure-deps.sh

.PHONY: test
test: deps ## run every test: unit, race, interop, Postgres, browser, cluster
	$(GO) vet ./...
	$(GO) test -race -timeout $(TIMEOUT) $(PKGS_RACE)
	$(GO) test -timeout $(TIMEOUT) $$($(GO) list ./... | grep -v -E '^github.com/seed40057009/drover(/internal/.*)?$$')

.PHONY: test/race
test/race: deps ## run the core packages with the race detector
	$(GO) test -race -timeout $(TIMEOUT) $(PKGS_RACE)

.PHONY: build
build: ## build the drover binary into ./bin
	$(GO) build -o bin/drover ./cmd/drover

.PHONY: fmt
fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')
