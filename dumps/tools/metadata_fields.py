#!/usr/bin/env python3
"""List the fields (and constant values) of types in a .NET assembly's ECMA-335 metadata.

Standard library only. Reads the PE file, its CLI header, the metadata root, the #~ table
stream, #Strings and #Blob, and prints for every type whose full name matches one of the
given patterns (substring match on "Namespace.Outer+Inner"): its flags, base type, size
(ClassLayout, if any), and each field with its attributes (static, literal, init-only), its
signature type and, for literals (enum members, const fields), the constant value.

  metadata_fields.py System.Private.CoreLib.dll Continuation AsyncDispatcherInfo
  metadata_fields.py --exact System.Private.CoreLib.dll System.Threading.Tasks.Task
  metadata_fields.py System.Private.CoreLib.dll        # every type (diff two builds' output)

The field order printed is metadata order; the runtime lays out instance fields itself
(auto layout), so an instance field's offset is not here: the runtime's FieldDesc (or the
contract descriptor, for the few managed types it publishes) gives it.
"""

import struct
import sys

TABLE_NAMES = [
    "Module", "TypeRef", "TypeDef", "FieldPtr", "Field", "MethodPtr", "MethodDef", "ParamPtr",
    "Param", "InterfaceImpl", "MemberRef", "Constant", "CustomAttribute", "FieldMarshal",
    "DeclSecurity", "ClassLayout", "FieldLayout", "StandAloneSig", "EventMap", "EventPtr",
    "Event", "PropertyMap", "PropertyPtr", "Property", "MethodSemantics", "MethodImpl",
    "ModuleRef", "TypeSpec", "ImplMap", "FieldRVA", "EncLog", "EncMap", "Assembly",
    "AssemblyProcessor", "AssemblyOS", "AssemblyRef", "AssemblyRefProcessor", "AssemblyRefOS",
    "File", "ExportedType", "ManifestResource", "NestedClass", "GenericParam", "MethodSpec",
    "GenericParamConstraint",
]
T = {n: i for i, n in enumerate(TABLE_NAMES)}

CODED = {
    "TypeDefOrRef": (2, ["TypeDef", "TypeRef", "TypeSpec"]),
    "HasConstant": (2, ["Field", "Param", "Property"]),
    "HasCustomAttribute": (5, ["MethodDef", "Field", "TypeRef", "TypeDef", "Param",
                               "InterfaceImpl", "MemberRef", "Module", "DeclSecurity",
                               "Property", "Event", "StandAloneSig", "ModuleRef", "TypeSpec",
                               "Assembly", "AssemblyRef", "File", "ExportedType",
                               "ManifestResource", "GenericParam", "GenericParamConstraint",
                               "MethodSpec"]),
    "HasFieldMarshal": (1, ["Field", "Param"]),
    "HasDeclSecurity": (2, ["TypeDef", "MethodDef", "Assembly"]),
    "MemberRefParent": (3, ["TypeDef", "TypeRef", "ModuleRef", "MethodDef", "TypeSpec"]),
    "HasSemantics": (1, ["Event", "Property"]),
    "MethodDefOrRef": (1, ["MethodDef", "MemberRef"]),
    "MemberForwarded": (1, ["Field", "MethodDef"]),
    "Implementation": (2, ["File", "AssemblyRef", "ExportedType"]),
    "CustomAttributeType": (3, [None, None, "MethodDef", "MemberRef", None]),
    "ResolutionScope": (2, ["Module", "ModuleRef", "AssemblyRef", "TypeRef"]),
    "TypeOrMethodDef": (1, ["TypeDef", "MethodDef"]),
}

