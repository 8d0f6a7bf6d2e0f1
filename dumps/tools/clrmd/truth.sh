#!/usr/bin/env bash
# truth.sh <core path> <dac path> <out.json> [--bench] [--file-fallback]
#
# ClrMD's view of a dump (see README.md here). Builds dumps/tools/clrmd/ once with the .NET SDK
# (dotnet publish, framework-dependent, into dumps/build/clrmd/; rebuilt only when a source file
# is newer than the published dll) and runs it. NuGet must be able to restore
# Microsoft.Diagnostics.Runtime (or find it in ~/.nuget/packages).
#
# A Windows minidump (MDMP) needs the Windows DAC (mscordaccore.dll), which ClrMD can only load
# on Windows: the tool is then published self-contained for win-x64 into dumps/build/clrmd-win/
# and run under wine (WINEPREFIX defaults to dumps/build/clrmd-wine).
set -euo pipefail
if [ $# -lt 3 ]; then
    echo "usage: $0 <core path> <dac path> <out.json> [--bench] [--file-fallback]" >&2
    exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out_dir="$(cd "$here/../.." && pwd)/build/clrmd"
dll="$out_dir/clrmd-truth.dll"
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
command -v dotnet >/dev/null || { echo "truth.sh: the .NET SDK (dotnet) is needed" >&2; exit 1; }

if [ "$(head -c 4 "$1")" = "MDMP" ]; then
    command -v wine >/dev/null || { echo "truth.sh: a Windows minidump needs wine (apt-get install wine64)" >&2; exit 1; }
    out_dir="$out_dir-win"
    dll="$out_dir/clrmd-truth.exe"
fi
winpath() { local p; p="$(readlink -f "$1")"; echo "Z:${p//\//\\}"; }

stale=1
if [ -f "$dll" ]; then
    stale=0
    for f in "$here"/*.cs "$here"/*.csproj "$here"/Directory.Build.props; do
        [ "$f" -nt "$dll" ] && stale=1
    done
fi
if [ "$stale" = 1 ]; then
    # one builder at a time (the corpus generator may call this in parallel)
    mkdir -p "$(dirname "$out_dir")"
    exec 9>"$(dirname "$out_dir")/clrmd.lock"    # one lock for both builds: they share obj/
    flock 9
    if [ ! -f "$dll" ] || [ -n "$(find "$here" -maxdepth 1 \( -name '*.cs' -o -name '*.csproj' -o -name '*.props' \) -newer "$dll")" ]; then
        echo "truth.sh: building the ClrMD tool into $out_dir" >&2
        rm -rf "$out_dir.new"
        if [ "${dll##*.}" = exe ]; then
            # the newest 10.x whose win-x64 runtime, host and ASP.NET Core packs are all in the
            # NuGet cache (the self-contained publish restores the three; a runtime pack alone,
            # restored for some other build, is not enough)
            local_pk=~/.nuget/packages
            rt="$(comm -12 <(ls "$local_pk/microsoft.netcore.app.runtime.win-x64/" 2>/dev/null | sort) \
                           <(ls "$local_pk/microsoft.netcore.app.host.win-x64/" 2>/dev/null | sort) \
                  | comm -12 - <(ls "$local_pk/microsoft.aspnetcore.app.runtime.win-x64/" 2>/dev/null | sort) \
                  | { grep '^10\.' || true; } | sort -V | tail -1)"
            dotnet publish "$here/clrmd-truth.csproj" -c Release -r win-x64 --self-contained true \
                ${rt:+-p:RuntimeFrameworkVersion=$rt} -o "$out_dir.new" --nologo -v quiet >&2
        else
            dotnet publish "$here/clrmd-truth.csproj" -c Release -o "$out_dir.new" --nologo -v quiet >&2
        fi
        # swap the whole folder: a tool still running from the old one keeps its (unlinked) files
        rm -rf "$out_dir.old"; [ -d "$out_dir" ] && mv "$out_dir" "$out_dir.old"
        mv "$out_dir.new" "$out_dir"; rm -rf "$out_dir.old"
        touch "$dll"
    fi
    flock -u 9
fi
if [ "${dll##*.}" = exe ]; then
    export WINEDEBUG="${WINEDEBUG:--all}" WINEPREFIX="${WINEPREFIX:-$(dirname "$out_dir")/clrmd-wine}"
    touch "$3"
    exec wine "$dll" "$(winpath "$1")" "$(winpath "$2")" "$(winpath "$3")" "${@:4}"
fi
exec dotnet "$dll" "$1" "$2" "$3" "${@:4}"
