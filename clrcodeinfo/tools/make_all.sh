#!/usr/bin/env bash
# make_all.sh: regenerate clrcodeinfo/tests/data/*.json from the corpus dumps (see
# make_testdata.py). Needs the dumps' runtime packs in ~/.nuget/packages (dumps/fetch-frameworks.sh),
# dotnet-dump 10.0.750501, zstd, and for the first corpus's 8.0.4 the DAC kept in
# ../shared/tools/dacs. DUMPS (default: the repository's dumps/) and DUMPS11 (the .NET 11.0.0
# dumps, default the same) say where the .dmp.zst files are; cores go to $WORK (default
# /tmp/clrcodeinfo-cores).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
DUMPS=${DUMPS:-$repo/dumps}
DUMPS11=${DUMPS11:-$DUMPS}
WORK=${WORK:-/tmp/clrcodeinfo-cores}
P=$HOME/.nuget/packages/microsoft.netcore.app.runtime.linux-x64
out=$repo/clrcodeinfo/tests/data
mkdir -p "$WORK" "$out"
dac804=$WORK/dac-8.0.4
if [ ! -f "$dac804/libmscordaccore.so" ]; then
    mkdir -p "$dac804"
    xz -dc "$repo/../shared/tools/dacs/linux-x64/8.0.4/libmscordaccore.so.xz" > "$dac804/libmscordaccore.so"
fi
# name runtime [extra make_testdata options]
one() {
    local name=$1 ver=$2; shift 2
    local src=$DUMPS
    case $ver in 11.*) src=$DUMPS11;; esac
    [ -f "$WORK/$name.core" ] || zstd -d -q "$src/$name.dmp.zst" -o "$WORK/$name.core"
    local dac=$P/$ver/runtimes/linux-x64/native img=(--image-dir "$P/$ver/runtimes/linux-x64")
    if [ "$ver" = 8.0.4 ]; then dac=$dac804; img=(); fi
    nice python3 "$here/make_testdata.py" --name "$name" --runtime "$ver" --dac "$dac/libmscordaccore.so" \
        "${img[@]}" --out "$out/$name.json" "$@" "$WORK/$name.core"
    echo "$name: $(wc -c < "$out/$name.json") bytes"
}
one hang-net8 8.0.33
one asyncreal-net8 8.0.33
one crash 8.0.4
one hang-net9 9.0.22
one hang-net10 10.0.14
one hang-net10-r2r 10.0.14
# The 10.0.14 DAC crashes in GetStackReferences on this dump.
one crash-net10 10.0.14 --no-stack-refs
one hang-net11 11.0.0
one crash-net11 11.0.0
one asyncreal-net11 11.0.0
# GC info of CoreLib methods beyond the stacks (sweep.py), on the hang dumps' runtimes.
for nv in net8:8.0.33 net9:9.0.22 net10:10.0.14 net11:11.0.0; do
    n=${nv%%:*} ver=${nv#*:}
    nice python3 "$here/sweep.py" --name "sweep-corelib-$n" --runtime "$ver" \
        --dac "$P/$ver/runtimes/linux-x64/native/libmscordaccore.so" --image-dir "$P/$ver/runtimes/linux-x64" \
        --count 30000 --out "$out/sweep-corelib-$n.json" "$WORK/hang-$n.core"
    echo "sweep-corelib-$n: $(wc -c < "$out/sweep-corelib-$n.json") bytes"
done
