#!/usr/bin/env python3
"""Check that the Windows hang dump's truths agree.

    python3 check.py windows-hang.manifest.json windows-hang.dac.json [windows-hang.dmp[.zst]]

manifest = what hang.cs says it made; dac = what the runtime's own DAC sees (dacprobe.cpp);
the minidump's own ThreadList / MiscInfo (read here, no DAC). Prints one line per check and
exits 1 if any fails.
"""
import json
import struct
import subprocess
import sys


def minidump_info(path):
    if path.endswith('.zst'):
        b = subprocess.run(['zstd', '-dc', path], check=True, stdout=subprocess.PIPE).stdout
    else:
        b = open(path, 'rb').read()
    assert b[:4] == b'MDMP', 'not a minidump'
    n, dr = struct.unpack_from('<II', b, 8)
    info = {'threads': [], 'pid': None, 'streams': []}
    for i in range(n):
        t, sz, rva = struct.unpack_from('<III', b, dr + 12 * i)
        info['streams'].append(t)
        if t == 3:
            cnt, = struct.unpack_from('<I', b, rva)
            info['threads'] = [struct.unpack_from('<I', b, rva + 4 + 48 * k)[0] for k in range(cnt)]
        elif t == 15:
            info['pid'] = struct.unpack_from('<I', b, rva + 8)[0]
    info['size'] = len(b)
    return info


def main():
    man = json.load(open(sys.argv[1], encoding='utf-8'))
    dac = json.load(open(sys.argv[2]))
    md = minidump_info(sys.argv[3]) if len(sys.argv) > 3 else None
    results = []

    def check(name, ok, detail=''):
        results.append(ok)
        print('%-4s %s%s' % ('ok' if ok else 'FAIL', name, (': ' + detail) if detail else ''))

    check('dac: no errors', not dac.get('errors'), json.dumps(dac.get('errors'))[:300])
    cross = dac['heap_stat']['object_size_crosscheck']
    check('dac: every object size/MT agrees with GetObjectData', not cross['mismatches'],
          '%d checked, %d mismatches' % (cross['checked'], len(cross['mismatches'])))
    by_os = {t['osThreadId']: t for t in dac['threads']}
    stacks = {s['osThreadId']: s for s in dac['stacks']}
    for mt in man['threads']:
        t = by_os.get(mt['os_id'])
        label = '%s (%s) os_id %d managed_id %d' % (mt['role'], mt['name'], mt['os_id'], mt['managed_id'])
        if t is None:
            check('thread %s in DAC thread list' % label, False)
            continue
        check('thread %s: DAC corThreadId' % label, t['corThreadId'] == mt['managed_id'],
              'dac %d' % t['corThreadId'])
        methods = [f.get('method') or '' for f in stacks.get(mt['os_id'], {}).get('frames', [])]
        names = [m.split('(', 1)[0] for m in methods]
        check('thread %s: blocked_in %s in DAC frames' % (label, mt['blocked_in']),
              mt['blocked_in'] in names, ' | '.join(n for n in names if n))
        # the manifest's own frames, innermost first, appear in that order in the DAC stack
        idx, pos_ok = -1, True
        for fr in mt['frames']:
            try:
                idx = names.index(fr, idx + 1)
            except ValueError:
                pos_ok = False
                break
        check('thread %s: frames %s in order' % (label, mt['frames']), pos_ok)
        if md:
            check('thread %s: in minidump ThreadList' % label, mt['os_id'] in md['threads'])
    census = {}
    for r in dac['heap_stat']['types']:
        census[r['type']] = census.get(r['type'], 0) + r['count']
    for ty in man['types']:
        name = ty.get('dac_name', ty['name'])     # common.cs's programs give the DAC's spelling
        check('type %s count %d' % (name, ty['count']), census.get(name, 0) == ty['count'],
              'census %s' % census.get(name))
    boxes = dac['async_state_machine_boxes']['boxes']
    for ch in man.get('async_chains', []):
        for i, sm in enumerate(ch['state_machine_types']):
            if i == 0 and ch.get('box') == 'pooling':
                continue    # a PoolingAsyncValueTaskMethodBuilder box is no Task (truth.py checks it)
            want = ch.get('count', 1) if i == 0 else 1    # WhenAll/WhenAny legs share the outer
            n = sum(1 for b in boxes if '[' + sm + ', ' in b['type'])
            check('async chain %s: %d box(es) for %s' % (ch['name'], want, sm), n == want, '%d boxes' % n)
    if md:
        dac_os = [t['osThreadId'] for t in dac['threads'] if t['osThreadId']]
        missing = [x for x in dac_os if x not in md['threads']]
        check('every DAC thread with an OS thread is in the minidump ThreadList', not missing,
              'missing %s' % missing)
        check('minidump MiscInfo pid == manifest pid', md['pid'] == man['pid'],
              'dump %s manifest %s' % (md['pid'], man['pid']))
        check('DAC os_threads_in_core == minidump ThreadList',
              dac['runtime']['os_threads_in_core'] == md['threads'])
    print('%d/%d checks passed' % (sum(results), len(results)))
    sys.exit(0 if all(results) else 1)


if __name__ == '__main__':
    main()
