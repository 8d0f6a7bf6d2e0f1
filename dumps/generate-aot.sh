#!/usr/bin/env bash
# dumps/generate-aot.sh [name...]
#
# Builds dumpshell's NativeAOT corpus: the scenario programs (dumps/scenarios/) published with
# PublishAot (no JIT, no DAC, no libcoreclr.so: the runtime is linked into the executable) and
# dumped on Linux, with the truths a reader of such dumps is checked against.
# Names: <scenario>-<rt>-aot[-gcore][-nodbg]
#   scenario  hang heap async crash (crash: the runtime itself writes the dump on the unhandled
#             exception, through createdump)
#   rt        net8 net9 net10: `dotnet publish dumps/sdk/Scenario.csproj -p:PublishAot=true`
#             with the .NET SDK (the SDK picks the ILCompiler package: its newest patch for the
#             TFM that this SDK knows; the manifest records it);
#             net11: the .NET 10 SDK cannot target net11.0, so the build is driven by hand as the
#             ILCompiler 11.0.0 package's targets do it: Roslyn (Microsoft.Net.Compilers.Toolset
#             $CSC_VERSION) against Microsoft.NETCore.App.Ref 11.0.0, then that package's `ilc`
#             with the Microsoft.NETCore.App.Runtime.NativeAOT.linux-x64 11.0.0 framework, then
#             the link (gcc or clang), then objcopy's symbol stripping into <app>.dbg.
#   -gcore    dumped by gdb's gcore (leaves out the file pages the process never wrote: the
#             executable's code and read-only data are not in the dump) instead of createdump
#   -nodbg    the executable's .dbg (its symbol table) is deleted right after the truths are read
#             from it: no copy of it exists anywhere, the reader gets none
# Per dump:
#   1. build (dumps/build/aot/<build key>/), keeping <app> (stripped, .gnu_debuglink) and <app>.dbg;
#   2. run in a clean environment until "ready <pid>", dump: `createdump --full --nativeaot`
#      (createdump of Microsoft.NETCore.App.Runtime.linux-x64 of the same version: NativeAOT
#      supports only full dumps), or gcore; crash-*: DOTNET_DbgEnableMiniDump=1 with
#      DbgMiniDumpType=4 and createdump copied beside the executable (where the NativeAOT runtime
#      looks for it);
#   3. zstd -19 -> dumps/<name>.dmp.zst; <name>.manifest.json (the program's, plus app.shape
#      "nativeaot" and the build and dump facts); <name>.dac.json (no DAC exists for NativeAOT: a
#      note); <name>.symbols.json (tools/aotsymbols.py: the .dbg's symbols of the manifest's
#      methods and types, and the runtime's debug header read from the core); <name>.sos.txt
#      (SOS `crashinfo` of dotnet-dump 10.0.750501, when ~/.dotnet/tools/dotnet-dump exists);
#   4. -gcore dumps: the executable is copied to dumps/images/<name>/ (the dump lacks its pages).
# Work files: dumps/build/aot/ and dumps/build/<name>/ (gitignored).
# Environment: KEEP_DUMPS=1 (keep raw cores), ZSTD_LEVEL (19), READY_TIMEOUT (120 s),
#   OUT_DIR (default dumps/), CSC_VERSION (5.9.0), NO_SOS=1.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
BUILD=$HERE/build
ZSTD_LEVEL=${ZSTD_LEVEL:-19}
OUT=${OUT_DIR:-$HERE}
CSC_VERSION=${CSC_VERSION:-5.9.0}
SYMTOOL=$HERE/tools/aotsymbols.py
DOTNET_DUMP=${DOTNET_DUMP:-$HOME/.dotnet/tools/dotnet-dump}
MAX_ZST=$((30 * 1024 * 1024))
NUGET=${NUGET_PACKAGES:-$HOME/.nuget/packages}

# The committed set (dumps/README.md, "The NativeAOT corpus"), in priority order.
ALL=(hang-net10-aot heap-net10-aot async-net10-aot crash-net10-aot
     hang-net8-aot crash-net8-aot hang-net11-aot crash-net11-aot
     hang-net10-aot-gcore heap-net11-aot-nodbg)

die() { echo "generate-aot.sh: error: $*" >&2; exit 1; }
log() { echo "== $*" >&2; }

