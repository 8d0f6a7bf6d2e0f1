#!/usr/bin/env bash
# dumps/bench/generate-large.sh [large-heap] [threads-1000]
#
# Benchmark dumps for dumpshell (NOT run in CI, output NOT committed): builds them with
# dumps/generate.sh into dumps/build/bench/ (gitignored) with the same truth files.
#   large-heap    21,000,000 objects, ~1.85 GB of live heap (dump ~2 GB, needs ~4 GB RAM + disk)
#   threads-1000  1,000 blocked threads (plus the runtime's own)
# Default: both.  zstd level 3 (-19 on a 2 GB dump takes very long); dacprobe samples one
# object in 100,000 for its GetObjectData size cross-check on the large heap (the walk itself
# still visits every object, which takes a few minutes in Python).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DUMPS=$(dirname "$HERE")
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(threads-1000 large-heap)
for t in "${targets[@]}"; do
    case $t in
        large-heap)   extra='--check-every 100000' ;;
        threads-1000) extra='--check-every 50' ;;
        *) echo "unknown benchmark '$t' (large-heap, threads-1000)" >&2; exit 1 ;;
    esac
    OUT_DIR=$DUMPS/build/bench ZSTD_LEVEL=${ZSTD_LEVEL:-3} READY_TIMEOUT=600 \
        DACPROBE_ARGS="$extra" "$DUMPS/generate.sh" "$t"
done
