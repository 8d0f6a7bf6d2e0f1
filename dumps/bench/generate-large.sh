#!/usr/bin/env bash
# dumps/bench/generate-large.sh [--rt net8|net10]... [--gcore] [large-heap] [threads-1000] [manytypes]
#
# Benchmark dumps for dumpshell (NOT run in CI, output NOT committed), into dumps/build/bench/
# (gitignored):
#   large-heap    21,000,000 Bench.Item objects, ~1.85 GB of live heap (core ~1.9 GB; needs
#                 ~4 GB RAM and the disk for the core)
#   threads-1000  1,000 blocked threads (plus the runtime's own)
#   manytypes     ~7,600 distinct types of the program's own (generic instantiations over its
#                 classes and structs, closures, delegates) from 4 generated libraries loaded at
#                 startup, ~320,000 objects (core ~100-150 MB)
# large-heap and threads-1000 from bench/large.cs (+ scenarios/common.cs), compiled by the .NET
# SDK (Bench.csproj); manytypes from bench/manytypes.cs (+ common.cs) and the libraries
# bench/manytypes-gen.py writes into dumps/build/bench/manytypes-src-<rt>/; each published
# self-contained against a NuGet runtime pack: .NET 8 = 8.0.33, .NET 10 = 10.0.14
# (restored by `dotnet restore`; no PyPI, no mcs). Each is run until it prints
# "ready <pid>" and dumped with that pack's own `createdump --withheap`, or with `--gcore` by gdb's
# `gcore` (every written page and the whole reserved GC range: large-heap's core is ~3.4 GB; the
# names get a `-gcore` suffix, e.g. large-heap-net10-gcore).
#
# Output per <target>-<rt> (e.g. large-heap-net8):
#   dumps/build/bench/<target>-<rt>.dmp            the raw core (not compressed: bench.sh maps it)
#   dumps/build/bench/<target>-<rt>.manifest.json  the program's manifest
#   dumps/build/bench/<target>-<rt>.dac            one line: the pack's libmscordaccore.so (bench.sh reads it)
# Default: --rt net8 --rt net10, both targets. Run as root (createdump needs ptrace).
# Environment: READY_TIMEOUT (seconds, default 600); BENCH_BALLAST_MB (large-heap: that many MiB
# more of live byte[], e.g. 600 with --gcore for a 3 GB core; not in the manifest's counts).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DUMPS=$(dirname "$HERE")
B=$DUMPS/build/bench
mkdir -p "$B"
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

rts=() targets=() gcore=
while [ $# -gt 0 ]; do
    case $1 in
        --rt) rts+=("$2"); shift 2 ;;
        --gcore) gcore=-gcore; shift ;;
        large-heap|threads-1000|manytypes) targets+=("$1"); shift ;;
        *) echo "usage: $0 [--rt net8|net10]... [--gcore] [large-heap] [threads-1000] [manytypes]" >&2; exit 2 ;;
    esac
