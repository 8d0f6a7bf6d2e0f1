#!/usr/bin/env bash
# sos_gcroot.sh <core> <out.sos-gcroot.txt>
#
# SOS's gcroot on a dump, as a truth for dumpshell's root set (tests/tests/roots.rs
# `gcroot_root_sets_are_sos`): the dotnet tool dotnet-dump (`dotnet tool install -g dotnet-dump
# --version 10.0.750501`, or $DOTNET_DUMP) with the build's own DAC from its NuGet runtime pack
# (`Microsoft.NETCore.App.Runtime.linux-x64 <version>` in ~/.nuget/packages, restored by
# dumps/fetch-frameworks.sh; the version is the manifest's), no symbol server (its assemblies
# from the pack's lib folder), runs `gcroot <address>` in one session for every object
# `dumpheap -short -type <prefix>` lists for each prefix of GCROOT_TYPES (default "Heap." and
# "Hang.": the scenarios' own types) and for every object ClrMD's roots truth
# (`<core name>.roots.clrmd.json` beside the compressed core) names as a stack root (the
# locals). The output:
#
#   # sos_gcroot.sh: <dump file name>
#   # dotnet-dump <version>; core sha256 <sha256 of the uncompressed core>
#   ### gcroot <address>
#   <what SOS printed for it>
#   ...
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 <core> <out.sos-gcroot.txt>" >&2; exit 2; }
core=$1 out=$2
here=$(cd "$(dirname "$0")/.." && pwd)
dd=${DOTNET_DUMP:-$HOME/.dotnet/tools/dotnet-dump}
[ -x "$dd" ] || { echo "sos_gcroot.sh: dotnet-dump not found ($dd)" >&2; exit 1; }
name=$(basename "$core" .dmp)
version=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['runtime']['version'])" \
    "$here/$name.manifest.json")
family=${version%%.*}
pack=${NUGET_PACKAGES:-$HOME/.nuget/packages}/microsoft.netcore.app.runtime.linux-x64/$version/runtimes/linux-x64
[ -f "$pack/native/libmscordaccore.so" ] || { echo "sos_gcroot.sh: no $pack (dumps/fetch-frameworks.sh)" >&2; exit 1; }
setup=(-c "setsymbolserver -disable" -c "setclrpath $pack/native" -c "setsymbolserver -directory $pack/lib/net$family.0")
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
addrs=()
for prefix in ${GCROOT_TYPES:-Heap. Hang.}; do
    timeout 600 "$dd" analyze "$core" "${setup[@]}" -c "dumpheap -short -type $prefix" -c exit > "$tmp" 2>&1
    while read -r a; do addrs+=("$a"); done < <(grep -E '^ *[0-9a-f]{8,16} *$' "$tmp" | tr -d ' ')
done
clrmd="$here/$name.roots.clrmd.json"
if [ -f "$clrmd" ]; then
    while read -r a; do addrs+=("$a"); done < <(python3 - "$clrmd" <<'PY'
import json, sys
seen = set()
for r in json.load(open(sys.argv[1]))['roots']:
    if r['kind'] == 'Stack' and r['object'] not in seen:
        seen.add(r['object'])
        print(r['object'][2:])
PY
)
fi
mapfile -t addrs < <(printf '%s\n' "${addrs[@]}" | sort -u)
cmds=()
for a in "${addrs[@]}"; do cmds+=(-c "gcroot $a"); done
timeout 3600 "$dd" analyze "$core" "${setup[@]}" "${cmds[@]}" -c exit > "$tmp" 2>&1 || true
{
    echo "# sos_gcroot.sh: $(basename "$core")"
    echo "# dotnet-dump $("$dd" --version 2>/dev/null | head -n1); core sha256 $(sha256sum "$core" | cut -d' ' -f1)"
    # dotnet-dump echoes nothing between commands: split where each gcroot starts (SOS prints
    # "Caching GC roots" once, then each command's roots, ending with "Found N unique roots.").
    python3 - "$tmp" "${addrs[@]}" <<'PY'
import sys
text = open(sys.argv[1]).read().splitlines()
addrs = sys.argv[2:]
# Drop the session's preamble (loading, symbol store and DAC settings, the cache notice).
body = [l for l in text if not l.startswith(('Loading core dump', 'Current symbol store',
        '-> Directory', 'Set load path', 'Caching GC roots', 'Subsequent runs'))]
i = 0
for a in addrs:
    print(f'### gcroot {a}')
    while i < len(body):
        l = body[i]
        i += 1
        print(l)
        if l.startswith('Found ') and l.rstrip().endswith('unique roots.'):
            break
PY
} > "$out"
echo "sos_gcroot.sh: $out: ${#addrs[@]} objects" >&2
