#!/usr/bin/env python3
"""Compare ClrMD's truth (<name>.clrmd.json) with the DAC's (<name>.dac.json and, when present,
<name>.roots.dac.json and <name>.locks.dac.json).

    python3 dumps/tools/clrmd/compare.py [--strict] [--quiet] dumps/hang [dumps/heap ...]

Each argument is a path prefix: <prefix>.clrmd.json and <prefix>.dac.json must exist. Prints one
line per disagreement, grouped by area, then a summary per dump. Known, explained differences
(README.md in this folder) are printed as "known:" and do not count; --strict makes any unknown
disagreement exit 1. Standard library only.
"""
import json
import os
import sys


def load(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def h(x):
    """Normalise a hex string / int / None to an int or None."""
    if x is None:
        return None
    if isinstance(x, int):
        return x
    x = str(x)
    return int(x, 16) if x.lower().startswith("0x") else int(x, 16)


class Report:
    def __init__(self, name, quiet):
        self.name = name
        self.quiet = quiet
        self.unknown = 0
        self.known = 0
        self.checked = {}
        self.files_reason = None

    def check(self, area, n=1):
        self.checked[area] = self.checked.get(area, 0) + n

    def diff(self, area, msg, known=None):
        if not known and self.files_reason and area in ("type-name", "stacks", "frames", "exceptions", "threads"):
            known = self.files_reason
        if known:
            self.known += 1
            if not self.quiet:
                print(f"  known: [{area}] {msg}  ({known})")
        else:
            self.unknown += 1
            print(f"  DIFF [{area}] {msg}")


def compare_census(r, c, d):
    ct = {h(t["mt"]): t for t in c["heap_stat"]["types"]}
    dt = {h(t["mt"]): t for t in d["heap_stat"]["types"]}
    for mt in sorted(set(ct) | set(dt)):
        a, b = ct.get(mt), dt.get(mt)
        r.check("census")
        if a is None:
            r.diff("census", f"mt {mt:#x} {b['type']}: DAC count {b['count']}, ClrMD has none")
            continue
        if b is None:
            r.diff("census", f"mt {mt:#x} {a['type']}: ClrMD count {a['count']}, DAC has none")
            continue
        if a["count"] != b["count"]:
            r.diff("census", f"mt {mt:#x} {b['type']}: count DAC {b['count']} ClrMD {a['count']}")
        if a["total_size_aligned"] != b["total_size"]:
            r.diff("census", f"mt {mt:#x} {b['type']}: size DAC {b['total_size']} ClrMD aligned {a['total_size_aligned']}")
        if a["total_size"] != b["total_size"]:
            r.diff("census-size", f"mt {mt:#x} {b['type']}: size DAC {b['total_size']} ClrMD.Size {a['total_size']}",
                   known="ClrObject.Size is not rounded up to the pointer size")
        if a["type"] != b["type"]:
            if dac_to_csharp(b["type"]) == a["type"]:
                r.diff("type-name", f"mt {mt:#x}: DAC '{b['type']}' ClrMD '{a['type']}'",
                       known="ClrMD spells generics C#-style (List<T>), the DAC with `1[[...]]")
            else:
                r.diff("type-name", f"mt {mt:#x}: DAC '{b['type']}' ClrMD '{a['type']}'")
    hs, ds = c["heap_stat"], d["heap_stat"]
    for k_c, k_d in (("total_objects", "total_objects"), ("total_size_aligned", "total_size"),
                     ("free_objects", "free_objects"), ("free_size", "free_size")):
        r.check("census-totals")
        if hs[k_c] != ds[k_d]:
            r.diff("census-totals", f"{k_d}: DAC {ds[k_d]} ClrMD {hs[k_c]}")
    dk = d["heap_stat"].get("by_segment_kind", {})
    ck = c["heap_stat"].get("by_segment_kind", {})
    for k in sorted(set(dk) | set(ck)):
        r.check("segment-kinds")
        a, b = ck.get(k), dk.get(k)
        if a is None or b is None:
            r.diff("segment-kinds", f"{k}: DAC {b} ClrMD {a}")
        elif (a["segments"], a["objects"]) != (b["segments"], b["objects"]):
            r.diff("segment-kinds", f"{k}: DAC {b['segments']} segs/{b['objects']} objs, ClrMD {a['segments']} segs/{a['objects']} objs")


def compare_segments(r, c, d):
    # DAC segments: mem..walk_end; ClrMD: start..end (ObjectRange)
    ds = {}
    for s in d["gc_heap"]["segments"]:
        ds[h(s["mem"])] = s
    for s in c["segments"]:
        r.check("segments")
        start = h(s["start"])
        b = ds.pop(start, None)
        if b is None:
            r.diff("segments", f"ClrMD segment {s['kind']} {s['start']}..{s['end']} not among the DAC's")
            continue
        if b["kind"] != s["kind"]:
            r.diff("segments", f"{s['start']}: kind DAC {b['kind']} ClrMD {s['kind']}")
        if h(b["walk_end"]) != h(s["end"]):
            r.diff("segments", f"{s['start']} ({s['kind']}): end DAC walk_end {b['walk_end']} ClrMD {s['end']}")
        if s.get("objects") is not None and b.get("objects") is not None and s["objects"] != b["objects"]:
            r.diff("segments", f"{s['start']} ({s['kind']}): objects DAC {b['objects']} ClrMD {s['objects']}")
    for start, b in ds.items():
        r.diff("segments", f"DAC segment {b['kind']} {b['mem']}..{b['walk_end']} not among ClrMD's")


def compare_threads(r, c, d, locks):
    dth = {t["osThreadId"]: t for t in d["threads"]}
    cth = {t["os_id"]: t for t in c["threads"]}
    lt = {t["os_id"]: t for t in (locks or {}).get("threads", [])}
    for os_id in sorted(set(dth) | set(cth)):
        r.check("threads")
        a, b = cth.get(os_id), dth.get(os_id)
        if a is None or b is None:
            r.diff("threads", f"os {os_id}: DAC {'yes' if b else 'no'}, ClrMD {'yes' if a else 'no'}")
            continue
        if a["managed_id"] != b["corThreadId"]:
            r.diff("threads", f"os {os_id}: managed id DAC {b['corThreadId']} ClrMD {a['managed_id']}")
        if h(a["address"]) != h(b["address"]):
            r.diff("threads", f"os {os_id}: address DAC {b['address']} ClrMD {a['address']}")
        if a["lock_count"] != b["lockCount"]:
            r.diff("threads", f"os {os_id}: lock count DAC {b['lockCount']} ClrMD {a['lock_count']}")
        mode = "Cooperative" if b["preemptiveGCDisabled"] else "Preemptive"
        if a["gc_mode"] != mode:
            r.diff("threads", f"os {os_id}: gc mode DAC {mode} ClrMD {a['gc_mode']}")
        if a["is_finalizer"] != b["is_finalizer"]:
            r.diff("threads", f"os {os_id}: finalizer DAC {b['is_finalizer']} ClrMD {a['is_finalizer']}")
        if int(a["state"]) != b["state"]:
            r.diff("threads", f"os {os_id}: state DAC {b['state']} ClrMD {a['state']}")
        if os_id in lt:
            r.check("threads")
            dl = h(lt[os_id]["last_thrown_object"])
            ce = a["current_exception"]
            cl = h(ce["address"]) if ce else None
            if dl != cl:
                r.diff("threads", f"os {os_id}: last thrown object DAC {lt[os_id]['last_thrown_object']} ClrMD current_exception {ce}")


def compare_stacks(r, c, d):
    cs = c["stacks"]
    for s in d["stacks"]:
        os_id = s["osThreadId"]
        cf = cs.get(str(os_id))
        r.check("stacks")
        if cf is None:
            r.diff("stacks", f"os {os_id}: no ClrMD stack")
            continue
        df = s["frames"]
        if len(df) != len(cf):
            r.diff("stacks", f"os {os_id}: {len(df)} DAC frames, {len(cf)} ClrMD frames")
        for i, (b, a) in enumerate(zip(df, cf)):
            r.check("frames")
            where = f"os {os_id} frame {i}"
            if b.get("method") != a.get("method"):
                r.diff("frames", f"{where}: method DAC {b.get('method')!r} ClrMD {a.get('method')!r}")
            if h(b.get("methodDesc")) not in (None, 0) and h(b.get("methodDesc")) != h(a.get("method_desc")):
                r.diff("frames", f"{where}: MethodDesc DAC {b.get('methodDesc')} ClrMD {a.get('method_desc')}")
            if b.get("frame_name") != a.get("frame_name"):
                r.diff("frames", f"{where}: frame DAC {b.get('frame_name')} ClrMD {a.get('frame_name')}")
            is_explicit = b.get("frame") is not None
            if (a["kind"] == "runtime") != is_explicit:
                r.diff("frames", f"{where}: kind ClrMD {a['kind']}, DAC {'explicit frame' if is_explicit else 'managed'}")
            if h(b["ip"]) != h(a["ip"]):
                r.diff("frames", f"{where}: ip DAC {b['ip']} ClrMD {a['ip']}")
            if is_explicit:
                if h(a["sp"]) != h(b["frame"]):
                    if h(a["sp"]) == h(b["sp"]):
                        pass
                    else:
                        r.diff("frames", f"{where}: sp ClrMD {a['sp']}, DAC sp {b['sp']} frame {b['frame']}")
                else:
                    r.diff("frame-sp", f"{where}: ClrMD sp {a['sp']} is the Frame's address; DAC sp {b['sp']}",
                           known="ClrMD reports an explicit Frame's address as its stack pointer")
            elif h(b["sp"]) != h(a["sp"]):
                r.diff("frames", f"{where}: sp DAC {b['sp']} ClrMD {a['sp']}")


def dac_to_csharp(name):
    """The DAC's type name (List`1[[System.String, System.Private.CoreLib]][]) spelled as ClrMD
    spells it (System.Collections.Generic.List<System.String>[])."""
    def parse(s, i):
        j = i
        while j < len(s) and s[j] not in "[],":
            j += 1
        base = s[i:j]
        args = []
        if s.startswith("[[", j):
            j += 1
            while s[j] == "[":
                a, j = parse(s, j + 1)
                # skip ", assembly" up to the closing bracket of this argument
                depth = 0
                while not (s[j] == "]" and depth == 0):
                    depth += s[j] == "["
                    depth -= s[j] == "]"
                    j += 1
                j += 1
                args.append(a)
                if s[j] == ",":
                    j += 1
            j += 1  # the closing ']'
        suffix = ""
        while s.startswith("[", j) and j + 1 < len(s) and s[j + 1] in "],*":
            k = s.index("]", j)
            suffix += s[j:k + 1]
            j = k + 1
        out, k = "", 0
        for part in base.split("+"):
            if "`" in part:
                nm, n = part.split("`", 1)
                n = int(n)
                part = nm + "<" + ", ".join(args[k:k + n]) + ">"
                k += n
            out += ("+" if out else "") + part
        return out + suffix, j
    try:
        return parse(name, 0)[0]
    except (IndexError, ValueError):
        return name


def kind_norm(k):
    return str(k).lower().replace("_", "")


def compare_handles(r, c, roots):
    if roots is None:
        return
    if roots.get("dump_sha256") and roots["dump_sha256"] != c["dump"]["sha256"]:
        r.diff("handles", "roots.dac.json was made from another dump (sha256 differs)")
        return
    dh = {h(x["handle"]): x for x in roots["handles"]}
    ch = {h(x["address"]): x for x in c["gc_handles"]}
    for a in sorted(set(dh) | set(ch)):
        r.check("handles")
        x, y = dh.get(a), ch.get(a)
        if x is None:
            r.diff("handles", f"handle {a:#x} ({y['kind']} -> {y['object']} {y['object_type']}): ClrMD only")
            continue
        if y is None:
            r.diff("handles", f"handle {a:#x} ({x['type']} -> {x['object']}): DAC only")
            continue
        if kind_norm(x["type"]) != kind_norm(y["kind"]):
            r.diff("handles", f"handle {a:#x}: kind DAC {x['type']} ClrMD {y['kind']}")
        if h(x["object"]) != h(y["object"]):
            r.diff("handles", f"handle {a:#x}: object DAC {x['object']} ClrMD {y['object']}")
        if bool(x["strong"]) != bool(y["is_strong"]):
            r.diff("handles", f"handle {a:#x} ({x['type']}): strong DAC {x['strong']} ClrMD {y['is_strong']}")
    # finalization queue from the fill pointers: [0] start of the first generation's part,
    # [n-2] end of the finalizable parts (generations + critical), [n-1] end of f-reachable.
    fps = roots.get("finalization_fill_pointers") or []
    if fps and "finalizer_queue" in c:
        fin = ready = 0
        for hp in fps:
            p = [h(x) for x in hp["fill_pointers"]]
            fin += (p[-2] - p[0]) // 8
            ready += (p[-1] - p[-2]) // 8
        fq = c["finalizer_queue"]
        r.check("finalizer")
        if fq.get("finalizable_objects") != fin:
            r.diff("finalizer", f"finalizable objects DAC (fill pointers) {fin} ClrMD {fq.get('finalizable_objects')}")
        if fq.get("ready_for_finalization") != ready:
            r.diff("finalizer", f"ready for finalization DAC {ready} ClrMD {fq.get('ready_for_finalization')}")


def compare_locks(r, c, locks):
    if locks is None:
        return
    if locks.get("dump_sha256") and locks["dump_sha256"] != c["dump"]["sha256"]:
        r.diff("locks", "locks.dac.json was made from another dump (sha256 differs)")
        return
    ds = {h(s["object"]): s for s in locks["sync_blocks"]["sync_blocks"] if not s.get("free")}
    cs = {h(s["object"]): s for s in c["sync_blocks"]}
    for o in sorted(set(ds) | set(cs)):
        r.check("sync-blocks")
        x, y = ds.get(o), cs.get(o)
        if x is None or y is None:
            r.diff("sync-blocks", f"object {o:#x}: DAC {'yes' if x else 'no'}, ClrMD {'yes' if y else 'no'}")
            continue
        if bool(x["monitor_held"]) != bool(y["monitor_held"]):
            r.diff("sync-blocks", f"{o:#x}: held DAC {x['monitor_held']} ClrMD {y['monitor_held']}")
        if h(x["holding_thread"]) != (h(y["owner_thread"]) or 0):
            r.diff("sync-blocks", f"{o:#x}: owner DAC {x['holding_thread']} ClrMD {y['owner_thread']}")
        if x["recursion"] != y["recursion"]:
            r.diff("sync-blocks", f"{o:#x}: recursion DAC {x['recursion']} ClrMD {y['recursion']}")
        if x["additional_thread_count"] != y["waiting_count"]:
            held = x["monitor_held"]
            entering = (held - 1) // 2 if held > 1 else 0
            if x["additional_thread_count"] + entering == y["waiting_count"]:
                r.diff("sync-blocks", f"{o:#x}: waiters DAC AdditionalThreadCount {x['additional_thread_count']} ClrMD {y['waiting_count']}",
                       known=f"ClrMD adds the threads entering the lock, (MonitorHeld {held} - 1) / 2 = {entering}")
            else:
                r.diff("sync-blocks", f"{o:#x}: waiters DAC {x['additional_thread_count']} ClrMD {y['waiting_count']}")
        if x["additional_thread_count"] == 1000:
            r.diff("sync-blocks", f"{o:#x}: both say 1000 waiters",
                   known="DAC GetSyncBlockData counts the Monitor.Wait list without advancing (caps at 1000); ClrMD passes it on")
    ce = {h(e["address"]): e for e in c["exceptions_on_heap"]}
    for e in locks.get("exceptions", []):
        r.check("exceptions")
        a = h(e["address"])
        y = ce.get(a)
        if y is None:
            r.diff("exceptions", f"{e['address']} {e['type']}: not among ClrMD's exceptions on the heap")
            continue
        if e["type"] != y["type"]:
            r.diff("exceptions", f"{e['address']}: type DAC {e['type']} ClrMD {y['type']}")
        if e["message"] != y["message"]:
            r.diff("exceptions", f"{e['address']}: message DAC {e['message']!r} ClrMD {y['message']!r}")
        if int(e["hresult"], 16) != int(y["hresult"], 16):
            r.diff("exceptions", f"{e['address']}: hresult DAC {e['hresult']} ClrMD {y['hresult']}")
        if h(e["inner_exception"]) != h(y["inner"]):
            r.diff("exceptions", f"{e['address']}: inner DAC {e['inner_exception']} ClrMD {y['inner']}")
        dst, cst = e.get("stack_trace", []), y["stack_trace"]
        if len(dst) != len(cst):
            r.diff("exceptions", f"{e['address']}: {len(dst)} DAC trace frames, {len(cst)} ClrMD")
        for i, (f, g) in enumerate(zip(dst, cst)):
            if (h(f["ip"]), h(f["sp"]), f["method"]) != (h(g["ip"]), h(g["sp"]), g["method"]):
                r.diff("exceptions", f"{e['address']} frame {i}: DAC {f['ip']} {f['sp']} {f['method']} ClrMD {g['ip']} {g['sp']} {g['method']}")


def compare_one(prefix, quiet):
    name = os.path.basename(prefix)
    c = load(prefix + ".clrmd.json")
    d = load(prefix + ".dac.json")
    if c is None or d is None:
        print(f"{name}: missing {prefix}.clrmd.json or {prefix}.dac.json")
        return None
    r = Report(name, quiet)
    print(f"== {name} (ClrMD {c['tool'].get('clrmd_version')}, runtime {c['runtime']['version']})")
    if d.get("dump_file", {}).get("sha256") and d["dump_file"]["sha256"] != c["dump"]["sha256"]:
        r.diff("dump", "dac.json and clrmd.json come from different dumps (sha256)")
        return r
    ms = d.get("memory_stats") or {}
    if ms.get("file_fallback_reads") and not (c.get("memory") or {}).get("file_fallback"):
        r.files_reason = (f"the core lacks file-backed pages (gcore): dacprobe read {ms.get('file_fallback_bytes')} bytes "
                          f"from files on disk, ClrMD alone read none (see truth.sh --file-fallback)")
        print(f"  note: {r.files_reason}; type names, stacks and frames differences are counted as known")
    if c.get("errors"):
        r.diff("errors", f"ClrMD tool errors: {c['errors']}")
    if c["runtime"]["version"] in ("0.0", "0.0.0.0"):
        r.diff("runtime", "ClrMD reports the runtime version as 0.0",
               known="ClrMD searches only libcoreclr.so's first writable PT_LOAD (RELRO) for @(#)Version; the string is in .data, the second")
    dd = d["gc_heap"]["GetGCHeapData"]
    r.check("gc")
    if bool(dd["bServerMode"]) != c["is_server"] or dd["HeapCount"] != c["heap_count"]:
        r.diff("gc", f"server/heaps DAC {dd['bServerMode']}/{dd['HeapCount']} ClrMD {c['is_server']}/{c['heap_count']}")
    compare_census(r, c, d)
    compare_segments(r, c, d)
    locks = load(prefix + ".locks.dac.json")
    roots = load(prefix + ".roots.dac.json")
    compare_threads(r, c, d, locks)
    compare_stacks(r, c, d)
    compare_handles(r, c, roots)
    compare_locks(r, c, locks)
    checked = ", ".join(f"{k} {v}" for k, v in r.checked.items())
    print(f"   {name}: {r.unknown} unexplained, {r.known} known disagreements; checked: {checked}")
    return r


def main(argv):
    strict = "--strict" in argv
    quiet = "--quiet" in argv
    prefixes = [a[:-len(".clrmd.json")] if a.endswith(".clrmd.json") else a for a in argv if not a.startswith("--")]
    if not prefixes:
        print(__doc__)
        return 2
    bad = 0
    for p in prefixes:
        r = compare_one(p, quiet)
        if r is None or r.unknown:
            bad += 1
    return 1 if (strict and bad) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
