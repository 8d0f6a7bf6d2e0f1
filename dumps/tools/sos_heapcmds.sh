#!/usr/bin/env bash
# sos_heapcmds.sh <name>... : writes SOS's heap-by-generation commands on each corpus dump
# named, as truths for dumpshell's commands of the same names (tests/tests/sos_heap.rs):
#
#   dumps/<name>.sos-gcheapstat.txt  gcheapstat, gcheapstat -unreachable
#   dumps/<name>.sos-sizestats.txt   sizestats
#   dumps/<name>.sos-dumpgen.txt     dumpgen gen0|gen1|gen2|loh|poh|foh, dumpgen gen2 -type
#                                    <TYPE_FILTER, default "heap.">, dumpgen <gen> -mt <mt> for
#                                    the MethodTable with the most objects in gen2 and in loh,
#                                    dumpheap -stat -gen <gen> for each generation
#   dumps/<name>.sos-dumpheap.txt    dumpheap -short <A> <B>, dumpheap -stat <A>, dumpheap -stat <A>
#                                    L1000 for A, B the first and last objects `dumpgen gen2 -mt`
#                                    lists for gen2's most numerous MethodTable
#   dumps/<name>.sos-dumpruntimetypes.txt  dumpruntimetypes
#   dumps/<name>.sos-dumpdelegate.txt  dumpdelegate <address> for the first DELEGATES_PER_TYPE
#                                    (default 3) objects of each type SOS's `dumpheap -type`
#                                    lists for the patterns of DELEGATE_TYPES (default
#                                    "System.Func System.Action Callback EventHandler"; a
#                                    non-delegate among them shows SOS's refusal)
#   dumps/<name>.sos-dumpheapfilter.txt  dumpheap -stat -heap <n> for each GC heap `eeheap -gc`
#                                    counts and for one past the last (SOS's refusal),
#                                    dumpheap -stat -bycount (alone and with -heap 0),
#                                    dumpheap -stat -segment <S> for each segment `eeheap -gc`
#                                    lists, -segment <begin> (an address inside a segment's
#                                    memory) of the first one, -short -segment <S> of the last
#                                    non-empty one, and -segment 1000 (no segment's)
#   dumps/<name>.sos-verifyobj.txt   verifyobj <A>, <B>, <A+8> (inside an object) and 1000 (on no
#                                    segment), A and B as for sos-dumpheap.txt
#
# TRUTHS (default: all of them) names which files to write, by <what>: e.g.
# `TRUTHS=dumpheapfilter sos_heapcmds.sh servergc-net11`.
#
# Uses the dotnet tool dotnet-dump (`dotnet tool install -g dotnet-dump --version 10.0.750501`,
# or $DOTNET_DUMP) with the build's own DAC from its NuGet runtime pack
# (`Microsoft.NETCore.App.Runtime.linux-x64 <manifest's version>` in ~/.nuget/packages,
# restored by dumps/fetch-frameworks.sh), no symbol server. Each command runs in its own
# `dotnet-dump analyze` (a failing command ends a session). The core is decompressed (sparse)
# from dumps/<name>.dmp.zst into $CORE_DIR (default target/corpus/, the tests' cache) if
# absent. Each file:
#
#   # sos_heapcmds.sh: <dump file name>
#   # dotnet-dump <version>; core sha256 <sha256 of the uncompressed core>
#   ### <command>
#   <what SOS printed for it>
#   ...
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dd=${DOTNET_DUMP:-$HOME/.dotnet/tools/dotnet-dump}
[ -x "$dd" ] || { echo "sos_heapcmds.sh: dotnet-dump not found ($dd)" >&2; exit 1; }
cores=${CORE_DIR:-$here/../target/corpus}
mkdir -p "$cores"
for name in "$@"; do
    core=$cores/$name.dmp
    [ -f "$core" ] || zstd -qd --sparse "$here/$name.dmp.zst" -o "$core"
    version=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['runtime']['version'])" \
        "$here/$name.manifest.json")
    pack=${NUGET_PACKAGES:-$HOME/.nuget/packages}/microsoft.netcore.app.runtime.linux-x64/$version/runtimes/linux-x64
    [ -f "$pack/native/libmscordaccore.so" ] || { echo "sos_heapcmds.sh: no $pack (dumps/fetch-frameworks.sh)" >&2; exit 1; }
    setup=(-c "setsymbolserver -disable" -c "setclrpath $pack/native")
    head="# dotnet-dump $("$dd" --version 2>/dev/null | head -n1); core sha256 $(sha256sum "$core" | cut -d' ' -f1)"
    sos() {
        timeout 900 "$dd" analyze "$core" "${setup[@]}" -c "$1" -c exit 2>&1 \
            | sed -e '/^Loading core dump/d' -e '/^Current symbol store/d' -e '/^-> Directory/d' \
                  -e '/^Set load path/d' -e '/^Ready to process analysis commands/d' \
                  -e '/^   at /d' || true
    }
    section() {
        echo "### $1"
        sos "$1"
    }
    # The MethodTable with the most objects in generation $1 (from SOS's dumpgen statistics).
    top_mt() {
        sos "dumpgen $1" | awk 'length($1) == 16 && $1 ~ /^[0-9a-f]+$/ && $2 ~ /^[0-9]+$/ { if ($2 + 0 > n) { n = $2 + 0; mt = $1 } }
            END { if (mt != "") print mt }'
    }
    want() { [[ " ${TRUTHS:-gcheapstat sizestats dumpgen dumpheap dumpruntimetypes dumpdelegate dumpheapfilter verifyobj} " == *" $1 "* ]]; }
    want gcheapstat && {
        echo "# sos_heapcmds.sh: $name.dmp"
        echo "$head"
        section "gcheapstat"
        section "gcheapstat -unreachable"
    } > "$here/$name.sos-gcheapstat.txt"
    want sizestats && {
        echo "# sos_heapcmds.sh: $name.dmp"
        echo "$head"
        section "sizestats"
    } > "$here/$name.sos-sizestats.txt"
    want dumpgen && {
        echo "# sos_heapcmds.sh: $name.dmp"
        echo "$head"
        for g in gen0 gen1 gen2 loh poh foh; do
            section "dumpgen $g"
        done
        section "dumpgen gen2 -type ${TYPE_FILTER:-heap.}"
        for g in gen2 loh; do
            mt=$(top_mt "$g")
            [ -n "$mt" ] && section "dumpgen $g -mt $mt"
        done
        for g in gen0 gen1 gen2 loh poh foh; do
            section "dumpheap -stat -gen $g"
        done
    } > "$here/$name.sos-dumpgen.txt"
    want dumpheap && {
        mt=$(top_mt gen2)
        read -r a b < <(sos "dumpgen gen2 -mt $mt" | awk 'length($1) == 16 && $1 ~ /^[0-9a-f]+$/ && NF == 3 { if (!f) f = $1; l = $1 }
            END { print f, l }')
        {
            echo "# sos_heapcmds.sh: $name.dmp"
            echo "$head"
            section "dumpheap -short $a $b"
            section "dumpheap -stat $a"
            section "dumpheap -stat $a L1000"
        } > "$here/$name.sos-dumpheap.txt"
    }
    want dumpruntimetypes && {
        echo "# sos_heapcmds.sh: $name.dmp"
        echo "$head"
        section "dumpruntimetypes"
    } > "$here/$name.sos-dumpruntimetypes.txt"
    want dumpdelegate && {
        addrs=()
        for prefix in ${DELEGATE_TYPES:-System.Func System.Action Callback EventHandler}; do
            while read -r a; do addrs+=("$a"); done < <(sos "dumpheap -type $prefix" | awk -v n="${DELEGATES_PER_TYPE:-3}" \
                '$1 ~ /^[0-9a-f]+$/ && $2 ~ /^[0-9a-f]+$/ && NF == 3 { if (seen[$2]++ < n) print $1 }')
        done
        {
            echo "# sos_heapcmds.sh: $name.dmp"
            echo "$head"
            for a in $(printf '%s\n' "${addrs[@]}" | sort -u); do
                section "dumpdelegate $a"
            done
        } > "$here/$name.sos-dumpdelegate.txt"
    }
    want dumpheapfilter && {
        eeheap=$(sos "eeheap -gc")
        heaps=$(awk '/^Number of GC Heaps:/ { print $NF }' <<<"$eeheap")
        # segment begin allocated committed ...: each segment's address, begin and allocated.
        segs=$(awk 'NF >= 4 && $1 ~ /^[0-9a-f]+$/ && $2 ~ /^[0-9a-f]+$/ && $3 ~ /^[0-9a-f]+$/ && length($1) >= 8 { print $1, $2, $3 }' <<<"$eeheap")
        echo "# sos_heapcmds.sh: $name.dmp"
        echo "$head"
        for ((i = 0; i <= heaps; i++)); do
            section "dumpheap -stat -heap $i"
        done
        section "dumpheap -stat -bycount"
        section "dumpheap -stat -bycount -heap 0"
        while read -r s _ _; do
            section "dumpheap -stat -segment $s"
        done <<<"$segs"
        read -r _ begin _ <<<"$segs"
        section "dumpheap -stat -segment $begin"
        last=$(awk '$2 != $3 { s = $1 } END { print s }' <<<"$segs")
        section "dumpheap -short -segment $last"
        section "dumpheap -stat -segment 1000"
    } > "$here/$name.sos-dumpheapfilter.txt"
    want verifyobj && {
        mt=$(top_mt gen2)
        read -r a b < <(sos "dumpgen gen2 -mt $mt" | awk 'length($1) == 16 && $1 ~ /^[0-9a-f]+$/ && NF == 3 { if (!f) f = $1; l = $1 }
            END { print f, l }')
        echo "# sos_heapcmds.sh: $name.dmp"
        echo "$head"
        for x in "$a" "$b" "$(printf %x $((0x$a + 8)))" 1000; do
            section "verifyobj $x"
        done
    } > "$here/$name.sos-verifyobj.txt"
    echo "sos_heapcmds.sh: $name" >&2
done
