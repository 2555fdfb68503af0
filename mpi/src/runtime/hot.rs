//! The drop-in's first look at a call, before anything else: one cache line
//! per (communicator, datatype) recently seen holds what the call path
//! would otherwise look up in several places: the handed-off counts (the
//! byte ranges the handoff gave Open MPI for the communicator's size
//! ([`super::handoff`]) and those whose rule is the library's own decision
//! (`Routes::library_default_ranges`; see [`union`]), turned into ranges of `count` for the
//! datatype's size once, when the line is written), the datatype's classification
//! (size, contiguity: found once, when the line is written) and the
//! communicator's colltune state. A handed-off call then costs one line and
//! a range check or three before `PMPI_Bcast` ([`handed_off_target`]: no multiply, no
//! call into the library, no thread-local); any other call skips the state
//! lookup (`ACTIVE`, the per-thread cache) and the datatype's checks
//! ([`cached_state_and_type`]).
//!
//! The Fortran entry has lines of its own, keyed by the Fortran handles,
//! holding the C handles and the library's Fortran `MPI_BOTTOM` addresses
//! ([`fortran_call_if_handed_off`]): a handed-off Fortran call costs what a C call does,
//! with no `MPI_Comm_f2c` / `MPI_Type_f2c` (the library's own Fortran
//! binding, which does those, is skipped: the call goes to `PMPI_Bcast` as
//! that binding would send it).
//!
//! In an application the interposition's lines are cold at every call
//! (other ranks and the library run between two calls), so each line
//! touched costs there what a warm benchmark does not show:
//! `benches/callcost.sh` counts them (docs/call-cost.md).
//!
//! Entries are written under a lock as a sequence lock (readers never wait
//! and never use a half-written entry), only by the interposition library's
//! own calls, for predefined datatypes (which live as long as MPI) and
//! committed derived ones. Handles are reused once freed, so a communicator
//! or a derived datatype gets an attribute of colltune's when its first
//! entry is made, whose delete callback (run by MPI whenever it is freed,
//! by whatever path) empties its entries first; a communicator's state is
//! freed by its own attribute then too. Entries exist only between
//! [`start`] (colltune's `init`) and [`clear`] (its `finalize`).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{fence, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use mpi::ffi::{MPI_Comm, MPI_Datatype};

use super::{contiguous, copy_attr, lock, typecache, CommState};
use crate::abi;
use crate::transport::mpi::ffi::{self as cffi, Combiner};

/// What the call path found of a call's datatype, once: the bytes of one
/// element, whether its elements are their signature's bytes back to
/// back (None: not known yet; ask [`contiguous`] when it matters), and
/// whether it is a derived type (then the library's own checks of it,
/// committed or not, run at every call colltune keeps; its size and
/// layout are the handle's for as long as it lives).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TypeInfo {
    pub size: u64,
    pub dense: Option<bool>,
    pub derived: bool,
}

const SLOTS: usize = 4;
const RANGES: usize = 3;
const FRANGES: usize = 2;
/// `each`'s bit for "contiguous".
const DENSE: u32 = 1 << 31;
/// `each`'s bit for "a derived datatype": its line serves the handed-off
/// path only (the library checks such a call itself); a call kept by
/// colltune has the library check the type per call (committed or not).
const DERIVED: u32 = 1 << 30;
/// The most elements of one call (`count` is a C int).
const MAX_COUNT: u64 = i32::MAX as u64;
/// A Fortran line's key that no call's handles make (both -1).
const NO_KEY: u64 = u64::MAX;

/// One cache line: a sequence (odd while written), the datatype's size
/// (bit 31: contiguous, bit 30: derived; a datatype of 2^30 bytes or more
/// gets no line), the key, up to [`RANGES`] handed-off count ranges (see
/// [`count_ranges`]), the communicator's state (0: not known) and the address
/// of the library's `PMPI_Bcast`: a handed-off call jumps there from the
/// line it has read already, with no global offset table entry (one data
/// line per call, as few as a one-line `PMPI_Bcast` shim touches).
#[repr(C, align(64))]
struct Line {
    seq: AtomicU32,
    each: AtomicU32,
    comm: AtomicUsize,
    dtype: AtomicUsize,
    counts: [Range; RANGES],
    state: AtomicUsize,
    pmpi_bcast: AtomicUsize,
}

