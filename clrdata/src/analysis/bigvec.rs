//! Vectors over every object of a heap (tens of millions of entries), read at random by the
//! graph algorithms (the live set's marks, the dominator tree). With 4 KB pages most of the
//! time such a pass takes goes to TLB misses and page faults; on Linux the kernel is asked
//! for transparent huge pages for them (`madvise(MADV_HUGEPAGE)`, honoured when the system's
//! THP mode is `madvise` or `always`; a hint, without effect on what the vector holds).

/// Vectors smaller than this stay as the allocator gives them.
const HUGE_FROM: usize = 8 << 20;

/// An empty vector with room for `cap` items, its memory in huge pages where the system
/// allows.
pub(crate) fn with_capacity<T>(cap: usize) -> Vec<T> {
    let v = Vec::with_capacity(cap);
    advise(&v);
    v
}

/// `len` copies of `value`, in huge pages where the system allows.
pub(crate) fn filled<T: Clone>(len: usize, value: T) -> Vec<T> {
    let mut v = with_capacity(len);
    v.resize(len, value);
    v
}

#[cfg(target_os = "linux")]
fn advise<T>(v: &Vec<T>) {
    const HUGE: usize = 2 << 20;
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < HUGE_FROM {
        return;
    }
    let start = v.as_ptr() as usize;
    // The whole huge pages within the allocation (untouched yet: the hint applies to the
    // faults to come).
    let from = start.next_multiple_of(HUGE);
    let to = (start + bytes) / HUGE * HUGE;
    if to > from {
        // SAFETY: the range lies within the vector's own allocation, and MADV_HUGEPAGE
        // changes no content: it only asks how future faults there are served.
        unsafe {
            libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise<T>(_: &Vec<T>) {}

#[cfg(test)]
mod tests {
    #[test]
    fn vectors_hold_what_they_were_given() {
        let v = super::filled(3 << 20, 7u32);
        assert_eq!(v.len(), 3 << 20);
        assert!(v.iter().all(|&x| x == 7));
        let mut w: Vec<u64> = super::with_capacity(2 << 20);
        w.extend(0..(2u64 << 20));
        assert_eq!(w[12345], 12345);
    }
}
