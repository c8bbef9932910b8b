# Developer shortcuts. README's two commands (scripts/demo.sh and
# scripts/test.sh) need nothing but Go and apt.

GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.PHONY: all build test test-short vet fuzz bench demo deps docker clean

all: build

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/ ./cmd/...

deps:
	bash scripts/setup.sh

test:
	bash scripts/test.sh

# Unit tests and the faster integration tests.
test-short:
	$(GO) test -short -count=1 ./...

vet:
	gofmt -l . | (! grep .) && $(GO) vet ./...

fuzz:
	FUZZTIME=$${FUZZTIME:-60s} bash scripts/test.sh

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./internal/... ./pool/ ./proxy/

demo:
	bash scripts/demo.sh

docker:
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t tpproxy:$(VERSION) .

clean:
	rm -rf bin
