#!/usr/bin/env bash
# Regenerates schemas/offlinebox.pb.go from schemas/offlinebox.proto,
# installing protoc and protoc-gen-go at the versions the file was made with
# when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

protoc_gen_go_version=v1.36.12

command -v protoc >/dev/null 2>&1 || scripts/ensure-packages.sh protobuf-compiler
gobin="$(go env GOBIN)"
[ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
plugin="$(command -v protoc-gen-go || true)"
if [ -z "$plugin" ] || ! "$plugin" --version 2>/dev/null | grep -q "$protoc_gen_go_version"; then
  go install "google.golang.org/protobuf/cmd/protoc-gen-go@$protoc_gen_go_version"
  plugin="$gobin/protoc-gen-go"
fi

cd schemas
protoc --plugin=protoc-gen-go="$plugin" --go_out=. --go_opt=paths=source_relative offlinebox.proto
echo "regenerated schemas/offlinebox.pb.go ($(protoc --version), protoc-gen-go $protoc_gen_go_version)"
