#!/usr/bin/env bash
# dumps/bench/bench.sh [--all | <dump>...] [--runs N] [--only WORK[,WORK...]] [--no-build]
#                      [--dumpshell DIR] [--label TEXT] [--gcroot ADDR] [--no-sos] [--no-clrmd]
#
# dumpshell side by side with SOS (dotnet-dump analyze, 10.0.750501, with the dump's own DAC)
# and ClrMD 4.2 (dumps/tools/clrmd/truth.sh --bench), in one run, on the same dumps, the same
# warm page cache, each measured N times (--runs, default 3) with /usr/bin/time (wall seconds,
# max RSS); the table gives the median of the N runs of each. The runs of dumpshell and SOS
# alternate, so that the shared machine's load drifts over both alike.
#
# Works (rows), per dump as its name says (--only picks a subset, by these names):
# ClrMD runs once per run as one process (truth.sh --bench: start-up, a timed EnumerateObjects()
# summing sizes, without type names, then a timed EnumerateStackTrace of every thread with each
# frame's method signature); its figure for a work is that of a whole run doing that work alone.
#   eeversion      start-up: open the dump, find the runtime, print its version
#                  (dumpshell eeversion | SOS eeversion | ClrMD: its run minus both walks: host
#                  start, DataTarget, DAC load, runtime, segments)
#   dumpheap-stat  dumpheap -stat, whole process (dumpshell | SOS | ClrMD: its run minus the
#                  stack walk)
#   census         dumpshell's census alone (clrdata/examples/heapstat, the parallel census'
#                  own timer; RSS of the whole example) | - | ClrMD's heap walk alone
#   gcroot         gcroot <addr> of the deepest list node of large-heap (Bench.Item Index
#                  20,999,999: element 999,999 of the last Bench.Item[] chunk, the end of its
#                  linked list; found once with dumpshell and kept in <dump>.gcroot) | SOS gcroot
#                  of the same address | -
#   clrstack-all   clrstack -all (dumpshell | SOS | ClrMD: its run minus the heap walk)
#   pstacks        dumpshell pstacks | SOS parallelstacks | ClrMD as for clrstack-all
#   dumpasync      dumpasync | dumpasync | -
# large-heap-*: eeversion dumpheap-stat census gcroot; manytypes-*: eeversion dumpheap-stat
# census; threads-1000-*: eeversion clrstack-all pstacks; async-*: eeversion dumpasync; any
# other dump: all but census and gcroot (gcroot with --gcroot ADDR).
# On dumps with census, a raw read of the heap segments' bytes (clrdata/examples/rawscan over
# ClrMD's segment ranges) is noted under the table as the floor of any heap walk.
#
# --all: the standard set, from dumps/build/bench/ (made by `sudo dumps/bench/generate-large.sh`):
#   large-heap-net8 large-heap-net10 threads-1000-net10 manytypes-net8 manytypes-net10, and
#   async-net10 (dumps/async-net10.dmp.zst, decompressed there once; its DAC from the NuGet
#   runtime pack 10.0.14). A missing dump is reported and skipped.
# The DAC: <dump minus .dmp>.dac holds its path (generate-large.sh writes it); SOS gets
#   `setsymbolserver -disable` and `setclrpath <its folder>` before the command, dumpshell
#   `--image-path <its folder>` when the runtime the dump records is not at that folder (the
#   corpus dumps, made elsewhere), ClrMD the DAC itself.
# --dumpshell DIR: time the dumpshell (and examples/heapstat, examples/rawscan) in DIR, e.g.
#   another worktree's target/release, or a copy of one with a REVISION file naming its commit
#   (implies --no-build); default: this tree's target/release, built first (cargo build
#   --release -p repl; -p clrdata --example heapstat --example rawscan).
# --label TEXT: named in the header and the run folder (e.g. before, after).
#
# Every tool's output (last run) is kept in the run folder, dumps/build/bench/runs/<UTC time>[-label]/
# <dump>/<work>.<tool>.out|.err (+ .times: one "seconds maxrss_kb exit" line per run), with
# table.txt (this table), table.md (the same in Markdown) and answers.txt (what each tool
# answered: object and type counts, and per method table where dumpshell and SOS differ; the
# gcroot paths; threads and frames; async chains), made by answers.py, so a person can compare
# the answers, not just the times. The folder is printed at the start and the end.
# Environment: BENCH_TIMEOUT (seconds per run, default 1200), DOTNET_DUMP (default
# ~/.dotnet/tools/dotnet-dump).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
B=$ROOT/dumps/build/bench
runs=3 only= all=0 build=1 dsdir= label= gcroot_arg= use_sos=1 use_clrmd=1 dumps=()
usage() { sed -n '2,3p' "$0" | sed 's/^# //' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        --runs) runs=$2; shift 2 ;;
        --only) only=,$2,; shift 2 ;;
        --all) all=1; shift ;;
        --no-build) build=0; shift ;;
        --dumpshell) dsdir=$(cd "$2" && pwd) || exit 2; build=0; shift 2 ;;
        --label) label=$2; shift 2 ;;
        --gcroot) gcroot_arg=$2; shift 2 ;;
        --no-sos) use_sos=0; shift ;;
        --no-clrmd) use_clrmd=0; shift ;;
        -h|--help) usage ;;
        -*) echo "unknown option $1" >&2; usage ;;
        *) dumps+=("$1"); shift ;;
    esac