# Column kinds: "u1", "u2", "u4", "str", "guid", "blob", "idx:<Table>", "cidx:<Coded>".
SCHEMA = {
    "Module": [("Generation", "u2"), ("Name", "str"), ("Mvid", "guid"), ("EncId", "guid"),
               ("EncBaseId", "guid")],
    "TypeRef": [("Scope", "cidx:ResolutionScope"), ("Name", "str"), ("Namespace", "str")],
    "TypeDef": [("Flags", "u4"), ("Name", "str"), ("Namespace", "str"),
                ("Extends", "cidx:TypeDefOrRef"), ("FieldList", "idx:Field"),
                ("MethodList", "idx:MethodDef")],
    "FieldPtr": [("Field", "idx:Field")],
    "Field": [("Flags", "u2"), ("Name", "str"), ("Signature", "blob")],
    "MethodPtr": [("Method", "idx:MethodDef")],
    "MethodDef": [("RVA", "u4"), ("ImplFlags", "u2"), ("Flags", "u2"), ("Name", "str"),
                  ("Signature", "blob"), ("ParamList", "idx:Param")],
    "ParamPtr": [("Param", "idx:Param")],
    "Param": [("Flags", "u2"), ("Sequence", "u2"), ("Name", "str")],
    "InterfaceImpl": [("Class", "idx:TypeDef"), ("Interface", "cidx:TypeDefOrRef")],
    "MemberRef": [("Class", "cidx:MemberRefParent"), ("Name", "str"), ("Signature", "blob")],
    "Constant": [("Type", "u1"), ("Pad", "u1"), ("Parent", "cidx:HasConstant"),
                 ("Value", "blob")],
    "CustomAttribute": [("Parent", "cidx:HasCustomAttribute"),
                        ("Type", "cidx:CustomAttributeType"), ("Value", "blob")],
    "FieldMarshal": [("Parent", "cidx:HasFieldMarshal"), ("NativeType", "blob")],
    "DeclSecurity": [("Action", "u2"), ("Parent", "cidx:HasDeclSecurity"),
                     ("PermissionSet", "blob")],
    "ClassLayout": [("PackingSize", "u2"), ("ClassSize", "u4"), ("Parent", "idx:TypeDef")],
    "FieldLayout": [("Offset", "u4"), ("Field", "idx:Field")],
    "StandAloneSig": [("Signature", "blob")],
    "EventMap": [("Parent", "idx:TypeDef"), ("EventList", "idx:Event")],
    "EventPtr": [("Event", "idx:Event")],
    "Event": [("Flags", "u2"), ("Name", "str"), ("EventType", "cidx:TypeDefOrRef")],
    "PropertyMap": [("Parent", "idx:TypeDef"), ("PropertyList", "idx:Property")],
    "PropertyPtr": [("Property", "idx:Property")],
    "Property": [("Flags", "u2"), ("Name", "str"), ("Type", "blob")],
    "MethodSemantics": [("Semantics", "u2"), ("Method", "idx:MethodDef"),
                        ("Association", "cidx:HasSemantics")],
    "MethodImpl": [("Class", "idx:TypeDef"), ("Body", "cidx:MethodDefOrRef"),
                   ("Declaration", "cidx:MethodDefOrRef")],
    "ModuleRef": [("Name", "str")],
    "TypeSpec": [("Signature", "blob")],
    "ImplMap": [("Flags", "u2"), ("Member", "cidx:MemberForwarded"), ("Name", "str"),
                ("Scope", "idx:ModuleRef")],
    "FieldRVA": [("RVA", "u4"), ("Field", "idx:Field")],
    "EncLog": [("Token", "u4"), ("FuncCode", "u4")],
    "EncMap": [("Token", "u4")],
    "Assembly": [("HashAlgId", "u4"), ("Major", "u2"), ("Minor", "u2"), ("Build", "u2"),
                 ("Revision", "u2"), ("Flags", "u4"), ("PublicKey", "blob"), ("Name", "str"),
                 ("Culture", "str")],
    "AssemblyProcessor": [("Processor", "u4")],
    "AssemblyOS": [("Platform", "u4"), ("Major", "u4"), ("Minor", "u4")],
    "AssemblyRef": [("Major", "u2"), ("Minor", "u2"), ("Build", "u2"), ("Revision", "u2"),
                    ("Flags", "u4"), ("PublicKey", "blob"), ("Name", "str"),
                    ("Culture", "str"), ("Hash", "blob")],
    "AssemblyRefProcessor": [("Processor", "u4"), ("AssemblyRef", "idx:AssemblyRef")],
    "AssemblyRefOS": [("Platform", "u4"), ("Major", "u4"), ("Minor", "u4"),
                      ("AssemblyRef", "idx:AssemblyRef")],
    "File": [("Flags", "u4"), ("Name", "str"), ("Hash", "blob")],
    "ExportedType": [("Flags", "u4"), ("TypeDefId", "u4"), ("Name", "str"),
                     ("Namespace", "str"), ("Implementation", "cidx:Implementation")],
    "ManifestResource": [("Offset", "u4"), ("Flags", "u4"), ("Name", "str"),
                         ("Implementation", "cidx:Implementation")],
    "NestedClass": [("Nested", "idx:TypeDef"), ("Enclosing", "idx:TypeDef")],
    "GenericParam": [("Number", "u2"), ("Flags", "u2"), ("Owner", "cidx:TypeOrMethodDef"),
                     ("Name", "str")],
    "MethodSpec": [("Method", "cidx:MethodDefOrRef"), ("Instantiation", "blob")],
    "GenericParamConstraint": [("Owner", "idx:GenericParam"),
                               ("Constraint", "cidx:TypeDefOrRef")],
}

