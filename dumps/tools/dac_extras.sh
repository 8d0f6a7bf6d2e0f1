#!/usr/bin/env bash
# dac_extras.sh <name> <core> <dac> <dac.json> <out dir>
#
# The per-command DAC truths beside a dump (dumps/README.md, "More DAC truth for single
# commands"), made right after the dump by generate-sdk.sh for the .NET 11 dumps (and for any
# dump with EXTRA_TRUTHS=1), each with the dump's sha256:
#   <name>.locks.dac.json    tools/dacprobe/lockprobe.py (sync blocks, last thrown exceptions)
#   <name>.roots.dac.json    tools/dacroots.py (handles, finalization queue, stack references;
#                            with --no-stack-refs when the DAC fails in GetStackReferences)
#   <name>.statics.dac.json  tools/dacstatics.py
#   <name>.methods.dac.json  tools/dac_methods.py, for the hang and heap programs: the
#                            MethodTables the .NET 10 files of the same program name (found by
#                            type name in this dump's DAC census; the program class through its
#                            Main's MethodDesc on the main thread's DAC stack) and, for heap, the
#                            FieldDescs of those of its classes that have instances (EEClass
#                            found through the runtime's contract descriptor: .NET 9+ dumps)
# Not for dumps without a GC heap (triage, normal). A tool that fails leaves no file and a
# warning (the exit status is 0 unless the arguments are wrong).
set -uo pipefail
[ $# -eq 5 ] || { echo "usage: $0 <name> <core> <dac> <dac.json> <out dir>" >&2; exit 2; }
name=$1 core=$2 dac=$3 dacjson=$4 out=$5
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
probe=$here/dacprobe
warn() { echo "dac_extras.sh: [$name] WARNING: $*" >&2; }
run() {  # <out file> <command...>: the output only when the command succeeded
    local f=$1; shift
    if "$@" > "$f.tmp" 2> "$f.log"; then mv "$f.tmp" "$f"; rm -f "$f.log"; return 0; fi
    tail -n 5 "$f.log" >&2; rm -f "$f.tmp" "$f.log"; return 1
}
run "$out/$name.locks.dac.json" env DACPROBE_DIR="$probe" python3 "$probe/lockprobe.py" --dac "$dac" "$core" \
    || warn "lockprobe failed: no $name.locks.dac.json"
if ! run "$out/$name.roots.dac.json" python3 "$here/dacroots.py" --dac "$dac" --dacprobe-dir "$probe" "$core"; then
    warn "dacroots failed; again with --no-stack-refs"
    run "$out/$name.roots.dac.json" python3 "$here/dacroots.py" --dac "$dac" --dacprobe-dir "$probe" --no-stack-refs "$core" \
        || warn "dacroots failed: no $name.roots.dac.json"
fi
run "$out/$name.statics.dac.json" python3 "$here/dacstatics.py" --dac "$dac" --dacprobe-dir "$probe" "$core" \
    || warn "dacstatics failed: no $name.statics.dac.json"
prog=${name%%-net*}
case $prog in
    hang|heap) ;;
    *) exit 0 ;;
esac
# The MethodTables of the .NET 10 truth of the same program, by name, in this dump.
mapfile -t margs < <(python3 - "$here/../$prog-net10.methods.dac.json" "$dacjson" "$prog" <<'EOF'
import json, sys
ref, dacjson, prog = sys.argv[1:4]
names = [t['name'] for t in json.load(open(ref))['method_tables']]
d = json.load(open(dacjson))
by_name = {t['type']: t['mt'] for t in d['heap_stat']['types']}
program = prog.capitalize() + '.Program'
for n in names:
    if n in by_name:
        print('--mt'); print(by_name[n])
    elif n == program:
        # the program class has no instances: its Main's MethodDesc names it
        for s in d['stacks']:
            for f in s['frames']:
                if (f.get('method') or '').startswith(program + '.Main(') and f.get('methodDesc'):
                    print('--mt-of-md'); print(f['methodDesc']); break
            else:
                continue
            break
    else:
        print('not in this dump: ' + n, file=sys.stderr)
EOF
)
[ ${#margs[@]} -gt 0 ] || { warn "no MethodTable found for dac_methods"; exit 0; }
mf=$out/$name.methods.dac.json
run "$mf" python3 "$here/dac_methods.py" --dac "$dac" --dacprobe-dir "$probe" "${margs[@]}" "$core" \
    || { warn "dac_methods failed: no $name.methods.dac.json"; exit 0; }
[ "$prog" = heap ] || exit 0
# heap: the FieldDescs of the classes the .NET 10 truth lists whose MethodTables were found above.
# Their EEClass is MethodTable::m_pEEClass (GetMethodTableData's Class is the MethodTable itself
# from .NET 9): read from the core at the offset the runtime's contract descriptor gives
# (MethodTable.EEClassOrCanonMT; a set low bit means a canonical MethodTable: no EEClass here).
mapfile -t fargs < <(python3 - "$here/../$prog-net10.methods.dac.json" "$mf" "$core" "$here" <<'EOF'
import json, struct, sys
ref, mf, core_path, here = sys.argv[1:5]
sys.path.insert(0, here); sys.path.insert(0, here + '/dacprobe')
from elfcore import Core
import contract_descriptor as cd
core = Core(core_path, file_fallback=False)
d = cd.runtime_descriptor_json(core)
off = (d or {}).get('types', {}).get('MethodTable', {}).get('EEClassOrCanonMT')
if off is None:
    print('no MethodTable.EEClassOrCanonMT in the contract descriptor: no field classes', file=sys.stderr)
    sys.exit(0)
want = [f['name'] for f in json.load(open(ref))['field_classes']]
have = {t['name']: int(t['mt'], 16) for t in json.load(open(mf))['method_tables']}
for n in want:
    if n not in have:
        print('field class not found here (no instance): ' + n, file=sys.stderr)
        continue
    raw = core.read_partial(have[n] + off, 8) or b''
    if len(raw) < 8:
        print('field class %s: its MethodTable is not in the core' % n, file=sys.stderr)
        continue
    ee = struct.unpack('<Q', raw)[0]
    if ee & 1:
        print('field class %s: canonical MethodTable, no EEClass of its own' % n, file=sys.stderr)
        continue
    print('--field-class'); print('0x%x' % ee)
EOF
)
[ ${#fargs[@]} -gt 0 ] || exit 0
run "$mf" python3 "$here/dac_methods.py" --dac "$dac" --dacprobe-dir "$probe" "${margs[@]}" "${fargs[@]}" "$core" \
    || warn "dac_methods --field-class failed: $name.methods.dac.json has no field classes"
exit 0
