#!/usr/bin/env bash
# dumps/aspnet/generate-net11.sh [async-requests] [sync-requests]
#
# The hung ASP.NET Core service of aspnethang.cs (see generate.sh beside this file) on .NET 11.0.0
# and ASP.NET Core 11.0.0, from NuGet alone: the SDK here (10) cannot target net11.0, so the app
# is compiled by the Roslyn toolset's csc (Microsoft.Net.Compilers.Toolset 5.9.0, runtime-async
# on) against Microsoft.NETCore.App.Ref and Microsoft.AspNetCore.App.Ref 11.0.0, and runs on a
# private dotnet root holding exactly Microsoft.NETCore.App 11.0.0 (the runtime pack) and
# Microsoft.AspNetCore.App 11.0.0 (Microsoft.AspNetCore.App.Runtime.linux-x64). Requests are sent
# with curl to 127.0.0.1. Dumped with that runtime's createdump --withheap; truths as for the
# SDK corpus: dacprobe (the pack's DAC) -> .dac.json, tools/truth.py finish/check, the
# per-command DAC truths (tools/dac_extras.sh), SOS (tools/sos.sh), ClrMD (tools/clrmd/truth.sh).
# Output: dumps/aspnethang-net11.* when the compressed dump is at most MAX_MB (default 12) MB,
# else (or with OUT_DIR) dumps/build/aspnet11/out/. Run as root (ptrace).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DUMPS=$(dirname "$HERE")
B=$DUMPS/build/aspnet11
NAME=aspnethang-net11
NASYNC=${1:-40}
NSYNC=${2:-3}
PORT=${PORT:-5919}
VER=11.0.0
TOOLSET=5.9.0
MAX_MB=${MAX_MB:-12}
NUGET=${NUGET_PACKAGES:-$HOME/.nuget/packages}
CSC=$NUGET/microsoft.net.compilers.toolset/$TOOLSET/tasks/netcore/bincore/csc.dll
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
die() { echo "aspnet/generate-net11.sh: $*" >&2; exit 1; }
log() { echo "== $*" >&2; }
[ "$(id -u)" = 0 ] || die "run as root (createdump needs ptrace)"
command -v dotnet >/dev/null || die "the .NET SDK (dotnet) is needed (it hosts csc and the muxer)"
command -v curl >/dev/null || die "curl is needed"
command -v zstd >/dev/null || die "zstd is needed"
mkdir -p "$B"

# ---- packs
pack=$NUGET/microsoft.netcore.app.runtime.linux-x64/$VER/runtimes/linux-x64
apack=$NUGET/microsoft.aspnetcore.app.runtime.linux-x64/$VER/runtimes/linux-x64
ref=$NUGET/microsoft.netcore.app.ref/$VER/ref/net11.0
aref=$NUGET/microsoft.aspnetcore.app.ref/$VER/ref/net11.0
if [ ! -f "$pack/native/libmscordaccore.so" ] || [ ! -d "$apack/lib" ] || [ ! -d "$ref" ] || [ ! -d "$aref" ] || [ ! -f "$CSC" ]; then
    log "dotnet restore the .NET / ASP.NET Core $VER packs and the Roslyn toolset $TOOLSET"
    mkdir -p "$B/fetch"
    cat > "$B/fetch/fetch.csproj" <<XML
<Project Sdk="Microsoft.NET.Sdk">
  <PropertyGroup><TargetFramework>net10.0</TargetFramework></PropertyGroup>
  <ItemGroup>
    <PackageDownload Include="Microsoft.NETCore.App.Runtime.linux-x64" Version="[$VER]" />
    <PackageDownload Include="Microsoft.NETCore.App.Ref" Version="[$VER]" />
    <PackageDownload Include="Microsoft.AspNetCore.App.Runtime.linux-x64" Version="[$VER]" />
    <PackageDownload Include="Microsoft.AspNetCore.App.Ref" Version="[$VER]" />
    <PackageDownload Include="Microsoft.Net.Compilers.Toolset" Version="[$TOOLSET]" />
  </ItemGroup>
</Project>
XML
    dotnet restore "$B/fetch/fetch.csproj" -v quiet >&2
fi

