#!/usr/bin/env bash
# make.sh: build Program.cs (threads stopped inside a catch funclet, a finally, a filter, with
# pinned and interior pointers, in shared generic code, and one spinning in managed code),
# run it, dump it with its runtime's createdump --withheap and write
# ../../tests/data/funclets-net10.json (on the machine's .NET 10 runtime) and
# funclets-net8.json (published self-contained on the 8.0.33 runtime pack), each through
# make_testdata.py with that build's DAC from its runtime pack. Made on 2026-11-27 with runtime
# 10.0.12 (SDK 10.0.401) and 8.0.33; the dumps are not kept (about 120 MB each). Needs root
# (createdump ptraces) and the runtime packs in ~/.nuget/packages (dumps/sdk/Fetch.csproj
# restores packs by version).
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

# .NET 8: self-contained on the 8.0.33 pack (its own createdump in the output).
mkdir -p "$work/net8"
cp "$here/Program.cs" "$work/net8/"
sed 's/net10.0/net8.0/' "$here/funclets.csproj" > "$work/net8/funclets.csproj"
(cd "$work/net8" && dotnet publish -c Release -r linux-x64 --self-contained -p:RuntimeFrameworkVersion=8.0.33 -o out >/dev/null)
"$work/net8/out/funclets" > "$work/net8/run.log" 2>&1 &
for _ in $(seq 1 100); do grep -q ready "$work/net8/run.log" && break; sleep 0.1; done
pid=$(grep -o 'ready [0-9]*' "$work/net8/run.log" | cut -d' ' -f2)
"$work/net8/out/createdump" --withheap -f "$work/funclets-net8.core" "$pid" >/dev/null
kill "$pid"
P8=$HOME/.nuget/packages/microsoft.netcore.app.runtime.linux-x64/8.0.33/runtimes/linux-x64
python3 "$here/../make_testdata.py" --name funclets-net8 --runtime 8.0.33 --dac "$P8/native/libmscordaccore.so" \
    --image-dir "$P8" --out "$here/../../tests/data/funclets-net8.json" "$work/funclets-net8.core"
