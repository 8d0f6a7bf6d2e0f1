#!/usr/bin/env python3
"""tidy.py RAW.json OUT.json: make dacprobe.exe's output look like dacprobe.py's.

- 'dac': the wine path (Z:\\...\\Microsoft.NETCore.App\\8.0.4\\mscordaccore.dll) is cut to
  'Microsoft.NETCore.App/8.0.4/mscordaccore.dll', as dumps/tools/truth.py finish does for
  libmscordaccore.so (it only knows '/'-paths); a NuGet runtime pack's DAC to
  'microsoft.netcore.app.runtime.win-x64/<v>/runtimes/win-x64/native/mscordaccore.dll'. 'dump' is set by truth.py finish.
- 'tool' is 'dacprobe' (as on Linux); 'host' says which host made it.
- 'validation': the same function as dacprobe.py's validate(), for the same shape (it checks
  dacprobe's own old test program, so for the hang scenario its *_ok values mean nothing).
- keys in dacprobe.py's order.
"""
import json
import re
import sys


def validate(out):  # copied from /work/shared/tools/dacprobe/dacprobe.py
    v = {}
    types = {r['type']: r for r in out.get('heap_stat', {}).get('types', [])}
    pay = types.get('Payload')
    v['payload_objects'] = pay['count'] if pay else 0
    v['payload_ok'] = v['payload_objects'] == 1000
    boxes = out.get('async_state_machine_boxes', {}).get('boxes', [])
    for m in ('Top', 'Middle', 'Leaf'):
        v['boxes_%s' % m] = sum(1 for b in boxes if '<%s>' % m in b['type'])
    v['async_ok'] = all(v['boxes_%s' % m] == 3 for m in ('Top', 'Middle', 'Leaf'))
    blocked = []
    for st in out.get('stacks', []):
        names = [f.get('method') or '' for f in st.get('frames', [])]
        if any('Program.Blocked' in n for n in names):
            blocked.append(st['osThreadId'])
    v['threads_in_Program.Blocked'] = blocked
    v['blocked_ok'] = len(blocked) == 4
    main = [st['osThreadId'] for st in out.get('stacks', [])
            if any('Program.Main' in (f.get('method') or '') for f in st.get('frames', []))]
    v['threads_in_Program.Main'] = main
    v['main_sleep_ok'] = any(
        any('Thread.Sleep' in (f.get('method') or '') for f in st.get('frames', []))
        for st in out.get('stacks', []) if st['osThreadId'] in main)
    return v


def main():
    d = json.load(open(sys.argv[1]))
    d['host'] = d.get('tool')
    d['tool'] = 'dacprobe'
    m = re.search(r'(Microsoft\.NETCore\.App[\\/][^\\/]+[\\/]mscordaccore\.dll)$', d.get('dac', ''), re.I)
    if m:
        d['dac'] = m.group(1).replace('\\', '/')
    # a runtime pack in the NuGet cache: <packages>\microsoft.netcore.app.runtime.win-x64\<v>\...
    m = re.search(r'(microsoft\.netcore\.app\.runtime\.[^\\/]+[\\/][^\\/]+[\\/].*mscordaccore\.dll)$',
                  d.get('dac', ''), re.I)
    if m:
        d['dac'] = m.group(1).replace('\\', '/')
    d['validation'] = validate(d)
    order = ['tool', 'host', 'dump', 'dac', 'core', 'dac_init', 'runtime', 'threads', 'gc_heap', 'heap_stat',
             'stacks', 'async_state_machine_boxes', 'validation', 'errors', 'callback_errors',
             'target_log', 'memory_stats']
    out = {k: d[k] for k in order if k in d}
    out.update({k: v for k, v in d.items() if k not in out})
    with open(sys.argv[2], 'w') as f:
        json.dump(out, f, indent=1)
        f.write('\n')


if __name__ == '__main__':
    main()