# ---- a private dotnet root: the muxer, hostfxr, Microsoft.NETCore.App and Microsoft.AspNetCore.App
root=$B/root
fx=$root/shared/Microsoft.NETCore.App/$VER
afx=$root/shared/Microsoft.AspNetCore.App/$VER
if [ ! -f "$root/.complete" ]; then
    log "dotnet root $root"
    rm -rf "$root"
    mkdir -p "$root/host/fxr/$VER" "$fx" "$afx"
    cp "$(readlink -f "$(command -v dotnet)")" "$root/dotnet"
    cp "$pack/native/libhostfxr.so" "$root/host/fxr/$VER/"
    cp "$pack"/lib/net11.0/* "$fx/"
    find "$pack/native" -maxdepth 1 -type f ! -name libhostfxr.so -exec cp {} "$fx/" \;
    cp "$apack"/lib/net11.0/* "$afx/"
    chmod +x "$root/dotnet" "$fx/createdump"
    touch "$root/.complete"
fi

# ---- compile (runtime-async on)
app=$B/app
rm -rf "$app"
mkdir -p "$app"
refs=()
for f in "$ref"/*.dll "$aref"/*.dll; do refs+=("-r:$f"); done
log "csc $TOOLSET (aspnethang, runtime-async on, $VER)"
dotnet exec "$CSC" -nologo -noconfig -nostdlib+ -langversion:preview -features:runtime-async=on \
    -target:exe -optimize+ -debug:portable -deterministic+ -nowarn:CS1998,CS4014,CS8002 \
    "${refs[@]}" "-out:$app/aspnethang.dll" "$HERE/aspnethang.cs" "$DUMPS/scenarios/common.cs" \
    > "$B/csc.log" 2>&1 || { cat "$B/csc.log" >&2; die "csc failed"; }
cat > "$app/aspnethang.runtimeconfig.json" <<JSON
{
  "runtimeOptions": {
    "tfm": "net11.0",
    "frameworks": [
      { "name": "Microsoft.NETCore.App", "version": "$VER" },
      { "name": "Microsoft.AspNetCore.App", "version": "$VER" }
    ],
    "configProperties": { "System.GC.Server": false, "System.Globalization.Invariant": true }
  }
}
JSON

# ---- run, load, dump
w=$B/run
rm -rf "$w"
mkdir -p "$w"
dmp=$w/$NAME.dmp
manifest=$w/$NAME.program.json
env -i PATH=/usr/bin:/bin HOME="$HOME" DOTNET_ROOT="$root" DOTNET_MULTILEVEL_LOOKUP=0 \
    "$root/dotnet" "$app/aspnethang.dll" "$manifest" "$PORT" "$NASYNC" "$NSYNC" > "$w/out" 2> "$w/err" &
runner=$!
cleanup() { kill -9 $runner 2>/dev/null || true; jobs -p | xargs -r kill 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 1 600); do
    grep -q '^listening' "$w/out" 2>/dev/null && break
    kill -0 $runner 2>/dev/null || { cat "$w/err" >&2; die "the app exited early"; }
    sleep 0.1
done
grep -q '^listening' "$w/out" || die "the app did not start listening"
log "$NASYNC requests to /orders/{id}, $NSYNC to /report"
for i in $(seq 1 "$NASYNC"); do curl -s -m 3600 -o /dev/null "http://127.0.0.1:$PORT/orders/$i" & done
for i in $(seq 1 "$NSYNC"); do curl -s -m 3600 -o /dev/null "http://127.0.0.1:$PORT/report" & done
pid=
for _ in $(seq 1 1200); do
    pid=$(sed -n 's/^ready \([0-9]*\).*/\1/p' "$w/out" 2>/dev/null | head -n1)
    [ -n "$pid" ] && break
    kill -0 $runner 2>/dev/null || { cat "$w/err" >&2; die "the app exited early"; }
    sleep 0.1
