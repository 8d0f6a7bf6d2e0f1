#!/usr/bin/env bash
# dumps/aspnet/generate.sh [async-requests] [sync-requests]
#
# A dump of a hung ASP.NET Core service (aspnethang.cs: Kestrel on 127.0.0.1, many requests
# awaiting one dependency that never answers, a few handlers blocking thread-pool threads on it),
# as issue 17 asks. NOT committed (a Kestrel process's dump is larger than the corpus budget
# allows) and NOT run in CI: the dump and its truths land in dumps/build/aspnet/, and the tests
# that read it (repl/tests/aspnet.rs) skip, saying so, where it is absent.
#
# The app is framework-dependent on the SDK's own shared frameworks (Microsoft.NETCore.App and
# Microsoft.AspNetCore.App of the installed `dotnet`), so it needs no runtime pack; it is dumped
# with that runtime's own `createdump --withheap`, and dacprobe reads the dump with that
# runtime's own libmscordaccore.so. Requests are sent with curl. Run as root (ptrace).
# Output: dumps/build/aspnet/aspnethang.{dmp,manifest.json,dac.json,runtime}
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DUMPS=$(dirname "$HERE")
B=$DUMPS/build/aspnet
NASYNC=${1:-40}
NSYNC=${2:-3}
PORT=${PORT:-5917}
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
die() { echo "aspnet/generate.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (createdump needs ptrace)"
command -v dotnet >/dev/null || die "the .NET SDK (dotnet) is needed"
command -v curl >/dev/null || die "curl is needed"
mkdir -p "$B"

echo "== build aspnethang" >&2
dotnet publish "$HERE/AspnetHang.csproj" -c Release --nologo -v quiet \
    "-p:BaseIntermediateOutputPath=$B/obj/" "-p:BaseOutputPath=$B/bin/" -o "$B/app" >&2

rm -f "$B/aspnethang.dmp" "$B/aspnethang.manifest.json" "$B/out" "$B/err"
env -i PATH=/usr/bin:/bin HOME=/root DOTNET_gcServer=0 \
    dotnet "$B/app/aspnethang.dll" "$B/aspnethang.manifest.json" "$PORT" "$NASYNC" "$NSYNC" \
    > "$B/out" 2> "$B/err" &
runner=$!
cleanup() { kill -9 $runner 2>/dev/null || true; jobs -p | xargs -r kill 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 1 600); do
    grep -q '^listening' "$B/out" 2>/dev/null && break
    kill -0 $runner 2>/dev/null || { cat "$B/err" >&2; die "the app exited early"; }
    sleep 0.1
done
grep -q '^listening' "$B/out" || die "the app did not start listening"
echo "== $NASYNC requests to /orders/{id}, $NSYNC to /report" >&2
for i in $(seq 1 "$NASYNC"); do curl -s -m 3600 -o /dev/null "http://127.0.0.1:$PORT/orders/$i" & done
for i in $(seq 1 "$NSYNC"); do curl -s -m 3600 -o /dev/null "http://127.0.0.1:$PORT/report" & done
pid=
for _ in $(seq 1 1200); do
    pid=$(sed -n 's/^ready \([0-9]*\).*/\1/p' "$B/out" 2>/dev/null | head -n1)
    [ -n "$pid" ] && break
    kill -0 $runner 2>/dev/null || { cat "$B/err" >&2; die "the app exited early"; }
    sleep 0.1
done
[ -n "$pid" ] || die "no 'ready' within 120 s (out: $(cat "$B/out"))"
ver=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['runtime']['version'])" "$B/aspnethang.manifest.json")
rt=$(dirname "$(readlink -f "$(command -v dotnet)")")/shared/Microsoft.NETCore.App/$ver
[ -x "$rt/createdump" ] || die "no createdump in $rt"
echo "== createdump --withheap (pid $pid, .NET $ver)" >&2
"$rt/createdump" --withheap -f "$B/aspnethang.dmp" "$pid" >&2
echo "$rt" > "$B/aspnethang.runtime"
cleanup
trap - EXIT
echo "== dacprobe" >&2
python3 "$DUMPS/tools/dacprobe/dacprobe.py" --dac "$rt/libmscordaccore.so" "$B/aspnethang.dmp" > "$B/aspnethang.dac.json"
ls -la "$B/aspnethang.dmp" >&2
echo "compressed (zstd -19) would be: $(zstd -19 -T2 -q -c "$B/aspnethang.dmp" | wc -c) bytes" >&2
