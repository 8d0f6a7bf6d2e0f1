#!/usr/bin/env bash
# dumps/generate-sdk.sh [name...]
#
# Builds dumpshell's second Linux dump corpus: the scenario programs compiled by Roslyn (the .NET
# SDK) and run on runtimes taken from NuGet runtime packs alone, in several app shapes and dump
# kinds.  (dumps/generate.sh, untouched, still makes the mcs / .NET 8.0.4 / 3.1 dumps.)
# Per dump name <scenario>-<rt>[-<shape>][-<kind>] (shapes: sc, single, singlez, singlex (self-extracting), r2r, trim, and
# debug = framework-dependent built with -c Debug, unoptimized: class state machines;
# runtime net11 = 11.0.0: compiled by the Roslyn toolset's csc (compile_net11), runtime-async on,
# or shape classic = off; framework-dependent only; then also tools/dac_extras.sh and tools/sos.sh):
#   1. restores Microsoft.NETCore.App.Runtime.linux-x64 + .Host.linux-x64 <version> from NuGet
#      (dumps/sdk/Fetch.csproj) and lays out a private dotnet root in dumps/build/roots/<version>/
#      (the SDK's `dotnet` muxer, host/fxr/<v>/libhostfxr.so and shared/Microsoft.NETCore.App/<v>/
#      made from the pack's lib/ and native/ files, deps.json included),
#   2. `dotnet publish dumps/sdk/Scenario.csproj` with that exact RuntimeFrameworkVersion and the
#      shape's properties, into dumps/build/sdk/<build key>/ (own obj/ and bin/ per build),
#   3. runs it (framework-dependent: <root>/dotnet app.dll; others: the app's own executable) in a
#      clean environment until it prints "ready <pid>", dumps it (createdump of that pack,
#      gdb gcore, or the runtime itself on the unhandled exception for crash-*),
#   4. zstd -19 -> dumps/<name>.dmp.zst (error above 30 MB),
#   5. dacprobe (dumps/tools/dacprobe/dacprobe.py, a copy of shared/tools/dacprobe that also finds
#      a single-file app's runtime) with that pack's libmscordaccore.so -> dumps/<name>.dac.json,
#      the program's manifest plus app/dump fields -> dumps/<name>.manifest.json,
#      tools/truth.py check, and (when dumps/tools/clrmd/truth.sh exists) ClrMD's view ->
#      dumps/<name>.clrmd.json,
#   6. keeps the app's portable PDB in dumps/pdbs/<build key>/<PDB key>/<program>.pdb
#      (dumps/pdbs/README.md).
# Default: every name in ALL, in priority order.  Work files: dumps/build/ (gitignored).
# Environment:
#   KEEP_DUMPS=1   keep the raw cores in dumps/build/<name>/
#   ZSTD_LEVEL     (default 19)   READY_TIMEOUT seconds to wait for "ready" (default 120)
#   NO_CLRMD=1     skip the ClrMD hook
#   BUILD_ONLY=1   only restore and publish each app (steps 1-2) and keep its PDB in $PDB_OUT
#                  (default dumps/pdbs/): no run, no dump (dumps/pdbs/rebuild.sh uses it)
#   OUT_DIR        where the outputs go (default: dumps/; e.g. to try the generator without
#                  touching the committed files)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
BUILD=$HERE/build
ROOTS=$BUILD/roots
DACPROBE=$HERE/tools/dacprobe/dacprobe.py
TRUTH=$HERE/tools/truth.py
CLRMD=$HERE/tools/clrmd/truth.sh
MAX_ZST=$((30 * 1024 * 1024))
ZSTD_LEVEL=${ZSTD_LEVEL:-19}
OUT=${OUT_DIR:-$HERE}

# The committed dumps for issues 24 and 27 (dumps/README.md): made with the per-command DAC
# truths and SOS's view (as the .NET 11 dumps), whatever EXTRA_TRUTHS says.
ISSUES_24_27=(hang-net8-single hang-net8-single-nodac hang-net9-single hang-net9-single-nodac
     hang-net10-single hang-net10-single-nodac servergc-net9 ilonly-net8-gcore
     faultnull-net10 faultav-net10 failfast-net10 names-net10 names-net11)
# Priority order (see dumps/README.md, "The SDK corpus").
ALL=(hang-net10 heap-net10 async-net10 crash-net10 deadlock-net10 threadpool-net10
     hang-net8 heap-net8 async-net8 hang-net9 heap-net9 async-net9
     hang-net10h heap-net10h async-net10h
     hang-net10-sc hang-net10-single-gcore hang-net10-singlez-gcore
     hang-net10-r2r hang-net10-trim hang-net8-single-gcore
     hang-net10-triage hang-net10-gcore servergc-net10
     asyncreal-net10 asyncreal-net8 asyncreal-net9-debug hang-net8-triage
     hang-net11 heap-net11 async-net11 asyncreal-net11 crash-net11 deadlock-net11 threadpool-net11
     async-net11-classic asyncreal-net11-classic
     "${ISSUES_24_27[@]}" crashasync-net11 servergc-net11)