ELEMENT = {
    0x01: "void", 0x02: "bool", 0x03: "char", 0x04: "sbyte", 0x05: "byte", 0x06: "short",
    0x07: "ushort", 0x08: "int", 0x09: "uint", 0x0A: "long", 0x0B: "ulong", 0x0C: "float",
    0x0D: "double", 0x0E: "string", 0x16: "TypedReference", 0x18: "nint", 0x19: "nuint",
    0x1C: "object",
}


class Metadata:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.b = f.read()
        b = self.b
        pe = struct.unpack_from("<I", b, 0x3C)[0]
        if b[pe:pe + 4] != b"PE\0\0":
            raise SystemExit(f"{path}: not a PE file")
        nsec = struct.unpack_from("<H", b, pe + 6)[0]
        opt_size = struct.unpack_from("<H", b, pe + 20)[0]
        opt = pe + 24
        magic = struct.unpack_from("<H", b, opt)[0]
        dd = opt + (96 if magic == 0x10B else 112)
        cli_rva, _cli_size = struct.unpack_from("<II", b, dd + 14 * 8)
        self.sections = []
        so = opt + opt_size
        for i in range(nsec):
            o = so + i * 40
            vsize, va, rawsize, rawptr = struct.unpack_from("<IIII", b, o + 8)
            self.sections.append((va, max(vsize, rawsize), rawptr))
        cli = self.rva(cli_rva)
        md_rva, _md_size = struct.unpack_from("<II", b, cli + 8)
        md = self.rva(md_rva)
        # the metadata root's file offset (stream offsets below are file offsets)
        self.root = md
        if struct.unpack_from("<I", b, md)[0] != 0x424A5342:
            raise SystemExit("no metadata root (BSJB)")
        vlen = struct.unpack_from("<I", b, md + 12)[0]
        p = md + 16 + vlen
        nstreams = struct.unpack_from("<H", b, p + 2)[0]
        p += 4
        self.streams = {}
        for _ in range(nstreams):
            off, size = struct.unpack_from("<II", b, p)
            p += 8
            end = b.index(b"\0", p)
            name = b[p:end].decode()
            p = (end + 4) & ~3
            self.streams[name] = (md + off, size)
        self._tables()

    def rva(self, rva):
        for va, size, raw in self.sections:
            if va <= rva < va + size:
                return raw + rva - va
        raise ValueError(f"rva 0x{rva:x} not in a section")

    def string(self, idx):
        base, _ = self.streams["#Strings"]
        end = self.b.index(b"\0", base + idx)
        return self.b[base + idx:end].decode("utf-8", "replace")

    def blob(self, idx):
        base, _ = self.streams["#Blob"]
        p = base + idx
        n, used = self._compressed(p)
        return self.b[p + used:p + used + n]

    def _compressed(self, p):
        x = self.b[p]
        if x & 0x80 == 0:
            return x, 1
        if x & 0xC0 == 0x80:
            return ((x & 0x3F) << 8) | self.b[p + 1], 2
        return ((x & 0x1F) << 24) | (self.b[p + 1] << 16) | (self.b[p + 2] << 8) | self.b[p + 3], 4

    def _tables(self):
        name = "#~" if "#~" in self.streams else "#-"
        base, _ = self.streams[name]
        b = self.b
        heap_sizes = b[base + 6]
        valid = struct.unpack_from("<Q", b, base + 8)[0]
        p = base + 24
        self.rows = [0] * 64
        for i in range(64):
            if valid >> i & 1:
                self.rows[i] = struct.unpack_from("<I", b, p)[0]
                p += 4
        if heap_sizes & 0x40:
            p += 4
        size_of = {
            "u1": 1, "u2": 2, "u4": 4,
            "str": 4 if heap_sizes & 1 else 2,
            "guid": 4 if heap_sizes & 2 else 2,
            "blob": 4 if heap_sizes & 4 else 2,
        }

        def col_size(kind):
            if kind in size_of:
                return size_of[kind]
            k, arg = kind.split(":")
            if k == "idx":
                return 2 if self.rows[T[arg]] < 0x10000 else 4
            bits, tabs = CODED[arg]
            mx = max(self.rows[T[t]] for t in tabs if t)
            return 2 if mx < (1 << (16 - bits)) else 4

        self.tables = {}
        for i, tname in enumerate(TABLE_NAMES):
            cols = [(c, k, col_size(k)) for c, k in SCHEMA[tname]]
            width = sum(s for _, _, s in cols)
            self.tables[tname] = (p, width, cols)
            p += width * self.rows[i]

    def row(self, table, i):
        """1-based row i of table, as a dict."""
        base, width, cols = self.tables[table]
        p = base + (i - 1) * width
        out = {}
        for c, k, s in cols:
            v = int.from_bytes(self.b[p:p + s], "little")
            p += s
            if k.startswith("cidx:"):
                bits, tabs = CODED[k[5:]]
                v = (tabs[v & ((1 << bits) - 1)], v >> bits)
            out[c] = v
        return out

    def count(self, table):
        return self.rows[T[table]]


