# offlinebox developer tasks. `make test` is what CI runs.

SHELL := /usr/bin/env bash

.PHONY: test browser-test build install fuzz vet lint fmt demo bench proto packages cluster capacity

## build: build the offlinebox binary into bin/offlinebox (BIN=path elsewhere), stamped with the commit
BIN ?= bin/offlinebox
VCS_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo +dirty)
build:
	go build -ldflags "-X main.vcsCommit=$(VCS_COMMIT)" -o $(BIN) ./cmd/offlinebox

## install: install the offlinebox binary into $(go env GOPATH)/bin
install:
	go install ./cmd/offlinebox

## test: install servers if missing, start shared test servers, check format, vet, run all tests, then fuzz briefly
test:
	scripts/test.sh
	scripts/fuzz.sh

## browser-test: drive the web client in headless Chromium (installed if missing); screenshots under .data/browser-test/_artifacts/cmd/offlinebox/TEST/
browser-test:
	@command -v chromium >/dev/null 2>&1 || scripts/ensure-packages.sh chromium
	@mkdir -p .data/browser-test
	OFFLINEBOX_REQUIRE_BROWSER=1 go test ./cmd/offlinebox/ -run '^TestBrowser' -count=1 -v -artifacts -outputdir "$(CURDIR)/.data/browser-test"

## fuzz: run every Fuzz target for a few seconds (FUZZTIME per target, FUZZBUDGET seconds in all)
fuzz:
	scripts/fuzz.sh

## vet: go vet every package
vet:
	go vet ./...

## lint: staticcheck every package (the version go.mod pins)
lint:
	go tool staticcheck ./...

## fmt: gofmt every Go file in place
fmt:
	gofmt -l -w .

## demo: run the whole system on this machine (servers as child processes)
demo:
	go run ./cmd/offlinebox demo

## cluster: run offlinebox as a cluster (Redis Cluster, 3 brokers, 3 API nodes behind haproxy, workers twice), play the faults, then leave it serving until Ctrl-C
cluster:
	@command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || scripts/ensure-packages.sh haproxy
	go run ./bench/cluster -serve

## capacity: run the cluster bench on 1 master, then on 3, and write docs/capacity.md from what they measured
capacity:
	@command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || scripts/ensure-packages.sh haproxy
	@mkdir -p .data
	go run ./bench/cluster -baseline-only -masters 1 -json > .data/cluster-1-master.json
	go run ./bench/cluster -json -compare .data/cluster-1-master.json -capacity docs/capacity.md

## bench: run the benchmark programs (scripts/bench.sh)
bench:
	@if [ -x scripts/bench.sh ]; then scripts/bench.sh; \
	else echo "bench: scripts/bench.sh does not exist yet" >&2; exit 1; fi

## proto: regenerate schemas/offlinebox.pb.go from schemas/offlinebox.proto
proto:
	scripts/proto.sh

## packages: install redis-server, clickhouse-server, clickhouse-client and prometheus (promtool) if missing
packages:
	scripts/ensure-packages.sh