/// The library's `PMPI_Bcast`, with handles at register width.
pub type PmpiBcast = unsafe extern "C" fn(*mut c_void, c_int, usize, c_int, usize) -> c_int;

/// One cache line for the Fortran entry: a sequence, the key (the Fortran
/// communicator << 32 | the Fortran datatype), the C handles, up to
/// [`FRANGES`] handed-off count ranges and the library's Fortran
/// `MPI_BOTTOM` addresses (0: none).
#[repr(C, align(64))]
struct FortranLine {
    seq: AtomicU64,
    key: AtomicU64,
    comm: AtomicUsize,
    dtype: AtomicUsize,
    counts: [Range; FRANGES],
    bottom: [AtomicUsize; 2],
}

/// A range of counts, lo..lo + len (len 0: none), held as its last count
/// (lo + len - 1, wrapping) and its length, two words that the hot path
/// compares in place (see [`count_ranges`]): `last - c < len` needs no copy of
/// `c` (the subtraction's destination is the loaded word), three bytes of
/// code fewer per range than `c - lo < len` (the handed-off path fits two
/// instruction lines, `tests/preload_layout.rs`).
#[repr(C)]
struct Range {
    last: AtomicU32,
    len: AtomicU32,
}

impl Range {
    #[allow(clippy::declare_interior_mutable_const)]
    const NONE: Range = Range {
        last: AtomicU32::new(0),
        len: AtomicU32::new(0),
    };

    /// Whether the count `c` is in the range: `last - c` (wrapping) is
    /// below `len` exactly for `c` in lo..=last. Every range ends below
    /// 2^31, so a negative count (as u32, at least 2^31) wraps to at least
    /// `last + 1 >= len` and is in none; so does any count above `last`.
    #[inline(always)]
    fn contains(&self, c: u32) -> bool {
        self.last.load(Ordering::Relaxed).wrapping_sub(c) < self.len.load(Ordering::Relaxed)
    }

    /// The range as a count word, `lo << 32 | len`.
    fn word(&self) -> u64 {
        let (last, len) = (
            self.last.load(Ordering::Relaxed),
            self.len.load(Ordering::Relaxed),
        );
        let lo = if len == 0 {
            0
        } else {
            last.wrapping_sub(len).wrapping_add(1)
        };
        (lo as u64) << 32 | len as u64
    }

    fn set(&self, w: u64) {
        let (lo, len) = ((w >> 32) as u32, w as u32);
        let last = if len == 0 {
            0
        } else {
            lo.wrapping_add(len).wrapping_sub(1)
        };
        self.last.store(last, Ordering::Relaxed);
        self.len.store(len, Ordering::Relaxed);
    }
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_LINE: Line = Line {
    seq: AtomicU32::new(0),
    each: AtomicU32::new(0),
    comm: AtomicUsize::new(0),
    dtype: AtomicUsize::new(0),
    counts: [Range::NONE; RANGES],
    state: AtomicUsize::new(0),
    pmpi_bcast: AtomicUsize::new(0),
};

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_FORTRAN_LINE: FortranLine = FortranLine {
    seq: AtomicU64::new(0),
    key: AtomicU64::new(NO_KEY),
    comm: AtomicUsize::new(0),
    dtype: AtomicUsize::new(0),
    counts: [Range::NONE; FRANGES],
    bottom: [const { AtomicUsize::new(0) }; 2],
};

/// The lines: a static of the interposition library itself ([`attach`]ed
/// at its `MPI_Init`), so that its hot path reaches them at a fixed offset
/// from its own code: a static of this crate would be reached through the
/// global offset table from there, one more cache line per call.
pub struct Lines {
    c: [Line; SLOTS],
    f: [FortranLine; SLOTS],
}

impl Lines {
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Lines {
        Lines {
            c: [EMPTY_LINE; SLOTS],
            f: [EMPTY_FORTRAN_LINE; SLOTS],
        }
    }
}

/// The interposition library's [`Lines`]; null: none (a program linked
/// with `libcolltune.so`: nothing is cached).
static ATTACHED: AtomicPtr<Lines> = AtomicPtr::new(std::ptr::null_mut());

/// Lines written and read by this crate's code (fills, [`cached_state_and_type`], ...):
/// the attached ones, else an empty set that is never written (nothing is
/// filled without attached lines).
fn lines() -> &'static Lines {
    static NONE: Lines = Lines::new();
    // SAFETY: attached once, a static.
    unsafe { ATTACHED.load(Ordering::Acquire).as_ref() }.unwrap_or(&NONE)
}

