//! The portable PDB reader on hostile input (truncations, flipped bytes, random bytes, broken
//! embedded PDBs: never a panic, errors that say where), and on a real dll whose PDB is
//! embedded (clrdata/tests/data/pdb/README.md).

use clrdata::metadata::{
    decompress_embedded_pdb, embedded_pdb, fuzz_pdb, read_debug_info, PdbError, PdbFile, PdbSource,
    PeLayout, PortablePdb, TableId, Token, MAX_PDB_BYTES,
};
use std::path::PathBuf;

fn data(p: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/pdb")
        .join(p)
}

/// A kept corpus PDB (hang.cs as committed, .NET 10.0.14, framework-dependent).
fn corpus_pdb() -> Vec<u8> {
    let dir = tests::dumps_dir()
        .join("pdbs/hang-10.0.14-fd-false/777aa74d26e04c5fad13c815cb557fe9FFFFFFFF");
    std::fs::read(dir.join("hang.pdb")).expect("the kept PDB of hang-net10-gcore")
}

/// xorshift64*: a fixed-seed generator (no rand crate needed).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[test]
fn every_truncation_of_a_real_pdb() {
    let pdb = corpus_pdb();
    let mut parsed = 0;
    for n in (0..pdb.len()).filter(|n| *n < 2048 || n % 5 == 0) {
        fuzz_pdb(&pdb[..n]);
        parsed += usize::from(PortablePdb::parse(&pdb[..n]).is_ok());
    }
    // The whole file parses; a prefix without all of its tables does not.
    assert!(PortablePdb::parse(&pdb).is_ok());
    println!("{} bytes, {parsed} prefixes parse", pdb.len());
}

#[test]
fn every_byte_flipped_in_a_real_pdb() {
    let pdb = corpus_pdb();
    let mut b = pdb.clone();
    for i in (0..pdb.len()).filter(|i| *i < 4096 || i % 3 == 0) {
        for x in [0xFFu8, 0x80] {
            b[i] ^= x;
            fuzz_pdb(&b);
            b[i] = pdb[i];
        }
    }
}

#[test]
fn random_bytes_and_random_tails() {
    let pdb = corpus_pdb();
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..3000 {
        let len = (r.next() % 4096) as usize;
        let mut b: Vec<u8> = (0..len).map(|_| r.next() as u8).collect();
        if round % 2 == 0 {
            // a real root and stream headers, then noise
            let keep = (r.next() as usize % 512).min(pdb.len());
            b.splice(0..0, pdb[..keep].iter().copied());
        }
        if round % 7 == 0 {
            b.splice(0..0, *b"MPDB\x00\x10\x00\x00");
        }
        fuzz_pdb(&b);
    }
}

#[test]
fn embedded_pdb_round_trip_and_refusals() {
    let pdb = corpus_pdb();
    let mut blob = b"MPDB".to_vec();
    blob.extend_from_slice(&(pdb.len() as u32).to_le_bytes());
    blob.extend_from_slice(&miniz_oxide::deflate::compress_to_vec(&pdb, 6));
    assert_eq!(decompress_embedded_pdb(&blob).unwrap(), pdb);
    // truncated deflate data, a size that disagrees, a size of 0, a size beyond the limit (no
    // allocation of it), no signature
    let short = &blob[..blob.len() - 10];
    assert!(matches!(
        decompress_embedded_pdb(short),
        Err(PdbError::Embedded { .. })
    ));
    let mut wrong = blob.clone();
    wrong[4..8].copy_from_slice(&((pdb.len() + 1) as u32).to_le_bytes());
    assert!(decompress_embedded_pdb(&wrong).is_err());
    let mut smaller = blob.clone();
    smaller[4..8].copy_from_slice(&((pdb.len() - 1) as u32).to_le_bytes());
    assert!(decompress_embedded_pdb(&smaller).is_err());
    let mut zero = blob.clone();
    zero[4..8].copy_from_slice(&0u32.to_le_bytes());
    assert!(decompress_embedded_pdb(&zero).is_err());
    let mut huge = blob.clone();
    huge[4..8].copy_from_slice(&((MAX_PDB_BYTES + 1) as u32).to_le_bytes());
    let e = decompress_embedded_pdb(&huge).unwrap_err();
    assert!(e.to_string().contains("uncompressed size"), "{e}");
    assert!(decompress_embedded_pdb(b"MPD").is_err());
}

