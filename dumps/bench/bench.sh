#!/usr/bin/env bash
# dumps/bench/bench.sh [--all | <dump>...] [--runs N] [--only WORK[,WORK...]] [--no-build]
#                      [--dumpshell DIR] [--baseline DIR] [--label TEXT] [--gcroot ADDR]
#                      [--dac libmscordaccore.so] [--no-sos] [--no-clrmd]
#
# dumpshell side by side with SOS (dotnet-dump analyze, 10.0.750501, with the dump's own DAC)
# and ClrMD 4.2 (dumps/tools/clrmd/truth.sh --bench), in one run, on the same dumps, each
# measured N times (--runs, default 3) with /usr/bin/time (wall seconds, max RSS, major page
# faults, file system inputs) under runmeter.py (which also samples the peak anonymous memory,
# RssAnon, every 20 ms); the table gives the median of the N runs of each. The dump is read
# through (cat > /dev/null) before every run, so each starts with it in the page cache; a run
# that still read from disk (major faults or file system inputs: another process evicted the
# dump meanwhile) is counted but flagged with "!" (BENCH_MAJFLT_FLAG, BENCH_INPUT_FLAG). The runs
# of dumpshell and SOS alternate, so that the shared machine's load drifts over both alike.
# Memory: max RSS counts a memory-mapped dump's pages (dumpshell maps the dump: ~1.6 GB on
# large-heap whatever the command; SOS and ClrMD read it), so the table gives both, as
# "max RSS/peak anon" in MB.
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
#   live           dumpheap -stat -live (the precise root set, marked) | SOS dumpheap -stat -live | -
#   retained       retained -n 20 (the whole heap's dominator tree and retained sizes) | - (SOS
#                  has none) | -
# large-heap-*: eeversion dumpheap-stat census gcroot live retained; manytypes-*: eeversion dumpheap-stat
# census; threads-1000-*: eeversion clrstack-all pstacks; async-*: eeversion dumpasync; any
# other dump: all but census and gcroot (gcroot with --gcroot ADDR).
# On dumps with census, a raw read of the heap segments' bytes (clrdata/examples/rawscan over
# ClrMD's segment ranges) is noted under the table as the floor of any heap walk.
#
# --all: the standard set, from dumps/build/bench/ (made by `sudo dumps/bench/generate-large.sh`):
#   large-heap-net8 large-heap-net10 threads-1000-net10 manytypes-net8 manytypes-net10, and
#   async-net10 (dumps/async-net10.dmp.zst, decompressed there once; its DAC from the NuGet
#   runtime pack 10.0.14). A missing dump is reported and skipped.
# The DAC: --dac, else <dump minus .dmp>.dac holds its path (generate-large.sh writes it); SOS gets
#   `setsymbolserver -disable` and `setclrpath <its folder>` before the command, dumpshell
#   `--image-path <its folder>` when the runtime the dump records is not at that folder (the
#   corpus dumps, made elsewhere), ClrMD the DAC itself.
# --dumpshell DIR: time the dumpshell (and examples/heapstat, examples/rawscan) in DIR, e.g.
#   another worktree's target/release, or a copy of one with a REVISION file naming its commit
#   (implies --no-build); default: this tree's target/release, built first (cargo build
#   --release -p repl; -p clrdata --example heapstat --example rawscan).
# --baseline DIR: also time the dumpshell (and examples/heapstat) in DIR, in the same run,
#   alternating with this one run by run (baseline, dumpshell, SOS, ...): a before/after
#   comparison under the same load. The table gets a "base" column and ds/base; table-base.md
#   is the same table with the baseline in dumpshell's place, before-after.md the two side by
#   side (with SOS and ClrMD), and answers.txt says whether the two builds printed the same.
# --label TEXT: named in the header and the run folder (e.g. before, after).
#
# Every tool's output (last run) is kept in the run folder, dumps/build/bench/runs/<UTC time>[-label]/
# <dump>/<work>.<tool>.out|.err (+ .times: one "seconds maxrss_kb exit majflt peak_anon_kb fs_inputs"
# per run), with table.txt (this table), table.md (the same in Markdown), runs.txt (every run's
# figures) and answers.txt (what each tool
# answered: object and type counts, and per method table where dumpshell and SOS differ; the
# gcroot paths; threads and frames; async chains), made by answers.py, so a person can compare
# the answers, not just the times. The folder is printed at the start and the end.
# Environment: BENCH_TIMEOUT (seconds per run, default 1200), BENCH_MAJFLT_FLAG (major faults
# that flag a run, default 1000), BENCH_INPUT_FLAG (file system inputs, 512-byte blocks, default
# 20000), DOTNET_DUMP (default ~/.dotnet/tools/dotnet-dump).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
B=$ROOT/dumps/build/bench
runs=3 only= all=0 build=1 dsdir= basedir= label= gcroot_arg= dac_arg= use_sos=1 use_clrmd=1 dumps=()
usage() { sed -n '2,4p' "$0" | sed 's/^# //' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        --runs) runs=$2; shift 2 ;;
        --only) only=,$2,; shift 2 ;;
        --all) all=1; shift ;;
        --no-build) build=0; shift ;;
        --dumpshell) dsdir=$(cd "$2" && pwd) || exit 2; build=0; shift 2 ;;
        --baseline) basedir=$(cd "$2" && pwd) || exit 2; shift 2 ;;
        --label) label=$2; shift 2 ;;
        --gcroot) gcroot_arg=$2; shift 2 ;;
        --dac) dac_arg=$2; shift 2 ;;
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
revision() {
    if [ -f "$1/REVISION" ]; then
        echo "git $(head -n1 "$1/REVISION")"
    else
        local r
        r=$(git -C "$1" rev-parse --short HEAD 2>/dev/null || echo '?')
        [ -n "$(git -C "$1" status --porcelain --untracked-files=no -- ':!Cargo.lock' 2>/dev/null)" ] && r="$r + uncommitted changes"
        echo "git $r, tree $(git -C "$1" rev-parse --show-toplevel 2>/dev/null || echo "$1")"
    fi
}
ds_rev=$(revision "$dsdir")
BDS= BHS=
if [ -n "$basedir" ]; then
    BDS=$basedir/dumpshell BHS=$basedir/examples/heapstat
    [ -x "$BDS" ] || { echo "missing $BDS" >&2; exit 1; }
    base_rev=$(revision "$basedir")
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
    echo "dumpshell: $DS ($ds_rev)"
    [ -n "$BDS" ] && echo "baseline:  $BDS ($base_rev)"
    echo "SOS: $([ $use_sos = 1 ] && echo "dotnet-dump $sos_ver" || echo off); ClrMD: $([ $use_clrmd = 1 ] && echo "dumps/tools/clrmd (Microsoft.Diagnostics.Runtime $(ls ~/.nuget/packages/microsoft.diagnostics.runtime 2>/dev/null | tail -n1))" || echo off)"
} >"$OUT/header.txt"
cat "$OUT/header.txt"