/// Uses `lines` (the interposition library's static) from now on; before
/// colltune's `init`.
pub fn attach(lines: &'static Lines) {
    ATTACHED.store(lines as *const Lines as *mut Lines, Ordering::Release);
}

/// Serialises writers of the [`Lines`] (fills and [`clear`]).
static FILL: Mutex<()> = Mutex::new(());

/// The keys of the attributes marking a communicator, a derived datatype,
/// that has entries; -1 outside [`start`]..[`clear`] (then nothing is
/// cached).
static COMM_KEY: AtomicI32 = AtomicI32::new(-1);
static TYPE_KEY: AtomicI32 = AtomicI32::new(-1);

#[inline(always)]
fn line_index(comm: usize, dtype: usize) -> usize {
    // Fibonacci hashing of the handles' low 32 bits (they differ between
    // any two live handles of one kind), with a 32-bit multiplier: an
    // immediate operand, so that the handed-off path stays short (three
    // instruction lines from the entry, `benches/callcost.sh`).
    (((comm as u32) ^ (dtype as u32)).wrapping_mul(0x9E37_79B1) >> 30) as usize % SLOTS
}

/// A Fortran line's key: the communicator's and the datatype's handles.
#[inline(always)]
pub fn fortran_key(comm: c_int, dtype: c_int) -> u64 {
    (comm as u32 as u64) << 32 | dtype as u32 as u64
}

/// The Fortran handles (communicator, datatype) of a [`fortran_key`].
#[inline(always)]
pub fn fortran_key_handles(key: u64) -> (c_int, c_int) {
    ((key >> 32) as u32 as c_int, key as u32 as c_int)
}

#[inline(always)]
fn fortran_index(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 62) as usize % SLOTS
}

/// The handed-off byte ranges as ranges of `count` for elements of `each`
/// bytes, each a word `lo << 32 | len` (the counts lo..lo + len; 0:
/// none), at most `n` of them; None where they do not fit.
fn count_ranges(ranges: &[(u64, u64)], each: u64, n: usize) -> Option<Vec<u64>> {
    let mut out = Vec::new();
    for &(lo, hi) in ranges {
        let (lo, hi) = match each {
            // every count is 0 bytes
            0 if lo == 0 => (0, MAX_COUNT),
            0 => continue,
            e => (lo.div_ceil(e), (hi / e).min(MAX_COUNT)),
        };
        if lo <= hi {
            out.push(lo << 32 | (hi - lo + 1));
        }
    }
    (out.len() <= n).then(|| {
        out.resize(n, 0);
        out
    })
}

/// Whether `count` is in one of the count words' ranges (as [`Range::contains`]).
#[cfg(test)]
fn matches<const N: usize>(words: &[u64; N], count: c_int) -> bool {
    // through a line's own ranges, as the hot path compares them
    words.iter().any(|&w| {
        let r = Range::NONE;
        r.set(w);
        assert_eq!(r.word(), w, "{w:#x} read back");
        r.contains(count as u32)
    })
}

