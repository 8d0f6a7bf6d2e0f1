#!/usr/bin/env python3
"""Runs the object and heap commands on every corpus dump with two dumpshell binaries, as text
and as JSON, and compares their outputs (stdout, stderr, exit code) byte for byte: a refactoring
of these commands must change nothing.

usage: dumps/tools/cmpcmds.py BEFORE AFTER [NAME...]

The commands: eeversion, eeheap, dumpheap (statistics, filters, listings), verifyheap, name2ee,
and dumpobj, dumpvc, dumparray, dumpmt, dumpclass, dumpmd, dumpmodule, objsize, gcwhere on
addresses taken from the BEFORE binary's JSON: `dumpheap -stat` (MethodTables of strings,
arrays, generic, user and large types), `dumpheap -mt` (objects), `dumpobj` (embedded struct
fields), `dumpmt -md` (EEClasses, modules, MethodDescs); plus addresses that are not what is
asked for (errors). All commands of a dump run in one session (`--script`), once per binary and
form. The image search path is the tests' (dumps/images/<name>, the NuGet runtime pack).

Decompressed dumps are read from $DUMPSHELL_CORPUS_CACHE (default: target/corpus, where the
tests put them) when there, else decompressed into dumps/build/ and deleted afterwards.
Differing outputs are written to dumps/build/diff.<name>.<text|json>.<before|after>.out.
"""

import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.environ.get("DUMPSHELL_CORPUS_CACHE", os.path.join(ROOT, "target", "corpus"))
BUILD = os.path.join(ROOT, "dumps", "build")
NUGET = os.path.expanduser("~/.nuget/packages")


def image_dirs(name):
    dirs = []
    d = os.path.join(ROOT, "dumps", "images", name)
    if os.path.isdir(d):
        dirs.append(d)
    try:
        m = json.load(open(os.path.join(ROOT, "dumps", name + ".manifest.json")))
    except OSError:
        return dirs
    rt = m.get("runtime", {})
    v = rt.get("version", "")
    rid = "win-x64" if rt.get("os") == "windows" else "linux-x64"
    if v and v != "8.0.4":
        root = os.path.join(NUGET, "microsoft.netcore.app.runtime." + rid, v, "runtimes", rid)
        lib = os.path.join(root, "lib", "net%s.0" % v.split(".")[0])
        if os.path.isfile(os.path.join(lib, "System.Private.CoreLib.dll")):
            dirs += [lib, os.path.join(root, "native")]
    return dirs


def run(binary, dump, opts, cmds, json_mode):
    script = os.path.join(BUILD, "cmds.%d.txt" % os.getpid())
    with open(script, "w") as f:
        f.write("\n".join(cmds) + "\n")
    args = [binary] + opts + (["--json"] if json_mode else []) + ["--script", script, dump]
    p = subprocess.run(args, capture_output=True, env=dict(os.environ, COLUMNS="200"))
    return p.stdout, p.stderr, p.returncode


def docs(out):
    v = []
    for line in out.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                v.append(json.loads(line))
            except ValueError:
                pass
    return v


def result(d):
    return d.get("result") if isinstance(d, dict) else None


def pick_mts(stat):
    """MethodTables of several kinds from `dumpheap -stat`'s statistics."""
    rows = stat or []
    picked = []

    def add(pred, n):
        k = 0
        for r in rows:
            if k >= n:
                break
            if r["mt"] not in picked and pred(r["name"]):
                picked.append(r["mt"])
                k += 1

    add(lambda n: n == "System.String", 1)
    add(lambda n: n in ("System.Object[]", "System.String[]"), 2)
    add(lambda n: n in ("System.Int32[]", "System.Byte[]", "System.Char[]", "System.Int64[]"), 2)
    add(lambda n: n.endswith("[]") and "`" in n, 2)  # arrays of structs / generics
    add(lambda n: "[," in n, 2)  # multi-dimensional arrays
    add(lambda n: n.endswith("[]"), 2)
    add(lambda n: "`" in n and not n.endswith("]"), 3)
    add(lambda n: not n.startswith(("System.", "Microsoft.", "Internal.", "Interop", "<"))
        and n != "Free", 5)
    add(lambda n: n != "Free", 3)
    return picked