# Made on demand only (not committed: 18 MB compressed, over the corpus's size budget):
#   hang-net10-full (createdump --full).  Any <scenario>-<rt>[-<shape>][-<kind>] can be asked for.
# Made on demand, for size (dumps/README.md, "Dumps for issues 24 and 27";
# OUT_DIR=dumps/build/ondemand EXTRA_TRUTHS=1):
#   faultnull-net8 faultav-net8 failfast-net8 names-net8 faultnull-net11 faultav-net11 failfast-net11
#   hang-net11-single hang-net11-single-nodac ilonly-net9-gcore
#   nestedfault-net8 nestedfault-net9 nestedfault-net10 nestedfault-net11
# servergc-net11 (issue 25: .NET 11 server GC, 2 heaps; System.GC.HeapCount=2 and
# System.GC.DynamicAdaptationMode=0 in its runtimeconfig.json, as servergc-net9) is committed.

die() { echo "generate-sdk.sh: error: $*" >&2; exit 1; }
log() { echo "== $*" >&2; }

[ "$(id -u)" = 0 ] || die "run as root (createdump and gcore need ptrace)"

rt_version() {  # <rt> -> runtime pack version
    case $1 in
        net8) echo 8.0.33 ;;
        net9) echo 9.0.22 ;;
        net10) echo 10.0.14 ;;
        net10h) echo 10.0.11 ;;   # the held-out .NET 10 patch, built exactly like net10
        net11) echo 11.0.0 ;;     # compiled by the toolset's csc, not the SDK (see compile_net11)
        *) die "unknown runtime '$1' (net8 net9 net10 net10h net11)" ;;
    esac
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${ALL[@]}")

