#!/usr/bin/env bash
# sos_live.sh <name>... : writes dumps/<name>.sos-live.txt for each corpus dump named.
#
# SOS's `dumpheap -stat -live`, `dumpheap -stat -dead` and `objsize -stat <address>`, as
# truths for dumpshell's `dumpheap -live/-dead` and `objsize` (tests/tests/live.rs). Uses the
# dotnet tool dotnet-dump (`dotnet tool install -g dotnet-dump --version 10.0.750501`, or $DOTNET_DUMP) with the build's own DAC from its NuGet runtime pack
# (`Microsoft.NETCore.App.Runtime.linux-x64 <manifest's version>` in ~/.nuget/packages, restored
# by dumps/fetch-frameworks.sh), no symbol server. The core is decompressed (sparse) from
# dumps/<name>.dmp.zst into $CORE_DIR (default target/corpus/, the tests' cache) if absent.
# SOS's objsize with no argument fails in this dotnet-dump ("Could not parse target object
# address: 0"), so only the one-object form is recorded: `objsize -stat <address>` for the
# first OBJSIZE_PER_TYPE (default 8) objects of each type `dumpheap -type <prefix>` lists for
# each prefix of OBJSIZE_TYPES (default "Heap. Hang.": the scenarios' own types). The output:
#
#   # sos_live.sh: <dump file name>
#   # dotnet-dump <version>; core sha256 <sha256 of the uncompressed core>
#   ### <command>
#   <what SOS printed for it>
#   ...
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dd=${DOTNET_DUMP:-$HOME/.dotnet/tools/dotnet-dump}
[ -x "$dd" ] || { echo "sos_live.sh: dotnet-dump not found ($dd)" >&2; exit 1; }
cores=${CORE_DIR:-$here/../target/corpus}
mkdir -p "$cores"
for name in "$@"; do
    core=$cores/$name.dmp
    [ -f "$core" ] || zstd -qd --sparse "$here/$name.dmp.zst" -o "$core"
    version=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['runtime']['version'])" \
        "$here/$name.manifest.json")
    family=${version%%.*}
    pack=${NUGET_PACKAGES:-$HOME/.nuget/packages}/microsoft.netcore.app.runtime.linux-x64/$version/runtimes/linux-x64
    [ -f "$pack/native/libmscordaccore.so" ] || { echo "sos_live.sh: no $pack (dumps/fetch-frameworks.sh)" >&2; exit 1; }
    setup=(-c "setsymbolserver -disable" -c "setclrpath $pack/native" -c "setsymbolserver -directory $pack/lib/net$family.0")
    tmp=$(mktemp)
    addrs=()
    for prefix in ${OBJSIZE_TYPES:-Heap. Hang.}; do
        timeout 600 "$dd" analyze "$core" "${setup[@]}" -c "dumpheap -type $prefix" -c exit > "$tmp" 2>&1
        # The first OBJSIZE_PER_TYPE (default 8) objects of each MethodTable.
        while read -r a; do addrs+=("$a"); done < <(awk -v n="${OBJSIZE_PER_TYPE:-8}" \
            '$1 ~ /^[0-9a-f]+$/ && $2 ~ /^[0-9a-f]+$/ && NF == 3 { if (seen[$2]++ < n) print $1 }' "$tmp")
    done
    objcmds=()
    for a in "${addrs[@]}"; do objcmds+=(-c "objsize -stat $a"); done
    out=$here/$name.sos-live.txt
    clean() {
        sed -e '/^Loading core dump/d' -e '/^Current symbol store/d' -e '/^-> Directory/d' \
            -e '/^Set load path/d' -e '/^Caching GC roots/d' -e '/^Subsequent runs/d' \
            -e '/^Ready to process analysis commands/d'
    }
    {
        echo "# sos_live.sh: $name.dmp"
        echo "# dotnet-dump $("$dd" --version 2>/dev/null | head -n1); core sha256 $(sha256sum "$core" | cut -d' ' -f1)"
        for c in "dumpheap -stat -live" "dumpheap -stat -dead"; do
            echo "### $c"
            timeout 900 "$dd" analyze "$core" "${setup[@]}" -c "$c" -c exit 2>&1 | clean || true
        done
        # The objsize commands in one session: dotnet-dump echoes nothing between commands,
        # each output starts "Objects which <address> (<type>) transitively keep alive:".
        timeout 1800 "$dd" analyze "$core" "${setup[@]}" "${objcmds[@]}" -c exit 2>&1 | clean \
            | sed -E 's/^(Objects which ([0-9a-f]+) .*)$/### objsize -stat \2\n\1/' || true
    } > "$out"
    rm -f "$tmp"
    echo "sos_live.sh: $out" >&2
done