/// The library's `PMPI_Bcast` where the call is handed off (the handoff
/// gave Open MPI its bytes on its communicator's size): the caller passes
/// the call there unchanged. One cache line of `lines` (the interposition
/// library's own), no call.
#[inline(always)]
pub fn handed_off_target(
    lines: &Lines,
    count: c_int,
    dtype: usize,
    comm: usize,
) -> Option<PmpiBcast> {
    let s = &lines.c[line_index(comm, dtype)];
    let q = s.seq.load(Ordering::Acquire);
    if s.comm.load(Ordering::Relaxed) != comm || s.dtype.load(Ordering::Relaxed) != dtype {
        return None;
    }
    // Each word tested as it is read, the next only where needed: few
    // registers live (the call's arguments stay in theirs for the tail
    // call), no stack frame.
    let c = count as u32;
    if q & 1 != 0
        || !(s.counts[0].contains(c) || s.counts[1].contains(c) || s.counts[2].contains(c))
    {
        return None;
    }
    fence(Ordering::Acquire);
    if s.seq.load(Ordering::Relaxed) != q {
        return None;
    }
    // A range matched in a consistent read: the line was written ([`write_line`]:
    // never 0 there), and `pmpi_bcast` with it (before the release of `q`).
    let pass = s.pmpi_bcast.load(Ordering::Relaxed);
    // SAFETY: the address of the library's `PMPI_Bcast`, of this type.
    (pass != 0).then(|| unsafe { std::mem::transmute::<usize, PmpiBcast>(pass) })
}

/// What the line of (`comm`, `dtype`) knows of a call not handed off: the
/// communicator's state (null: look it up) and the datatype's
/// classification (a derived type's says so: the library checks it per
/// call); None: not cached.
#[inline]
pub(crate) fn cached_state_and_type(
    dtype: usize,
    comm: usize,
) -> Option<(*const CommState, TypeInfo)> {
    let s = &lines().c[line_index(comm, dtype)];
    let q = s.seq.load(Ordering::Acquire);
    // (an empty line's key is 0: no handle)
    if comm == 0
        || s.comm.load(Ordering::Relaxed) != comm
        || s.dtype.load(Ordering::Relaxed) != dtype
    {
        return None;
    }
    let each = s.each.load(Ordering::Relaxed);
    let state = s.state.load(Ordering::Relaxed);
    fence(Ordering::Acquire);
    if q & 1 != 0 || s.seq.load(Ordering::Relaxed) != q {
        return None;
    }
    let info = TypeInfo {
        size: (each & !(DENSE | DERIVED)) as u64,
        dense: Some(each & DENSE != 0),
        derived: each & DERIVED != 0,
    };
    Some((state as *const CommState, info))
}

/// Fortran's `MPI_BCAST` where its line says it is handed off: passed to
/// `PMPI_Bcast` with the C handles and Fortran's `MPI_BOTTOM` turned into
/// C's, as the library's own binding does, the return code into `ierror`
/// (when given); false: not cached or not handed off (nothing done).
///
/// # Safety
/// As for the Fortran binding: every argument but `buffer` points to an
/// integer (`ierror` may be null).
#[inline(always)]
pub unsafe fn fortran_call_if_handed_off(
    lines: &Lines,
    key: u64,
    buffer: *mut c_void,
    count: *const c_int,
    root: *const c_int,
    ierror: *mut c_int,
) -> bool {
    let s = &lines.f[fortran_index(key)];
    let q = s.seq.load(Ordering::Acquire);
    if s.key.load(Ordering::Relaxed) != key {
        return false;
    }
    let n = *count;
    if !(s.counts[0].contains(n as u32) || s.counts[1].contains(n as u32)) {
        return false;
    }
    // Fortran's MPI_BOTTOM is C's (null); decided here, so that few values
    // stay live up to the call.
    let at = buffer as usize;
    let bottom =
        at == s.bottom[0].load(Ordering::Relaxed) || at == s.bottom[1].load(Ordering::Relaxed);
    let (c, d) = (
        s.comm.load(Ordering::Relaxed),
        s.dtype.load(Ordering::Relaxed),
    );
    fence(Ordering::Acquire);
    if q & 1 != 0 || s.seq.load(Ordering::Relaxed) != q {
        return false;
    }
    let buffer = if bottom { std::ptr::null_mut() } else { buffer };
    // The count read again rather than kept: one value fewer live across
    // the checks, so that the path needs no register it must save.
    let rc = abi::raw::PMPI_Bcast(buffer, std::ptr::read_volatile(count), d, *root, c);
    if !ierror.is_null() {
        *ierror = rc;
    }
    true
}

