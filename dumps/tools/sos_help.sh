#!/usr/bin/env bash
# Writes dumps/sos-help.txt: SOS's own `help <command>` for the commands whose option words
# commands::registry::SOS_OPTION_WORDS lists (commands/tests/sos_options.rs reads it).
# Needs dotnet-dump 10.0.750501 (`dotnet tool install -g dotnet-dump --version 10.0.750501`)
# and the .NET 10.0.14 runtime pack in the NuGet cache (SOS's managed commands need a runtime).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dd=${DOTNET_DUMP:-$HOME/.dotnet/tools/dotnet-dump}
pack=$HOME/.nuget/packages/microsoft.netcore.app.runtime.linux-x64/10.0.14/runtimes/linux-x64/native
core=$(mktemp)
trap 'rm -f "$core"' EXIT
zstd -qdc "$here/crash-net10.dmp.zst" > "$core"
{
    echo "# SOS's help for the commands of commands::registry::SOS_OPTION_WORDS (dumps/tools/sos_help.sh)"
    echo "# $("$dd" --version | head -1)"
    for c in dumpheap clrstack gcroot dumpobj syncblk dumpasync threadpool gcheapstat dumpgen; do
        echo "### help $c"
        "$dd" analyze "$core" -c "setsymbolserver -disable" -c "setclrpath $pack" -c "help $c" -c exit 2>&1 \
            | sed -e '/^Loading core dump/d' -e '/^Current symbol store settings/d' \
                  -e '/^Set \|^Symbol\|^Added\|^Cleared\|^Load path/d'
    done
} > "$here/sos-help.txt"
echo "wrote $here/sos-help.txt"