def type_names(md):
    n = md.count("TypeDef")
    enclosing = {}
    for i in range(1, md.count("NestedClass") + 1):
        r = md.row("NestedClass", i)
        enclosing[r["Nested"]] = r["Enclosing"]
    names = {}

    def name(i):
        if i in names:
            return names[i]
        r = md.row("TypeDef", i)
        nm = md.string(r["Name"])
        if i in enclosing:
            full = name(enclosing[i]) + "+" + nm
        else:
            ns = md.string(r["Namespace"])
            full = f"{ns}.{nm}" if ns else nm
        names[i] = full
        return full

    for i in range(1, n + 1):
        name(i)
    return names


def typeref_name(md, table, idx, names):
    if idx == 0:
        return "-"
    if table == "TypeDef":
        return names.get(idx, f"TypeDef#{idx}")
    if table == "TypeRef":
        r = md.row("TypeRef", idx)
        ns = md.string(r["Namespace"])
        nm = md.string(r["Name"])
        if r["Scope"][0] == "TypeRef":
            return typeref_name(md, "TypeRef", r["Scope"][1], names) + "+" + nm
        return f"{ns}.{nm}" if ns else nm
    if table == "TypeSpec":
        sig = md.blob(md.row("TypeSpec", idx)["Signature"])
        try:
            return decode_type(md, sig, 0, names)[0]
        except Exception:
            return f"TypeSpec#{idx}"
    return f"{table}#{idx}"


