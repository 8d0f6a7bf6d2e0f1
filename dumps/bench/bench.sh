#!/usr/bin/env bash
# dumps/bench/bench.sh <dump> [--dac <libmscordaccore.so>] [--gcroot <addr>] [--no-build]
#
# Times, on one dump in one run (each measured once, warm page cache; the machine is shared, so
# expect noise of 10-30 %):
#   1. dumpshell <dump> -c "dumpheap -stat"          whole process (open, discover, census, print)
#   2. heapstat example (dumpshell's census only)   clrdata/examples/heapstat.rs, walk-only figure
#   3. dumpshell <dump> -c "gcroot <addr>"          a deep object: on the large-heap bench dump the
#                                                   last node of the last Bench.Item linked list
#                                                   (Index 20,999,999: element 999,999 of the last
#                                                   Bench.Item[] chunk), found with dumpheap --mt
#                                                   and dumparray; elsewhere --gcroot <addr>
#   4. dumpshell <dump> -c pstacks
#   5. ClrMD: dumps/tools/clrmd/truth.sh --bench   ClrHeap.EnumerateObjects() summing sizes
#                                                   (walk only, and the whole process)
#      and, in the same process, EnumerateStackTrace of every thread (pstacks' input)
#   6. raw read of the heap segments' bytes         clrdata/examples/rawscan.rs over ClrMD's
#                                                   segment ranges (sequential and parallel)
# and prints objects/s for each plus the dumpshell/ClrMD ratios. A dumpshell command that refuses
# the dump (today: any runtime but .NET 8) prints its refusal line instead of a number; ClrMD's
# and the raw read's figures are printed regardless.
#
# --dac: the runtime's libmscordaccore.so for ClrMD; default: the path in <dump minus .dmp>.dac
# (written by generate-large.sh). --no-build: use the existing target/release binaries.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
dump= dac= gcroot_addr= build=1
while [ $# -gt 0 ]; do
    case $1 in
        --dac) dac=$2; shift 2 ;;
        --gcroot) gcroot_addr=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) dump=$1; shift ;;
    esac
done
[ -n "$dump" ] && [ -f "$dump" ] || { echo "usage: $0 <dump> [--dac <path>] [--gcroot <addr>] [--no-build]" >&2; exit 2; }
if [ -z "$dac" ] && [ -f "${dump%.dmp}.dac" ]; then dac=$(cat "${dump%.dmp}.dac"); fi

DS=$ROOT/target/release/dumpshell
HS=$ROOT/target/release/examples/heapstat
RS=$ROOT/target/release/examples/rawscan
if [ $build = 1 ]; then
    echo "building (cargo build --release -p repl; -p clrdata --example heapstat --example rawscan) ..." >&2
    (cd "$ROOT" && cargo build --release -q -p repl && cargo build --release -q -p clrdata --example heapstat --example rawscan) >&2 \
        || echo "WARNING: cargo build failed; using the binaries already in target/release" >&2
fi
for b in "$DS" "$HS" "$RS"; do [ -x "$b" ] || { echo "missing $b (build it, see --no-build)" >&2; exit 1; }; done