done
[ -n "$pid" ] || die "no 'ready' within 120 s (out: $(cat "$w/out"))"
[ "$pid" = "$runner" ] || die "ready pid $pid is not the app ($runner)"
awk -v f="$fx/libcoreclr.so" '$6 == f {found=1} END {exit !found}' "/proc/$pid/maps" || die "$fx/libcoreclr.so is not mapped"
log "createdump --withheap $pid"
"$fx/createdump" --withheap -f "$dmp" "$pid" > "$w/createdump.log" 2>&1 || { cat "$w/createdump.log" >&2; die "createdump failed"; }
cleanup
trap - EXIT
mver=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runtime"]["version"])' "$manifest")
[ "$mver" = "$VER" ] || die "the app ran on $mver, not $VER"

# ---- compress and truths (staged in $w/out/)
st=$w/stage
mkdir -p "$st"
log "zstd -19 ($(stat -c %s "$dmp") bytes)"
zstd -19 -T2 -q -f "$dmp" -o "$st/$NAME.dmp.zst"
chmod 644 "$st/$NAME.dmp.zst"
dac=$fx/libmscordaccore.so
log "dacprobe"
python3 "$DUMPS/tools/dacprobe/dacprobe.py" --dac "$dac" "$dmp" > "$w/$NAME.dac.raw.json"
python3 - "$manifest" "$w/manifest.full.json" "$VER" "$TOOLSET" <<'EOF'
import json, subprocess, sys
src, dst, ver, toolset = sys.argv[1:5]
m = json.load(open(src, encoding='utf-8'))
m['scenario'] = 'aspnethang-net11'
m['program'] = 'aspnethang'
sdk = subprocess.run(['dotnet', '--version'], capture_output=True, text=True).stdout.strip()
m['app'] = {'shape': 'framework-dependent', 'compiler': 'roslyn', 'sdk': sdk, 'tfm': 'net11.0',
            'runtime_pack': 'Microsoft.NETCore.App.Runtime.linux-x64 ' + ver,
            'aspnetcore_pack': 'Microsoft.AspNetCore.App.Runtime.linux-x64 ' + ver,
            'configuration': 'Release',
            'compiler_version': 'Microsoft.Net.Compilers.Toolset %s (csc -langversion:preview -features:runtime-async=on)' % toolset,
            'runtime_async': True, 'framework_runtime_async': True}
m['dump'] = {'kind': 'withheap', 'tool': 'createdump ' + ver}
json.dump(m, open(dst, 'w', encoding='utf-8'), indent=2, ensure_ascii=False)
EOF
python3 "$DUMPS/tools/truth.py" finish --name "$NAME" --raw "$w/$NAME.dac.raw.json" --manifest "$w/manifest.full.json" \
    --dump "$dmp" --zst "$st/$NAME.dmp.zst" --out-dir "$st"
python3 "$DUMPS/tools/truth.py" check "$st/$NAME.manifest.json" "$st/$NAME.dac.json" \
    || die "the manifest and the DAC disagree (outputs left in $st)"
log "per-command DAC truths"
bash "$DUMPS/tools/dac_extras.sh" "$NAME" "$dmp" "$dac" "$st/$NAME.dac.json" "$st"
log "SOS"
bash "$DUMPS/tools/sos.sh" "$dmp" "$st/$NAME.sos.txt" || { log "WARNING: tools/sos.sh failed"; rm -f "$st/$NAME.sos.txt"; }
if [ "${NO_CLRMD:-0}" != 1 ]; then
    log "ClrMD truth"
    bash "$DUMPS/tools/clrmd/truth.sh" "$dmp" "$dac" "$st/$NAME.clrmd.json" > "$w/clrmd.log" 2>&1 \
        || { tail -n 20 "$w/clrmd.log" >&2; log "WARNING: ClrMD failed"; rm -f "$st/$NAME.clrmd.json"; }
fi
zsz=$(stat -c %s "$st/$NAME.dmp.zst")
out=${OUT_DIR:-}
if [ -z "$out" ]; then
    if [ "$zsz" -le $((MAX_MB * 1024 * 1024)) ]; then out=$DUMPS; else out=$B/out; fi
fi
mkdir -p "$out"
mv -f "$st"/* "$out/"
[ "${KEEP_DUMPS:-0}" = 1 ] || rm -f "$dmp"
log "$NAME: $(numfmt --to=iec "$zsz") compressed ($(stat -c %s "$w/$NAME.dac.raw.json") bytes of dacprobe output) -> $out"