/// Writes one line (the caller holds [`FILL`]).
fn write_line(s: &Line, key: (usize, usize), each: u32, words: &[u64], state: usize) {
    let q = s.seq.load(Ordering::Relaxed);
    s.seq.store(q.wrapping_add(1), Ordering::Relaxed);
    fence(Ordering::Release);
    s.comm.store(key.0, Ordering::Relaxed);
    s.dtype.store(key.1, Ordering::Relaxed);
    s.each.store(each, Ordering::Relaxed);
    for (r, &w) in s
        .counts
        .iter()
        .zip(words.iter().chain(std::iter::repeat(&0)))
    {
        r.set(w);
    }
    s.state.store(state, Ordering::Relaxed);
    s.pmpi_bcast.store(
        abi::raw::PMPI_Bcast as PmpiBcast as usize,
        Ordering::Relaxed,
    );
    s.seq.store(q.wrapping_add(2), Ordering::Release);
}

/// Writes one Fortran line (the caller holds [`FILL`]).
fn write_fortran_line(
    s: &FortranLine,
    key: u64,
    handles: (usize, usize),
    words: &[u64],
    bottom: &[usize],
) {
    let q = s.seq.load(Ordering::Relaxed);
    s.seq.store(q.wrapping_add(1), Ordering::Relaxed);
    fence(Ordering::Release);
    s.key.store(key, Ordering::Relaxed);
    s.comm.store(handles.0, Ordering::Relaxed);
    s.dtype.store(handles.1, Ordering::Relaxed);
    for (r, &w) in s
        .counts
        .iter()
        .zip(words.iter().chain(std::iter::repeat(&0)))
    {
        r.set(w);
    }
    for (b, &a) in s
        .bottom
        .iter()
        .zip(bottom.iter().chain(std::iter::repeat(&0)))
    {
        b.store(a, Ordering::Relaxed);
    }
    s.seq.store(q.wrapping_add(2), Ordering::Release);
}

/// Whether there is a line for (`comm`, `dtype`).
pub(crate) fn has_line(comm: MPI_Comm, dtype: MPI_Datatype) -> bool {
    let (c, d) = (abi::to_reg(comm), abi::to_reg(dtype));
    let s = &lines().c[line_index(c, d)];
    s.comm.load(Ordering::Acquire) == c && s.dtype.load(Ordering::Acquire) == d
}

/// Whether the line for (`comm`, `dtype`) holds `state` already.
pub(crate) fn holds_state(comm: MPI_Comm, dtype: MPI_Datatype, state: *const CommState) -> bool {
    let (c, d) = (abi::to_reg(comm), abi::to_reg(dtype));
    let s = &lines().c[line_index(c, d)];
    s.comm.load(Ordering::Acquire) == c
        && s.dtype.load(Ordering::Acquire) == d
        && s.state.load(Ordering::Acquire) == state as usize
}

/// Classifies `dtype` (elements of `size` bytes, which the library
/// accepted) for a line, once (`known`: the call path's classification,
/// no lookup): predefined types from colltune's cache (put there if new),
/// derived ones marked with colltune's attribute (its delete callback
/// empties their lines when they are freed). None: not cached (a derived
/// type that could not be marked, a library error).
fn classify(dtype: MPI_Datatype, size: u64, known: Option<TypeInfo>) -> Option<TypeInfo> {
    let info = match known {
        Some(k) if !k.derived || k.dense.is_some() => k,
        _ => {
            if let Some((size, dense)) = typecache::get(dtype) {
                let dense = Some(dense);
                return Some(TypeInfo {
                    size,
                    dense,
                    derived: false,
                });
            }
            let dense = Some(contiguous(dtype).ok()?);
            let derived = cffi::type_combiner(dtype).ok()? != Combiner::Named;
            if !derived {
                typecache::put(dtype, size, dense == Some(true));
            }
            TypeInfo {
                size,
                dense,
                derived,
            }
        }
    };
    if !info.derived {
        return Some(info);
    }
    let key = TYPE_KEY.load(Ordering::Acquire);
    let d = abi::to_reg(dtype);
    let marked = lines().c.iter().any(|s| s.dtype.load(Ordering::Relaxed) == d)
        // SAFETY: dtype is the caller's valid datatype.
        || matches!(unsafe { cffi::type_get_attr(dtype, key) }, Ok(Some(_)));
    if !marked {
        let marker = std::ptr::addr_of!(TYPE_KEY) as *mut c_void;
        // SAFETY: as above; the value is never dereferenced.
        unsafe { cffi::type_set_attr(dtype, key, marker) }.ok()?;
    }
    Some(info)
}

