//! The drop-in's first look at a call, before anything else: one cache line
//! per (communicator, predefined datatype) recently seen holds what the
//! call path would otherwise look up in several places: the datatype's
//! size (and whether its bytes are contiguous), the byte ranges the
//! handoff gave Open MPI for the communicator's size
//! ([`super::handoff`]), and the communicator's colltune state. A
//! handed-off call then costs one line and a few compares before
//! `PMPI_Bcast`, with no call into the library; any other call skips the
//! state lookup (`ACTIVE`, the per-thread cache) and the datatype cache.
//! In an application the interposition's lines are cold at every call
//! (other ranks and the library run between two calls), so each line
//! touched costs there what a warm benchmark does not show
//! (docs/measurements/2026-12-01-hotpath).
//!
//! Entries are written under a lock as a sequence lock (readers never wait
//! and never use a half-written entry), only for predefined datatypes,
//! which live as long as MPI, and only by the interposition library's own
//! calls (`remember`). A communicator's handle can be reused once it is
//! freed, so a communicator gets an attribute of colltune's when its first
//! entry is made, whose delete callback (run by MPI whenever the
//! communicator is freed, by whatever path) empties its entries first; its
//! state is freed by its own attribute then too. Entries exist only
//! between [`start`] (colltune's `init`) and [`clear`] (its `finalize`).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{fence, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use mpi::ffi::{MPI_Comm, MPI_Datatype};

use super::{copy_attr, lock, CommState};
use crate::abi;
use crate::transport::mpi::ffi as cffi;

/// What [`pass`] knows of a call.
pub enum Hot {
    /// Handed off: passed to `PMPI_Bcast`, its return code.
    Passed(c_int),
    /// Not handed off; the communicator's state, where known (null: look
    /// it up), and the datatype's (size, contiguous).
    Kept(*const CommState, u64, bool),
    /// Not cached: the whole path.
    Unknown,
}

const SLOTS: usize = 4;
const RANGES: usize = 3;
/// A range word `lo << 32 | hi` that matches nothing (lo > hi).
const NO_RANGE: u64 = (u32::MAX as u64) << 32;
/// `each`'s bit for "contiguous".
const DENSE: u64 = 1 << 63;

/// One cache line: a sequence (odd while written), the key, the
/// datatype's size (bit 63: contiguous), up to [`RANGES`] handed-off byte
/// ranges, each as `lo << 32 | hi` (`hi` = `u32::MAX`: and up), and the
/// communicator's state (0: not known).
#[repr(C, align(64))]
struct Slot {
    seq: AtomicU64,
    comm: AtomicUsize,
    dtype: AtomicUsize,
    each: AtomicU64,
    ranges: [AtomicU64; RANGES],
    state: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    seq: AtomicU64::new(0),
    comm: AtomicUsize::new(0),
    dtype: AtomicUsize::new(0),
    each: AtomicU64::new(0),
    ranges: [const { AtomicU64::new(NO_RANGE) }; RANGES],
    state: AtomicUsize::new(0),
};

static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];

/// Serialises writers of [`TABLE`] (fills and [`clear`]).
static FILL: Mutex<()> = Mutex::new(());

/// The key of the attribute marking a communicator that has entries; -1
/// outside [`start`]..[`clear`] (then nothing is cached).
static KEY: AtomicI32 = AtomicI32::new(-1);

