# kwdata: the targets people use. `make demo` and `make test` are the two
# commands a fresh machine needs; see README.md.
GO      ?= go
BIN     := bin/kwdata
# ADDR is where make demo serves: make demo ADDR=127.0.0.1:9090
ADDR    ?= 127.0.0.1:8080

.PHONY: build demo test test-race bench bench-similarity bench-similarity-10m bench-serve bench-ingest bench-ingest-10m lint
.PHONY: bench-build-index bench-build-index-10m bench-serve-10m bench-10m bench-explore bench-explore-10m

# REVISION is what `kwdata version` prints when Go records no VCS
# information of its own (go run, -buildvcs=false, a tree without git).
REVISION ?= $(shell r=$$(git rev-parse --short=12 HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null || r=$$r-modified; echo $$r; })

build:
	$(GO) build -ldflags "-X main.revision=$(REVISION)" -o $(BIN) ./cmd/kwdata

# Generate the embedded sample, run every stage and serve on $(ADDR).
# KWDATA_MAKE_DEMO makes the demo's hints name ADDR= instead of --addr.
demo: build
	KWDATA_MAKE_DEMO=1 ./$(BIN) demo --addr $(ADDR)

# The concurrent packages, whose tests make test runs under the race
# detector (and so CI), so that they stay clean under it.
RACE_PKGS := ./serve/... ./index/... ./similarity/...
# How many packages are tested at once: go test's own default, the cores.
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)

# lint first, which fails in a minute where the tests would take several;
# then every package, RACE_PKGS under the race detector and the rest
# without, TEST_JOBS at a time, each printing its ok or FAIL line (and
# its output, on failure) as soon as it finishes. (One go test ./...
# would print each package only after every package listed before it.)
# Tests that need a tool this machine lacks (headless Chromium, DuckDB,
# Mailpit, stripe-mock, Versity Gateway) skip; each notes itself in
# $$KWDATA_SKIPPED, and the list is printed last, with how to get the
# tool. .ci/run installs them, then runs this.
test: lint
	@skipped=$$(mktemp); export KWDATA_SKIPPED=$$skipped; \
	race=" $$($(GO) list $(RACE_PKGS) | tr '\n' ' ') "; \
	$(GO) list ./... | while read -r p; do \
		case "$$race" in *" $$p "*) echo "$$p -race";; *) echo "$$p -race=false";; esac; \
	done | xargs -P $(TEST_JOBS) -L 1 sh -c \
		'out=$$($(GO) test -count=1 -timeout 20m "$$2" "$$1" 2>&1); s=$$?; printf "%s\n" "$$out"; exit $$s' sh; \
	status=$$?; \
	if [ -s $$skipped ]; then \
		echo; echo "Skipped, for a tool this machine lacks (.ci/run installs them):"; \
		sort -u $$skipped | sed 's/^/  /'; \
	fi; \
	rm -f $$skipped; \
	if [ $$status -ne 0 ]; then echo; echo "FAIL: the packages above that print FAIL"; exit 1; fi

# The concurrent packages alone under the race detector.
test-race:
	$(GO) test -race -count=1 -timeout 20m $(RACE_PKGS)

# Every figure is printed beside its baseline, measured in the same run.
bench: bench-ingest bench-similarity bench-build-index bench-serve

# The 10M-keyword rows, each once (hours, about 60 GB of disk and 10 GiB
# of memory at its peak; one at a time).
bench-10m: bench-ingest-10m bench-similarity-10m bench-build-index-10m bench-serve-10m

bench-similarity: build
	bash similarity/bench.sh $(BIN)

# The 10M-keyword case, once: about 30 GB of disk a shape under
# KW_BENCH_DIR (default /tmp/kwdata-bench-10m, kept for re-runs) and 7 GiB
# of memory; the shapes are default, tail and web (the heavy one, where
# few keywords are cut early); KW_BENCH_SHAPES=web measures one shape,
# KW_BENCH_LAKE=DIR reuses an ingested default-shape data folder.
bench-similarity-10m: build
	KW_BENCH_KEYWORDS=10000000 KW_BENCH_RUNS=$${KW_BENCH_RUNS:-1} \
		KW_BENCH_DIR=$${KW_BENCH_DIR:-/tmp/kwdata-bench-10m} bash similarity/bench.sh $(BIN)

bench-serve: build
	bash serve/bench.sh $(BIN)

# kwdata ingest beside DuckDB on the same SERP file, alternating rounds;
# DuckDB runs where KWDATA_DUCKDB names its Node package (see the script).
bench-ingest: build
	bash ingest/bench.sh $(BIN)

# The 10M-keyword ingest, once, planner and SERPs: about 32 GB of disk
# under KW_BENCH_DIR (default /tmp/kwdata-bench-ingest-10m, kept for
# re-runs; KW_BENCH_IN reuses sample files already generated;
# KW_BENCH_BASE_BIN runs a baseline binary in alternating rounds,
# KW_BENCH_ALL_RUNS of them).
bench-ingest-10m: build
	KW_BENCH_KEYWORDS=10000000 KW_BENCH_RUNS=$${KW_BENCH_RUNS:-0} KW_BENCH_DUCKDB=$${KW_BENCH_DUCKDB:-0} \
		KW_BENCH_DIR=$${KW_BENCH_DIR:-/tmp/kwdata-bench-ingest-10m} bash ingest/bench.sh $(BIN)

# build-index beside main's binary (git archive main, or KW_BENCH_BASE_BIN)
# on a 1M-keyword sample, alternating rounds; the -10m target on 10M
# keywords, reusing the lake of bench-similarity-10m when it is there
# (KW_BENCH_DATA names another). Run the 10M targets under
# flock /tmp/kwdata-bigmem.lock on a shared machine.
bench-build-index: build
	bash index/bench.sh $(BIN)

bench-build-index-10m: build
	KW_BENCH_KEYWORDS=10000000 KW_BENCH_DIR=$${KW_BENCH_DIR:-/tmp/kwdata-bench-build-10m} \
		KW_BENCH_DATA=$${KW_BENCH_DATA:-$$(test -d /tmp/kwdata-bench-10m/data/lake/related && echo /tmp/kwdata-bench-10m/data)} \
		bash index/bench.sh $(BIN)

# The keyword explorer (docs/perf/explore.md): build-index with and without
# its tables, then p50/p99 of each query kind beside a lookup of the same
# build, at 1M keywords (10M: bench-explore-10m). KW_BENCH_DIR keeps the
# lake for the next run (default: a temporary folder); KW_BENCH_BUILDS=0
# then queries the build it left without building again.
bench-explore:
	go test -count=1 -v -timeout 2h -run '^TestExploreBench$$' ./index/ -args -explore.keywords=$${KW_BENCH_KEYWORDS:-1000000} -explore.builds=$${KW_BENCH_BUILDS:-3}

bench-explore-10m:
	go test -count=1 -v -timeout 6h -run '^TestExploreBench$$' ./index/ -args -explore.keywords=10000000 -explore.builds=$${KW_BENCH_BUILDS:-1}

# GET /v1/keyword on a 10M-keyword index (the lake of bench-similarity-10m,
# or KW_BENCH_DATA), cold and warm, beside the minimal handler.
bench-serve-10m: build
	bash serve/bench10m.sh $(BIN)

STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

# gofmt, go vet, staticcheck (run through the module proxy, so nothing needs
# installing) and a tidy go.mod; CI runs it before the tests.
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@$(GO) mod tidy -diff || (echo "go.mod or go.sum is not tidy: run go mod tidy and commit both"; exit 1)