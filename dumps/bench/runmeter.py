#!/usr/bin/env python3
"""runmeter.py <prefix> -- <command...>: one timed run for bench.sh.

Runs /usr/bin/time -f "%e %M %F %I" <command> (wall seconds, max RSS in KB, major page faults,
file system inputs in 512-byte blocks),
stdout to <prefix>.out and stderr to <prefix>.err, and meanwhile samples, every 20 ms, the
anonymous memory (RssAnon of /proc/<pid>/status) summed over every process under it, keeping
the peak. Appends one line to <prefix>.times:

    <seconds> <max RSS KB> <exit status> <major faults> <peak RssAnon KB> <fs inputs>

A run for which /usr/bin/time gave no figures (its -o file missing or unreadable: a full disk
did that once) is written with exit status -1 and zeros, so bench.sh leaves it out of the medians.

Max RSS counts the pages of a memory-mapped dump (file-backed, shared with the page cache:
dumpshell maps the dump, SOS and ClrMD read it), so it is about 1.6 GB for any dumpshell command
on the 1.9 GB large-heap dump; the peak RssAnon is the memory a tool allocates itself (sampled:
a peak shorter than 20 ms can be missed). Major faults (a mapped dump: dumpshell) or file system
inputs (a dump read with read(): SOS, ClrMD) mean the dump was not all in the page cache during
the run (another process evicted it): bench.sh flags those runs.
"""
import os
import subprocess
import sys
import time

NO_FIGURES = -1   # the exit status written when /usr/bin/time gave no figures


def children(pid):
    out = []
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                    out.extend(int(x) for x in f.read().split())
            except OSError:
                pass
    except OSError:
        pass
    return out


def anon_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_anon(root):
    total, todo, seen = 0, [root], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        total += anon_kb(p)
        todo.extend(children(p))
    return total


def main():
    args = sys.argv[1:]
    if len(args) < 3 or args[1] != "--":
        sys.exit("usage: runmeter.py <prefix> -- <command...>")
    prefix, cmd = args[0], args[2:]
    tfile = prefix + ".time1"
    with open(prefix + ".out", "wb") as out, open(prefix + ".err", "wb") as err:
        p = subprocess.Popen(["/usr/bin/time", "-f", "%e %M %F %I", "-o", tfile] + cmd, stdout=out, stderr=err)
        peak = 0
        while p.poll() is None:
            # /usr/bin/time's own RssAnon is a few hundred KB: negligible, and counted alike for all
            peak = max(peak, tree_anon(p.pid))
            time.sleep(0.02)
        rc = p.returncode
    secs, rss, majflt, inputs = "0", "0", "0", "0"
    try:
        with open(tfile) as f:
            lines = [l.split() for l in f if l.strip()]
        # with a non-zero exit, time writes "Command exited with non-zero status N" first
        last = lines[-1]
        secs, rss, majflt, inputs = last[0], last[1], last[2], last[3]
        float(secs), int(rss)
    except (OSError, IndexError, ValueError):
        # no figures (e.g. time could not write its file on a full disk): the run is not
        # counted, whatever the command's exit status
        secs, rss, majflt, inputs = "0", "0", "0", "0"
        rc = NO_FIGURES
    try:
        os.unlink(tfile)
    except OSError:
        pass
    with open(prefix + ".times", "a") as f:
        f.write("%s %s %d %s %d %s\n" % (secs, rss, rc, majflt, peak, inputs))


if __name__ == "__main__":
    main()
