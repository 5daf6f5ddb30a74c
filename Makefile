# imagectl: two commands on a fresh machine (as root):
#   make demo   runs the whole pipeline on the embedded demo spec
#   make test   runs the tests (unit + end-to-end against real daemons)
SHELL := /bin/bash
export GOTOOLCHAIN := local
export GOFLAGS := -buildvcs=false
# go-nvml declares functions that CUDA 13 deprecates: keep the build log readable.
export CGO_CFLAGS := -O2 -g -Wno-deprecated-declarations
GO ?= go

.PHONY: all build deps tools up down test unit bench demo lint fmt clean FORCE

all: build

build: bin/imagectl bin/imagectl-init bin/imagectl-init-linux-arm64

bin/imagectl: FORCE
	$(GO) build -o $@ ./cmd/imagectl

# The init is static and CGO-free so that it starts on any base image.
bin/imagectl-init: FORCE
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $@ ./cmd/imagectl-init

# The init of linux/arm64 images (build.WithPlatformInit's default beside bin/imagectl-init).
bin/imagectl-init-linux-arm64: FORCE
	GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $@ ./cmd/imagectl-init

# Debian packages the tests and the demo need (runc, debootstrap, podman, tini, ...).
deps:
	hack/deps.sh

# buildkitd, buildctl, registry, crane, cosign, containerd: built from the versions pinned in
# tools/go.mod; policy-tester, kyverno (the admission engines) and promtool from modules of their
# own under tools/. `make demo` builds only the demo's (hack/tools.sh demo).
tools:
	hack/tools.sh
	@[ "$${K8S:-}" != 1 ] || hack/tools.sh k8s

# Start buildkitd, the registry and the wheel index on loopback; writes .cache/env.
# K8S=1 also starts a local Kubernetes on containerd (hack/k8s.sh; bin/kube from tools/k8s).
up: deps tools build
	hack/up.sh

# Stop exactly what `make up` started (by recorded PID).
down:
	hack/down.sh

# Everything: deps, tools, daemons, unit and end-to-end tests; daemons stopped after.
# The local Kubernetes is part of it (K8S=1: bin/kube built once, the cluster
# started, its e2e test run); K8S=0 leaves it out, and that test then skips.
test: export K8S ?= 1
test: deps tools build
	hack/test.sh

# Unit tests only (no daemons).
unit:
	$(GO) test ./...

bench: deps tools build
	hack/bench.sh

# Installs, builds and starts only what the demo uses (hack/demo.sh: deps, tools and up
# with "demo"), not the test suite's engines, arm64 base or upstream stand-ins.
demo:
	hack/demo.sh

# go vet, gofmt, staticcheck and deadcode -test (hack/deadcode.sh: every
# unreachable function is removed or named with a reason in hack/deadcode.allow).
# staticcheck and deadcode are built once into bin/ from tools/lint/go.mod
# (hack/tools.sh lint, ~1 min cold), rebuilt only when a pinned version moves.
lint:
	hack/tools.sh lint
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	bin/staticcheck -tags gpu ./...
	hack/deadcode.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

clean: down
	rm -rf bin .cache