[ "$(id -u)" = 0 ] || die "run as root (createdump and gcore need ptrace)"

names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${ALL[@]}")

install_tools() {
    local pkgs=()
    command -v zstd >/dev/null || pkgs+=(zstd)
    command -v python3 >/dev/null || pkgs+=(python3)
    command -v gdb >/dev/null || pkgs+=(gdb)
    command -v objcopy >/dev/null || pkgs+=(binutils)
    command -v clang >/dev/null || command -v gcc >/dev/null || pkgs+=(gcc)
    if [ ${#pkgs[@]} -gt 0 ]; then
        log "apt-get install ${pkgs[*]}"
        apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${pkgs[@]}"
    fi
    command -v dotnet >/dev/null || die "the .NET SDK (dotnet) is needed"
}

# the C compiler driver that links (the ILCompiler targets default to clang; gcc works)
linker() { if command -v clang >/dev/null; then echo clang; else echo gcc; fi; }

fetch() {  # restore packages: AotVersion (the net11 toolchain) and/or CreateDumpVersions
    local aot=$1 cd=$2
    dotnet restore "$HERE/aot/FetchAot.csproj" -nologo -v:q "-p:AotVersion=$aot" \
        "-p:CscVersion=$CSC_VERSION" "-p:CreateDumpVersions=$cd" \
        "-p:BaseIntermediateOutputPath=$BUILD/fetchaot/obj/" >&2
}

createdump_of() {  # <version> -> path of that runtime pack's createdump
    local v=$1 p
    p=$NUGET/microsoft.netcore.app.runtime.linux-x64/$v/runtimes/linux-x64/native/createdump
    [ -f "$p" ] || fetch "" "$v"
    [ -f "$p" ] || die "no createdump $v (Microsoft.NETCore.App.Runtime.linux-x64 $v)"
    echo "$p"
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

# ---------------------------------------------------------------- builds
# Each sets APP (the stripped executable, with APP.dbg beside it), AOT_VERSION (the ILCompiler /
# NativeAOT runtime version), BUILD_HOW (one line for the manifest) and TFM.

build_sdk() {  # <prog> <tfm> <dir>
    local prog=$1 tfm=$2 bw=$3 link
    link=$(linker)
    log "[$prog $tfm] dotnet publish -p:PublishAot=true (linker $link)"
    rm -rf "$bw/app"
    mkdir -p "$bw"
    dotnet publish "$HERE/sdk/Scenario.csproj" -nologo -v:q -c Release -r linux-x64 \
        -p:Scenario="$prog" -p:ScenarioTfm="$tfm" -p:PublishAot=true \
        -p:CppCompilerAndLinker="$link" \
        "-p:BaseIntermediateOutputPath=$bw/obj/" "-p:BaseOutputPath=$bw/bin/" -o "$bw/app" \
        > "$bw/publish.log" 2>&1 || { cat "$bw/publish.log" >&2; die "[$prog $tfm] publish failed"; }
    APP=$bw/app/$prog
    [ -x "$APP" ] && [ -f "$APP.dbg" ] || die "[$prog $tfm] no $APP / $APP.dbg"
    # the version the SDK chose: the framework ILC compiled against (named in ILC's response file)
    local rsp
    rsp=$(find "$bw/obj" -name "$prog.ilc.rsp" | head -n1)
    AOT_VERSION=$(grep -m1 'System.Private.CoreLib.dll' "$rsp" | sed -n 's#.*/\([0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*\)/.*#\1#p')
    [ -n "$AOT_VERSION" ] || die "[$prog $tfm] cannot tell the ILCompiler version from $rsp"
    cp "$rsp" "$bw/ilc.rsp"
    BUILD_HOW="dotnet publish -p:PublishAot=true (SDK $(dotnet --version), ILCompiler $AOT_VERSION chosen by the SDK, linker $link)"
}

build_manual() {  # <prog> <version> <dir>: the ILCompiler package's build, driven by hand
    local prog=$1 v=$2 bw=$3 tfm=net${2%%.*}.0 link
    link=$(linker)
    local ref=$NUGET/microsoft.netcore.app.ref/$v/ref/$tfm
    local csc=$NUGET/microsoft.net.compilers.toolset/$CSC_VERSION/tasks/netcore/bincore/csc.dll
    local ilc=$NUGET/runtime.linux-x64.microsoft.dotnet.ilcompiler/$v/tools/ilc
    local fw=$NUGET/microsoft.netcore.app.runtime.nativeaot.linux-x64/$v/runtimes/linux-x64
    [ -f "$csc" ] && [ -d "$ref" ] && [ -x "$ilc" ] && [ -d "$fw/native" ] || fetch "$v" ""
    [ -f "$csc" ] && [ -d "$ref" ] && [ -x "$ilc" ] && [ -d "$fw/native" ] || die "packages for $v missing"
    log "[$prog $tfm] csc $CSC_VERSION + ilc $v + $link (by hand)"
    rm -rf "$bw"
    mkdir -p "$bw/obj" "$bw/app"
    local -a srcs=("$HERE/scenarios/$prog.cs")
    [ "$prog" = hang ] || srcs+=("$HERE/scenarios/common.cs")
    # the compiler: as the SDK calls it for Scenario.csproj (Release, unsafe, no implicit usings)
    {
        echo "-nologo"; echo "-noconfig"; echo "-nostdlib+"; echo "-target:exe"; echo "-unsafe+"
        echo "-optimize+"; echo "-deterministic+"; echo "-debug:portable"; echo "-langversion:latest"
        echo "-nowarn:CS0162,CS0168,CS0169,CS0219,CS0414,CS0649,CS1998,CS4014,CS8321,SYSLIB0050,SYSLIB0011"
        echo "-out:$bw/obj/$prog.dll"
        for r in "$ref"/*.dll; do echo "-r:$r"; done
        printf '%s\n' "${srcs[@]}"
    } > "$bw/csc.rsp"
    dotnet exec "$csc" "@$bw/csc.rsp" > "$bw/csc.log" 2>&1 || { cat "$bw/csc.log" >&2; die "[$prog] csc failed"; }
    # ILC: the arguments Microsoft.NETCore.Native.targets ($v) passes for a default PublishAot
    # Release build on linux-x64 (InvariantGlobalization, as Scenario.csproj sets it)
    {
        echo "$bw/obj/$prog.dll"
        echo "-o:$bw/obj/$prog.o"
        for r in "$fw"/lib/"$tfm"/*.dll; do echo "-r:$r"; done
        for r in "$fw"/native/System.Private.*.dll; do echo "-r:$r"; done
        echo "--targetos:linux"; echo "--targetarch:x64"; echo "--dehydrate"; echo "-O"; echo "-g"
        echo "--exportsfile:$bw/obj/$prog.exports"
        echo "--export-dynamic-symbol:DotNetRuntimeContractDescriptor"
        for a in System.Private.CoreLib System.Private.StackTraceMetadata System.Private.TypeLoader System.Private.Reflection.Execution; do
            echo "--initassembly:$a"
        done
        for lib in System.Native System.IO.Compression.Native System.Net.Security.Native System.Security.Cryptography.Native.OpenSsl; do
            echo "--directpinvoke:$lib"
        done
        for f in System.Diagnostics.Tracing.EventSource.IsSupported=false System.Globalization.Invariant=true \
                 System.Globalization.PredefinedCulturesOnly=true System.Resources.ResourceManager.AllowCustomResourceTypes=false \
                 System.Resources.UseSystemResourceKeys=false System.Runtime.CompilerServices.RuntimeFeature.IsDynamicCodeSupported=false \
                 System.Runtime.InteropServices.BuiltInComInterop.IsSupported=false System.StartupHookProvider.IsSupported=false \
                 System.Runtime.Serialization.EnableUnsafeBinaryFormatterSerialization=false \
                 System.Reflection.Metadata.MetadataUpdater.IsSupported=false System.Text.Encoding.EnableUnsafeUTF7Encoding=false \
                 System.Runtime.InteropServices.EnableConsumingManagedCodeFromNativeHosting=false \
                 System.Runtime.InteropServices.EnableCppCLIHostActivation=false \
                 System.Threading.Thread.EnableAutoreleasePool=false System.Linq.Enumerable.IsSizeOptimized=true; do
            echo "--feature:$f"; echo "--runtimeknob:$f"
        done
        echo "--runtimeknob:RUNTIME_IDENTIFIER=linux-x64"
        echo "--stacktracedata:frames"; echo "--scanreflection"; echo "--methodbodyfolding:generic"
        echo "--nowarn:CS1998;CS4014;IL2121"; echo "--singlewarn"; echo "--nosinglewarnassembly:$prog"
        echo "--resilient"
        echo "--generateunmanagedentrypoints:System.Private.CoreLib,HIDDEN"
        echo "--feature:System.Diagnostics.Debugger.IsSupported=false"
    } > "$bw/ilc.rsp"
    "$ilc" "@$bw/ilc.rsp" > "$bw/ilc.log" 2>&1 || { cat "$bw/ilc.log" >&2; die "[$prog] ilc failed"; }
    # the link: Microsoft.NETCore.Native.Unix.targets' LinkerArg list for that build, in its order
    local n=$fw/native
    APP=$bw/app/$prog
    "$link" "$bw/obj/$prog.o" -o "$APP" -Wl,--version-script="$bw/obj/$prog.exports" -Wl,--export-dynamic \
        -Wl,-u,DotNetRuntimeContractDescriptor -gz=zlib $( [ "$link" = gcc ] && echo -fuse-ld=bfd ) \
        "$n/libSystem.Native.a" "$n/libSystem.IO.Compression.Native.a" "$n/libSystem.Net.Security.Native.a" \
        "$n/libSystem.Security.Cryptography.Native.OpenSsl.a" "$n/libbootstrapper.o" "$n/libRuntime.WorkstationGC.a" \
        "$n/libeventpipe-disabled.a" "$n/libRuntime.VxsortDisabled.a" "$n/libstandalonegc-disabled.a" \
        "$n/libaotminipal.a" "$n/libstdc++compat.a" "$n/libz.a" \
        $( [ -f "$n/libzstd.a" ] && echo "$n/libzstd.a" ) \
        "$n/libbrotlienc.a" "$n/libbrotlidec.a" "$n/libbrotlicommon.a" \
        -g -Wl,--build-id=sha1 -Wl,--as-needed -pthread -ldl -lrt -lm -pie -Wl,-pie -Wl,-z,relro -Wl,-z,now \
        -Wl,--eh-frame-hdr -Wl,--discard-all -Wl,--gc-sections > "$bw/link.log" 2>&1 \
        || { cat "$bw/link.log" >&2; die "[$prog] link failed"; }
    # StripSymbols (the default on Linux): the symbols go to <app>.dbg, the app keeps a debuglink
    objcopy --only-keep-debug "$APP" "$APP.dbg"
    objcopy --strip-debug --strip-unneeded "$APP"
    (cd "$bw/app" && objcopy --add-gnu-debuglink="$prog.dbg" "$prog")
    AOT_VERSION=$v
    BUILD_HOW="by hand: csc $CSC_VERSION (Microsoft.Net.Compilers.Toolset) against Microsoft.NETCore.App.Ref $v, ilc $v (runtime.linux-x64.Microsoft.DotNet.ILCompiler), $link, objcopy"
}

# ---------------------------------------------------------------- per dump
run_one() {
    local name=$1 scen rt kind=createdump dbg=keep part
    IFS=- read -r -a parts <<< "$name"
    [ ${#parts[@]} -ge 3 ] && [ "${parts[2]}" = aot ] || die "bad name '$name' (<scenario>-<rt>-aot[-gcore][-nodbg])"
    scen=${parts[0]}; rt=${parts[1]}
    for part in "${parts[@]:3}"; do
        case $part in
            gcore) kind=gcore ;;
            nodbg) dbg=withheld ;;
            *) die "unknown part '$part' in '$name'" ;;
        esac
    done
    case $scen in hang|heap|async|crash) ;; *) die "unknown scenario '$scen'" ;; esac
    [ $scen != crash ] || [ $kind != gcore ] || die "crash dumps are the runtime's own"
    local tfm=${rt}.0 bw=$BUILD/aot/$scen-$rt
    case $rt in
        net8|net9|net10) build_sdk "$scen" "$tfm" "$bw" ;;
        net11) build_manual "$scen" 11.0.0 "$bw" ;;
        *) die "unknown runtime '$rt' (net8 net9 net10 net11)" ;;
    esac
    local createdump
    createdump=$(createdump_of "$AOT_VERSION")

    local w=$BUILD/$name
    rm -rf "$w"
    mkdir -p "$w/app"
    # each dump runs its own copy of the build: -nodbg deletes its .dbg, crash adds createdump
    cp "$APP" "$APP.dbg" "$w/app/"
    local app=$w/app/$scen
    local dmp=$w/$name.dmp manifest=$w/$name.manifest.json tool pid rpid rc
    local -a runenv=(env -i PATH=/usr/bin:/bin HOME="$HOME" LANG=C.UTF-8)
    if [ $scen != crash ]; then
        log "[$name] run"
        "${runenv[@]}" "$app" "$manifest" "$name" > "$w/stdout.txt" 2> "$w/stderr.txt" &
        pid=$!
        rpid=$(wait_ready "$pid" "$w/stdout.txt" "$w/stderr.txt")
        [ "$rpid" = "$pid" ] || { kill -9 "$pid"; die "[$name] ready pid $rpid != launched pid $pid"; }
        grep -q " $app\$" "/proc/$pid/maps" || { kill -9 "$pid"; die "[$name] $app is not mapped"; }
        if [ $kind = gcore ]; then
            tool="gdb gcore $(gdb --version | head -n1 | awk '{print $NF}')"
            log "[$name] $tool $pid"
            gdb -nx -batch -p "$pid" -ex "gcore $dmp" > "$w/gcore.log" 2>&1 && [ -s "$dmp" ] \
                || { cat "$w/gcore.log" >&2; kill -9 "$pid"; die "[$name] gcore failed"; }
        else
            tool="createdump $AOT_VERSION --full --nativeaot"
            log "[$name] $tool $pid"
            "$createdump" --full --nativeaot -f "$dmp" "$pid" > "$w/createdump.log" 2>&1 \
                || { cat "$w/createdump.log" >&2; kill -9 "$pid"; die "[$name] createdump failed"; }
        fi
        kill -9 "$pid"; wait "$pid" 2>/dev/null || true
    else
        # the NativeAOT runtime execs the createdump beside its own module (PalCreateDump.cpp);
        # it writes only full dumps of NativeAOT apps (DbgMiniDumpType=4)
        cp "$createdump" "$w/app/createdump"
        tool="runtime (DbgEnableMiniDump=1, DbgMiniDumpType=4, createdump $AOT_VERSION)"
        log "[$name] run (the runtime writes the dump on the unhandled exception)"
        rc=0
        "${runenv[@]}" DOTNET_DbgEnableMiniDump=1 DOTNET_DbgMiniDumpType=4 DOTNET_DbgMiniDumpName="$dmp" \
            DOTNET_CreateDumpDiagnostics=1 "$app" "$manifest" "$name" > "$w/stdout.txt" 2> "$w/stderr.txt" || rc=$?
        [ $rc != 0 ] || die "[$name] the program was expected to crash"
        [ -s "$dmp" ] || { cat "$w/stdout.txt" "$w/stderr.txt" >&2; die "[$name] the runtime wrote no dump"; }
        echo "exit status $rc" >> "$w/stdout.txt"
    fi
    [ -s "$manifest" ] || die "[$name] no manifest written"
    local mver
    mver=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runtime"]["version"])' "$manifest")
    [ "$mver" = "$AOT_VERSION" ] || die "[$name] the program ran on $mver, not $AOT_VERSION"

    local st=$w/out
    mkdir -p "$st"
    log "[$name] zstd -$ZSTD_LEVEL ($(stat -c %s "$dmp") bytes)"
    nice zstd -"$ZSTD_LEVEL" -T2 -q -f "$dmp" -o "$st/$name.dmp.zst"
    chmod 644 "$st/$name.dmp.zst"
    local zsz
    zsz=$(stat -c %s "$st/$name.dmp.zst")
    [ "$zsz" -lt $MAX_ZST ] || die "[$name] compressed dump is $zsz bytes (limit $MAX_ZST)"

    # ---- truths: symbols and debug header (from the .dbg, the executable and the core)
    log "[$name] symbols and debug header"
    python3 "$SYMTOOL" --core "$dmp" --app "$app" --dbg "$app.dbg" --manifest "$manifest" \
        --name "$name" > "$st/$name.symbols.json" || die "[$name] aotsymbols.py failed"
    python3 - "$manifest" "$st/$name.manifest.json" "$kind" "$tool" "$tfm" "$AOT_VERSION" "$BUILD_HOW" "$dbg" "$app" "$st/$name.dac.json" "$name" <<'EOF'
import json, subprocess, sys, os, hashlib
src, dst, kind, tool, tfm, ver, how, dbg, app, dac, name = sys.argv[1:12]
with open(src, encoding='utf-8') as f:
    m = json.load(f)
def sha(p):
    with open(p, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()
bid = subprocess.run(['readelf', '-n', app], capture_output=True, text=True).stdout
bid = next((l.split(':', 1)[1].strip() for l in bid.splitlines() if 'Build ID' in l), None)
m['app'] = {'shape': 'nativeaot', 'compiler': 'roslyn', 'tfm': tfm,
            'ilcompiler': 'runtime.linux-x64.Microsoft.DotNet.ILCompiler ' + ver,
            'build': how, 'configuration': 'Release',
            'executable': os.path.basename(app), 'build_id': bid,
            'executable_sha256': sha(app), 'executable_size': os.path.getsize(app),
            'symbols': ('withheld: ' + os.path.basename(app) + '.dbg was deleted after the truths were read')
                       if dbg == 'withheld' else os.path.basename(app) + '.dbg (StripSymbols)'}
m['dump'] = {'kind': 'crash' if m['scenario'].startswith('crash') else ('gcore' if kind == 'gcore' else 'full'),
             'tool': tool}
with open(dst, 'w', encoding='utf-8') as f:
    json.dump(m, f, indent=2, ensure_ascii=False)
with open(dac, 'w', encoding='utf-8') as f:
    json.dump({'dump': name + '.dmp.zst',
               'note': 'no DAC exists for NativeAOT (no libmscordaccore.so is built for it; SOS reads '
                       'these dumps only in !crashinfo, ClrMD not at all): the truths are '
                       + name + '.manifest.json, ' + name + '.symbols.json and ' + name + '.sos.txt',
               'threads': None, 'stacks': None, 'heap_stat': None}, f, indent=2)
EOF
    # ---- SOS: crashinfo (the only SOS command that reads NativeAOT), and what it says of the rest
    if [ "${NO_SOS:-0}" != 1 ] && [ -x "$DOTNET_DUMP" ]; then
        log "[$name] SOS crashinfo"
        {
            echo "# $("$DOTNET_DUMP" --version 2>/dev/null | head -n1) analyze $name.dmp -c crashinfo -c clrthreads -c exit"
            echo "# (made by dumps/generate-aot.sh)"
            (cd "$w" && timeout 300 "$DOTNET_DUMP" analyze "$dmp" -c crashinfo -c clrthreads -c exit 2>&1 \
                | sed "s#$w#<build>#g") || true
        } > "$st/$name.sos.txt"
    fi
    mkdir -p "$OUT"
    mv -f "$st"/* "$OUT/"
    if [ $kind = gcore ]; then
        # gcore leaves out the executable's unwritten file pages (its code, read-only data and
        # the strings the debug header points at): keep the executable for the image path
        rm -rf "$OUT/images/$name"
        mkdir -p "$OUT/images/$name"
        cp "$app" "$OUT/images/$name/"
    fi
    if [ $dbg = withheld ]; then
        rm -f "$app.dbg" "$APP.dbg"
        log "[$name] $scen.dbg deleted (withheld)"
    fi
    [ "${KEEP_DUMPS:-0}" = 1 ] || rm -f "$dmp"
    log "[$name] $(numfmt --to=iec "$zsz") compressed"
}

install_tools
start=$(date +%s)
for n in "${names[@]}"; do
    t0=$(date +%s)
    run_one "$n"
    log "[$n] done in $(( $(date +%s) - t0 )) s"
done
log "all done in $(( $(date +%s) - start )) s: ${names[*]}"
total=0
for n in "${ALL[@]}"; do
    [ -f "$OUT/$n.dmp.zst" ] && total=$((total + $(stat -c %s "$OUT/$n.dmp.zst")))
done
[ -d "$OUT/images" ] && for d in "$OUT"/images/*-aot*; do
    [ -d "$d" ] && total=$((total + $(du -sb "$d" | cut -f1)))
done
log "the NativeAOT corpus (dumps and images): $total bytes ($(numfmt --to=iec $total))"