tmp=$(mktemp -d /tmp/dumpshell-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# run <name> <cmd...>: wall seconds -> $tmp/<name>.secs, max RSS KB -> $tmp/<name>.rss,
# stdout -> $tmp/<name>.out, stderr -> $tmp/<name>.err, exit status -> $tmp/<name>.rc
run() {
    local name=$1; shift
    /usr/bin/time -f "%e %M" -o "$tmp/$name.time" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
    read -r secs rss < <(tail -n1 "$tmp/$name.time")
    echo "$secs" >"$tmp/$name.secs"; echo "$rss" >"$tmp/$name.rss"
}
refusal() {  # the first error line dumpshell printed, or ""
    grep -m1 -E '^dumpshell: |error|cannot|refus' "$tmp/$1.err" "$tmp/$1.out" 2>/dev/null | sed 's/^[^:]*\.\(err\|out\)://' | head -n1
}
rate() { awk -v n="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.2f M objects/s", n / s / 1e6; else print "-" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", a / b; else print "-" }'; }

echo "== bench $(basename "$dump"): $(stat -c %s "$dump") bytes, $(nproc) cores, $(date -u +%FT%TZ)"
echo "   warming the page cache (cat > /dev/null) ..."
cat "$dump" >/dev/null

# ---- ClrMD first: its object count is the reference for every objects/s figure
clrmd_objs=0 clrmd_walk=0 clrmd_wall=0 clrmd_st_s=0 clrmd_st_n=0 clrmd_st_f=0 psecs=0
if [ -n "$dac" ] && [ -f "$dac" ]; then
    # build the tool outside the timing
    "$ROOT/dumps/tools/clrmd/truth.sh" "$dump" "$dac" "$tmp/clrmd-warm.json" --bench >/dev/null 2>"$tmp/clrmd-warm.err" \
        || { echo "ClrMD failed:"; tail -5 "$tmp/clrmd-warm.err"; }
    run clrmd "$ROOT/dumps/tools/clrmd/truth.sh" "$dump" "$dac" "$tmp/clrmd.json" --bench
    if [ "$(cat "$tmp/clrmd.rc")" = 0 ]; then
        read -r clrmd_objs clrmd_walk clrmd_ver clrmd_st_s clrmd_st_n clrmd_st_f < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); t = d["timing"]
print(t["objects"], t["heap_walk_seconds"], d["runtime"]["version"],
      t.get("stack_walk_seconds", 0), t.get("stack_walk_threads", 0), t.get("stack_walk_frames", 0))' "$tmp/clrmd.json")
        clrmd_wall=$(cat "$tmp/clrmd.secs")
    else
        echo "ClrMD failed:"; tail -5 "$tmp/clrmd.err"
    fi
else
    echo "   (no DAC: give --dac <libmscordaccore.so> for the ClrMD figures)"
fi

# ---- dumpshell dumpheap -stat
run dh "$DS" "$dump" -c "dumpheap -stat"
ds_objs=0 ds_wall=0 dh_line=
if [ "$(cat "$tmp/dh.rc")" = 0 ] && grep -q '^Total ' "$tmp/dh.out"; then
    live=$(sed -n 's/^Total \([0-9]*\) objects.*/\1/p' "$tmp/dh.out")
    free=$(sed -n 's/^Free space: \([0-9]*\) objects.*/\1/p' "$tmp/dh.out")
    ds_objs=$((live + ${free:-0}))
    ds_wall=$(cat "$tmp/dh.secs")
    dh_line=$(printf '%8.3f s  %s  (%s live + %s free objects, %s MB max RSS)' "$ds_wall" "$(rate $ds_objs $ds_wall)" "$live" "${free:-0}" $(( $(cat "$tmp/dh.rss") / 1024 )))
else
    dh_line="refused: $(refusal dh)"
fi

# ---- heapstat example: dumpshell's census alone (parallel) and its sequential iterator
run hs "$HS" "$dump"
hs_line= hs_secs=0 hs_objs=0
if [ "$(cat "$tmp/hs.rc")" = 0 ] && grep -q '^census (parallel)' "$tmp/hs.out"; then
    hs_secs=$(sed -n 's/^census (parallel): *\([0-9.]*\)s.*/\1/p' "$tmp/hs.out")
    hs_it=$(sed -n 's/^iterator (1 thread): *\([0-9.]*\)s.*/\1/p' "$tmp/hs.out")
    hs_objs=$(sed -n 's/^census: \([0-9]*\) objects.*, \([0-9]*\) free.*/\1 \2/p' "$tmp/hs.out" | awk '{print $1 + $2}')
    hs_line=$(printf '%8.3f s  %s  (parallel census, %s threads); sequential iterator %.3f s  %s' "$hs_secs" "$(rate $hs_objs $hs_secs)" "$(sed -n 's/.*threads: \([0-9]*\).*/\1/p' "$tmp/hs.out")" "$hs_it" "$(rate $hs_objs $hs_it)")
else
    hs_line="refused: $(grep -m1 . "$tmp/hs.err")"
fi

# ---- gcroot of a deep object
gc_line=
if [ -z "$gcroot_addr" ] && [ "$(cat "$tmp/dh.rc")" = 0 ]; then
    mt=$(awk '$4 == "Bench.Item[]" { print $1 }' "$tmp/dh.out" | head -n1)
    if [ -n "$mt" ]; then
        last=$("$DS" "$dump" -c "dumpheap --mt 0x$mt --short" 2>/dev/null | tail -n1)
        gcroot_addr=$("$DS" "$dump" -c "dumparray --start 999999 --length 1 $last --json" 2>/dev/null |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["elements"][0]["value"]["address"])' 2>/dev/null)
        if [ -z "$gcroot_addr" ]; then
            # dumparray refused (e.g. a runtime whose field layout dumpshell does not read yet):
            # read the element's slot directly, array + 16 (MethodTable, length) + 999999 * 8
            slot=$(printf '%x' $((0x${last#0x} + 16 + 999999 * 8)))
            gcroot_addr=0x$("$DS" "$dump" -c "dq $slot 1" 2>/dev/null | awk '{ print $2 }')
            [ "$gcroot_addr" = 0x ] && gcroot_addr=
        fi
        idx=$("$DS" "$dump" -c "dumpobj $gcroot_addr" 2>/dev/null | awk '$NF == "A" { print $(NF-1) }')
        gc_what="Bench.Item Index ${idx:-? (dumpobj refused)} (element 999999 of the last Bench.Item[] at 0x${last#0x}: the end of its linked list)"
    fi
else
    gc_what="given by --gcroot"
fi
if [ -n "$gcroot_addr" ]; then
    run gc "$DS" "$dump" -c "gcroot $gcroot_addr"
    if grep -q '^Found 0 unique roots' "$tmp/gc.out"; then
        gc_line="no root found in $(cat "$tmp/gc.secs") s, so no figure: $(grep -m1 '^note: ' "$tmp/gc.out" "$tmp/gc.err" | sed 's/^[^:]*\.\(out\|err\)://')"
    elif [ "$(cat "$tmp/gc.rc")" = 0 ] && grep -q 'unique roots' "$tmp/gc.out"; then
        gsecs=$(cat "$tmp/gc.secs")
        searched=$(sed -n 's/.*, \([0-9]*\) objects, \([0-9]*\) references searched.*/\1/p' "$tmp/gc.out")
        gc_line=$(printf '%8.3f s  %s  (%s; %s; %s objects searched, %s MB max RSS)' "$gsecs" "$(rate ${searched:-0} $gsecs)" "$gcroot_addr" "$gc_what" "${searched:-?}" $(( $(cat "$tmp/gc.rss") / 1024 )))
    else
        gc_line="refused: $(refusal gc)"
    fi
elif [ "$(cat "$tmp/dh.rc")" != 0 ]; then
    gc_line="refused (dumpheap, which finds the object): $(refusal dh)"
else
    gc_line="skipped: no Bench.Item[] in this dump; give --gcroot <addr>"
fi

# ---- pstacks
run ps "$DS" "$dump" -c pstacks
if [ "$(cat "$tmp/ps.rc")" = 0 ] && ! grep -q '^dumpshell: ' "$tmp/ps.err"; then
    threads=$("$DS" "$dump" -c clrthreads 2>/dev/null | sed -n 's/^ThreadCount: *\([0-9]*\).*/\1/p')
    psecs=$(cat "$tmp/ps.secs")
    ps_line=$(printf '%8.3f s  %s threads/s  (%s managed threads)' "$psecs" "$(awk -v n="${threads:-0}" -v s="$psecs" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print "-" }')" "${threads:-?}")
else
    ps_line="refused: $(refusal ps)"
fi

# ---- raw read of the heap segments (ranges from ClrMD's segments)
raw_line="skipped: needs ClrMD's segment list"
if [ -f "$tmp/clrmd.json" ]; then
    run raw "$RS" "$dump" --clrmd "$tmp/clrmd.json"
    if [ "$(cat "$tmp/raw.rc")" = 0 ]; then
        rseq=$(sed -n 's/^rawscan sequential: \([0-9]*\) bytes in \([0-9.]*\) s, \([0-9.]*\) GB\/s.*/\2 \3 \1/p' "$tmp/raw.out")
        rpar=$(sed -n 's/^rawscan parallel: \([0-9]*\) bytes in \([0-9.]*\) s, \([0-9.]*\) GB\/s.*/\2 \3/p' "$tmp/raw.out")
        read -r rs_s rs_gb rs_bytes <<<"$rseq"; read -r rp_s rp_gb <<<"$rpar"
        raw_line=$(printf '%8.3f s  %s GB/s sequential (%s at ClrMD'"'"'s object count); parallel %.3f s  %s GB/s (%s); %s bytes' \
            "$rs_s" "$rs_gb" "$(rate $clrmd_objs $rs_s)" "$rp_s" "$rp_gb" "$(rate $clrmd_objs $rp_s)" "$rs_bytes")
    else
        raw_line="failed: $(head -n1 "$tmp/raw.err")"
    fi
fi

if [ "$clrmd_objs" != 0 ]; then
    clrmd_line=$(printf '%8.3f s  %s heap walk only (%s objects incl. free); whole process %.3f s  %s (runtime %s, %s MB max RSS)' \
        "$clrmd_walk" "$(rate $clrmd_objs $clrmd_walk)" "$clrmd_objs" "$clrmd_wall" "$(rate $clrmd_objs $clrmd_wall)" "$clrmd_ver" $(( $(cat "$tmp/clrmd.rss") / 1024 )))
    clrmd_st_line=$(printf '%8.3f s  %s threads/s  (%s threads, %s frames; EnumerateStackTrace of every thread, walk only)' \
        "$clrmd_st_s" "$(awk -v n="$clrmd_st_n" -v s="$clrmd_st_s" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print "-" }')" "$clrmd_st_n" "$clrmd_st_f")
else
    clrmd_line="no figures (see above)"
    clrmd_st_line="no figures"
fi

echo
echo "dumpshell dumpheap -stat (whole run):  $dh_line"
echo "dumpshell census only (heapstat):      $hs_line"
echo "dumpshell gcroot (whole run):          $gc_line"
echo "dumpshell pstacks (whole run):         $ps_line"
echo "ClrMD EnumerateObjects:                $clrmd_line"
echo "ClrMD stack walk, all threads:         $clrmd_st_line"
echo "raw read of the heap segments:         $raw_line"
echo
if [ "$ds_objs" != 0 ] && [ "$clrmd_objs" != 0 ]; then
    [ "$ds_objs" = "$clrmd_objs" ] || echo "note: object counts differ: dumpshell $ds_objs (live + free), ClrMD $clrmd_objs"
    echo "ratios (dumpshell speed / ClrMD speed, objects/s):"
    echo "  dumpheap -stat whole run vs ClrMD whole run:  $(ratio "$clrmd_wall" "$ds_wall")"
    echo "  dumpheap -stat whole run vs ClrMD walk only:  $(ratio "$clrmd_walk" "$ds_wall")"
    [ "$hs_secs" != 0 ] && echo "  census only vs ClrMD walk only:               $(ratio "$clrmd_walk" "$hs_secs")"
    [ "$psecs" != 0 ] && echo "  pstacks whole run vs ClrMD stack walk only:   $(ratio "$clrmd_st_s" "$psecs")"
else
    echo "ratios: - (dumpshell $dh_line)"
fi