def commands_for(binary, dump, opts):
    """The command lines to compare, from the BEFORE binary's answers."""
    base = ["eeversion", "eeheap", "eeheap -gc", "dumpheap -stat", "dumpheap -strings",
            "dumpheap -type System.Collections -stat", "dumpheap -type Heap",
            "dumpheap -min 1000 -stat", "dumpheap -max 32 -limit 50", "dumpheap -short -limit 100",
            "dumpheap -free -limit 100", "dumpheap -limit 300", "dumpheap", "dumpheap -short",
            "verifyheap", "verifyheap -max 3",
            "name2ee * System.String", "name2ee System.Private.CoreLib.dll System.Object",
            "name2ee System.Private.CoreLib!System.Collections.Generic.List`1",
            "name2ee * No.Such.Type", "name2ee nosuchmodule X", "name2ee onlyone",
            "dumpobj 0x10", "dumpmt 0x10", "dumpmd 0x10", "dumpmodule 0x10", "dumpclass 0x10",
            "gcwhere 0x10", "objsize 0x10", "dumpvc 0x10 0x10", "dumparray 0x10", "dumpobj zz"]
    out, _, _ = run(binary, dump, opts, ["dumpheap -stat"], True)
    d = docs(out)
    stat = result(d[0]).get("statistics") if d and result(d[0]) else None
    if not stat:
        return base
    names = {r["mt"]: r["name"] for r in stat}
    mts = pick_mts(stat)
    cmds1 = []
    for mt in mts:
        cmds1 += ["dumpheap -mt %s -limit 2" % mt, "dumpmt -md %s" % mt]
    out, _, _ = run(binary, dump, opts, cmds1, True)
    d = docs(out)
    objs, arrays, strings = [], [], []
    ees, mods, mds = [], [], []
    for i, mt in enumerate(mts):
        h = result(d[2 * i]) if 2 * i < len(d) else None
        for o in (h or {}).get("objects", []):
            objs.append(o["address"])
            if names[mt].endswith("]"):
                arrays.append(o["address"])
            if names[mt] == "System.String":
                strings.append(o["address"])
        m = result(d[2 * i + 1]) if 2 * i + 1 < len(d) else None
        if m:
            if m.get("ee_class") not in ees:
                ees.append(m["ee_class"])
            if m.get("module") and m["module"] not in mods:
                mods.append(m["module"])
            slots = (m.get("methods") or {}).get("slots", [])
            kinds = {}
            for s in slots:
                if s.get("method_desc") and kinds.get(s["jit"], 0) < 2:
                    kinds[s["jit"]] = kinds.get(s["jit"], 0) + 1
                    mds.append(s["method_desc"])
    # Embedded structs, from the objects' fields.
    out, _, _ = run(binary, dump, opts, ["dumpobj %s" % a for a in objs], True)
    vcs = []
    user_types = []
    for doc in docs(out):
        r = result(doc)
        if not r:
            continue
        if not r.get("name", "").startswith("System.") and r.get("name") not in user_types:
            user_types.append(r["name"])
        for f in r.get("fields", []):
            v = f.get("value")
            if f.get("vt") and isinstance(v, dict) and v.get("mt") and len(vcs) < 6:
                vcs.append((v["mt"], v["address"]))
    cmds = list(base)
    for mt in mts:
        cmds += ["dumpmt %s" % mt, "dumpmt -md %s" % mt, "dumpheap -mt %s" % mt,
                 "dumpheap -mt %s -short" % mt, "dumpclass %s" % mt]
    for ee in ees:
        cmds.append("dumpclass %s" % ee)
        cmds.append("dumpmt %s" % ee)
        cmds.append("dumpmd %s" % ee)
    for m in mods:
        cmds.append("dumpmodule %s" % m)
    for md in mds[:12]:
        cmds.append("dumpmd %s" % md)
    for i, a in enumerate(objs):
        cmds += ["dumpobj %s" % a, "gcwhere %s" % a]
        if i % 3 == 0:
            cmds += ["dumpobj -nofields %s" % a, "objsize %s" % a, "dumparray %s" % a]
    for a in arrays:
        cmds += ["dumparray %s" % a, "dumparray -start 1 -length 3 %s" % a,
                 "dumparray -details -length 4 %s" % a,
                 "dumparray -details -nofields -length 3 %s" % a,
                 "dumpobj %s" % a, "dumpobj -nofields %s" % a]
    for mt, a in vcs:
        cmds.append("dumpvc %s %s" % (mt, a))
    for t in user_types[:4]:
        cmds.append("name2ee * %s" % t)
    if strings:
        cmds.append("dumpvc %s %s" % (mts[0], strings[0]))
    return cmds


def dump_path(name):
    p = os.path.join(CACHE, name + ".dmp")
    if os.path.isfile(p):
        return p, False
    p = os.path.join(BUILD, name + ".dmp")
    r = subprocess.run(["zstd", "-d", "-q", "-f", os.path.join(ROOT, "dumps", name + ".dmp.zst"),
                        "-o", p])
    if r.returncode != 0:
        if os.path.exists(p):
            os.remove(p)
        return None, False
    return p, True


def main():
    before, after = sys.argv[1], sys.argv[2]
    os.makedirs(BUILD, exist_ok=True)
    names = sys.argv[3:] or sorted(os.path.basename(f)[: -len(".dmp.zst")]
                                   for f in glob.glob(os.path.join(ROOT, "dumps", "*.dmp.zst")))
    total_cmds = 0
    total_runs = 0
    bad = []
    skipped = []
    for name in names:
        dump, temp = dump_path(name)
        if dump is None:
            print("%-32s not decompressed (disk full?): skipped" % name, flush=True)
            skipped.append(name)
            continue
        try:
            opts = ["--no-recorded-paths"]
            for d in image_dirs(name):
                opts += ["--image-path", d]
            cmds = commands_for(before, dump, opts)
            same = True
            for json_mode in (False, True):
                a = run(before, dump, opts, cmds, json_mode)
                b = run(after, dump, opts, cmds, json_mode)
                total_runs += 1
                if a != b:
                    same = False
                    bad.append((name, json_mode))
                    tag = "%s.%s" % (name, "json" if json_mode else "text")
                    for which, r in (("before", a), ("after", b)):
                        with open(os.path.join(BUILD, "diff.%s.%s.out" % (tag, which)), "wb") as f:
                            f.write(r[0] + b"\n--- stderr ---\n" + r[1] + b"\n--- rc %d\n" % r[2])
            total_cmds += len(cmds)
            print("%-32s %4d commands x {text,json}: %s" % (name, len(cmds),
                  "identical" if same else "DIFFERENT"), flush=True)
        finally:
            if temp:
                os.remove(dump)
    names = [n for n in names if n not in skipped]
    print("skipped: %s" % (skipped or "none"))
    print("dumps %d, command lines %d (each as text and JSON: %d comparisons), runs %d, "
          "different: %s" % (len(names), total_cmds, 2 * total_cmds, total_runs, bad or "none"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
