# The two commands of the README: `make run` and `make test`.
GO ?= go

.PHONY: run test build skills bench bench-quick proto clean

build:
	$(GO) build -o bin/host ./cmd/host

skills:
	bash scripts/build-skills.sh

## run: build the example skills and the daemon, and serve them on 127.0.0.1:7070
run: build skills
	./bin/host serve --skills ./skills

## test: vet and race-test both modules, then the end-to-end, prefilter and conformance checks
test:
	bash scripts/test.sh

bench:
	bash scripts/bench.sh

bench-quick:
	bash scripts/bench.sh --quick

proto:
	bash scripts/gen-proto.sh

clean:
	rm -rf bin .cache
