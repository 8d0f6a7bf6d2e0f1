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
#   --patch FILE      a patch (patch -p1, relative to the repository root) applied to those sources:
#                     for a dump built from sources that were never committed (see README.md)
#   --head COMMIT     the commit the build must see as HEAD (40 hex digits; required)
#   --out DIR         where the PDBs go (default: a folder under the work folder; printed)
#   --work DIR        work folder (default dumps/build/pdb-rebuild/<sources>-<head>)
# Needs root (unshare, mount), the .NET SDK 10.0.401 and NuGet (or the packages in ~/.nuget).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)     # dumps/
REPO=$(cd "$HERE/.." && pwd -P)
die() { echo "rebuild.sh: error: $*" >&2; exit 1; }

orig=/work/main sources=HEAD head='' out='' work='' patch=''
while [ $# -gt 0 ]; do
    case $1 in
        --orig) orig=$2; shift 2 ;;
        --sources) sources=$2; shift 2 ;;
        --head) head=$2; shift 2 ;;
        --patch) patch=$(cd "$(dirname "$2")" && pwd -P)/${2##*/}; shift 2 ;;
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
[ -z "$patch" ] || tag=$tag-$(sha256sum "$patch" | cut -c1-12)
work=${work:-$HERE/build/pdb-rebuild/$tag}
out=${out:-$work/pdbs}

rm -rf "$work/src"
mkdir -p "$work/src" "$out"
git -C "$REPO" archive "$rev" dumps/scenarios dumps/sdk | tar -x -C "$work/src"
[ -z "$patch" ] || patch -s -p1 -d "$work/src" < "$patch" || die "$patch does not apply to $rev"
cp "$HERE/generate-sdk.sh" "$work/src/dumps/"
mkdir -p "$work/src/dumps/build"
# the packs and private roots are the same for every build: share them with this checkout's
[ -d "$HERE/build/roots" ] && ln -sfn "$HERE/build/roots" "$work/src/dumps/build/roots"
printf '%s\n' "$head" > "$work/HEAD"
out=$(cd "$out" && pwd -P)

echo "sources $rev, HEAD $head, built in $orig/dumps -> $out" >&2
unshare -m --propagation private bash -c '
    set -euo pipefail
    mount --bind "$1/src/dumps" "$2/dumps"
    mount --bind "$1/HEAD" "$2/.git/HEAD"
    cd "$2/dumps"
    export BUILD_ONLY=1 PDB_OUT=$3
    shift 3
    bash ./generate-sdk.sh "$@"
' rebuild "$work" "$orig" "$out" "$@"