done
[ ${#rts[@]} -gt 0 ] || rts=(net8 net10)
[ ${#targets[@]} -gt 0 ] || targets=(threads-1000 large-heap manytypes)
[ "$(id -u)" = 0 ] || { echo "generate-large.sh: run as root (createdump needs ptrace)" >&2; exit 1; }
command -v dotnet >/dev/null || { echo "generate-large.sh: the .NET SDK (dotnet) is needed" >&2; exit 1; }

runner=
trap '[ -z "$runner" ] || kill $runner 2>/dev/null || true' EXIT   # never leave a program running

for rt in "${rts[@]}"; do
    case $rt in
        net8)  tf=net8.0;  ver=8.0.33 ;;
        net10) tf=net10.0; ver=10.0.14 ;;
        *) echo "unknown runtime '$rt' (net8, net10)" >&2; exit 1 ;;
    esac
    app=$B/app-$rt
    need_large= need_many=
    for t in "${targets[@]}"; do [ "$t" = manytypes ] && need_many=1 || need_large=1; done
    if [ -n "$need_large" ] && { [ ! -x "$app/large" ] || [ "$HERE/large.cs" -nt "$app/large" ] || [ "$HERE/Bench.csproj" -nt "$app/large" ]; }; then
        echo "== publish large.cs for $ver (self-contained) -> $app" >&2
        rm -rf "$app"
        props=(-p:TargetFramework=$tf -p:RuntimeFrameworkVersion=$ver -p:SelfContained=true
               "-p:BaseIntermediateOutputPath=$B/obj-$rt/" "-p:BaseOutputPath=$B/bin-$rt/")
        # restore first, with the same properties (publish's implicit restore misses the TF)
        dotnet restore "$HERE/Bench.csproj" -r linux-x64 "${props[@]}" --nologo -v quiet >&2
        dotnet publish "$HERE/Bench.csproj" -c Release -r linux-x64 --self-contained true --no-restore \
            "${props[@]}" -o "$app" --nologo -v quiet >&2
    fi
    many=$B/app-many-$rt
    if [ -n "$need_many" ] && { [ ! -x "$many/manytypes" ] || [ "$HERE/manytypes.cs" -nt "$many/manytypes" ] || [ "$HERE/manytypes-gen.py" -nt "$many/manytypes" ]; }; then
        src=$B/manytypes-src-$rt
        echo "== generate the manytypes libraries ($src) and publish manytypes.cs for $ver (self-contained) -> $many" >&2
        rm -rf "$many" "$src"
        python3 "$HERE/manytypes-gen.py" "$src" --tf $tf
        # the target framework is in each generated project file (a -p:TargetFramework would not
        # reach the referenced libraries); restore with the runtime identifier and pack version
        dotnet restore "$src/ManyTypes/ManyTypes.csproj" -r linux-x64 -p:RuntimeFrameworkVersion=$ver -p:SelfContained=true --nologo -v quiet >&2
        dotnet publish "$src/ManyTypes/ManyTypes.csproj" -c Release -r linux-x64 --self-contained true --no-restore \
            -p:RuntimeFrameworkVersion=$ver -o "$many" --nologo -v quiet >&2
    fi
    for t in "${targets[@]}"; do
        name=$t-$rt$gcore
        out=$B/$name.out err=$B/$name.err
        rm -f "$B/$name.dmp" "$out" "$err"
        : >"$out"   # exists before the program starts: the wait loop below reads it at once
        echo "== run $name" >&2
        # a clean environment: no DOTNET_* from the caller (server GC, DATAS etc. would change the dump)
        if [ "$t" = manytypes ]; then dir=$many; cmd=("$many/manytypes" "$B/$name.manifest.json")
        else dir=$app; cmd=("$app/large" "$B/$name.manifest.json" "$t"); fi
        [ -x "$dir/createdump" ] && [ -f "$dir/libmscordaccore.so" ] || { echo "no createdump/DAC in $dir" >&2; exit 1; }
        env -i PATH=/usr/bin:/bin HOME=/root DOTNET_gcServer=0 ${BENCH_BALLAST_MB:+BENCH_BALLAST_MB=$BENCH_BALLAST_MB} "${cmd[@]}" >"$out" 2>"$err" &
        runner=$!
        pid=
        for _ in $(seq 1 $((${READY_TIMEOUT:-600} * 10))); do
            pid=$(sed -n 's/^ready \([0-9]*\).*/\1/p' "$out" 2>/dev/null | head -n1 || true)
            [ -n "$pid" ] && break
            kill -0 $runner 2>/dev/null || { echo "$name exited early:" >&2; cat "$err" >&2; exit 1; }
            sleep 0.1
        done
        [ -n "$pid" ] || { echo "$name: no 'ready' within ${READY_TIMEOUT:-600}s" >&2; kill $runner; exit 1; }
        if [ -n "$gcore" ]; then
            echo "== gdb gcore $name (pid $pid)" >&2
            gdb -nx -batch -p "$pid" -ex "gcore $B/$name.dmp" > "$B/$name.gcore.log" 2>&1 && [ -s "$B/$name.dmp" ] \
                || { cat "$B/$name.gcore.log" >&2; kill $runner; exit 1; }
        else
            echo "== createdump --withheap $name (pid $pid)" >&2
            "$dir/createdump" --withheap -f "$B/$name.dmp" "$pid" >&2 || { kill $runner; exit 1; }
        fi
        kill $runner 2>/dev/null || true
        wait $runner 2>/dev/null || true
        runner=
        echo "$dir/libmscordaccore.so" > "$B/$name.dac"
        ls -la "$B/$name.dmp" >&2
    done
done
