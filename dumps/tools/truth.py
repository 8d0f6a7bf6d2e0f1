#!/usr/bin/env python3
"""Truth files for dumpshell's dump corpus.

    truth.py finish --name N --raw RAW.json --manifest M.json --dump X.dmp --zst X.dmp.zst --out-dir DIR
        tidies dacprobe's output into DIR/N.dac.json and copies the manifest to DIR/N.manifest.json
    truth.py check N.manifest.json N.dac.json [--tolerate-dac-gaps]
        cross-checks the program's manifest against the DAC's view; exit status 1 on disagreement

Standard library only.  See dumps/README.md for what is compared and how names are spelled.
"""
import argparse
import hashlib
import json
import os
import re
import sys

TARGET_LOG_LIMIT = 256 * 1024     # drop dacprobe's target_log when its JSON is larger than this
BOX_PREFIX = 'System.Runtime.CompilerServices.AsyncTaskMethodBuilder`1+AsyncStateMachineBox`1[['
POOLING_PREFIX = 'System.Runtime.CompilerServices.PoolingAsyncValueTaskMethodBuilder`1+StateMachineBox`1[['


def sha256(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    return h.hexdigest()


def finish(a):
    with open(a.raw) as f:
        dac = json.load(f)
    with open(a.manifest, encoding='utf-8') as f:
        manifest = json.load(f)
    # paths on the generating machine mean nothing elsewhere: keep them short
    dac['dump'] = os.path.basename(a.zst)[:-len('.zst')] if a.zst.endswith('.zst') else os.path.basename(a.dump)
    m = re.search(r'(Microsoft\.NETCore\.App/[^/]+/libmscordaccore\.so)$', dac.get('dac', ''))
    if m:
        dac['dac'] = m.group(1)
    tl = dac.get('target_log')
    if tl is not None and len(json.dumps(tl)) > TARGET_LOG_LIMIT:
        dac['target_log'] = {'dropped': 'larger than %d bytes of JSON' % TARGET_LOG_LIMIT}
    dac['dump_file'] = {'compressed': os.path.basename(a.zst),
                        'compressed_size': os.path.getsize(a.zst),
                        'size': os.path.getsize(a.dump),
                        'sha256': sha256(a.dump),
                        'compressed_sha256': sha256(a.zst)}
    out = os.path.join(a.out_dir, a.name + '.dac.json')
    with open(out, 'w') as f:
        json.dump(dac, f, indent=1)
        f.write('\n')
    mout = os.path.join(a.out_dir, a.name + '.manifest.json')
    with open(mout, 'w', encoding='utf-8') as f:
        json.dump(manifest, f, indent=2, ensure_ascii=False)
        f.write('\n')
    print('wrote %s (%d bytes), %s' % (out, os.path.getsize(out), mout), file=sys.stderr)


def bare(method):
    """DAC method names carry their parameter list: 'Hang.Program.WaitOnGate()'. Drop it."""
    if method is None:
        return None
    i = method.find('(')
    return method[:i] if i >= 0 else method


class Checker:
    def __init__(self, manifest, dac, tolerate):
        self.m, self.d, self.tolerate = manifest, dac, tolerate
        self.failures, self.notes, self.passed = [], [], 0

    def ok(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failures.append(what)
        return cond

    def gap(self, what):
        """The DAC could not produce something: a failure unless gaps are tolerated."""
        if self.tolerate:
            self.notes.append('skipped: ' + what)
        else:
            self.failures.append(what)

    def run(self):
        m, d = self.m, self.d
        if 'fatal' in d:
            self.gap('dacprobe fatal: ' + d['fatal'])
        for e in d.get('errors', []):
            self.gap('dacprobe error: %s' % json.dumps(e))
        for e in d.get('callback_errors', []):
            self.notes.append('dacprobe callback error: %s' % json.dumps(e))
        mism = d.get('heap_stat', {}).get('object_size_crosscheck', {}).get('mismatches', [])
        self.ok(not mism, 'object size cross-check mismatches: %s' % mism[:5])

        # ---- runtime
        rt = m['runtime']
        path = (d.get('runtime', {}).get('runtime_path') or '').replace('\\', '/')
        self.ok('/%s/' % rt['version'] in path, 'runtime version %s not in DAC runtime path %s' % (rt['version'], path))
        gcd = d.get('gc_heap', {}).get('GetGCHeapData')
        if gcd is None:
            self.gap('no GetGCHeapData')
        else:
            self.ok(bool(gcd['bServerMode']) == (rt['gc'] == 'server'),
                    'gc mode %s vs DAC bServerMode=%s' % (rt['gc'], gcd['bServerMode']))
            if rt.get('gc_heap_count') is not None:
                self.ok(gcd['HeapCount'] == rt['gc_heap_count'],
                        'gc heap count %s vs DAC %s' % (rt['gc_heap_count'], gcd['HeapCount']))

        # ---- threads and their stacks
        dthreads = {t['osThreadId']: t for t in d.get('threads', [])}
        stacks = {s['osThreadId']: s for s in d.get('stacks', [])}
        if not dthreads:
            self.gap('DAC listed no threads')
        by_managed = {}
        for t in m.get('threads', []):
            role = '%s (managed %s, os %s)' % (t['role'], t['managed_id'], t['os_id'])
            by_managed[t['managed_id']] = t
            if not dthreads:
                continue
            dt = dthreads.get(t['os_id'])
            if not self.ok(dt is not None, 'thread %s: os id not among DAC threads' % role):
                continue
            self.ok(dt['corThreadId'] == t['managed_id'],
                    'thread %s: DAC corThreadId is %s' % (role, dt['corThreadId']))
            st = stacks.get(t['os_id'], {})
            if 'frames' not in st:
                self.gap('thread %s: DAC gave no stack (%s)' % (role, st.get('error')))
                continue
            names = [bare(f.get('method')) for f in st['frames']]
            own = t.get('frames', [])
            if own:
                ns = own[0].split('.')[0] + '.'
                # (a generic method's frame as the DAC spells it: the programs spell those so)
                dac_own = [n for n in names if n and n.startswith(ns)]
                self.ok(dac_own == own, 'thread %s: own frames %s, DAC has %s' % (role, own, dac_own))
            # names.cs: the generic instantiations the thread called, as the DAC spells them
            # (the shared code's canonical form where the JIT shares it), and its LCG methods
            for g in t.get('generic_frames', []):
                self.ok(g['dac_name'] in names, 'thread %s: generic frame %s (exact %s) not on its DAC stack'
                        % (role, g['dac_name'], g['exact']))
            for dyn in t.get('dynamic_frames', []):
                self.ok('DynamicClass.' + dyn in names, 'thread %s: dynamic method DynamicClass.%s not on its DAC stack %s'
                        % (role, dyn, names))
            if t.get('blocked_in'):
                first_own = min([names.index(n) for n in own if n in names] or [len(names)])
                inner = names[:first_own]
                self.ok(t['blocked_in'] in inner,
                        'thread %s: %s not above its own frames in DAC stack %s' % (role, t['blocked_in'], inner))

        # ---- exact instance counts of the program's own types
        census, by_mt = {}, {}
        for r in d.get('heap_stat', {}).get('types', []):
            c = census.setdefault(r['type'], [0, 0])
            c[0] += r['count']
            c[1] += r['total_size']
            if r.get('mt'):
                by_mt[int(r['mt'], 16)] = r
        if not census and m.get('types'):
            self.gap('DAC heap census empty')
        elif census:
            for ty in m.get('types', []):
                name = ty.get('dac_name', ty['name'])
                if ty.get('method_table'):
                    # the program gave the type's MethodTable (RuntimeTypeHandle.Value): count by
                    # it; the DAC cannot name the types of a Reflection.Emit module (no PE image:
                    # GetMethodTableName says "<Unloaded Type>"), so a name it gives otherwise is
                    # a note for those
                    r = by_mt.get(int(ty['method_table'], 16))
                    got = r['count'] if r else 0
                    self.ok(got == ty['count'], 'type %s (MT %s): manifest count %d, DAC census %d'
                            % (name, ty['method_table'], ty['count'], got))
                    if r and r['type'] != name:
                        if ty.get('emitted'):
                            self.notes.append('type %s (MT %s): the DAC names it %r' % (name, ty['method_table'], r['type']))
                        else:
                            self.ok(False, 'type %s (MT %s): the DAC names it %r' % (name, ty['method_table'], r['type']))
                    continue
                got = census.get(name, [0, 0])[0]
                self.ok(got == ty['count'], 'type %s: manifest count %d, DAC census %d' % (name, ty['count'], got))

        # ---- async state machines: one box per method of each chain
        boxes = [b['type'] for b in d.get('async_state_machine_boxes', {}).get('boxes', [])]
        for ch in m.get('async_chains', []):
            if ch.get('awaited_type') and census:
                self.ok(census.get(ch['awaited_type'], [0])[0] >= 1,
                        'chain %s: awaited type %s not in DAC census' % (ch['name'], ch['awaited_type']))
            for smt in ch['state_machine_types']:
                if ch.get('box') == 'pooling' and smt == ch['state_machine_types'][0]:
                    # a PoolingAsyncValueTaskMethodBuilder box is no Task: not in the DAC's list
                    # of AsyncStateMachineBoxes, but in its heap census
                    want = POOLING_PREFIX + ch['result_type'] + ', '
                    hits = [t for t, c in census.items() if t.startswith(want) and '[' + smt + ', ' in t]
                    self.ok(len(hits) == 1 and census[hits[0]][0] == 1,
                            'chain %s: pooled box of %s: %s' % (ch['name'], smt, hits))
                    continue
                hits = [b for b in boxes if '[' + smt + ', ' in b]
                # `count` chains share their outer method (several legs of one WhenAll)
                n = ch.get('count', 1) if smt == ch['state_machine_types'][0] else 1
                self.ok(len(hits) == n, 'chain %s: %d boxes for %s (want %d)' % (ch['name'], len(hits), smt, n))
                if hits and ch.get('result_type'):
                    self.ok(hits[0].startswith(BOX_PREFIX + ch['result_type'] + ', '),
                            'chain %s: box %s does not have result type %s' % (ch['name'], hits[0], ch['result_type']))

        # ---- runtime-async methods (.NET 11): no state machine, one continuation object each
        self.runtime_async(census, boxes)

        # ---- an unhandled exception: its thread has a last thrown object
        for ex in m.get('exceptions', []):
            if ex.get('unhandled') and dthreads:
                t = by_managed.get(ex['thrown_on_managed_id'])
                dt = dthreads.get(t['os_id']) if t else None
                self.ok(dt is not None and dt.get('lastThrownObjectHandle') not in (None, '0x0'),
                        'exception %s: thread %s has no last thrown object in the DAC' % (ex['type'], ex['thrown_on_managed_id']))

        # ---- a fault (scenarios/fault.cs): the crasher's walk goes through the Frame the runtime
        # saved the faulting context in, and on through the faulting method to its callers
        self.fault(dthreads, stacks, by_managed)

        # ---- sync over async, locks: every id named must be a manifest thread
        soa = m.get('sync_over_async')
        for soa in (soa if isinstance(soa, list) else [soa] if soa else []):
            self.ok(soa['managed_id'] in by_managed, 'sync_over_async thread %s not in threads' % soa['managed_id'])
            self.ok(soa['waits_on_chain'] in [c['name'] for c in m.get('async_chains', [])],
                    'sync_over_async waits on unknown chain %s' % soa['waits_on_chain'])
        for lk in m.get('locks', []):
            ids = list(lk.get('waiter_managed_ids', []))
            if lk.get('owner_managed_id') is not None:
                ids.append(lk['owner_managed_id'])
            for i in ids:
                self.ok(i in by_managed, 'lock %s: thread %s not in threads' % (lk['name'], i))
        return not self.failures


def _fault(self, dthreads, stacks, by_managed):
    """fault.cs's `fault`: the crashing thread's DAC stack holds the explicit Frame that saved the
    faulting context (`frame`, e.g. FaultingExceptionFrame), and beyond it (outward) the faulting
    method `in` and then the rest of the manifest's frames for that thread, in order: the walk
    continued through the Frame.  For a FailFast in a catch block (`in_catch_of`), the catch
    funclet's frame lies above (inner to) the Frame."""
    f = self.m.get('fault')
    if not f or not dthreads:
        return
    t = by_managed.get(f.get('thread_managed_id'))
    if not self.ok(t is not None, 'fault: thread %s is not a manifest thread' % f.get('thread_managed_id')):
        return
    st = stacks.get(t['os_id'], {})
    if 'frames' not in st:
        self.gap('fault: the DAC gave no stack for the crasher (%s)' % st.get('error'))
        return
    frames = st['frames']
    want = f.get('frame')
    if not want:
        return
    at = [i for i, x in enumerate(frames) if x.get('frame_name') == want]
    if not self.ok(len(at) == 1, 'fault: %d %s frames on the crasher\'s DAC stack' % (len(at), want)):
        return
    beyond = [bare(x.get('method')) for x in frames[at[0] + 1:] if x.get('method')]
    own = t.get('frames', [])
    ns = own[0].split('.')[0] + '.' if own else ''
    beyond_own = [n for n in beyond if n.startswith(ns)]
    self.ok(beyond_own[:1] == [f['in']],
            'fault: the first own frame beyond the %s is %s, not %s' % (want, beyond_own[:1], f['in']))
    self.ok(len(beyond_own) > 1 and beyond_own == own[len(own) - len(beyond_own):],
            'fault: own frames beyond the %s %s are not the outer part of %s' % (want, beyond_own, own))
    if f.get('in_catch_of'):
        inner = [bare(x.get('method')) for x in frames[:at[0]] if x.get('method')]
        self.ok(f['in_catch_of'] in inner,
                'fault: the catch funclet of %s is not above the %s: %s' % (f['in_catch_of'], want, inner))


Checker.fault = _fault


RUNTIME_ASYNC_TASK = 'System.Runtime.CompilerServices.AsyncHelpers+RuntimeAsyncTask`1[['
# The runtime makes a continuation's MethodTable at run time, per layout of what the suspended
# method saves; the DAC names it Continuation_<sizes...> (no metadata behind it), all deriving
# from System.Runtime.CompilerServices.Continuation.
CONTINUATION_NAME = re.compile(r'^Continuation_[0-9_]+$')


def _runtime_async(self, census, boxes):
    """Checks of the chains' `async_kinds` / `runtime_async` / `hoisted` (written by the programs
    from their own metadata: MethodImpl flag 0x2000) against the DAC's census and box list."""
    m = self.m
    suspended = {}       # runtime-async method -> how many of its invocations are suspended
    outer_tasks = {}     # outer task type -> distinct outer methods
    any_ra = False
    for ch in m.get('async_chains', []):
        kinds = ch.get('async_kinds')
        if kinds is None:
            continue
        methods = ch['methods']
        self.ok(len(kinds) == len(methods) and set(kinds) <= {'runtime-async', 'state-machine'},
                'chain %s: async_kinds %s for %d methods' % (ch['name'], kinds, len(methods)))
        self.ok(kinds.count('state-machine') == len(ch['state_machine_types']),
                'chain %s: %d state-machine methods, %d state_machine_types'
                % (ch['name'], kinds.count('state-machine'), len(ch['state_machine_types'])))
        self.ok(ch.get('runtime_async') == all(k == 'runtime-async' for k in kinds),
                'chain %s: runtime_async %s with async_kinds %s' % (ch['name'], ch.get('runtime_async'), kinds))
        for i, (meth, kind) in enumerate(zip(methods, kinds)):
            if kind != 'runtime-async':
                continue
            any_ra = True
            inst = ch.get('method_instances')
            n = inst[i] if inst else (ch.get('count', 1) if i == 0 else 1)
            suspended[meth] = max(suspended.get(meth, 0), n)
            # Roslyn names a state machine <declaring type>+<method>d__N (a lambda's
            # <declaring type>+<<Main>b__N_0>d): a runtime-async method must have none, neither
            # among the DAC's async boxes nor anywhere in the census
            decl, _, name = meth.rpartition('.')
            sm = '%s+<%s>d' % (decl, name)
            hits = [b for b in boxes if '[' + sm in b] + [t for t in census if t.startswith(sm) or '[' + sm in t]
            self.ok(not hits, 'chain %s: runtime-async %s has state machine objects %s' % (ch['name'], meth, hits[:3]))
        held = ch.get('hoisted')
        if 'runtime-async' in kinds:
            if self.ok(isinstance(held, list), 'chain %s: runtime-async methods but no hoisted list' % ch['name']):
                for h in held:
                    j = methods.index(h['method']) if h.get('method') in methods else -1
                    self.ok(j >= 0 and kinds[j] == 'runtime-async' and h.get('kind') in ('argument', 'local')
                            and h.get('name') and h.get('type') and ('value' in h or 'values' in h),
                            'chain %s: hoisted %s is not a runtime-async method of the chain' % (ch['name'], h))
        if ch.get('runtime_async') and ch.get('outer_task_type'):
            self.ok(ch['outer_task_type'].startswith(RUNTIME_ASYNC_TASK),
                    'chain %s: a runtime-async outer method returned a %s' % (ch['name'], ch['outer_task_type']))
            outer_tasks.setdefault(ch['outer_task_type'], set()).add(methods[-1])
    if not any_ra or not census:
        return
    for t, outers in sorted(outer_tasks.items()):
        got = census.get(t, [0])[0]
        self.ok(got >= len(outers), 'runtime-async tasks %s: DAC census %d, the chains have %d outer methods'
                % (t, got, len(outers)))
    want = sum(suspended.values())
    got = sum(c[0] for t, c in census.items() if CONTINUATION_NAME.match(t))
    # each suspended runtime-async method is one continuation object; framework methods
    # suspended as runtime-async add theirs (a note, not a failure)
    if self.ok(got >= want, 'continuations: DAC census has %d Continuation_* objects, the chains suspend %d '
               'runtime-async methods' % (got, want)) and got > want:
        self.notes.append('continuations: %d Continuation_* objects for %d suspended runtime-async methods '
                          'of the chains (the rest: the framework\'s)' % (got, want))
    for cb in m.get('completed_boxes', []):
        if cb.get('runtime_async') and cb.get('task_type'):
            self.ok(census.get(cb['task_type'], [0])[0] >= 1,
                    'completed %s: task type %s not in DAC census' % (cb['method'], cb['task_type']))


Checker.runtime_async = _runtime_async


def check(a):
    with open(a.manifest, encoding='utf-8') as f:
        manifest = json.load(f)
    with open(a.dac) as f:
        dac = json.load(f)
    c = Checker(manifest, dac, a.tolerate_dac_gaps)
    good = c.run()
    for n in c.notes:
        print('  note: ' + n, file=sys.stderr)
    for x in c.failures:
        print('  FAIL: ' + x, file=sys.stderr)
    print('%s: %d checks passed, %d failed, %d notes' % (os.path.basename(a.manifest), c.passed,
                                                         len(c.failures), len(c.notes)), file=sys.stderr)
    return 0 if good else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    f = sub.add_parser('finish')
    for k in ('--name', '--raw', '--manifest', '--dump', '--zst', '--out-dir'):
        f.add_argument(k, required=True)
    c = sub.add_parser('check')
    c.add_argument('manifest')
    c.add_argument('dac')
    c.add_argument('--tolerate-dac-gaps', action='store_true',
                   help='report (not fail) what the DAC could not produce (used for netcore31)')
    a = ap.parse_args()
    if a.cmd == 'finish':
        finish(a)
        return 0
    return check(a)


if __name__ == '__main__':
    sys.exit(main())
