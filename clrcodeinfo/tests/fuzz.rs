//! Corrupt input never panics, never loops: random blobs, every truncation and single-bit
//! flips of the real blobs in tests/data, through every decoder and query.

mod common;

use clrcodeinfo::debuginfo::{DebugInfo, DebugInfoFormat, VarNumber};
use clrcodeinfo::gcinfo::{GcInfo, LivenessQuery};
use common::*;
use std::time::Instant;

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

const FORMATS: [DebugInfoFormat; 5] = [
    DebugInfoFormat::Net8 { flag_byte: true },
    DebugInfoFormat::Net8 { flag_byte: false },
    DebugInfoFormat::Net10 { flag_byte: true },
    DebugInfoFormat::Net10 { flag_byte: false },
    DebugInfoFormat::Net11,
];

fn exercise_gc(bytes: &[u8], version: u32) {
    let decoded = [
        GcInfo::decode(bytes, version),
        GcInfo::decode_available(bytes, version),
    ];
    for g in decoded.into_iter().flatten() {
        assert!(g.size() <= bytes.len());
        let len = g.header.code_length;
        let queries = [
            LivenessQuery::caller_frame(),
            LivenessQuery::active_frame(),
            LivenessQuery {
                execution_aborted: true,
                aborting_call: true,
                ..Default::default()
            },
            LivenessQuery {
                execution_aborted: true,
                aborted_needs_range: true,
                ..Default::default()
            },
            LivenessQuery {
                parent_of_funclet: true,
                ..Default::default()
            },
            LivenessQuery {
                no_report_untracked: true,
                ..LivenessQuery::active_frame()
            },
        ];
        for off in [
            0,
            1,
            len / 2,
            len.saturating_sub(1),
            len,
            len.wrapping_add(1),
            u32::MAX,
        ] {
            for q in &queries {
                let _ = g.live_slots_at(off, q);
            }
        }
        for sp in g.safe_points().iter().take(64) {
            let _ = g.live_slots_at(*sp, &LivenessQuery::caller_frame());
        }
        for i in 0..g.safe_points().len().min(64) {
            let _ = g.safe_point_live_slots(i);
        }
        let _ = g.untracked_slots().count();
        if len <= 4096 {
            let _ = g.enumerate_states();
        }
    }
}

fn exercise_dbg(bytes: &[u8], f: DebugInfoFormat) {
    if let Ok(d) = DebugInfo::decode(bytes, f) {
        assert!(d.size <= bytes.len());
        for off in [0u32, 1, 100, u32::MAX] {
            let _ = d.il_offsets_at(off);
            let _ = d.il_offset_at(off);
            let _ = d.var_location(VarNumber::Il(0), off);
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    let t = Instant::now();
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    for i in 0..30_000 {
        let n = (r.next() % 320) as usize;
        let b = r.bytes(n);
        exercise_gc(&b, 3 + (i % 3) as u32);
        exercise_dbg(&b, FORMATS[i % FORMATS.len()]);
    }
    // Blobs of all-ones and all-zeros (endless continuation bits, empty counts).
    for n in [0, 1, 7, 64, 4096] {
        for fill in [0u8, 0xFF, 0x88, 0x55] {
            let b = vec![fill; n];
            for v in 2..=5 {
                exercise_gc(&b, v);
            }
            for f in FORMATS {
                exercise_dbg(&b, f);
            }
        }
    }
    eprintln!("random: {:?}", t.elapsed());
}

#[test]
fn truncated_and_flipped_real_blobs_never_panic() {
    let t = Instant::now();
    let mut blobs = 0;
    for (_, d) in data_files() {
        for m in d["methods"].as_array().unwrap() {
            let gc = hex(m["gc_info"]["hex"].as_str().unwrap());
            let v = m["gc_info"]["version"].as_u64().unwrap() as u32;
            let g = GcInfo::decode(&gc, v).unwrap();
            let gc = &gc[..g.size()];
            for n in 0..gc.len() {
                exercise_gc(&gc[..n], v);
            }
            for i in 0..gc.len().min(48) {
                for bit in 0..8 {
                    let mut c = gc.to_vec();
                    c[i] ^= 1 << bit;
                    exercise_gc(&c, v);
                }
            }
            if let Some(dbg) = m.get("debug_info") {
                let b = hex(dbg["hex"].as_str().unwrap());
                let f = format_of(dbg["format"].as_str().unwrap());
                for n in 0..b.len() {
                    exercise_dbg(&b[..n], f);
                }
                for i in 0..b.len().min(48) {
                    for bit in 0..8 {
                        let mut c = b.clone();
                        c[i] ^= 1 << bit;
                        exercise_dbg(&c, f);
                    }
                }
            }
            blobs += 1;
        }
    }
    eprintln!("mutations of {blobs} methods' blobs: {:?}", t.elapsed());
}