# ---------------------------------------------------------------- 1. tools and runtimes
install_tools() {
    local pkgs=()
    command -v zstd >/dev/null || pkgs+=(zstd)
    command -v python3 >/dev/null || pkgs+=(python3)
    command -v gdb >/dev/null || pkgs+=(gdb)
    if [ ${#pkgs[@]} -gt 0 ]; then
        log "apt-get install ${pkgs[*]}"
        apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${pkgs[@]}"
    fi
    command -v dotnet >/dev/null || die "the .NET SDK (dotnet) is needed: https://learn.microsoft.com/dotnet/core/install/linux-debian"
}

NUGET=${NUGET_PACKAGES:-$HOME/.nuget/packages}
TOOLSET=5.9.0      # Microsoft.Net.Compilers.Toolset: the Roslyn that compiles runtime-async for .NET 11
CSC=$NUGET/microsoft.net.compilers.toolset/$TOOLSET/tasks/netcore/bincore/csc.dll
pack_dir() { echo "$NUGET/microsoft.netcore.app.runtime.linux-x64/$1/runtimes/linux-x64"; }

fetch_packs() {  # <version>...
    local need=() v
    for v in "$@"; do
        [ -f "$(pack_dir "$v")/native/libmscordaccore.so" ] && \
            [ -d "$NUGET/microsoft.netcore.app.host.linux-x64/$v" ] || need+=("$v")
        if [ "${v%%.*}" -ge 11 ] && { [ ! -d "$NUGET/microsoft.netcore.app.ref/$v" ] || [ ! -f "$CSC" ]; }; then
            # .NET 11 apps are compiled by the Roslyn toolset against the reference pack
            log "dotnet restore Microsoft.NETCore.App.Ref $v, Microsoft.Net.Compilers.Toolset $TOOLSET"
            dotnet restore "$HERE/sdk/Fetch.csproj" -nologo -v:q "-p:FetchVersions=$v" "-p:FetchRef=true" \
                "-p:ToolsetVersion=$TOOLSET" "-p:BaseIntermediateOutputPath=$BUILD/fetch/obj/" >&2
        fi
    done
    [ ${#need[@]} -gt 0 ] || return 0
    local list
    list=$(IFS=';'; echo "${need[*]}")
    log "dotnet restore runtime packs ${need[*]}"
    dotnet restore "$HERE/sdk/Fetch.csproj" -nologo -v:q "-p:FetchVersions=${list//;/%3B}" \
        "-p:BaseIntermediateOutputPath=$BUILD/fetch/obj/" >&2
}

# A private dotnet root holding exactly one runtime: <root>/dotnet, host/fxr/<v>/, shared/Microsoft.NETCore.App/<v>/
make_root() {  # <version>
    local v=$1 r=$ROOTS/$1 p
    p=$(pack_dir "$v")
    [ -f "$r/.complete" ] && return 0
    log "dotnet root $r from the runtime pack"
    rm -rf "$r"
    mkdir -p "$r/host/fxr/$v" "$r/shared/Microsoft.NETCore.App/$v"
    cp "$(readlink -f "$(command -v dotnet)")" "$r/dotnet"     # the muxer only; it picks hostfxr from $r
    cp "$p/native/libhostfxr.so" "$r/host/fxr/$v/"
    cp "$p"/lib/net*/* "$r/shared/Microsoft.NETCore.App/$v/"
    find "$p/native" -maxdepth 1 -type f ! -name libhostfxr.so -exec cp {} "$r/shared/Microsoft.NETCore.App/$v/" \;
    chmod +x "$r/dotnet" "$r/shared/Microsoft.NETCore.App/$v/createdump"
    [ -f "$r/shared/Microsoft.NETCore.App/$v/Microsoft.NETCore.App.deps.json" ] || die "pack $v has no deps.json"
    touch "$r/.complete"
}

# ---------------------------------------------------------------- 2. per dump
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

# .NET 11: the SDK here (10) cannot target net11.0, so the program is compiled by the Roslyn
# toolset's csc against Microsoft.NETCore.App.Ref 11.0.0 (every reference dll, -nostdlib), with
# runtime-async on (methods get MethodImpl flag 0x2000, no state machine) or off (`classic`), and
# a runtimeconfig.json naming Microsoft.NETCore.App <version> beside it (framework-dependent).
compile_net11() {  # <name> <prog> <version> <out dir> <runtime_async true|false> <server GC>
    local name=$1 prog=$2 ver=$3 out=$4 ra=$5 server=$6 gc_extra=
    # servergc-net11: 2 heaps in use, as servergc-net9 (DATAS, on by default for server GC,
    # would start with 1 on this 2-core machine)
    [ "$server" != true ] || gc_extra='"System.GC.HeapCount": 2, "System.GC.DynamicAdaptationMode": 0,'

    local ref=$NUGET/microsoft.netcore.app.ref/$ver/ref/net${ver%%.*}.0 f
    [ -d "$ref" ] || die "[$name] no reference pack $ref"
    [ -f "$CSC" ] || die "[$name] no csc at $CSC"
    local -a srcs=("$HERE/scenarios/$prog.cs") refs=()
    [ "$prog" = hang ] || srcs+=("$HERE/scenarios/common.cs")
    for f in "$ref"/*.dll; do refs+=("-r:$f"); done
    mkdir -p "$out"
    log "[$name] csc $TOOLSET ($prog, runtime-async $([ "$ra" = true ] && echo on || echo off), $ver)"
    # the warnings Scenario.csproj silences, and CS8002 (no strong name): none matters here
    dotnet exec "$CSC" -nologo -noconfig -nostdlib+ -langversion:preview \
        "-features:runtime-async=$([ "$ra" = true ] && echo on || echo off)" \
        -target:exe -optimize+ -unsafe+ -debug:portable -deterministic+ -codepage:65001 \
        -nowarn:CS0162,CS0168,CS0169,CS0219,CS0414,CS0649,CS1998,CS4014,CS8321,SYSLIB0050,SYSLIB0011 \
        "${refs[@]}" "-out:$out/$prog.dll" "${srcs[@]}" > "$out/../csc.log" 2>&1 \
        || { cat "$out/../csc.log" >&2; die "[$name] csc failed"; }
    cat > "$out/$prog.runtimeconfig.json" <<JSON
{
  "runtimeOptions": {
    "tfm": "net${ver%%.*}.0",
    "framework": { "name": "Microsoft.NETCore.App", "version": "$ver" },
    "configProperties": {
      "System.GC.Server": $server, $gc_extra
      "System.Globalization.Invariant": true
    }
  }
}
JSON
    # that the build is what it claims is checked on the program's manifest (async_kinds, read by
    # the program from its own metadata: MethodImpl flag 0x2000) when the app field is written
}

# .NET 11 single-file (the SDK cannot publish for net11.0): the compiled app (compile_net11) with a
# self-contained runtimeconfig.json and every managed assembly of the runtime pack, bundled into
# the pack's singlefilehost by the SDK's own bundler library (sdk/bundle: HostWriter.CreateAppHost,
# Bundler.GenerateBundle, as `dotnet publish -p:PublishSingleFile=true` does); the pack's native
# files are all DropFromSingleFile (data/RuntimeList.xml): linked into singlefilehost or left out.
bundle_net11() {  # <name> <prog> <version> <compiled dir> <app dir> <server GC>
    local name=$1 prog=$2 ver=$3 il=$4 out=$5 server=$6 tool=$BUILD/bundle/bin/Bundle.dll
    local host=$NUGET/microsoft.netcore.app.host.linux-x64/$ver/runtimes/linux-x64/native/singlefilehost
    [ -f "$host" ] || die "[$name] no $host"
    if [ ! -f "$tool" ] || [ "$HERE/sdk/bundle/Bundle.cs" -nt "$tool" ]; then
        log "[$name] dotnet build sdk/bundle"
        dotnet build "$HERE/sdk/bundle" -nologo -v:q "-p:BaseIntermediateOutputPath=$BUILD/bundle/obj/" \
            -o "$BUILD/bundle/bin" > "$BUILD/bundle.log" 2>&1 || { cat "$BUILD/bundle.log" >&2; die "[$name] sdk/bundle failed"; }
    fi
    cat > "$il/$prog.runtimeconfig.json" <<JSON
{
  "runtimeOptions": {
    "tfm": "net${ver%%.*}.0",
    "includedFrameworks": [ { "name": "Microsoft.NETCore.App", "version": "$ver" } ],
    "configProperties": {
      "System.GC.Server": $server,
      "System.Globalization.Invariant": true
    }
  }
}
JSON
    log "[$name] bundle $prog.dll with the $ver framework into singlefilehost"
    dotnet "$tool" "$host" "$out" "$prog" "${ver%.*}" "$il/$prog.dll" "$il/$prog.runtimeconfig.json" \
        "$(pack_dir "$ver")"/lib/net*/*.dll > "$il/../bundle.log" 2>&1 || { cat "$il/../bundle.log" >&2; die "[$name] bundling failed"; }
    cp "$il/$prog.pdb" "$out/"
}

keep_pdb() {  # <pdbs folder> <build key> <pdb>: copies it to <folder>/<key>/<id key>/<name>.pdb
    # <id key>: the PDB's symbol-server key (GUID + FFFFFFFF, tools/pdbkey.py), so builds of one
    # key at other commits (the dll's InformationalVersion names the commit) keep their own PDB
    [ -f "$3" ] || die "no $3 after the publish"
    local idkey
    idkey=$(python3 "$HERE/tools/pdbkey.py" "$3" | cut -d' ' -f1) || die "$3 is not a portable PDB"
    mkdir -p "$1/$2/$idkey"
    cp "$3" "$1/$2/$idkey/"
    chmod 644 "$1/$2/$idkey/${3##*/}"
}

run_one() {
    local name=$1
    local scen rt shape=fd kind=withheap part nodac=false
    IFS=- read -r -a parts <<< "$name"
    [ ${#parts[@]} -ge 2 ] || die "bad name '$name' (<scenario>-<rt>[-<shape>][-<kind>])"
    scen=${parts[0]}; rt=${parts[1]}
    for part in "${parts[@]:2}"; do
        case $part in
            sc|single|singlez|singlex|r2r|trim|debug|classic) shape=$part ;;
            full|triage|normal|gcore) kind=$part ;;
            # a single-file app dumped by the runtime pack's createdump run by hand (no
            # --singlefile): --withheap without the DAC (see single_ipc below)
            nodac) kind=withheap; nodac=true ;;
            *) die "unknown shape or kind '$part' in '$name'" ;;
        esac
    done
    local prog=$scen server=false
    local -a prog_args=() libs=()
    case $scen in
        hang|heap|async|asyncreal|crash|deadlock|threadpool|names) ;;
        # scenarios/crashasync.cs: an unhandled exception through suspended async callers
        # (.NET 11 runtime-async: the runtime appends their frames to the exception's trace)
        crashasync) [ "$rt" = net11 ] || die "[$name] crashasync is a .NET 11 (runtime-async) scenario" ;;
        # the same bug as crash-*, another order: another message (fleet triage's buckets)
        crashorder) prog=crash; prog_args=(23 45y1) ;;
        servergc) prog=hang; server=true ;;
        # scenarios/ilonly.cs calls into three IL-only class libraries of its own
        # (scenarios/ilonly/*.cs, built by sdk/Library.csproj before the app)
        ilonly) libs=(Ilonly.Inventory Ilonly.Pricing Ilonly.Shipping) ;;
        # scenarios/fault.cs: a crash through a Frame that saves a context, in one of three ways
        faultnull) prog=fault; prog_args=(nullref) ;;
        faultav) prog=fault; prog_args=(av) ;;
        failfast) prog=fault; prog_args=(failfast) ;;
        # ... and a FailFast in a catch block inside a finally block run while another exception
        # is unwound: two exceptions in dispatch, one nested under the other (pe -nested)
        nestedfault) prog=fault; prog_args=(nested) ;;
        *) die "unknown scenario '$scen'" ;;
    esac
    # the runtime writes these dumps itself, when the program dies
    case $prog in crash|crashasync|fault) kind=crash ;; esac
    local ver tfm
    ver=$(rt_version "$rt")
    tfm=net${ver%%.*}.0
    # .NET 11: the SDK (10) cannot target net11.0; the app is compiled by csc (compile_net11),
    # framework-dependent only: runtime-async on, or `classic` (off: Roslyn state machines)
    if [ $rt = net11 ]; then
        [ $shape = fd ] || [ $shape = classic ] || [ $shape = single ] \
            || die "[$name] net11 builds are framework-dependent (shapes: none, classic) or single-file (single)"
    else
        [ $shape != classic ] || die "[$name] shape 'classic' (runtime-async off) is for net11 only"
    fi
    fetch_packs "$ver"
    make_root "$ver"
    local root=$ROOTS/$ver fx=$ROOTS/$ver/shared/Microsoft.NETCore.App/$ver
    local dac=$fx/libmscordaccore.so createdump=$fx/createdump

    # ---- publish
    local -a props=(-p:Scenario="$prog" -p:ScenarioTfm="$tfm" -p:RuntimeFrameworkVersion="$ver"
                    -p:ServerGarbageCollection=$server)
    if [ $server = true ] && [ $rt = net9 ]; then
        # servergc-net9: 2 heaps in use on this 2-core machine: DATAS (on by default for server GC
        # from .NET 9) would start with 1; System.GC.HeapCount=2, System.GC.DynamicAdaptationMode=0
        props+=(-p:ScenarioGCHeapCount=2 -p:ScenarioGCDynamicAdaptationMode=0)
    fi
    local sc=false shape_name config=Release
    case $shape in
        fd) shape_name=framework-dependent ;;
        # .NET 11 with runtime-async off: Roslyn state machines awaiting a runtime-async framework
        classic) shape_name=framework-dependent ;;
        # a Debug build: Roslyn makes class state machines and hoists every local
        debug) shape_name=framework-dependent; config=Debug ;;
        sc) shape_name=self-contained; sc=true ;;
        single) shape_name=single-file; sc=true; props+=(-p:PublishSingleFile=true) ;;
        singlez) shape_name=single-file-compressed; sc=true
                 props+=(-p:PublishSingleFile=true -p:EnableCompressionInSingleFile=true) ;;
        # self-extracting: the host extracts every bundled file to $DOTNET_BUNDLE_EXTRACT_BASE_DIR
        # (default ~/.net/<app>/<bundle id>/) and the runtime maps the assemblies from there
        singlex) shape_name=single-file-self-extract; sc=true
                 props+=(-p:PublishSingleFile=true -p:IncludeAllContentForSelfExtract=true) ;;
        r2r) shape_name=ready-to-run; props+=(-p:PublishReadyToRun=true) ;;
        trim) shape_name=trimmed; sc=true
              # ILLink.Tasks comes in the runtime's version and runs on that runtime, which the
              # SDK's own dotnet root lacks: run it with the private root's muxer
              props+=(-p:PublishTrimmed=true "-p:_DotNetHostDirectory=$root/") ;;
    esac
    local single=false single_ipc=false
    if [ $shape = single ] || [ $shape = singlez ] || [ $shape = singlex ]; then single=true; fi
    [ $nodac = false ] || [ $single = true ] || die "[$name] -nodac is for single-file shapes"
    if [ $single = true ] && [ $nodac = false ] && { [ $kind = withheap ] || [ $kind = triage ] || [ $kind = normal ]; }; then
        # What users get (dotnet-dump collect, DOTNET_DbgEnableMiniDump): the runtime of a
        # single-file app writes the dump itself (it forks and runs createdump's code, with
        # --singlefile) and needs the DAC beside the app for anything but a full dump: without it
        # 8.0.33 and 9.0.22 write nothing (dotnet-dump still says "Complete") and 10.0.14 says
        # "Only full dumps are supported by single file apps". So the pack's DAC is copied beside
        # the app and the dump is asked for through the diagnostics IPC, by dotnet-dump collect.
        single_ipc=true
    fi
    local key=$prog-$ver-$shape-$server
    local bw=$BUILD/sdk/$key
    # the app sits in a folder named by the runtime version: for self-contained shapes the runtime
    # is loaded from there, and truth.py checks that the DAC's runtime path names the version
    local app=$bw/$ver
    local runtime_async=null compiler_note=
    rm -rf "$app"
    mkdir -p "$bw"
    if [ ${#libs[@]} -gt 0 ]; then
        [ $rt != net11 ] || die "[$name] class libraries are built by the SDK: not for net11"
        # the app's own class libraries, plain IL (no ReadyToRun), referenced by the app
        local lib refs=
        for lib in "${libs[@]}"; do
            log "[$name] dotnet build library $lib (IL only, $tfm)"
            dotnet build "$HERE/sdk/Library.csproj" -nologo -v:q -c $config -p:Library="$lib" -p:ScenarioTfm="$tfm" \
                "-p:BaseIntermediateOutputPath=$bw/lib-obj/$lib/" "-p:BaseOutputPath=$bw/lib-bin/$lib/" \
                -o "$bw/libs" > "$bw/lib-$lib.log" 2>&1 || { cat "$bw/lib-$lib.log" >&2; die "[$name] library $lib failed"; }
            refs+="${refs:+%3B}$bw/libs/$lib.dll"
        done
        props+=("-p:ScenarioRefs=$refs")
    fi
    if [ $rt = net11 ]; then
        runtime_async=true
        [ $shape != classic ] || runtime_async=false
        compiler_note="Microsoft.Net.Compilers.Toolset $TOOLSET (csc -langversion:preview -features:runtime-async=$([ $runtime_async = true ] && echo on || echo off))"
        if [ $shape = single ]; then
            rm -rf "$bw/il"
            compile_net11 "$name" "$prog" "$ver" "$bw/il" "$runtime_async" "$server"
            bundle_net11 "$name" "$prog" "$ver" "$bw/il" "$app" "$server"
            compiler_note+="; bundled by Microsoft.NET.HostModel of SDK $(dotnet --version) (sdk/bundle) into singlefilehost of Microsoft.NETCore.App.Host.linux-x64 $ver"
        else
            compile_net11 "$name" "$prog" "$ver" "$app" "$runtime_async" "$server"
        fi
    else
    log "[$name] dotnet publish ($shape_name, $ver, server GC $server)"
    dotnet publish "$HERE/sdk/Scenario.csproj" -nologo -v:q -c $config -r linux-x64 \
        --self-contained $sc "${props[@]}" \
        "-p:BaseIntermediateOutputPath=$bw/obj/" "-p:BaseOutputPath=$bw/bin/" -o "$app" \
        > "$bw/publish.log" 2>&1 || { cat "$bw/publish.log" >&2; die "[$name] publish failed"; }
    fi
    local -a cmd
    if [ $sc = true ]; then
        cmd=("$app/$prog")
        if [ $shape = single ] || [ $shape = singlez ] || [ $shape = singlex ]; then
            [ ! -e "$app/libcoreclr.so" ] || die "[$name] single-file publish left libcoreclr.so beside the app"
        fi
    else
        cmd=("$root/dotnet" "$app/$prog.dll")
    fi
    if [ "${BUILD_ONLY:-0}" = 1 ]; then
        # only the build (dumps/pdbs/rebuild.sh): its PDB to $PDB_OUT, nothing run or dumped
        keep_pdb "${PDB_OUT:-$OUT/pdbs}" "$key" "$app/$prog.pdb"
        echo "$name $key $app"
        return 0
    fi

    # ---- run and dump
    [ $single_ipc = false ] || cp "$dac" "$app/"     # the runtime's dump writer loads it from there
    local w=$BUILD/$name
    rm -rf "$w"
    mkdir -p "$w"
    local dmp=$w/$name.dmp manifest=$w/$name.manifest.json pid rpid rc tool
    local -a check_args=()
    local -a runenv=(env -i PATH=/usr/bin:/bin HOME="$HOME" LANG=C.UTF-8 DOTNET_CLI_TELEMETRY_OPTOUT=1
                     DOTNET_ROOT="$root" DOTNET_MULTILEVEL_LOOKUP=0)
    if [ $kind != crash ]; then
        log "[$name] run: ${cmd[*]##*/}"
        "${runenv[@]}" "${cmd[@]}" "$manifest" "$name" "${prog_args[@]}" > "$w/stdout.txt" 2> "$w/stderr.txt" &
        pid=$!
        rpid=$(wait_ready "$pid" "$w/stdout.txt" "$w/stderr.txt")
        [ "$rpid" = "$pid" ] || { kill -9 "$pid"; die "[$name] ready pid $rpid != launched pid $pid"; }
        # the runtime that actually runs: the one the manifest names, from the expected place
        local want=$fx/libcoreclr.so got
        [ $sc = false ] || want=$app/libcoreclr.so
        [ $shape != single ] && [ $shape != singlez ] && [ $shape != singlex ] || want=$app/$prog
        got=$(awk -v w="$want" '$6 == w {print $6}' "/proc/$pid/maps" | head -n1)
        [ "$got" = "$want" ] || { kill -9 "$pid"; die "[$name] $want is not mapped: not the expected runtime"; }
        case $kind in
            withheap|full|triage|normal)
              if [ $single_ipc = true ]; then
                local dd=${DOTNET_DUMP:-$HOME/.dotnet/tools/dotnet-dump} ddtype=Heap
                [ -x "$dd" ] || { kill -9 "$pid"; die "[$name] dotnet-dump not found ($dd): dotnet tool install -g dotnet-dump --version 10.0.750501"; }
                [ $kind != triage ] || ddtype=Triage
                [ $kind != normal ] || ddtype=Mini
                log "[$name] dotnet-dump collect --type $ddtype -p $pid (the runtime dumps itself; its DAC beside the app)"
                tool="runtime $ver (diagnostics IPC: dotnet-dump collect --type $ddtype; libmscordaccore.so beside the app)"
                if ! "$dd" collect -p "$pid" --type $ddtype -o "$dmp" > "$w/collect.log" 2>&1 || [ ! -s "$dmp" ]; then
                    cat "$w/collect.log" "$w/stdout.txt" >&2; kill -9 "$pid"; die "[$name] the runtime wrote no dump"
                fi
              else
                local -a cdargs=(--$kind)
                # single-file, full: createdump needs to be told (it then takes the runtime from the
                # host); -nodac: not told, it finds no libcoreclr.so and writes without the DAC
                if [ $single = true ] && [ $nodac = false ]; then cdargs+=(--singlefile); fi
                log "[$name] createdump ${cdargs[*]} $pid"
                tool="createdump $ver"
                [ $nodac = false ] || tool="createdump $ver --withheap (the runtime pack's, run by hand without --singlefile: no DAC)"
                if ! "$createdump" "${cdargs[@]}" -f "$dmp" "$pid" > "$w/createdump.log" 2>&1; then
                    cat "$w/createdump.log" >&2; kill -9 "$pid"; die "[$name] createdump failed"
                fi
              fi ;;
            gcore)
                log "[$name] gdb gcore $pid"
                tool="gdb gcore $(gdb --version | head -n1 | awk '{print $NF}')"
                if ! gdb -nx -batch -p "$pid" -ex "gcore $dmp" > "$w/gcore.log" 2>&1 || [ ! -s "$dmp" ]; then
                    cat "$w/gcore.log" >&2; kill -9 "$pid"; die "[$name] gcore failed"
                fi ;;
        esac
        kill -9 "$pid"
        wait "$pid" 2>/dev/null || true
    else
        log "[$name] run (the runtime writes the dump on the unhandled exception)"
        tool="runtime (DbgEnableMiniDump, createdump $ver)"
        rc=0
        "${runenv[@]}" DOTNET_DbgEnableMiniDump=1 DOTNET_DbgMiniDumpType=2 \
            DOTNET_DbgMiniDumpName="$dmp" DOTNET_CreateDumpDiagnostics=1 \
            "${cmd[@]}" "$manifest" "$name" "${prog_args[@]}" > "$w/stdout.txt" 2> "$w/stderr.txt" || rc=$?
        [ $rc != 0 ] || die "[$name] the program was expected to crash"
        [ -s "$dmp" ] || { cat "$w/stdout.txt" "$w/stderr.txt" >&2; die "[$name] the runtime wrote no dump"; }
        echo "exit status $rc" >> "$w/stdout.txt"
    fi
    [ -s "$manifest" ] || die "[$name] no manifest written"
    local mver
    mver=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runtime"]["version"])' "$manifest")
    [ "$mver" = "$ver" ] || die "[$name] the program ran on $mver, not $ver"

    # ---- compress (everything is staged in $w/out/ and moved to dumps/ once it all passed)
    local st=$w/out
    mkdir -p "$st"
    log "[$name] zstd -$ZSTD_LEVEL ($(stat -c %s "$dmp") bytes)"
    zstd -"$ZSTD_LEVEL" -T2 -q -f "$dmp" -o "$st/$name.dmp.zst"
    chmod 644 "$st/$name.dmp.zst"
    local zsz
    zsz=$(stat -c %s "$st/$name.dmp.zst")
    [ "$zsz" -lt $MAX_ZST ] || die "[$name] compressed dump is $zsz bytes (limit $MAX_ZST)"

    # ---- truths
    log "[$name] dacprobe"
    python3 "$DACPROBE" --dac "$dac" "$dmp" > "$w/$name.dac.raw.json"
    python3 - "$manifest" "$w/manifest.full.json" "$shape_name" "$kind" "$tool" "$tfm" "$ver" "$w/$name.dac.raw.json" "$config" "$runtime_async" "$compiler_note" "$app/$prog.runtimeconfig.json" <<'EOF'
