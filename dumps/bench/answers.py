#!/usr/bin/env python3
"""answers.py <bench run folder>: what each tool answered, side by side (bench.sh calls it).

Reads <run>/<dump>/<work>.<tool>.out (the last run's output of dumpshell and SOS) and
<run>/<dump>/clrmd.json, and prints per dump and work a short comparison:
  eeversion      the version line each printed
  dumpheap-stat  objects and types; per method table (both print the MT address): how many
                 have the same count and the same total size, and the first differences (SOS
                 counts the free objects in its Total and as a "Free" row, dumpshell apart;
                 SOS's string sizes are unaligned, dumpshell's aligned to 8 bytes)
  census         the heapstat example's object and type counts against ClrMD's object count
  gcroot         the root and path each printed (the chain of addresses)
  clrstack-all   threads and frames; threads whose frames (SP, IP, call site without SOS's
                 [file @ line]) are the same in both, and the first thread that differs
  pstacks        threads at the root level, groups, frame lines
  dumpasync      dumpshell's chain count line, SOS's STACK count
Differences are listed in full in <run>/<dump>/<work>.diff.txt when there are many.
"""
import json
import os
import re
import sys

HEX = re.compile(r"^[0-9a-fA-F]+$")


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def sos_body(text):
    """SOS's output without dotnet-dump's own lines (loading, symbol store, setclrpath)."""
    if text is None:
        return None
    out = []
    for line in text.splitlines():
        if line.startswith(("Loading core dump: ", "Current symbol store settings:", "Set load path for DAC/DBI")):
            continue
        out.append(line)
    return out


def num(s):
    return int(s.replace(",", ""))


# ---------------------------------------------------------------- dumpheap -stat
STAT_ROW = re.compile(r"^\s*([0-9a-fA-F]{8,16})\s+([0-9,]+)\s+([0-9,]+)\s+(.*\S)\s*$")


def stat_rows(lines):
    rows = {}
    for line in lines:
        m = STAT_ROW.match(line)
        if m:
            rows[int(m.group(1), 16)] = (num(m.group(2)), num(m.group(3)), m.group(4))
    return rows


def dumpheap_stat(d, w, out):
    ds = read(os.path.join(d, w + ".dumpshell.out"))
    sos = sos_body(read(os.path.join(d, w + ".sos.out")))
    dsr = stat_rows(ds.splitlines()) if ds else {}
    sor = stat_rows(sos) if sos else {}
    if ds:
        m = re.search(r"^Total (\d+) objects, (\d+) bytes", ds, re.M)
        f = re.search(r"^Free space: (\d+) objects, (\d+) bytes", ds, re.M)
        out.append("  dumpshell: %s live objects, %s bytes; %s free objects; %d types"
                   % (m.group(1) if m else "?", m.group(2) if m else "?", f.group(1) if f else "0", len(dsr)))
    if sos:
        t = next((l for l in sos if l.startswith("Total ")), None)
        free = [r for r in sor.values() if r[2] == "Free"]
        out.append("  SOS:       %s; %d types + %s" % (t or "no Total line", len(sor) - len(free),
                                                      "a Free row of %d objects" % free[0][0] if free else "no Free row"))
    if dsr and sor:
        both = sorted(set(dsr) & set(sor))
        only_ds = sorted(set(dsr) - set(sor))
        only_sos = sorted(k for k in set(sor) - set(dsr) if sor[k][2] != "Free")
        same_count = [k for k in both if dsr[k][0] == sor[k][0]]
        same_size = [k for k in both if dsr[k][0] == sor[k][0] and dsr[k][1] == sor[k][1]]
        diffs = []
        for k in both:
            a, b = dsr[k], sor[k]
            if a[0] != b[0] or a[1] != b[1]:
                diffs.append("%016x dumpshell %d objects %d bytes, SOS %d objects %d bytes: %s | %s"
                             % (k, a[0], a[1], b[0], b[1], a[2], b[2]))
        for k in only_ds:
            diffs.append("%016x only dumpshell: %d objects %d bytes %s" % (k, dsr[k][0], dsr[k][1], dsr[k][2]))
        for k in only_sos:
            diffs.append("%016x only SOS: %d objects %d bytes %s" % (k, sor[k][0], sor[k][1], sor[k][2]))
        out.append("  per method table: %d in both, %d with the same count (%d also the same total size), "
                   "%d only in dumpshell, %d only in SOS"
                   % (len(both), len(same_count), len(same_size), len(only_ds), len(only_sos)))
        # size differences that are only 8-byte alignment (SOS: unaligned sizes)
        align = [k for k in both if dsr[k][0] == sor[k][0] and dsr[k][1] != sor[k][1]
                 and 0 < dsr[k][1] - sor[k][1] < 8 * dsr[k][0]]
        if align:
            out.append("  of the size differences, %d are dumpshell's larger by less than 8 bytes an object "
                       "(alignment: SOS sums unaligned sizes), e.g. %s" % (len(align), sor[align[0]][2]))
        if diffs:
            write_diff(d, w, diffs)
            out.append("  first differences (all in %s.diff.txt):" % w)
            out.extend("    " + x for x in diffs[:5])
    manifest_check(d, dsr, sor, out)