def decode_type(md, sig, p, names):
    def comp(p):
        x = sig[p]
        if x & 0x80 == 0:
            return x, p + 1
        if x & 0xC0 == 0x80:
            return ((x & 0x3F) << 8) | sig[p + 1], p + 2
        return ((x & 0x1F) << 24) | (sig[p + 1] << 16) | (sig[p + 2] << 8) | sig[p + 3], p + 4

    def tdor(p):
        v, p = comp(p)
        tab = ["TypeDef", "TypeRef", "TypeSpec"][v & 3]
        return typeref_name(md, tab, v >> 2, names), p

    e = sig[p]
    p += 1
    if e in ELEMENT:
        return ELEMENT[e], p
    if e in (0x11, 0x12):  # VALUETYPE, CLASS
        n, p = tdor(p)
        return n, p
    if e == 0x0F:
        t, p = decode_type(md, sig, p, names)
        return t + "*", p
    if e == 0x10:
        t, p = decode_type(md, sig, p, names)
        return "ref " + t, p
    if e == 0x1D:
        t, p = decode_type(md, sig, p, names)
        return t + "[]", p
    if e in (0x13, 0x1E):
        n, p = comp(p)
        return ("!" if e == 0x13 else "!!") + str(n), p
    if e == 0x15:  # GENERICINST
        p += 1
        n, p = tdor(p)
        cnt, p = comp(p)
        args = []
        for _ in range(cnt):
            a, p = decode_type(md, sig, p, names)
            args.append(a)
        return f"{n}<{', '.join(args)}>", p
    if e == 0x14:  # ARRAY
        t, p = decode_type(md, sig, p, names)
        rank, p = comp(p)
        nsz, p = comp(p)
        for _ in range(nsz):
            _, p = comp(p)
        nlo, p = comp(p)
        for _ in range(nlo):
            _, p = comp(p)
        return f"{t}[{',' * (rank - 1)}]", p
    if e in (0x1F, 0x20):  # CMOD_REQD / CMOD_OPT
        _, p = tdor(p)
        return decode_type(md, sig, p, names)
    if e == 0x1B:
        return "fnptr", len(sig)
    return f"?0x{e:x}", len(sig)


CONST_FMT = {0x02: "<?", 0x03: "<H", 0x04: "<b", 0x05: "<B", 0x06: "<h", 0x07: "<H",
             0x08: "<i", 0x09: "<I", 0x0A: "<q", 0x0B: "<Q", 0x0C: "<f", 0x0D: "<d"}


def constants(md):
    out = {}
    for i in range(1, md.count("Constant") + 1):
        r = md.row("Constant", i)
        table, idx = r["Parent"]
        if table != "Field":
            continue
        v = md.blob(r["Value"])
        t = r["Type"]
        if t in CONST_FMT:
            val = struct.unpack(CONST_FMT[t], v)[0]
        elif t == 0x0E:
            val = v.decode("utf-16-le")
        else:
            val = v.hex()
        out[idx] = val
    return out


def main():
    args = sys.argv[1:]
    exact = False
    if args and args[0] == "--exact":
        exact = True
        args = args[1:]
    if len(args) == 1:
        args.append("")  # every type
    if len(args) < 2:
        raise SystemExit(__doc__)
    md = Metadata(args[0])
    pats = args[1:]
    names = type_names(md)
    consts = constants(md)
    layout = {}
    for i in range(1, md.count("ClassLayout") + 1):
        r = md.row("ClassLayout", i)
        layout[r["Parent"]] = (r["PackingSize"], r["ClassSize"])
    ntypes = md.count("TypeDef")
    nfields = md.count("Field")
    for i in range(1, ntypes + 1):
        full = names[i]
        if not any((full == p) if exact else (p in full) for p in pats):
            continue
        r = md.row("TypeDef", i)
        first = r["FieldList"]
        last = md.row("TypeDef", i + 1)["FieldList"] if i < ntypes else nfields + 1
        ext = typeref_name(md, r["Extends"][0], r["Extends"][1], names)
        lay = f" layout(pack={layout[i][0]}, size={layout[i][1]})" if i in layout else ""
        print(f"{full}  [token 0x{0x02000000 | i:08x}, flags 0x{r['Flags']:08x}, extends {ext}]{lay}")
        for f in range(first, last):
            fr = md.row("Field", f)
            fl = fr["Flags"]
            sig = md.blob(fr["Signature"])
            try:
                ty, _ = decode_type(md, sig, 1, names)
            except Exception as e:  # an unusual signature: show its bytes
                ty = f"sig {sig.hex()} ({e})"
            attrs = []
            if fl & 0x10:
                attrs.append("static")
            if fl & 0x40:
                attrs.append("literal")
            if fl & 0x20:
                attrs.append("initonly")
            val = f" = {consts[f]!r}" if f in consts else ""
            if isinstance(consts.get(f), int) and not isinstance(consts.get(f), bool):
                val += f" (0x{consts[f] & 0xFFFFFFFFFFFFFFFF:x})"
            print(f"    {' '.join(attrs):<22} {ty:<60} {md.string(fr['Name'])}{val}")


if __name__ == "__main__":
    main()