done
case $runs in ''|*[!0-9]*|0) echo "--runs takes a positive number" >&2; exit 2 ;; esac
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

# ---- the dumps
ASYNC_PACK_DAC=$HOME/.nuget/packages/microsoft.netcore.app.runtime.linux-x64/10.0.14/runtimes/linux-x64/native/libmscordaccore.so
if [ $all = 1 ]; then
    mkdir -p "$B"
    if [ ! -f "$B/async-net10.dmp" ] && [ -f "$ROOT/dumps/async-net10.dmp.zst" ]; then
        echo "decompressing dumps/async-net10.dmp.zst into $B/ ..." >&2
        zstd -q -d -c "$ROOT/dumps/async-net10.dmp.zst" >"$B/async-net10.dmp.tmp" && mv "$B/async-net10.dmp.tmp" "$B/async-net10.dmp"
    fi
    [ -f "$B/async-net10.dac" ] || echo "$ASYNC_PACK_DAC" >"$B/async-net10.dac"
    for n in large-heap-net8 large-heap-net10 threads-1000-net10 manytypes-net8 manytypes-net10 async-net10; do
        if [ -f "$B/$n.dmp" ]; then dumps+=("$B/$n.dmp")
        else echo "MISSING $B/$n.dmp: skipped (make it with: sudo dumps/bench/generate-large.sh)" >&2; fi
    done