#[test]
fn errors_name_what_and_where() {
    let pdb = corpus_pdb();
    // Not a PDB: type-system metadata has no #Pdb stream.
    let dll = std::fs::read(tests::dumps_dir().join("images/hang-net10-gcore/hang.dll")).unwrap();
    let md = &dll[clrdata::metadata::locate_in_pe(&dll, PeLayout::Flat).unwrap()];
    let e = PortablePdb::parse(md).unwrap_err();
    assert!(matches!(e, PdbError::NoPdbStream { .. }), "{e}");
    assert!(e.to_string().contains("#~"), "{e}");
    // A token of the wrong table, a method beyond the PDB's.
    let p = PortablePdb::parse(&pdb).unwrap();
    let e = p
        .sequence_points(Token::new(TableId::TypeDef, 1))
        .unwrap_err();
    assert!(
        matches!(
            e,
            PdbError::BadToken {
                token: 0x0200_0001,
                ..
            }
        ),
        "{e}"
    );
    let e = p
        .sequence_points(Token::new(TableId::MethodDef, 100_000))
        .unwrap_err();
    assert!(e.to_string().contains("0x060186a0"), "{e}");
    // A table that runs past the stream: the #~ stream cut short by its header's size.
    let root_streams = p.metadata().streams().to_vec();
    let ts = root_streams.iter().find(|s| s.name == "#~").unwrap();
    let mut b = pdb.clone();
    // the #~ stream's size field: find the header whose offset/size pair matches
    let needle: Vec<u8> = [ts.offset.to_le_bytes(), ts.size.to_le_bytes()].concat();
    let at = b.windows(8).position(|w| w == needle).unwrap();
    b[at + 4..at + 8].copy_from_slice(&(ts.size - 8).to_le_bytes());
    let e = PortablePdb::parse(&b).unwrap_err();
    // (the ECMA-335 reader under the heaps sees it first when its own layout reaches as far)
    assert!(
        matches!(e, PdbError::BadTables { .. } | PdbError::Metadata(_)),
        "{e}"
    );
    assert!(e.to_string().contains("CustomDebugInformation"), "{e}");
    assert!(e.to_string().contains("extends past the stream end"), "{e}");
}

#[test]
fn a_dll_with_its_pdb_embedded() {
    let dll = std::fs::read(data("hang-embedded.dll")).unwrap();
    let info = read_debug_info(&dll, PeLayout::Flat).unwrap();
    // The file read as if mapped (RVAs as offsets) gives no debug directory that passes.
    let e = read_debug_info(&dll, PeLayout::Mapped).unwrap_err();
    assert!(matches!(e, PdbError::BadDebugDirectory { .. }), "{e}");
    assert!(info.deterministic);
    let cv = info.codeview.clone().expect("a CodeView entry");
    assert!(cv.is_portable(), "{cv:?}");
    assert_eq!(cv.file_name(), "hang.pdb");
    assert!(info.embedded_pdb.is_some(), "{:?}", info.entries);
    let bytes = embedded_pdb(&dll, &info).unwrap().unwrap();
    let f = PdbFile::from_bytes(bytes, PdbSource::Embedded).unwrap();
    // The embedded PDB is the one the CodeView entry names.
    assert_eq!(f.id(), cv.pdb_id());
    // The checksum entry is SHA256 of the PDB with its id zeroed (PE-COFF.md).
    use sha2::Digest;
    let mut zeroed = f.bytes().to_vec();
    let p = f.reader().unwrap();
    let pdb_stream = p
        .metadata()
        .streams()
        .iter()
        .find(|s| s.name == "#Pdb")
        .unwrap()
        .offset as usize;
    zeroed[pdb_stream..pdb_stream + 20].fill(0);
    let sum = info.pdb_checksums.first().expect("a PDB checksum entry");
    assert_eq!(sum.algorithm, "SHA256");
    assert_eq!(sum.checksum, sha2::Sha256::digest(&zeroed).to_vec());
    // Built from the same hang.cs as the kept PDB of hang-net10-gcore: every method has the
    // same sequence points and locals (documents differ only in the build folder).
    let kept_bytes = corpus_pdb();
    let kept = PortablePdb::parse(&kept_bytes).unwrap();
    assert_eq!(
        p.row_count(TableId::MethodDebugInformation),
        kept.row_count(TableId::MethodDebugInformation)
    );
    let mut points = 0;
    for rid in 1..=p.row_count(TableId::MethodDebugInformation) {
        let m = Token::new(TableId::MethodDef, rid);
        let (a, b) = (
            p.sequence_points(m).unwrap(),
            kept.sequence_points(m).unwrap(),
        );
        assert_eq!(a.len(), b.len(), "{m}");
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(
                (
                    x.il_offset,
                    x.start_line,
                    x.start_column,
                    x.end_line,
                    x.end_column
                ),
                (
                    y.il_offset,
                    y.start_line,
                    y.start_column,
                    y.end_line,
                    y.end_column
                ),
                "{m}"
            );
            let (dx, dy) = (
                p.document_name(x.document).unwrap(),
                kept.document_name(y.document).unwrap(),
            );
            assert_eq!(dx.rsplit('/').next(), dy.rsplit('/').next(), "{m}");
        }
        points += a.len();
        let names = |q: &PortablePdb<'_>| {
            q.all_locals(m)
                .unwrap()
                .iter()
                .map(|v| (v.name.to_string(), v.slot))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&p), names(&kept), "{m}");
    }
    assert!(points > 100, "{points} sequence points compared");
}
