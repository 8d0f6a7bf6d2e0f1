#!/usr/bin/env bash
# dumps/pdbs/rebuild.sh [options] name...
#
# Rebuilds the scenario apps of committed SDK-corpus dumps bit for bit, to recover their portable
# PDBs (which the corpus did not keep before generate-sdk.sh learnt to), and copies each PDB to
# OUT/<build key>/<program>.pdb. Whether a rebuilt dll is the dumped one is checked afterwards,
# by PDB id, against the dll in the dump's memory (clrdata/tests/pdb_corpus.rs; README.md here).
#
# A deterministic Roslyn build is a function of its inputs, and three of them are not in the
# sources: the absolute paths (of the sources, of obj/ and of the PDB: they are in the PDB, whose
# id the dll carries), and the git commit the SDK reads from .git/HEAD (SourceRevisionId, which it
# appends to the assembly's InformationalVersion: "1.0.0+<commit>"). So this script, as root, in a
# private mount namespace (unshare -m: nothing changes outside it):
#   - lays out the scenario sources of git revision SOURCES (dumps/scenarios, dumps/sdk) and this
#     checkout's dumps/generate-sdk.sh in a work folder, and bind-mounts it on ORIG/dumps, where
#     the corpus was built (the path the dumps' modules and CodeView entries name);
#   - bind-mounts a file holding HEAD_COMMIT (the "+<commit>" the dumped dll's
#     InformationalVersion names) on ORIG/.git/HEAD;
#   - runs `BUILD_ONLY=1 PDB_OUT=OUT generate-sdk.sh name...` there: the generator's own restore
#     and publish steps, nothing run or dumped.
#
# Options:
#   --orig DIR        where the corpus was built (default /work/main; must hold a .git folder)
#   --sources REV     git revision of this repository for the scenario sources (default HEAD)
#   --take REV:PATH   take that file (relative to the repository root) from revision REV instead
#                     (repeatable): the first SDK dumps were built from dumps/scenarios/hang.cs as
#                     the first corpus committed it, with the SDK corpus's other files (README.md)
#   --head COMMIT     the commit the build must see as HEAD (40 hex digits; required)
#   --out DIR         where the PDBs go (default: a folder under the work folder; printed)
#   --work DIR        work folder (default dumps/build/pdb-rebuild/<sources>-<head>)
# Needs root (unshare, mount), the .NET SDK 10.0.401 and NuGet (or the packages in ~/.nuget).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)     # dumps/
REPO=$(cd "$HERE/.." && pwd -P)
die() { echo "rebuild.sh: error: $*" >&2; exit 1; }

orig=/work/main sources=HEAD head='' out='' work=''
takes=()
while [ $# -gt 0 ]; do
    case $1 in
        --orig) orig=$2; shift 2 ;;
        --sources) sources=$2; shift 2 ;;
        --head) head=$2; shift 2 ;;
        --take) takes+=("$2"); shift 2 ;;
        --out) out=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --) shift; break ;;
        -*) die "unknown option $1" ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || die "no dump names (e.g. hang-net10 heap-net9)"
[[ $head =~ ^[0-9a-f]{40}$ ]] || die "--head needs the 40-hex-digit commit of the dumped dll's InformationalVersion"
[ "$(id -u)" = 0 ] || die "run as root (unshare -m and mount)"
[ -d "$orig/.git" ] && [ -f "$orig/.git/HEAD" ] || die "$orig/.git/HEAD is not there (--orig: where the corpus was built)"
rev=$(git -C "$REPO" rev-parse --verify "$sources^{commit}") || die "no revision $sources"
tag=${rev:0:12}-${head:0:12}
for t in "${takes[@]}"; do
    r=$(git -C "$REPO" rev-parse --verify "${t%%:*}^{commit}") || die "--take $t: no revision"
    tag=$tag-${r:0:7}
done
work=${work:-$HERE/build/pdb-rebuild/$tag}
out=${out:-$work/pdbs}

rm -rf "$work/src"
mkdir -p "$work/src" "$out"
git -C "$REPO" archive "$rev" dumps/scenarios dumps/sdk | tar -x -C "$work/src"
for t in "${takes[@]}"; do
    [ -n "${t#*:}" ] && [ "${t#*:}" != "$t" ] || die "--take wants REV:PATH, not $t"
    git -C "$REPO" show "$t" > "$work/src/${t#*:}" || die "--take $t: no such file"
done
cp "$HERE/generate-sdk.sh" "$work/src/dumps/"
mkdir -p "$work/src/dumps/tools" "$work/src/dumps/windows"
cp "$HERE/tools/pdbkey.py" "$work/src/dumps/tools/"
mkdir -p "$work/src/dumps/build"
# the packs and private roots are the same for every build: share them with this checkout's
[ -d "$HERE/build/roots" ] && ln -sfn "$HERE/build/roots" "$work/src/dumps/build/roots"
printf '%s\n' "$head" > "$work/HEAD"
out=$(cd "$out" && pwd -P)

echo "sources $rev, HEAD $head, built in $orig/dumps -> $out" >&2
# windows-hang-net10 / -net8 are built by windows/generate.sh (sdk_windows_hang), whose publish
# step this repeats (win-x64, self-contained; that script runs wine and makes the dump too)
windows_publish() {  # <name> <version> <tfm>, in ORIG/dumps
    local name=$1 ver=$2 tfm=$3 w=$PWD/build/windows/$1
    local app=$w/app/$ver
    rm -rf "$w"; mkdir -p "$w" "$app"
    echo "== [$name] dotnet publish (Roslyn, $tfm, win-x64 self-contained, runtime $ver)" >&2
    dotnet publish "$PWD/sdk/Scenario.csproj" -nologo -v:q -c Release -r win-x64 --self-contained true \
        -p:Scenario=hang -p:TargetFrameworks="$tfm" -p:TargetFramework="$tfm" -p:RuntimeFrameworkVersion="$ver" \
        "-p:BaseIntermediateOutputPath=$w/obj/" "-p:BaseOutputPath=$w/bin/" -o "$app" \
        > "$w/publish.log" 2>&1 || { cat "$w/publish.log" >&2; echo "rebuild.sh: publish failed" >&2; exit 1; }
    local idkey
    idkey=$(python3 tools/pdbkey.py "$app/hang.pdb" | cut -d' ' -f1)
    mkdir -p "$PDB_OUT/$name/$idkey"
    cp "$app/hang.pdb" "$PDB_OUT/$name/$idkey/"
    echo "$name $name $app"
}
export -f windows_publish

unshare -m --propagation private bash -c '
    set -euo pipefail
    mount --bind "$1/src/dumps" "$2/dumps"
    mount --bind "$1/HEAD" "$2/.git/HEAD"
    cd "$2/dumps"
    export BUILD_ONLY=1 PDB_OUT=$3
    shift 3
    sdk=()
    for n in "$@"; do
        case $n in
            windows-hang-net10) windows_publish "$n" 10.0.14 net10.0 ;;
            windows-hang-net8) windows_publish "$n" 8.0.33 net8.0 ;;
            *) sdk+=("$n") ;;
        esac
    done
    [ ${#sdk[@]} -eq 0 ] || bash ./generate-sdk.sh "${sdk[@]}"
' rebuild "$work" "$orig" "$out" "$@"