BENCH_TIMEOUT=${BENCH_TIMEOUT:-1200}
# timed <file prefix> <cmd...>: one run, the dump read through first; appends "secs maxrss_kb
# exit majflt peak_anon_kb fs_inputs" to <prefix>.times (runmeter.py), stdout -> <prefix>.out,
# stderr -> <prefix>.err (the last run's)
timed() {
    local p=$1; shift
    cat "$dump" >/dev/null
    python3 "$HERE/runmeter.py" "$p" -- timeout "$BENCH_TIMEOUT" "$@"
}
MAJFLT_FLAG=${BENCH_MAJFLT_FLAG:-1000}   # major faults above which a run counts as disk-bound
INPUT_FLAG=${BENCH_INPUT_FLAG:-20000}    # file system inputs (512-byte blocks) above which, too
# disk <times file>: the runs (exit 0) that read the dump partly from disk
disk() { awk -v m="$MAJFLT_FLAG" -v i="$INPUT_FLAG" '$3 == 0 && ($4 > m || $6 > i)' "$1" 2>/dev/null; }
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
    dac=$dac_arg; [ -z "$dac" ] && [ -f "$base.dac" ] && dac=$(cat "$base.dac")
    [ -n "$dac" ] && [ ! -f "$dac" ] && { echo "WARNING: $name: the DAC $dac is missing (SOS and ClrMD need it)" >&2; }
    case $name in
        large-heap*) works=(eeversion dumpheap-stat census gcroot live retained) ;;
        manytypes*) works=(eeversion dumpheap-stat census) ;;
        threads-1000*) works=(eeversion clrstack-all pstacks) ;;
        async*) works=(eeversion dumpasync) ;;
        *) works=(eeversion dumpheap-stat clrstack-all pstacks dumpasync); [ -n "$gcroot_arg" ] && works+=(gcroot) ;;
    esac
    sel=(); for w in "${works[@]}"; do want "$w" && sel+=("$w"); done
    [ ${#sel[@]} -gt 0 ] || continue
    d=$OUT/$name; mkdir -p "$d"
    echo "$dump" >"$d/dump.path"   # answers.py finds the program's manifest beside it
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
            # columns: 1 wall 2 rss 3 exit 4 majflt 5 peak anon 6 fs inputs 7 heap walk 8 stack
            # walk 9 objects 10 threads 11 frames; 12 = wall - both walks (start-up: host,
            # DataTarget, DAC, runtime, segments, JSON), 13 = wall - stack walk (a whole run of
            # the heap walk alone), 14 = wall - heap walk (a whole run of the stack walk alone)
            awk '{ print $0, $1 - $7 - $8, $1 - $8, $1 - $7 }' "$d/clrmd.runs" >"$d/clrmd.runs.tmp" && mv "$d/clrmd.runs.tmp" "$d/clrmd.runs"
            [ -n "$(median "$d/clrmd.runs" 7)" ] && clrmd_ok=1
            if [ $clrmd_ok = 1 ]; then
                read -r _ _ _ _ _ _ _ _ cm_objs cm_thr cm_fr _ < <(awk '$3 == 0' "$d/clrmd.runs" | tail -n1)
                notes+=("$name: ClrMD whole run $(median "$d/clrmd.runs" 1) s, $(( $(median "$d/clrmd.runs" 2 | cut -d. -f1) / 1024 ))/$(( $(median "$d/clrmd.runs" 5 | cut -d. -f1) / 1024 )) MB (heap walk of $cm_objs objects incl. free, stack walk of $cm_thr threads / $cm_fr frames)")
            fi
        fi
    fi
    cm_cell() {  # <column of clrmd.runs>: "seconds maxrss_kb peak_anon_kb"
        [ $clrmd_ok = 1 ] || { echo "- - -"; return; }
        echo "$(median "$d/clrmd.runs" "$1") $(median "$d/clrmd.runs" 2) $(median "$d/clrmd.runs" 5)"
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
            live) dcmd="dumpheap -stat -live"; scmd="dumpheap -stat -live" ;;
            retained) dcmd="retained -n 20"; scmd= ;;
        esac
        if [ "$w" = gcroot ] && [ -z "$gc_addr" ]; then
            rows+=("$name|$w|-|-|-|-|-|-|-|-|-|no target: no Bench.Item[] found (dumpshell dumpheap -stat refused?); give --gcroot|-|-|-")
            continue
        fi
        echo "   $w x$runs ..."
        rm -f "$d/$w".*.times
        # census: the example's own timer of its parallel census replaces the wall time
        census_secs() {  # <prefix>: rewrite the last line of <prefix>.times with the census figure
            local c
            c=$(sed -n 's/^census (parallel): *\([0-9.]*\)s.*/\1/p' "$1.out")
            [ -n "$c" ] && awk -v c="$c" '{ l[NR] = $0 } END { for (i = 1; i < NR; i++) print l[i]; $0 = l[NR]; $1 = c; print }' "$1.times" >"$1.times.tmp" && mv "$1.times.tmp" "$1.times"
        }
        for _ in $(seq 1 "$runs"); do
            if [ "$w" = census ]; then
                [ -n "$BHS" ] && [ -x "$BHS" ] && { timed "$d/$w.base" "$BHS" "$dump"; census_secs "$d/$w.base"; }
                [ -x "$HS" ] && { timed "$d/$w.dumpshell" "$HS" "$dump"; census_secs "$d/$w.dumpshell"; }
            else
                [ -n "$BDS" ] && timed "$d/$w.base" "$BDS" "$dump" "${ds_args[@]}" -c "$dcmd"
                timed "$d/$w.dumpshell" "$DS" "$dump" "${ds_args[@]}" -c "$dcmd"
                [ $use_sos = 1 ] && [ -n "$scmd" ] && timed "$d/$w.sos" "$DD" analyze "$dump" "${sos_pre[@]}" -c "$scmd" -c exit
            fi
        done
        note=
        [ "$w" = census ] && note="dumpshell: the heapstat example's own timer of its parallel census; MB of the whole example"
        # ds_cell <tool>: "seconds maxrss_kb peak_anon_kb" (seconds "refused"/"failed" when no run exited 0), note appended
        ds_cell() {
            local t=$1 s kb an why
            s=$(median "$d/$w.$t.times" 1) kb=$(median "$d/$w.$t.times" 2) an=$(median "$d/$w.$t.times" 5)
            if [ -z "$s" ]; then
                why=$(grep -m1 -E '^dumpshell: |error|refus|cannot|panicked' "$d/$w.$t.err" "$d/$w.$t.out" 2>/dev/null | sed 's/^[^:]*\.\(err\|out\)://' | cut -c1-160)
                note="$note${note:+; }$t: ${why:-exit $(awk '{print $3}' "$d/$w.$t.times" 2>/dev/null | sort -u | tr '\n' ' ')}"
                grep -q -m1 "^dumpshell: " "$d/$w.$t.err" 2>/dev/null && s=refused || s=failed
            elif grep -q -m1 '^dumpshell: ' "$d/$w.$t.err" 2>/dev/null; then
                note="$note${note:+; }$t: $(grep -m1 '^dumpshell: ' "$d/$w.$t.err" | cut -c12-170)"
            fi
            echo "$s ${kb:--} ${an:--}"
        }
        ds_cell dumpshell >"$d/cell.tmp"; read -r ds_s ds_kb ds_an <"$d/cell.tmp"
        base_s=- base_kb=- base_an=-
        if [ -n "$BDS" ]; then ds_cell base >"$d/cell.tmp"; read -r base_s base_kb base_an <"$d/cell.tmp"; fi
        rm -f "$d/cell.tmp"
        sos_s=- sos_kb= sos_an=
        if [ -f "$d/$w.sos.times" ]; then
            sos_s=$(median "$d/$w.sos.times" 1) sos_kb=$(median "$d/$w.sos.times" 2) sos_an=$(median "$d/$w.sos.times" 5)
            [ -n "$sos_s" ] || { sos_s=failed; note="$note${note:+; }SOS exit $(awk '{print $3}' "$d/$w.sos.times" | sort -u | tr '\n' ' ')"; }
        fi
        case $w in
            eeversion) read -r cm_s cm_kb cm_an < <(cm_cell 12) ;;
            dumpheap-stat) read -r cm_s cm_kb cm_an < <(cm_cell 13) ;;
            census) read -r cm_s cm_kb cm_an < <(cm_cell 7) ;;
            clrstack-all|pstacks) read -r cm_s cm_kb cm_an < <(cm_cell 14) ;;
            *) cm_s=- cm_kb=- cm_an=- ;;
        esac
        mb() { [ -n "$1" ] && [ "$1" != - ] && echo $(( ${1%.*} / 1024 )) || echo -; }
        sec() { awk -v x="$1" 'BEGIN { if (x ~ /^[0-9.]+$/) printf (x < 0.1 ? "%.3f" : "%.2f"), x; else print x }'; }
        ds_s=$(sec "$ds_s") sos_s=$(sec "$sos_s") cm_s=$(sec "$cm_s") base_s=$(sec "$base_s")
        # "!": some counted run of that tool read part of the dump from disk (major faults or
        # file system inputs above the flags)
        flag() { [ -n "$(disk "$1")" ] && echo '!'; }
        for t in base dumpshell sos clrmd; do
            f=$d/$w.$t.times; [ $t = clrmd ] && f=$d/clrmd.runs
            [ -f "$f" ] || continue
            [ $t = clrmd ] && { [ "$cm_s" = - ] || [ "$w" != "${sel[0]}" ]; } && continue   # once per dump
            nf=$(disk "$f" | wc -l)
            [ "$nf" -gt 0 ] && note="$note${note:+; }$t: $nf of $(wc -l <"$f") runs read the dump partly from disk"
            if [ $t = clrmd ]; then
                echo "$name ClrMD: $(awk '{ printf "%s%s s (heap walk %s, stack walk %s) %d/%d MB exit %s majflt %s inputs %s", (NR > 1 ? "; " : ""), $1, $7, $8, $2 / 1024, $5 / 1024, $3, $4, $6 }' "$f")" >>"$OUT/runs.txt"
            else
                echo "$name $w $t: $(awk '{ printf "%s%s s %d/%d MB exit %s majflt %s inputs %s", (NR > 1 ? "; " : ""), $1, $2 / 1024, $5 / 1024, $3, $4, $6 }' "$f")" >>"$OUT/runs.txt"
            fi
        done
        ds_s=$ds_s$(flag "$d/$w.dumpshell.times") sos_s=$sos_s$(flag "$d/$w.sos.times") base_s=$base_s$(flag "$d/$w.base.times")
        [ "$cm_s" != - ] && cm_s=$cm_s$(flag "$d/clrmd.runs")
        rows+=("$name|$w|$ds_s|$(mb "$ds_kb")|$(mb "$ds_an")|$sos_s|$(mb "$sos_kb")|$(mb "$sos_an")|$cm_s|$(mb "$cm_kb")|$(mb "$cm_an")|$note|$base_s|$(mb "$base_kb")|$(mb "$base_an")")
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
ratio() { awk -v a="${1%!}" -v b="${2%!}" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
# markdown <base|dumpshell>: the table in Markdown with that build as dumpshell
markdown() {
    echo "| dump | work | dumpshell s | MB rss/anon | SOS s | MB rss/anon | ClrMD s | MB rss/anon | ds/SOS time | ds/SOS rss | ds/SOS anon | ds/ClrMD time |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for r in "${rows[@]}"; do
        IFS='|' read -r n w a am aa s sm sa c cm ca note b bm ba <<<"$r"
        [ "$1" = base ] && a=$b am=$bm aa=$ba
        echo "| $n | $w | $a | $am/$aa | $s | $sm/$sa | $c | $cm/$ca | $(ratio "$a" "$s") | $(ratio "$am" "$sm") | $(ratio "$aa" "$sa") | $(ratio "$a" "$c") |"
    done
}
{
    cat "$OUT/header.txt"
    echo "load averages (1, 5, 15 min) at the start and end of each dump: ${loads[*]/%/;}"
    echo
    if [ -n "$BDS" ]; then
        fmt='%-19s %-13s %8s %11s %8s %11s %8s %9s %8s %8s %7s %7s %7s %7s %7s\n'
        printf "$fmt" dump work "base s" "base MB" "ds s" "ds MB" "SOS s" "SOS MB" "ClrMD s" "ClrMD MB" "ds/base" "ds/SOS" "ds/SOS" "ds/SOS" "ds/CMD"
        printf "$fmt" "" "" "" "rss/anon" "" "rss/anon" "" "rss/anon" "" "rss/anon" "time" "time" "rss" "anon" "time"
    else
        fmt='%-19s %-13s %.0s%.0s%8s %11s %8s %9s %8s %8s %.0s%7s %7s %7s %7s\n'
        printf "$fmt" dump work "" "" "ds s" "ds MB" "SOS s" "SOS MB" "ClrMD s" "ClrMD MB" "" "ds/SOS" "ds/SOS" "ds/SOS" "ds/CMD"
        printf "$fmt" "" "" "" "" "" "rss/anon" "" "rss/anon" "" "rss/anon" "" "time" "rss" "anon" "time"
    fi
    for r in "${rows[@]}"; do
        IFS='|' read -r n w a am aa s sm sa c cm ca note b bm ba <<<"$r"
        printf "$fmt" "$n" "$w" "$b" "$bm/$ba" "$a" "$am/$aa" "$s" "$sm/$sa" "$c" "$cm/$ca" \
            "$(ratio "$a" "$b")" "$(ratio "$a" "$s")" "$(ratio "$am" "$sm")" "$(ratio "$aa" "$sa")" "$(ratio "$a" "$c")"
    done
    echo
    echo "Medians of $runs runs. MB: max RSS / peak anonymous memory (RssAnon sampled every 20 ms). ds/SOS, ds/CMD: dumpshell's"
    echo "median over SOS's (ClrMD's); below 1 = dumpshell faster (smaller). \"!\": some run read part of the dump from disk"
    echo "(over $MAJFLT_FLAG major faults or $INPUT_FLAG blocks of file system input: another process evicted it from the page cache)."
    [ -n "$BDS" ] && echo "base: the --baseline build, run alternately with dumpshell; ds/base: dumpshell's time over the baseline's."
    echo "ClrMD (one process, truth.sh --bench: start-up, then EnumerateObjects() summing sizes without type names, then"
    echo "EnumerateStackTrace of every thread with method signatures), per work as a whole run of that work alone:"
    echo "dumpheap-stat = its run minus the stack walk; clrstack-all, pstacks = its run minus the heap walk; eeversion = its"
    echo "run minus both walks; census = the heap walk alone. MB = its whole process (both walks)."
    for r in "${rows[@]}"; do
        IFS='|' read -r n w _ _ _ _ _ _ _ _ _ note _ <<<"$r"
        [ -n "$note" ] && echo "note $n $w: $note"
    done
    for n in "${notes[@]}"; do echo "note $n"; done
    echo "every run's figures: runs.txt"
} >"$OUT/table.txt"
markdown dumpshell >"$OUT/table.md"
[ -n "$BDS" ] && markdown base >"$OUT/table-base.md"
# before-after.md: the baseline and dumpshell side by side, SOS and ClrMD beside them
if [ -n "$BDS" ]; then
    {
        echo "| dump | work | before s | after s | after/before | before MB rss/anon | after MB rss/anon | SOS s | SOS MB rss/anon | ClrMD s | ClrMD MB rss/anon |"
        echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        for r in "${rows[@]}"; do
            IFS='|' read -r n w a am aa s sm sa c cm ca note b bm ba <<<"$r"
            echo "| $n | $w | $b | $a | $(ratio "$a" "$b") | $bm/$ba | $am/$aa | $s | $sm/$sa | $c | $cm/$ca |"
        done
        echo
        echo "before: $BDS ($base_rev); after: $DS ($ds_rev). Medians of $runs runs, run alternately (before, after, SOS)."
    } >"$OUT/before-after.md"
fi
echo
cat "$OUT/table.txt"
python3 "$HERE/answers.py" "$OUT" >"$OUT/answers.txt" 2>&1
echo
cat "$OUT/answers.txt"
echo
echo "== outputs of every tool, the table (table.txt, table.md) and the answers (answers.txt): $OUT"
