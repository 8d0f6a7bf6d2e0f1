#!/usr/bin/env python3
"""sos_domain.py: records SOS's dumpdomain on corpus dumps (dumps/NAME.sos-domain.txt).

    python3 dumps/tools/sos_domain.py [--core-dir DIR] NAME...

For each dump: `dumpdomain`, then `dumpdomain <address>` of each domain its output names (the
System Domain, when its address is not 0, and Domain 1), each in a session of its own
(sosrun.Dump.run). --core-dir: where the uncompressed cores are (DIR/NAME.dmp; default:
decompress dumps/NAME.dmp.zst).
"""
import os
import re

import sosrun


def main():
    for name, d in sosrun.each_dump(__doc__):
        first = d.run(['dumpdomain'])
        cmds = ['dumpdomain']
        parts = [first]
        for m in re.finditer(r'^(?:System Domain|Domain \d+):\s+([0-9a-f]+)$', first, re.M):
            if int(m.group(1), 16) != 0:
                cmds.append(f'dumpdomain {m.group(1)}')
                parts.append(d.run([cmds[-1]]))
        out = d.header('SOS dumpdomain (dumps/tools/sos_domain.py)')
        for c, p in zip(cmds, parts):
            out += [f'### {c}', p.rstrip('\n')]
        sosrun.write(os.path.join(sosrun.DUMPS, f'{name}.sos-domain.txt'), out)
        print(name, len(cmds), 'commands')


if __name__ == '__main__':
    main()