import json, os, subprocess, sys
src, dst, shape, kind, tool, tfm, ver, raw, config, runtime_async, compiler_note, rtconfig = sys.argv[1:13]
with open(src, encoding='utf-8') as f:
    m = json.load(f)
rt = m['runtime']
if rt.get('gc_dynamic_adaptation'):
    # DATAS: the program knows only the maximum heap count; record the count in use that the
    # DAC saw (GetGCHeapData.HeapCount) and say so
    with open(raw) as f:
        gcd = json.load(f).get('gc_heap', {}).get('GetGCHeapData') or {}
    rt['gc_heap_count'] = gcd.get('HeapCount')
    rt['gc_heap_count_source'] = 'dac (GetGCHeapData.HeapCount; DATAS changes it at run time)'
sdk = subprocess.run(['dotnet', '--version'], capture_output=True, text=True).stdout.strip()
m['app'] = {'shape': shape, 'compiler': 'roslyn', 'sdk': sdk, 'tfm': tfm,
            'runtime_pack': 'Microsoft.NETCore.App.Runtime.linux-x64 ' + ver,
            'configuration': config}
if runtime_async != 'null':
    # .NET 11: how the program was compiled (csc of the Roslyn toolset; the SDK cannot target
    # net11.0) and whether its async methods are runtime-async (the framework's always are)
    m['app']['compiler_version'] = compiler_note
    m['app']['runtime_async'] = runtime_async == 'true'
    m['app']['framework_runtime_async'] = True
    kinds = [k for c in m.get('async_chains', []) for k in c.get('async_kinds', [])]
    if runtime_async == 'true' and kinds and 'runtime-async' not in kinds:
        sys.exit('runtime-async on, but the program reports no runtime-async method: %s' % kinds)
    if runtime_async == 'false' and 'runtime-async' in kinds:
        sys.exit('runtime-async off, but the program reports runtime-async methods: %s' % kinds)