fi
[ ${#dumps[@]} -gt 0 ] || usage

# ---- the tools
if [ -z "$dsdir" ]; then
    dsdir=$ROOT/target/release
    if [ $build = 1 ]; then
        echo "building (cargo build --release -p repl; -p clrdata --example heapstat --example rawscan) ..." >&2
        (cd "$ROOT" && cargo build --release -q -p repl && cargo build --release -q -p clrdata --example heapstat --example rawscan) >&2 \
            || echo "WARNING: cargo build failed; using the binaries already in target/release" >&2
    fi
fi
DS=$dsdir/dumpshell HS=$dsdir/examples/heapstat RS=$dsdir/examples/rawscan
[ -x "$DS" ] || { echo "missing $DS" >&2; exit 1; }
[ -x "$HS" ] || echo "note: no $HS: no census figure" >&2
[ -x "$RS" ] || echo "note: no $RS: no raw read figure" >&2
# which build: DIR/REVISION when present (a copy of another build's binaries), else DIR's git tree
if [ -f "$dsdir/REVISION" ]; then
    ds_rev=$(head -n1 "$dsdir/REVISION") ds_tree=$dsdir
else
    ds_rev=$(git -C "$dsdir" rev-parse --short HEAD 2>/dev/null || echo '?')
    ds_tree=$(git -C "$dsdir" rev-parse --show-toplevel 2>/dev/null || echo "$dsdir")
    [ -n "$(git -C "$dsdir" status --porcelain --untracked-files=no 2>/dev/null)" ] && ds_rev="$ds_rev + uncommitted changes"
fi
DD=${DOTNET_DUMP:-$HOME/.dotnet/tools/dotnet-dump}
if [ $use_sos = 1 ] && [ ! -x "$DD" ]; then
    echo "WARNING: no dotnet-dump ($DD): dotnet tool install -g dotnet-dump --version 10.0.750501; SOS column empty" >&2
    use_sos=0
fi
sos_ver=$([ $use_sos = 1 ] && "$DD" --version 2>/dev/null | head -n1 | cut -d+ -f1)
CLRMD=$ROOT/dumps/tools/clrmd/truth.sh

stamp=$(date -u +%Y%m%dT%H%M%SZ)
OUT=$B/runs/$stamp${label:+-$label}
mkdir -p "$OUT"
echo "== bench run folder: $OUT"
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
{
    echo "bench.sh ${label:+($label) }$(date -u +%FT%TZ); runs: $runs (median); $(nproc) cores; $(free -g | awk '/^Mem:/ {print $2 " GB RAM"}')"
    echo "dumpshell: $DS (git $ds_rev, tree $ds_tree)"
    echo "SOS: $([ $use_sos = 1 ] && echo "dotnet-dump $sos_ver" || echo off); ClrMD: $([ $use_clrmd = 1 ] && echo "dumps/tools/clrmd (Microsoft.Diagnostics.Runtime $(ls ~/.nuget/packages/microsoft.diagnostics.runtime 2>/dev/null | tail -n1))" || echo off)"
} >"$OUT/header.txt"
cat "$OUT/header.txt"

BENCH_TIMEOUT=${BENCH_TIMEOUT:-1200}
# timed <file prefix> <cmd...>: one run; appends "secs maxrss_kb exit" to <prefix>.times,
# stdout -> <prefix>.out, stderr -> <prefix>.err (the last run's)
timed() {
    local p=$1; shift
    /usr/bin/time -f "%e %M" -o "$p.time1" timeout "$BENCH_TIMEOUT" "$@" >"$p.out" 2>"$p.err"
    local rc=$?
    echo "$(tail -n1 "$p.time1") $rc" >>"$p.times"
    rm -f "$p.time1"
}
# median <file> <column>: of the runs that exited 0 (empty if none)
median() {
    awk -v c="$2" '$3 == 0 { print $c }' "$1" 2>/dev/null | sort -g |
        awk '{ a[NR] = $1 } END { if (NR == 0) exit; if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
want() { [ -z "$only" ] || [[ $only == *",$1,"* ]]; }

rows=()   # "dump|work|ds_s|ds_mb|sos_s|sos_mb|clrmd_s|clrmd_mb|note"
notes=()
loads=()
for dump in "${dumps[@]}"; do
    [ -f "$dump" ] || { echo "no such dump: $dump" >&2; continue; }
    dump=$(cd "$(dirname "$dump")" && pwd)/$(basename "$dump")
    name=$(basename "$dump"); name=${name%.dmp}; name=${name%.core}
    base=${dump%.dmp}
    dac=; [ -f "$base.dac" ] && dac=$(cat "$base.dac")
    [ -n "$dac" ] && [ ! -f "$dac" ] && { echo "WARNING: $name: the DAC $dac is missing (SOS and ClrMD need it)" >&2; }
    case $name in
        large-heap*) works=(eeversion dumpheap-stat census gcroot) ;;
        manytypes*) works=(eeversion dumpheap-stat census) ;;
        threads-1000*) works=(eeversion clrstack-all pstacks) ;;
        async*) works=(eeversion dumpasync) ;;
        *) works=(eeversion dumpheap-stat clrstack-all pstacks dumpasync); [ -n "$gcroot_arg" ] && works+=(gcroot) ;;
    esac
    sel=(); for w in "${works[@]}"; do want "$w" && sel+=("$w"); done
    [ ${#sel[@]} -gt 0 ] || continue
    d=$OUT/$name; mkdir -p "$d"
    l0=$(loadavg)
    echo
    echo "== $name ($(( $(stat -c %s "$dump") / 1048576 )) MB): ${sel[*]}; load average $l0"
    cat "$dump" >/dev/null   # warm the page cache

    # dumpshell's image path: only when the runtime the dump records is not where the DAC is
    ds_args=()
    if [ -n "$dac" ]; then
        dacdir=$(dirname "$dac")
        [[ $dacdir == "$B"/app-* ]] || ds_args=(--image-path "$dacdir")
    fi
    sos_pre=(-c "setsymbolserver -disable")
    [ -n "$dac" ] && sos_pre+=(-c "setclrpath $(dirname "$dac")")

    # ---- ClrMD (one process does both walks): N runs, after an untimed one that builds the tool
    clrmd_ok=0
    if [ $use_clrmd = 1 ] && [ -n "$dac" ] && [ -f "$dac" ]; then
        need=0; for w in "${sel[@]}"; do case $w in eeversion|dumpheap-stat|census|clrstack-all|pstacks) need=1 ;; esac; done
        if [ $need = 1 ]; then
            echo "   ClrMD x$runs ..."
            "$CLRMD" "$dump" "$dac" "$d/clrmd.json" --bench >/dev/null 2>"$d/clrmd.warm.err" \
                || { echo "   ClrMD failed:"; tail -3 "$d/clrmd.warm.err"; }
            rm -f "$d/clrmd.times" "$d/clrmd.walks"
            for _ in $(seq 1 "$runs"); do
                timed "$d/clrmd" "$CLRMD" "$dump" "$dac" "$d/clrmd.json" --bench
                python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["timing"]
print(t["heap_walk_seconds"], t.get("stack_walk_seconds", 0), t["objects"], t.get("stack_walk_threads", 0), t.get("stack_walk_frames", 0))' "$d/clrmd.json" >>"$d/clrmd.walks" 2>/dev/null \
                    || echo "0 0 0 0 0" >>"$d/clrmd.walks"
            done
            paste -d' ' "$d/clrmd.times" "$d/clrmd.walks" >"$d/clrmd.runs"
            # columns: 1 wall 2 rss 3 exit 4 heap walk 5 stack walk 6 objects 7 threads 8 frames;
            # 9 = wall - both walks (start-up: host, DataTarget, DAC, runtime, segments, JSON),
            # 10 = wall - stack walk (a whole run of the heap walk alone),
            # 11 = wall - heap walk (a whole run of the stack walk alone)
            awk '{ print $0, $1 - $4 - $5, $1 - $5, $1 - $4 }' "$d/clrmd.runs" >"$d/clrmd.runs.tmp" && mv "$d/clrmd.runs.tmp" "$d/clrmd.runs"
            [ -n "$(median "$d/clrmd.runs" 4)" ] && clrmd_ok=1
            if [ $clrmd_ok = 1 ]; then
                read -r _ _ _ _ _ cm_objs cm_thr cm_fr _ < <(awk '$3 == 0' "$d/clrmd.runs" | tail -n1)
                notes+=("$name: ClrMD whole run $(median "$d/clrmd.runs" 1) s, $(( $(median "$d/clrmd.runs" 2 | cut -d. -f1) / 1024 )) MB (heap walk of $cm_objs objects incl. free, stack walk of $cm_thr threads / $cm_fr frames)")
            fi
        fi
    fi
    cm_cell() {  # <column of clrmd.runs>
        [ $clrmd_ok = 1 ] || { echo "- -"; return; }
        echo "$(median "$d/clrmd.runs" "$1") $(( $(median "$d/clrmd.runs" 2 | cut -d. -f1) / 1024 ))"
    }

    # ---- the gcroot target
    gc_addr=$gcroot_arg
    if [[ " ${sel[*]} " == *" gcroot "* ]] && [ -z "$gc_addr" ]; then
        if [ -s "$base.gcroot" ]; then
            gc_addr=$(cut -d' ' -f1 "$base.gcroot")
        else
            echo "   finding the deepest Bench.Item (dumpheap --mt <Bench.Item[]>, dumparray) ..."
            "$DS" "$dump" "${ds_args[@]}" -c "dumpheap -stat" >"$d/find.stat" 2>/dev/null
            mt=$(awk '$4 == "Bench.Item[]" { print $1 }' "$d/find.stat" | head -n1)
            if [ -n "$mt" ]; then
                last=$("$DS" "$dump" "${ds_args[@]}" -c "dumpheap --mt 0x$mt --short" 2>/dev/null | tail -n1)
                gc_addr=$("$DS" "$dump" "${ds_args[@]}" -c "dumparray --start 999999 --length 1 $last --json" 2>/dev/null |
                    python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["elements"][0]["value"]["address"])' 2>/dev/null)
                if [ -z "$gc_addr" ]; then
                    # dumparray refused: read the element's slot, array + 16 (MethodTable, length) + 999999 * 8
                    slot=$(printf '%x' $((0x${last#0x} + 16 + 999999 * 8)))
                    gc_addr=0x$("$DS" "$dump" "${ds_args[@]}" -c "dq $slot 1" 2>/dev/null | awk '{ print $2 }')
                    [ "$gc_addr" = 0x ] && gc_addr=
                fi
                idx=$("$DS" "$dump" "${ds_args[@]}" -c "dumpobj $gc_addr" 2>/dev/null | awk '$NF == "A" { print $(NF-1) }')
                [ -n "$gc_addr" ] && echo "$gc_addr Bench.Item Index ${idx:-?} (dumpshell dumpobj): element 999999 of the last Bench.Item[] at 0x${last#0x}, the end of its linked list" >"$base.gcroot"
            fi
        fi
        [ -n "$gc_addr" ] && echo "   gcroot target: $(cat "$base.gcroot" 2>/dev/null || echo "$gc_addr (--gcroot)")"
    fi

    for w in "${sel[@]}"; do
        case $w in
            eeversion) dcmd=eeversion; scmd=eeversion ;;
            dumpheap-stat) dcmd="dumpheap -stat"; scmd="dumpheap -stat" ;;
            gcroot) dcmd="gcroot $gc_addr"; scmd="gcroot $gc_addr" ;;
            clrstack-all) dcmd="clrstack -all"; scmd="clrstack -all" ;;
            pstacks) dcmd=pstacks; scmd=parallelstacks ;;
            dumpasync) dcmd=dumpasync; scmd=dumpasync ;;
            census) dcmd=; scmd= ;;
        esac
        if [ "$w" = gcroot ] && [ -z "$gc_addr" ]; then
            rows+=("$name|$w|-|-|-|-|-|-|no target: no Bench.Item[] found (dumpshell dumpheap -stat refused?); give --gcroot")
            continue
        fi
        echo "   $w x$runs ..."
        rm -f "$d/$w".*.times
        for _ in $(seq 1 "$runs"); do
            if [ "$w" = census ]; then
                [ -x "$HS" ] && timed "$d/$w.dumpshell" "$HS" "$dump"
            else
                timed "$d/$w.dumpshell" "$DS" "$dump" "${ds_args[@]}" -c "$dcmd"
                [ $use_sos = 1 ] && timed "$d/$w.sos" "$DD" analyze "$dump" "${sos_pre[@]}" -c "$scmd" -c exit
            fi
        done
        ds_s=$(median "$d/$w.dumpshell.times" 1) ds_kb=$(median "$d/$w.dumpshell.times" 2)
        note=
        if [ "$w" = census ] && [ -f "$d/$w.dumpshell.out" ]; then
            ds_s=$(sed -n 's/^census (parallel): *\([0-9.]*\)s.*/\1/p' "$d/$w.dumpshell.out")
            [ -n "$ds_s" ] && note="dumpshell: the example's own census timer (last run); RSS of the whole example"
        fi
        if [ -z "$ds_s" ]; then
            why=$(grep -m1 -E '^dumpshell: |error|refus|cannot|panicked' "$d/$w.dumpshell.err" "$d/$w.dumpshell.out" 2>/dev/null | sed 's/^[^:]*\.\(err\|out\)://' | cut -c1-160)
            note="dumpshell: ${why:-exit $(awk '{print $3}' "$d/$w.dumpshell.times" 2>/dev/null | sort -u | tr '\n' ' ')}"
        elif grep -q -m1 '^dumpshell: ' "$d/$w.dumpshell.err" 2>/dev/null; then
            note="dumpshell: $(grep -m1 '^dumpshell: ' "$d/$w.dumpshell.err" | cut -c12-170)"
        fi
        sos_s=- sos_kb=
        if [ -f "$d/$w.sos.times" ]; then
            sos_s=$(median "$d/$w.sos.times" 1) sos_kb=$(median "$d/$w.sos.times" 2)
            [ -n "$sos_s" ] || { sos_s=failed; note="$note${note:+; }SOS exit $(awk '{print $3}' "$d/$w.sos.times" | sort -u | tr '\n' ' ')"; }
        fi
        case $w in
            eeversion) read -r cm_s cm_mb < <(cm_cell 9) ;;
            dumpheap-stat) read -r cm_s cm_mb < <(cm_cell 10) ;;
            census) read -r cm_s cm_mb < <(cm_cell 4) ;;
            clrstack-all|pstacks) read -r cm_s cm_mb < <(cm_cell 11) ;;
            *) cm_s=- cm_mb=- ;;
        esac
        mb() { [ -n "$1" ] && [ "$1" != - ] && echo $(( ${1%.*} / 1024 )) || echo -; }
        sec() { awk -v x="$1" 'BEGIN { if (x ~ /^[0-9.]+$/) printf (x < 0.1 ? "%.3f" : "%.2f"), x; else print x }'; }
        ds_s=$(sec "$ds_s") sos_s=$(sec "$sos_s") cm_s=$(sec "$cm_s")
        [ -z "$ds_s" ] && grep -q -m1 "^dumpshell: " "$d/$w.dumpshell.err" 2>/dev/null && ds_s=refused
        rows+=("$name|$w|${ds_s:-failed}|$(mb "$ds_kb")|$sos_s|$(mb "$sos_kb")|$cm_s|$cm_mb|$note")
    done

    # ---- the raw read of the heap segments (the floor of any heap walk)
    if [[ " ${sel[*]} " == *" census "* ]] && [ -x "$RS" ] && [ -f "$d/clrmd.json" ]; then
        "$RS" "$dump" --clrmd "$d/clrmd.json" >"$d/rawread.out" 2>"$d/rawread.err" &&
            notes+=("$name: raw read of the heap segments (rawscan, ClrMD's ranges): $(sed -n 's/^rawscan sequential: \([0-9]*\) bytes in \([0-9.]*\) s, \([0-9.]*\) GB\/s.*/\2 s sequential (\3 GB\/s, \1 bytes)/p' "$d/rawread.out"), $(sed -n 's/^rawscan parallel: [0-9]* bytes in \([0-9.]*\) s, \([0-9.]*\) GB\/s.*/\1 s parallel (\2 GB\/s)/p' "$d/rawread.out")")
    fi
    l1=$(loadavg)
    loads+=("$name: $l0 -> $l1")
    echo "   load average now $l1"
