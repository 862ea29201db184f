#!/usr/bin/env bash
# Regenerates the Go code for sdk/proto/skill.proto. The generated files are
# committed; run this after editing the .proto. protoc comes from Debian's
# protobuf-compiler; the Go plugins are pinned here so output is reproducible.
set -euo pipefail
cd "$(dirname "$0")/.."

PROTOC_GEN_GO=v1.36.12
PROTOC_GEN_GO_GRPC=v1.5.1

if ! command -v protoc >/dev/null; then
  echo "gen-proto: protoc not found; install Debian's protobuf-compiler (apt-get install protobuf-compiler)" >&2
  exit 1
fi
# The pinned plugins go to a folder of their own, first on PATH, so that
# protoc runs exactly these: not whatever GOBIN, another GOPATH entry or
# PATH already holds.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
GOFLAGS='' GOBIN="$bin" go install "google.golang.org/protobuf/cmd/protoc-gen-go@${PROTOC_GEN_GO}"
GOFLAGS='' GOBIN="$bin" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@${PROTOC_GEN_GO_GRPC}"

PATH="$bin:$PATH" protoc \
  --proto_path=sdk/proto \
  --go_out=sdk/proto --go_opt=paths=source_relative \
  --go-grpc_out=sdk/proto --go-grpc_opt=paths=source_relative \
  sdk/proto/skill.proto
echo "gen-proto: regenerated sdk/proto/skill.pb.go and skill_grpc.pb.go"