if os.path.isfile(rtconfig):
    # a GC heap count or DATAS mode set by the build (servergc-net9): as the runtimeconfig says
    with open(rtconfig, encoding='utf-8') as f:
        props = json.load(f).get('runtimeOptions', {}).get('configProperties', {})
    gc = {k: v for k, v in props.items() if k in ('System.GC.HeapCount', 'System.GC.DynamicAdaptationMode')}
    if gc:
        m['app']['gc_config'] = gc
m['dump'] = {'kind': kind, 'tool': tool}
with open(dst, 'w', encoding='utf-8') as f:
    json.dump(m, f, indent=2, ensure_ascii=False)
EOF
    python3 "$TRUTH" finish --name "$name" --raw "$w/$name.dac.raw.json" --manifest "$w/manifest.full.json" \
        --dump "$dmp" --zst "$st/$name.dmp.zst" --out-dir "$st"
    local checked=$st/$name.manifest.json
    if [ $kind = triage ] || [ $kind = normal ] || [ $nodac = true ]; then
        # no GC heap in these dumps (by design; -nodac: createdump wrote without the DAC, and the
        # DAC fails GetGCHeapData there): check threads and stacks only, against a copy of the
        # manifest without the heap's claims (types, async state machines)
        checked=$w/check.manifest.json
        check_args+=(--tolerate-dac-gaps)
        python3 - "$st/$name.manifest.json" "$checked" "$nodac" <<'EOF'
