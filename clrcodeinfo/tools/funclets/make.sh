#!/usr/bin/env bash
# make.sh: build Program.cs (threads stopped inside a catch funclet, a finally, a filter, with
# pinned and interior pointers, in shared generic code, and one spinning in managed code),
# run it on the machine's .NET 10 runtime, dump it with that runtime's createdump --withheap and
# write ../../tests/data/funclets-net10.json (make_testdata.py with that build's DAC from its
# runtime pack). Made on 2026-11-27 with runtime 10.0.12 (SDK 10.0.401); the dump itself is not
# kept (122 MB). Needs root (createdump ptraces) and the runtime pack of the installed version
# in ~/.nuget/packages (dumps/sdk/Fetch.csproj restores packs by version).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-/tmp/clrcodeinfo-funclets}
mkdir -p "$work"
cp "$here/Program.cs" "$here/funclets.csproj" "$work/"
(cd "$work" && dotnet build -c Release -o out >/dev/null)
ver=$(dotnet --list-runtimes | awk '/Microsoft.NETCore.App 10\./{print $2}' | tail -1)
rt=$(dirname "$(command -v dotnet)")/shared/Microsoft.NETCore.App/$ver
[ -d "$rt" ] || rt=/usr/share/dotnet/shared/Microsoft.NETCore.App/$ver
"$work/out/funclets" > "$work/run.log" 2>&1 &
for _ in $(seq 1 100); do grep -q ready "$work/run.log" && break; sleep 0.1; done
pid=$(grep -o 'ready [0-9]*' "$work/run.log" | cut -d' ' -f2)
"$rt/createdump" --withheap -f "$work/funclets-net10.core" "$pid" >/dev/null
kill "$pid"
P=$HOME/.nuget/packages/microsoft.netcore.app.runtime.linux-x64/$ver/runtimes/linux-x64
python3 "$here/../make_testdata.py" --name funclets-net10 --runtime "$ver" --dac "$P/native/libmscordaccore.so" \
    --image-dir "$P" --out "$here/../../tests/data/funclets-net10.json" "$work/funclets-net10.core"