#[inline(always)]
fn index(comm: usize, dtype: usize) -> usize {
    (((comm as u64) ^ (dtype as u64).rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 62)
        as usize
        % SLOTS
}

/// Encodes byte ranges as range words; None where they do not fit (more
/// than [`RANGES`], or bounds beyond 32 bits other than "and up").
fn encode(ranges: &[(u64, u64)]) -> Option<[u64; RANGES]> {
    if ranges.len() > RANGES {
        return None;
    }
    let mut out = [NO_RANGE; RANGES];
    for (w, &(lo, hi)) in out.iter_mut().zip(ranges) {
        let hi = match hi {
            u64::MAX => u32::MAX,
            h if h < u32::MAX as u64 => h as u32,
            _ => return None,
        };
        let lo = u32::try_from(lo).ok().filter(|&l| l < u32::MAX)?;
        *w = (lo as u64) << 32 | hi as u64;
    }
    Some(out)
}

/// Whether `bytes` is in one of the encoded ranges.
#[inline(always)]
fn matches(words: &[u64; RANGES], bytes: u64) -> bool {
    let b = bytes.min(u32::MAX as u64) as u32;
    words
        .iter()
        .any(|&w| ((w >> 32) as u32) <= b && b <= w as u32)
}

/// The cached answer for a call; see [`Hot`].
///
/// # Safety
/// As for `MPI_Bcast`; `dtype` and `comm` are the handles' register
/// values.
#[inline(always)]
pub unsafe fn pass(
    buffer: *mut c_void,
    count: c_int,
    dtype: usize,
    root: c_int,
    comm: usize,
) -> Hot {
    let s = &TABLE[index(comm, dtype)];
    let q = s.seq.load(Ordering::Acquire);
    if s.comm.load(Ordering::Relaxed) != comm || s.dtype.load(Ordering::Relaxed) != dtype {
        return Hot::Unknown;
    }
    let each = s.each.load(Ordering::Relaxed);
    let words = [
        s.ranges[0].load(Ordering::Relaxed),
        s.ranges[1].load(Ordering::Relaxed),
        s.ranges[2].load(Ordering::Relaxed),
    ];
    let state = s.state.load(Ordering::Relaxed);
    fence(Ordering::Acquire);
    if q & 1 != 0 || s.seq.load(Ordering::Relaxed) != q || count < 0 {
        return Hot::Unknown;
    }
    let size = each & !DENSE;
    if !matches(&words, size * count as u64) {
        return Hot::Kept(state as *const CommState, size, each & DENSE != 0);
    }
    Hot::Passed(cffi::user_bcast(
        buffer,
        count,
        abi::datatype_from_reg(dtype),
        root,
        abi::comm_from_reg(comm),
    ))
}

/// Writes one slot (the caller holds [`FILL`]).
fn write(s: &Slot, key: (usize, usize), each: u64, words: &[u64; RANGES], state: usize) {
    let q = s.seq.load(Ordering::Relaxed);
    s.seq.store(q.wrapping_add(1), Ordering::Relaxed);
    fence(Ordering::Release);
    s.comm.store(key.0, Ordering::Relaxed);
    s.dtype.store(key.1, Ordering::Relaxed);
    s.each.store(each, Ordering::Relaxed);
    for (r, &w) in s.ranges.iter().zip(words) {
        r.store(w, Ordering::Relaxed);
    }
    s.state.store(state, Ordering::Relaxed);
    s.seq.store(q.wrapping_add(2), Ordering::Release);
}

/// Whether there is an entry for (`comm`, `dtype`).
pub fn has(comm: MPI_Comm, dtype: MPI_Datatype) -> bool {
    let (c, d) = (abi::to_reg(comm), abi::to_reg(dtype));
    let s = &TABLE[index(c, d)];
    s.comm.load(Ordering::Acquire) == c && s.dtype.load(Ordering::Acquire) == d
}

/// Whether the entry for (`comm`, `dtype`) holds `state` already.
pub fn holds(comm: MPI_Comm, dtype: MPI_Datatype, state: *const CommState) -> bool {
    let (c, d) = (abi::to_reg(comm), abi::to_reg(dtype));
    let s = &TABLE[index(c, d)];
    s.comm.load(Ordering::Acquire) == c
        && s.dtype.load(Ordering::Acquire) == d
        && s.state.load(Ordering::Acquire) == state as usize
}

/// Remembers, for calls on `comm` with `dtype` (a predefined datatype of
/// `each` bytes, `dense` if contiguous), the handed-off `ranges` of the
/// communicator's size and its `state` (null: not known), once the
/// communicator carries colltune's attribute.
pub fn fill(
    comm: MPI_Comm,
    dtype: MPI_Datatype,
    each: u64,
    dense: bool,
    ranges: &[(u64, u64)],
    state: *const CommState,
) {
    let key = KEY.load(Ordering::Acquire);
    let Some(words) = encode(ranges).filter(|_| key >= 0 && each < DENSE) else {
        return;
    };
    let _g = lock(&FILL);
    // Marked already (an entry with another datatype): no library call.
    // Else set the attribute, once: setting it again would run the
    // delete callback.
    let (c, d) = (abi::to_reg(comm), abi::to_reg(dtype));
    let marked = TABLE.iter().any(|s| s.comm.load(Ordering::Relaxed) == c)
        // SAFETY: comm is the caller's valid communicator.
        || matches!(unsafe { cffi::comm_get_attr(comm, key) }, Ok(Some(_)));
    if !marked {
        let marker = std::ptr::addr_of!(KEY) as *mut c_void;
        // SAFETY: as above; the value is never dereferenced.
        if unsafe { cffi::comm_set_attr(comm, key, marker) }.is_err() {
            return;
        }
    }
    let each = each | if dense { DENSE } else { 0 };
    write(&TABLE[index(c, d)], (c, d), each, &words, state as usize);
}

/// The attribute's delete callback: `comm` is being freed (its handle may
/// be reused), so its entries go. Takes no lock (MPI may call it with
/// locks of its own held); a fill running at the same time is for another
/// communicator (using one while freeing it is erroneous).
unsafe extern "C" fn forget(
    comm: MPI_Comm,
    _key: c_int,
    _val: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    let c = abi::to_reg(comm);
    for s in &TABLE {
        let _ = s
            .comm
            .compare_exchange(c, 0, Ordering::AcqRel, Ordering::Relaxed);
    }
    mpi::ffi::MPI_SUCCESS as c_int
}

/// Makes the marking attribute's key (colltune's `init`); without it
/// nothing is cached.
pub fn start() {
    if KEY.load(Ordering::Acquire) >= 0 {
        return;
    }
    if let Ok(k) = cffi::comm_create_keyval(Some(copy_attr), Some(forget)) {
        KEY.store(k, Ordering::Release);
    }
}

/// Empties every entry and caches nothing more (colltune's `finalize`:
/// the states go, calls take the whole path). The key stays with MPI
/// (communicators still alive keep their marks until freed).
pub fn clear() {
    let _g = lock(&FILL);
    KEY.store(-1, Ordering::Release);
    for s in &TABLE {
        write(s, (0, 0), 0, &[NO_RANGE; RANGES], 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_encode_exactly_or_not_at_all() {
        let w = encode(&[(0, 1448), (10624, 12633), (4_000_000, u64::MAX)]).unwrap();
        for (bytes, want) in [
            (0, true),
            (1448, true),
            (1449, false),
            (10623, false),
            (10624, true),
            (12633, true),
            (12634, false),
            (3_999_999, false),
            (4_000_000, true),
            (u32::MAX as u64, true),
            (u64::MAX / 2, true),
        ] {
            assert_eq!(matches(&w, bytes), want, "{bytes} B");
        }
        // a bounded range above 32 bits, or too many ranges: not cached
        assert_eq!(encode(&[(0, 1 << 33)]), None);
        assert_eq!(encode(&[(u32::MAX as u64, u64::MAX)]), None);
        assert_eq!(encode(&[(0, 1), (3, 4), (6, 7), (9, 10)]), None);
        // no ranges: nothing matches, not even 0 bytes
        let none = encode(&[]).unwrap();
        assert!(!matches(&none, 0) && !matches(&none, u64::MAX));
        // a bounded range just below the limit stays exact
        let top = encode(&[(5, u32::MAX as u64 - 1)]).unwrap();
        assert!(matches(&top, u32::MAX as u64 - 1));
        assert!(!matches(&top, u32::MAX as u64));
    }

    #[test]
    fn the_index_stays_in_bounds_and_spreads() {
        let mut seen = [0usize; SLOTS];
        for c in 0..64usize {
            seen[index(0x7f00_0000_0000 + c * 0x1a0, 0x7f00_1234_5600)] += 1;
        }
        assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
    }

    #[test]
    fn a_slot_is_one_cache_line() {
        assert_eq!(size_of::<Slot>(), 64);
        assert_eq!(align_of::<Slot>(), 64);
    }
}
