#!/bin/sh
# Generate the protobuf/gRPC Python package `tavla` and the descriptor set
# `tavla.pb` (for the gateway's gRPC-JSON transcoder) into OUT_DIR, with the
# same protoc flags as `make proto` minus the mypy stubs (not needed at runtime).
# Used by the image build (deploy/docker/Dockerfile); run from the repository root.
#
#   deploy/docker/gen-protos.sh OUT_DIR        (PYTHON=... selects the interpreter)
set -eu

out=${1:?usage: gen-protos.sh OUT_DIR}
python=${PYTHON:-python}
site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
protos=$(find protos -name '*.proto' | LC_ALL=C sort)
[ -n "$protos" ] || { echo "gen-protos.sh: no .proto files under ./protos" >&2; exit 1; }

mkdir -p "$out"
# shellcheck disable=SC2086  # one argument per proto file
"$python" -m grpc_tools.protoc -Iprotos -I"$site" \
    --python_out="$out" --grpc_python_out="$out" \
    --include_imports --descriptor_set_out="$out/tavla.pb" \
    $protos
find "$out/tavla" -type d -exec touch {}/__init__.py \;