import json, sys
with open(sys.argv[1], encoding='utf-8') as f:
    m = json.load(f)
m['types'] = []
for c in m.get('async_chains', []):
    c['state_machine_types'] = []
    c['awaited_type'] = None
    for k in ('async_kinds', 'runtime_async', 'hoisted', 'outer_task_type'):
        c.pop(k, None)      # the runtime-async checks look at the heap too
if sys.argv[3] == 'true':
    # without its DAC's memory enumeration the dump lacks the code heaps: the DAC names no
    # managed frame (10.0.14) or cannot walk at all (8.0.33): thread ids only
    for t in m.get('threads', []):
        t['frames'] = []
        t['blocked_in'] = None
with open(sys.argv[2], 'w', encoding='utf-8') as f:
    json.dump(m, f, indent=2, ensure_ascii=False)
EOF
    fi
    log "[$name] cross-check ${check_args[*]}"
    python3 "$TRUTH" check "${check_args[@]}" "$checked" "$st/$name.dac.json" \
        || die "[$name] the manifest and the DAC disagree (outputs left in $st)"
    # ---- the per-command DAC truths and SOS's view (.NET 11 dumps, or EXTRA_TRUTHS=1): made
    # right away, while the runtime whose DAC SOS loads is at the path the dump records
    if [ $rt = net11 ] || [ "${EXTRA_TRUTHS:-0}" = 1 ] || [[ " ${ISSUES_24_27[*]} " == *" $name "* ]]; then
        if [ $kind != triage ] && [ $kind != normal ]; then
            log "[$name] per-command DAC truths (locks, roots, statics, methods)"
            bash "$HERE/tools/dac_extras.sh" "$name" "$dmp" "$dac" "$st/$name.dac.json" "$st"
        fi
        log "[$name] SOS (dotnet-dump analyze)"
        local -a pe_tids=()
        # a crash dump: SOS's current thread is the core's first (main): ask for the crasher's too
        [ $kind != crash ] || mapfile -t pe_tids < <(python3 -c '
import json, sys
m = json.load(open(sys.argv[1], encoding="utf-8"))
ids = {t["managed_id"]: t["os_id"] for t in m.get("threads", [])}
crashers = [e.get("thrown_on_managed_id") for e in m.get("exceptions", []) if e.get("unhandled")]
crashers.append((m.get("fault") or {}).get("thread_managed_id"))   # fault.cs: every mode
for i in dict.fromkeys(c for c in crashers if c in ids):
    print(ids[i])' "$st/$name.manifest.json")
        bash "$HERE/tools/sos.sh" "$dmp" "$st/$name.sos.txt" "${pe_tids[@]}" || { log "[$name] WARNING: tools/sos.sh failed: no $name.sos.txt"; rm -f "$st/$name.sos.txt"; }
    fi
    # ---- a single-file app: what the core holds of its host (the exports a reader finds the
    # runtime by, .data/.bss, the bundle): tools/sfhost.py -> <name>.sfhost.json
    if [ $single = true ]; then
        python3 "$HERE/tools/sfhost.py" "$dmp" "$app/$prog" > "$st/$name.sfhost.json" \
            || { log "[$name] WARNING: tools/sfhost.py failed"; rm -f "$st/$name.sfhost.json"; }
    fi
    # ---- ClrMD truth: HOOK for dumps/tools/clrmd/truth.sh (written separately; skipped when absent)
    rm -f "$OUT/$name.clrmd.json"
    if [ "${NO_CLRMD:-0}" != 1 ] && [ -f "$CLRMD" ]; then
        log "[$name] ClrMD truth"
        # a gcore core lacks the file-backed pages; right after the dump the files on disk are
        # the ones that were mapped, so ClrMD reads them as dacprobe does (tools/clrmd finding 7)
        local -a clrmd_args=()
        [ $kind != gcore ] || clrmd_args+=(--file-fallback)
        if ! bash "$CLRMD" "$dmp" "$dac" "$st/$name.clrmd.json" "${clrmd_args[@]}" > "$w/clrmd.log" 2>&1; then
            tail -n 20 "$w/clrmd.log" >&2
            log "[$name] WARNING: tools/clrmd/truth.sh failed: no $name.clrmd.json"
            rm -f "$st/$name.clrmd.json"
        fi
    elif [ "${NO_CLRMD:-0}" != 1 ]; then
        log "[$name] NOTE: $CLRMD not present: no $name.clrmd.json"
    fi
    mkdir -p "$OUT"
    mv -f "$st"/* "$OUT/"
    if [ $kind = gcore ] && [ $sc = false ]; then
        # gcore leaves out the app's own (file-mapped, never written) dll, and this build of it
        # exists nowhere else: keep it (a few KB) for the tests' image path (dumps/images/<name>/;
        # the framework's files come from the NuGet pack)
        rm -rf "$OUT/images/$name"
        mkdir -p "$OUT/images/$name"
        cp "$app/$prog.dll" "$OUT/images/$name/"
        for lib in "${libs[@]}"; do cp "$app/$lib.dll" "$OUT/images/$name/"; done
    fi
    # the app's portable PDB (source lines, local names): the dumps of one build share it
    # (dumps/pdbs/README.md; the tests match it to each dump's dll by PDB id)
    # (a dump listed in tests::pending() (tests/src/lib.rs): in pdbs-ahead/, while the tests
    # leave it out: clrdata/tests/pdb_corpus.rs wants every PDB in pdbs/ to belong to a dump of
    # tests::all(), which leaves the pending dumps out; .NET 11 is claimed: its PDBs in pdbs/)
    local pdbs=$OUT/pdbs
    if grep -q "name: \"$name\"," "$HERE/../tests/src/lib.rs"; then
        pdbs=$OUT/pdbs-ahead
    fi
    keep_pdb "$pdbs" "$key" "$app/$prog.pdb"
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
log "the SDK corpus's compressed dumps: $total bytes ($(numfmt --to=iec $total))"