def manifest_check(d, dsr, sor, out):
    """The program's own counts (types[]: dac_name, count) against each tool's row of that type:
    dumpshell prints the DAC's names; SOS's row is the one with dumpshell's method table."""
    dump = (read(os.path.join(d, "dump.path")) or "").strip()
    try:
        m = json.load(open(dump[:-4] + ".manifest.json" if dump.endswith(".dmp") else dump + ".manifest.json"))
    except (OSError, ValueError):
        return
    types = m.get("types") or []
    if not types or not dsr:
        return
    by_name = {}
    for mt, (count, size, name) in dsr.items():
        by_name.setdefault(name, []).append(mt)
    ok_ds = ok_sos = 0
    bad = []
    for t in types:
        mts = by_name.get(t["dac_name"], [])
        ds_n = sum(dsr[x][0] for x in mts)
        sos_n = sum(sor[x][0] for x in mts if x in sor) if sor else None
        if ds_n == t["count"]:
            ok_ds += 1
        else:
            bad.append("%s: manifest %d, dumpshell %d" % (t["dac_name"], t["count"], ds_n))
        if sor and sos_n == t["count"]:
            ok_sos += 1
        elif sor:
            bad.append("%s: manifest %d, SOS %s (by dumpshell's method table)" % (t["dac_name"], t["count"], sos_n))
    out.append("  the program's manifest: %d types (%d objects); dumpshell's count equals it on %d%s"
               % (len(types), sum(t["count"] for t in types), ok_ds,
                  ", SOS's on %d" % ok_sos if sor else ""))
    if bad:
        write_diff(d, "manifest", bad)
        out.append("  manifest differences (all in manifest.diff.txt): " + "; ".join(bad[:3]))


