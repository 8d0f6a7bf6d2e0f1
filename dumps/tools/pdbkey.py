#!/usr/bin/env python3
"""pdbkey.py <file.pdb>...: prints each portable PDB's symbol-server key element and id.

    <guid N-format>FFFFFFFF  <20-byte PDB id in hex>  <file>

The PDB id is the first 20 bytes of the #Pdb stream (Portable PDB spec); its first 16 bytes are
the GUID a matching PE's CodeView entry holds (stored as a Windows GUID: Data1..3 little-endian),
its last 4 that entry's TimeDateStamp. The key element is what symbol servers (SSQP) and
dumps/pdbs/ name the PDB's folder by. Exits 1 on a file that is not a portable PDB."""
import struct
import sys
import uuid


def pdb_id(data):
    if data[:4] != b'BSJB':
        raise ValueError('no BSJB metadata signature')
    vlen, = struct.unpack_from('<I', data, 12)
    p = 16 + ((vlen + 3) & ~3)
    n, = struct.unpack_from('<H', data, p + 2)
    p += 4
    for _ in range(n):
        off, size = struct.unpack_from('<II', data, p)
        end = data.index(b'\0', p + 8)
        name = data[p + 8:end]
        p = (end + 4) & ~3
        if name == b'#Pdb':
            if size < 20:
                raise ValueError('#Pdb stream too short')
            return data[off:off + 20]
    raise ValueError('no #Pdb stream (not a portable PDB)')


def main():
    rc = 0
    for f in sys.argv[1:]:
        try:
            with open(f, 'rb') as h:
                i = pdb_id(h.read())
        except (OSError, ValueError, struct.error) as e:
            print(f'pdbkey.py: {f}: {e}', file=sys.stderr)
            rc = 1
            continue
        print(f'{uuid.UUID(bytes_le=bytes(i[:16])).hex}FFFFFFFF {i.hex()} {f}')
    return rc


if __name__ == '__main__':
    sys.exit(main())
