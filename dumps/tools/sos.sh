#!/usr/bin/env bash
# sos.sh <core> <out.sos.txt> [<os thread id>...]
#
# SOS's view of a dump, as a third truth beside the DAC's (dacprobe) and ClrMD's: the dotnet
# tool dotnet-dump (`dotnet tool install -g dotnet-dump --version 10.0.750501`, or $DOTNET_DUMP)
# runs each command below in its own `dotnet-dump analyze <core> -c <command> -c exit` (one
# failing command, e.g. an unknown option, ends a dotnet-dump session: the others must not be
# lost) and the outputs are written one after another as sections:
#
#   # sos.sh: <dump file name>
#   # dotnet-dump <version>; core sha256 <sha256 of the uncompressed core>
#   ### <command>
#   <what dotnet-dump printed for it, its "Loading core dump: ..." line left out>
#   ### <next command>
#   ...
#
# Commands: sosstatus (which DAC / cDAC SOS loaded), clrthreads, clrstack -all, dumpheap -stat,
# dumpasync, dumpasync --fields, dumpasync --tasks, gchandles, syncblk, pe (the current thread's
# last exception: in a crash dump createdump writes the crashing thread first), and `runtimes --forceusecdac true` followed by
# clrthreads (what SOS does when told to use the cDAC it ships, libmscordaccore_universal.so);
# then for each OS thread id given (generate-sdk.sh gives a crash dump's crashing thread: the
# core's first thread, SOS's current one, is the main thread) `setthread --tid <id>` with
# `clrstack -f` (the thread's managed frames with the native frames and the runtime's explicit
# Frames between them) and with `pe -nested`, as the sections "### setthread --tid <id>;
# clrstack -f" and "### setthread --tid <id>; pe -nested".
# SOS finds the runtime's own DAC (libmscordaccore.so) beside libcoreclr.so at the path the dump
# records: run this while that runtime is there (generate-sdk.sh does, right after the dump).
# Addresses are SOS's own; nothing here is parsed by dumpshell's tests yet.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 <core> <out.sos.txt> [<os thread id>...]" >&2; exit 2; }
core=$1 out=$2
shift 2
dd=${DOTNET_DUMP:-$HOME/.dotnet/tools/dotnet-dump}
[ -x "$dd" ] || { echo "sos.sh: dotnet-dump not found ($dd): dotnet tool install -g dotnet-dump --version 10.0.750501" >&2; exit 1; }
ver=$("$dd" --version 2>/dev/null | head -n1)
cmds=("sosstatus" "clrthreads" "clrstack -all" "dumpheap -stat" "dumpasync" "dumpasync --fields"
      "dumpasync --tasks" "gchandles" "syncblk" "pe")
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
    echo "# sos.sh: $(basename "$core")"
    echo "# dotnet-dump $ver; core sha256 $(sha256sum "$core" | cut -d' ' -f1)"
    for c in "${cmds[@]}"; do
        echo "### $c"
        timeout 600 "$dd" analyze "$core" -c "$c" -c exit > "$tmp" 2>&1 || echo "(dotnet-dump exit status $?)"
        grep -v '^Loading core dump: ' "$tmp" || true
    done
    echo "### runtimes --forceusecdac true; clrthreads"
    timeout 600 "$dd" analyze "$core" -c "runtimes --forceusecdac true" -c "clrthreads" -c exit > "$tmp" 2>&1 \
        || echo "(dotnet-dump exit status $?)"
    grep -v '^Loading core dump: ' "$tmp" || true
    for tid in "$@"; do
        echo "### setthread --tid $tid; clrstack -f"
        timeout 600 "$dd" analyze "$core" -c "setthread --tid $tid" -c "clrstack -f" -c exit > "$tmp" 2>&1 \
            || echo "(dotnet-dump exit status $?)"
        grep -v '^Loading core dump: ' "$tmp" || true
        echo "### setthread --tid $tid; pe -nested"
        timeout 600 "$dd" analyze "$core" -c "setthread --tid $tid" -c "pe -nested" -c exit > "$tmp" 2>&1 \
            || echo "(dotnet-dump exit status $?)"
        grep -v '^Loading core dump: ' "$tmp" || true
    done
} > "$out"