def write_diff(d, w, lines):
    with open(os.path.join(d, w + ".diff.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


# ---------------------------------------------------------------- gcroot
ADDR = re.compile(r"\b(?:0x)?([0-9a-fA-F]{12,16})\b")


def gcroot(d, w, out):
    for tool in ("dumpshell", "sos"):
        text = read(os.path.join(d, "%s.%s.out" % (w, tool)))
        if text is None:
            continue
        lines = sos_body(text) if tool == "sos" else text.splitlines()
        lines = [l.rstrip() for l in lines if l.strip() and l.strip() != "exit"]
        found = next((l for l in lines if re.search(r"Found \d+ unique roots", l)), None)
        out.append("  %s: %s" % ("dumpshell" if tool == "dumpshell" else "SOS", found or "(no 'Found N unique roots' line)"))
        for l in lines:
            if "Found " in l and "unique roots" in l:
                continue
            out.append("    | " + l[:200])
            if len(out) > 400:
                break


# ---------------------------------------------------------------- clrstack -all
THREAD = re.compile(r"^OS Thread Id: 0x([0-9a-fA-F]+)")
FRAME = re.compile(r"^\s*([0-9a-fA-F]{16})\s+([0-9a-fA-F]{16})\s+(.*?)\s*$")
SRC = re.compile(r"\s*\[[^\]]* @ \d+\]$")


def stacks(lines):
    threads, cur = {}, None
    for line in lines:
        m = THREAD.match(line)
        if m:
            cur = int(m.group(1), 16)
            threads[cur] = []
            continue
        m = FRAME.match(line)
        if m and cur is not None:
            site = SRC.sub("", m.group(3)).strip()
            threads[cur].append((int(m.group(1), 16), int(m.group(2), 16), site))
    return threads


def clrstack_all(d, w, out):
    ds = read(os.path.join(d, w + ".dumpshell.out"))
    sos = sos_body(read(os.path.join(d, w + ".sos.out")))
    a = stacks(ds.splitlines()) if ds else {}
    b = stacks(sos) if sos else {}
    if ds:
        out.append("  dumpshell: %d threads, %d frames" % (len(a), sum(len(v) for v in a.values())))
    if sos:
        out.append("  SOS:       %d threads, %d frames" % (len(b), sum(len(v) for v in b.values())))
    if a and b:
        both = sorted(set(a) & set(b))
        same = [t for t in both if a[t] == b[t]]
        same_ip = [t for t in both if [(f[0], f[1]) for f in a[t]] == [(f[0], f[1]) for f in b[t]]]
        out.append("  threads in both %d; frames the same (SP, IP, call site) on %d, the same SP and IP on %d; "
                   "only in dumpshell %d, only in SOS %d"
                   % (len(both), len(same), len(same_ip), len(set(a) - set(b)), len(set(b) - set(a))))
        diffs = []
        for t in both:
            if a[t] != b[t]:
                diffs.append("thread 0x%x:" % t)
                for i in range(max(len(a[t]), len(b[t]))):
                    x = a[t][i] if i < len(a[t]) else None
                    y = b[t][i] if i < len(b[t]) else None
                    if x != y:
                        fx = "%016x %016x %s" % x if x else "-"
                        fy = "%016x %016x %s" % y if y else "-"
                        diffs.append("  #%d dumpshell %s\n  #%d SOS       %s" % (i, fx, i, fy))
        if diffs:
            write_diff(d, w, diffs)
            out.append("  first difference (all in %s.diff.txt):" % w)
            out.extend("    " + x for x in "\n".join(diffs[:3]).splitlines())


# ---------------------------------------------------------------- pstacks
PFRAME = re.compile(r"^(\s*)(\d+) (\S.*)$")


def pstacks(d, w, out):
    """Trees are separated by a line of underscores; each prints innermost frames first and its
    root frame (the outermost, with the tree's thread count) last."""
    for tool in ("dumpshell", "sos"):
        text = read(os.path.join(d, "%s.%s.out" % (w, tool)))
        if text is None:
            continue
        lines = sos_body(text) if tool == "sos" else text.splitlines()
        trees, cur = [], []
        for l in lines:
            if l.startswith("____"):
                if cur:
                    trees.append(cur)
                cur = []
                continue
            m = PFRAME.match(l)
            if m:
                cur.append(m)
        if cur:
            trees.append(cur)
        groups = sum(1 for l in lines if l.strip().startswith("~~~~"))
        out.append("  %-10s %d trees covering %d threads, %d groups (~~~~ lines), %d frame lines"
                   % ("dumpshell:" if tool == "dumpshell" else "SOS:", len(trees),
                      sum(int(t[-1].group(2)) for t in trees), groups, sum(len(t) for t in trees)))


# ---------------------------------------------------------------- dumpasync / eeversion / census
def dumpasync(d, w, out):
    """dumpshell prints one chain per outermost awaiter, SOS one STACK per innermost awaited
    object (a fan-out shares one STACK): the state machine boxes (address and state) are what
    both list, so they are compared as sets."""
    ds = read(os.path.join(d, w + ".dumpshell.out"))
    sos = sos_body(read(os.path.join(d, w + ".sos.out")))
    a = b = None
    if ds:
        last = [l for l in ds.splitlines() if re.search(r"\bchains?\b", l)]
        a = set(m.group(1) for m in (re.match(r"^\s*([0-9a-f]{16}) [0-9a-f]{16}\s+-?\d+ ", l) for l in ds.splitlines()) if m)
        out.append("  dumpshell: %s; %d distinct state machine boxes" % (last[-1].strip() if last else "(no chain count line)", len(a)))
    if sos:
        n = sum(1 for l in sos if l.startswith("STACK "))
        b = set(m.group(1) for m in (re.match(r"^\s*([0-9a-f]{16}) [0-9a-f]{16} \(-?\d+\) ", l) for l in sos) if m)
        out.append("  SOS:       %d STACKs; %d distinct state machine boxes" % (n, len(b)))
    if a is not None and b is not None:
        out.append("  boxes in both %d, only dumpshell %s, only SOS %s"
                   % (len(a & b), sorted(a - b) or "none", sorted(b - a) or "none"))


def eeversion(d, w, out):
    for tool in ("dumpshell", "sos"):
        text = read(os.path.join(d, "%s.%s.out" % (w, tool)))
        if text is None:
            continue
        lines = sos_body(text) if tool == "sos" else text.splitlines()
        lines = [l.strip() for l in lines if l.strip()]
        out.append("  %-10s %s" % ("dumpshell:" if tool == "dumpshell" else "SOS:", " / ".join(lines[:3])[:200]))


def census(d, w, out):
    hs = read(os.path.join(d, w + ".dumpshell.out"))
    if hs:
        m = re.search(r"^census: .*$", hs, re.M)
        out.append("  heapstat:  %s" % (m.group(0) if m else "(no census line)"))


def clrmd(d, out):
    try:
        j = json.load(open(os.path.join(d, "clrmd.json")))
    except (OSError, ValueError):
        return
    t = j.get("timing", {})
    out.append("  ClrMD:     runtime %s; %s objects incl. free; %s threads, %s frames"
               % (j.get("runtime", {}).get("version"), t.get("objects"),
                  t.get("stack_walk_threads"), t.get("stack_walk_frames")))


TIMING = re.compile(r"^(open |census \(parallel\)|iterator |raw scan |census / raw scan)")


def baseline(d, w, out):
    """--baseline: did the baseline build print the same as this one (timing lines aside)?"""
    a = read(os.path.join(d, w + ".base.out"))
    b = read(os.path.join(d, w + ".dumpshell.out"))
    if a is None or b is None:
        return
    la = [l for l in a.splitlines() if not TIMING.match(l)]
    lb = [l for l in b.splitlines() if not TIMING.match(l)]
    if la == lb:
        out.append("  baseline build: the same output (%d lines)" % len(lb))
        return
    import difflib
    diff = list(difflib.unified_diff(la, lb, "baseline", "dumpshell", n=0, lineterm=""))
    with open(os.path.join(d, w + ".base.diff.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(diff) + "\n")
    changed = sum(1 for l in diff if l[:1] in "+-" and not l.startswith(("+++", "---")))
    out.append("  baseline build: the output differs (%d lines of %d/%d; %s.base.diff.txt), first: %s"
               % (changed, len(la), len(lb), w, next((l for l in diff[2:] if l[:1] in "+-"), "")[:160]))


WORKS = [("eeversion", eeversion), ("dumpheap-stat", dumpheap_stat), ("census", census), ("gcroot", gcroot),
         ("clrstack-all", clrstack_all), ("pstacks", pstacks), ("dumpasync", dumpasync)]


def main():
    run = sys.argv[1]
    print("answers (the last run of each tool; outputs in %s/<dump>/)" % run)
    for name in sorted(os.listdir(run)):
        d = os.path.join(run, name)
        if not os.path.isdir(d):
            continue
        print("\n%s" % name)
        for w, fn in WORKS:
            if not any(f.startswith(w + ".") and f.endswith(".out") for f in os.listdir(d)):
                continue
            out = []
            try:
                fn(d, w, out)
            except Exception as e:  # a parse failure must not hide the other answers
                out.append("  (answers.py could not read the outputs: %r)" % e)
            if w in ("dumpheap-stat", "clrstack-all"):
                clrmd(d, out)
            baseline(d, w, out)
            print("%s:" % w)
            print("\n".join(out))


if __name__ == "__main__":
    main()