/// The union of two lists of inclusive byte ranges, ascending, adjacent
/// and overlapping ones merged.
pub(crate) fn union(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut all: Vec<(u64, u64)> = a.iter().chain(b).copied().filter(|r| r.0 <= r.1).collect();
    all.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(all.len());
    for (lo, hi) in all {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// Remembers, for calls on `comm` with `dtype` (elements of `size` bytes,
/// which the library accepted; `known`: its classification where the call
/// path has it), the byte `ranges` its calls go to
/// `PMPI_Bcast` unchanged (where they are more than a line holds, the
/// handed-off ones alone, `handed`) and the communicator's `state` (null:
/// not known), once the communicator carries colltune's attribute (and a
/// derived datatype its own).
pub(crate) fn fill_line(
    comm: MPI_Comm,
    dtype: MPI_Datatype,
    size: u64,
    known: Option<TypeInfo>,
    ranges: &[(u64, u64)],
    handed: &[(u64, u64)],
    state: *const CommState,
) {
    let key = COMM_KEY.load(Ordering::Acquire);
    let attached = !ATTACHED.load(Ordering::Acquire).is_null();
    if !attached || key < 0 || TYPE_KEY.load(Ordering::Acquire) < 0 || size >= DERIVED as u64 {
        return;
    }
    let Some(words) =
        count_ranges(ranges, size, RANGES).or_else(|| count_ranges(handed, size, RANGES))
    else {
        return;
    };
    let _g = lock(&FILL);
    let Some(info) = classify(dtype, size, known) else {
        return;
    };
    // Marked already (a line with another datatype): no library call.
    // Else set the attribute, once: setting it again would run the
    // delete callback.
    let (c, d) = (abi::to_reg(comm), abi::to_reg(dtype));
    let marked = lines().c.iter().any(|s| s.comm.load(Ordering::Relaxed) == c)
        // SAFETY: comm is the caller's valid communicator.
        || matches!(unsafe { cffi::comm_get_attr(comm, key) }, Ok(Some(_)));
    if !marked {
        let marker = std::ptr::addr_of!(COMM_KEY) as *mut c_void;
        // SAFETY: as above; the value is never dereferenced.
        if unsafe { cffi::comm_set_attr(comm, key, marker) }.is_err() {
            return;
        }
    }
    let each = info.size as u32
        | if info.dense == Some(true) { DENSE } else { 0 }
        | if info.derived { DERIVED } else { 0 };
    write_line(
        &lines().c[line_index(c, d)],
        (c, d),
        each,
        &words,
        state as usize,
    );
}

/// Gives the Fortran handles (`fcomm`, `fdtype`) the handed-off counts of
/// the line of their C handles (`comm`, `dtype`), where it has any (a
/// Fortran call made after the C path's [`fill_line`]).
pub(crate) fn fill_fortran_line(fcomm: c_int, fdtype: c_int, comm: MPI_Comm, dtype: MPI_Datatype) {
    let key = fortran_key(fcomm, fdtype);
    let attached = !ATTACHED.load(Ordering::Acquire).is_null();
    if !attached || key == NO_KEY || COMM_KEY.load(Ordering::Acquire) < 0 {
        return;
    }
    let slot = &lines().f[fortran_index(key)];
    if slot.key.load(Ordering::Acquire) == key {
        return;
    }
    let (c, d) = (abi::to_reg(comm), abi::to_reg(dtype));
    let s = &lines().c[line_index(c, d)];
    // The C line's handed-off counts (read again under the lock): none,
    // or more than a Fortran line holds, and there is nothing to do.
    let words = || -> Option<[u64; RANGES]> {
        if s.comm.load(Ordering::Acquire) != c || s.dtype.load(Ordering::Acquire) != d {
            return None;
        }
        let w = [s.counts[0].word(), s.counts[1].word(), s.counts[2].word()];
        let fits = w.iter().any(|&w| w != 0) && w[FRANGES..].iter().all(|&w| w == 0);
        fits.then_some(w)
    };
    let bottom = cffi::fortran_bottoms();
    if words().is_none() || bottom.len() > 2 {
        return;
    }
    let _g = lock(&FILL);
    if let Some(w) = words() {
        write_fortran_line(slot, key, (c, d), &w[..FRANGES], bottom);
    }
}

/// The attributes' delete callback for a communicator: `comm` is being
/// freed (its handle may be reused), so its lines go. Takes no lock (MPI
/// may call it with locks of its own held); a fill running at the same
/// time is for another communicator (using one while freeing it is
/// erroneous): at worst a line of another is emptied too.
unsafe extern "C" fn forget_comm(
    comm: MPI_Comm,
    _key: c_int,
    _val: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    forget_handle(abi::to_reg(comm), |s| &s.comm, |s| &s.comm);
    mpi::ffi::MPI_SUCCESS as c_int
}

/// As [`forget_comm`], for a derived datatype being freed.
unsafe extern "C" fn forget_type(
    dtype: MPI_Datatype,
    _key: c_int,
    _val: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    forget_handle(abi::to_reg(dtype), |s| &s.dtype, |s| &s.dtype);
    mpi::ffi::MPI_SUCCESS as c_int
}

/// Empties the lines whose `field` (C lines) or `ffield` (Fortran lines)
/// is `h`.
fn forget_handle(
    h: usize,
    field: impl Fn(&Line) -> &AtomicUsize,
    ffield: impl Fn(&FortranLine) -> &AtomicUsize,
) {
    for s in &lines().c {
        if field(s).load(Ordering::Acquire) == h {
            // Both keys go: a line still naming a freed datatype would
            // make [`classify`] take a recycled handle for a marked one.
            s.comm.store(0, Ordering::Release);
            s.dtype.store(0, Ordering::Release);
        }
    }
    for s in &lines().f {
        if ffield(s).load(Ordering::Acquire) == h {
            s.key.store(NO_KEY, Ordering::Release);
        }
    }
}

/// Makes the marking attributes' keys (colltune's `init`); without them
/// nothing is cached.
pub(crate) fn start() {
    if COMM_KEY.load(Ordering::Acquire) >= 0 {
        return;
    }
    let Ok(t) = cffi::type_create_keyval(Some(copy_attr), Some(forget_type)) else {
        return;
    };
    TYPE_KEY.store(t, Ordering::Release);
    if let Ok(k) = cffi::comm_create_keyval(Some(copy_attr), Some(forget_comm)) {
        COMM_KEY.store(k, Ordering::Release);
    }
}

/// Empties every line and caches nothing more (colltune's `finalize`:
/// the states go, calls take the whole path). The keys stay with MPI
/// (communicators and datatypes still alive keep their marks until freed).
pub(crate) fn clear() {
    let _g = lock(&FILL);
    COMM_KEY.store(-1, Ordering::Release);
    TYPE_KEY.store(-1, Ordering::Release);
    if ATTACHED.load(Ordering::Acquire).is_null() {
        return;
    }
    for s in &lines().c {
        write_line(s, (0, 0), 0, &[], 0);
    }
    for s in &lines().f {
        write_fortran_line(s, NO_KEY, (0, 0), &[], &[]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(ranges: &[(u64, u64)], each: u64) -> [u64; RANGES] {
        count_ranges(ranges, each, RANGES)
            .unwrap()
            .try_into()
            .unwrap()
    }

    #[test]
    fn byte_ranges_become_exact_count_ranges() {
        let ranges = [(0, 1448), (10624, 12633), (4_000_000, u64::MAX)];
        for each in [1u64, 3, 4, 8, 1000] {
            let w = words(&ranges, each);
            for count in (0..20_000).chain([999_999, 1_000_000, 1_333_334, i32::MAX - 1, i32::MAX])
            {
                let bytes = each * count as u64;
                let want = ranges.iter().any(|&(lo, hi)| lo <= bytes && bytes <= hi);
                assert_eq!(matches(&w, count), want, "{count} x {each} B");
            }
            // a negative count (an error the library reports) is in none
            for count in [-1, -2, i32::MIN] {
                assert!(!matches(&w, count), "{count}");
            }
        }
        // a type of 0 bytes: every count is 0 bytes
        assert!(matches(&words(&[(0, 10)], 0), i32::MAX));
        assert!(!matches(&words(&[(1, 10)], 0), 0));
        // no ranges: nothing matches, not even 0
        let none = words(&[], 4);
        assert!(!matches(&none, 0) && !matches(&none, 1) && !matches(&none, -1));
        // a range no count reaches (between two multiples) is left out
        assert_eq!(words(&[(5, 7)], 8), [0; RANGES]);
        // too many ranges: not cached
        assert_eq!(
            count_ranges(&[(0, 1), (3, 4), (6, 7), (9, 10)], 1, RANGES),
            None
        );
        assert_eq!(count_ranges(&[(0, 1), (3, 4), (6, 7)], 1, FRANGES), None);
    }

    #[test]
    fn unions_merge_overlapping_and_adjacent_ranges() {
        assert_eq!(union(&[], &[]), vec![]);
        assert_eq!(union(&[(0, 1448)], &[]), vec![(0, 1448)]);
        // adjacent and overlapping merge, order does not matter
        assert_eq!(
            union(
                &[(100, 200), (0, 9)],
                &[(10, 50), (150, 300), (400, u64::MAX)]
            ),
            vec![(0, 50), (100, 300), (400, u64::MAX)]
        );
        assert_eq!(union(&[(0, u64::MAX)], &[(5, 7)]), vec![(0, u64::MAX)]);
        // an empty range (lo > hi) is none
        assert_eq!(union(&[(9, 3)], &[(1, 1)]), vec![(1, 1)]);
    }

    #[test]
    fn the_index_stays_in_bounds_and_spreads() {
        let mut seen = [0usize; SLOTS];
        for c in 0..64usize {
            seen[line_index(0x7f00_0000_0000 + c * 0x1a0, 0x7f00_1234_5600)] += 1;
        }
        assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
        let mut seen = [0usize; SLOTS];
        for c in 0..64 {
            seen[fortran_index(fortran_key(c, 1))] += 1;
        }
        assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
        assert_ne!(fortran_key(-1, -1), fortran_key(0, 0));
        assert_eq!(fortran_key(-1, -1), NO_KEY);
    }

    #[test]
    fn a_line_is_one_cache_line() {
        assert_eq!(size_of::<Line>(), 64);
        assert_eq!(align_of::<Line>(), 64);
        assert_eq!(size_of::<FortranLine>(), 64);
        assert_eq!(align_of::<FortranLine>(), 64);
    }

    #[test]
    fn a_written_line_hands_its_counts_to_the_library() {
        let l = Lines::new();
        let (c, d) = (0x7f00_1000usize, 0x7f00_2040usize);
        let w = words(&[(0, 256), (4096, 8191)], 4);
        write_line(&l.c[line_index(c, d)], (c, d), 4 | DENSE, &w, 0);
        let pass = handed_off_target(&l, 64, d, c).expect("64 x 4 B is handed off");
        assert_eq!(pass as usize, abi::raw::PMPI_Bcast as PmpiBcast as usize);
        for count in [0, 1, 64, 1024, 2047] {
            assert!(handed_off_target(&l, count, d, c).is_some(), "{count}");
        }
        for count in [65, 1023, 2048, -1, i32::MIN, i32::MAX] {
            assert!(handed_off_target(&l, count, d, c).is_none(), "{count}");
        }
        // another key in the same line is not this one
        assert!(handed_off_target(&l, 1, d, c ^ 0x1_0000_0000).is_none());
        // mid-write (odd sequence): nothing is handed off
        let s = &l.c[line_index(c, d)];
        s.seq.fetch_add(1, Ordering::Relaxed);
        assert!(handed_off_target(&l, 1, d, c).is_none());
    }

    #[test]
    fn an_empty_table_hands_nothing_off() {
        let l = Lines::new();
        for (count, d, c) in [(0, 0, 0), (1, 8, 16), (-1, 0, 0)] {
            assert!(handed_off_target(&l, count, d, c).is_none());
            assert!(cached_state_and_type(d, c).is_none());
        }
    }
}