done

# ---- the table
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
{
    cat "$OUT/header.txt"
    echo "load averages (1, 5, 15 min) at the start and end of each dump: ${loads[*]/%/;}"
    echo
    printf '%-20s %-14s %9s %7s %9s %7s %9s %7s %8s %8s %8s\n' dump work "ds s" "ds MB" "SOS s" "SOS MB" "ClrMD s" "ClrMD MB" "ds/SOS t" "ds/SOS m" "ds/CMD t"
    for r in "${rows[@]}"; do
        IFS='|' read -r n w a am s sm c cm note <<<"$r"
        printf '%-20s %-14s %9s %7s %9s %7s %9s %7s %8s %8s %8s\n' "$n" "$w" "$a" "$am" "$s" "$sm" "$c" "$cm" "$(ratio "$a" "$s")" "$(ratio "$am" "$sm")" "$(ratio "$a" "$c")"
    done
    echo
    echo "ds/SOS t, ds/SOS m, ds/CMD t: dumpshell's median time (memory) over SOS's (ClrMD's); below 1 = dumpshell faster (smaller)."
    echo "ClrMD (one process, truth.sh --bench: start-up, then EnumerateObjects() summing sizes without type names, then"
    echo "EnumerateStackTrace of every thread with method signatures), per work as a whole run of that work alone:"
    echo "dumpheap-stat = its run minus the stack walk; clrstack-all, pstacks = its run minus the heap walk; eeversion = its"
    echo "run minus both walks; census = the heap walk alone. MB = max RSS of the whole process (both walks)."
    for r in "${rows[@]}"; do
        IFS='|' read -r n w _ _ _ _ _ _ note <<<"$r"
        [ -n "$note" ] && echo "note $n $w: $note"
    done
    for n in "${notes[@]}"; do echo "note $n"; done
} >"$OUT/table.txt"
{
    echo "| dump | work | dumpshell s | MB | SOS s | MB | ClrMD s | MB | ds/SOS time | ds/SOS RSS | ds/ClrMD time |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for r in "${rows[@]}"; do
        IFS='|' read -r n w a am s sm c cm note <<<"$r"
        echo "| $n | $w | $a | $am | $s | $sm | $c | $cm | $(ratio "$a" "$s") | $(ratio "$am" "$sm") | $(ratio "$a" "$c") |"
    done
} >"$OUT/table.md"
echo
cat "$OUT/table.txt"
python3 "$HERE/answers.py" "$OUT" >"$OUT/answers.txt" 2>&1
echo
cat "$OUT/answers.txt"
echo
echo "== outputs of every tool, the table (table.txt, table.md) and the answers (answers.txt): $OUT"
