//! The handoff: where a table gives calls to one of Open MPI's own
//! broadcast algorithms (or to its default decision), Open MPI is told so
//! itself, before `MPI_Init`, through a coll/tuned rules file
//! ([`colltune_core::export::openmpi_handoff`]); those calls then go
//! straight to `PMPI_Bcast` on the application's communicator, and
//! colltune's per-call work there is one size check ([`pass`]): no
//! communicator lookup, no decision, no duplicate.
//!
//! Why: a small broadcast takes 0.2-0.3 us, and in an application the
//! interposition's cache lines are cold at every call (other ranks and the
//! library's own work run between calls), so every line the path touches
//! costs there what a warm benchmark does not show (13 ns for the whole
//! dispatch warm, 40-70 ns in situ: docs/measurements/2026-12-01-handoff).
//!
//! When: the drop-in's `MPI_Init` (not a program calling `colltune_init`
//! itself) on Open MPI, with a table (`COLLTUNE_TABLE`), no forced choice
//! (`COLLTUNE_BCAST`), and no rules file, forced broadcast algorithm or
//! `coll_tuned_use_dynamic_rules=0` of the user's (`OMPI_MCA_...` in the
//! environment); `COLLTUNE_HANDOFF=0` turns it off. Every rank reads the
//! table itself for this (before `MPI_Init` there is no communication),
//! writes the rules to `$TMPDIR/colltune-handoff-PID.rules` and sets
//! `OMPI_MCA_coll_tuned_dynamic_rules_filename`; the file is removed once
//! `MPI_Init` has read it.
//!
//! Every rank must have handed Open MPI the same rules (one that could not
//! read the table, or read another, would run another algorithm in the
//! same broadcast): [`agree`], first thing after `MPI_Init`, compares a
//! digest of them over `MPI_COMM_WORLD`, and stops the job with a message
//! where they differ, since the library's own broadcasts would hang.
//!
//! Open MPI keys rules by communicator size: a communicator of a size the
//! table has rules for, but of another node layout, gets that size's
//! library rules too (where colltune alone would give it the library's
//! default); sizes with several layouts in the table are not handed off.

use std::ffi::{c_int, c_void};
use std::path::PathBuf;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

use colltune_core::decide::{RuntimeSettings, Trace};
use colltune_core::export::{openmpi_handoff, Handoff};
use colltune_core::table;
use mpi::ffi::{MPI_Comm, MPI_Datatype};

use super::{lock, report};
use crate::abi::{self, Family};
use crate::transport::mpi::ffi::{self as cffi, Datatype};
use crate::transport::mpi::Op;

const RULES_VAR: &str = "OMPI_MCA_coll_tuned_dynamic_rules_filename";
const FILE_PREFIX: &str = "colltune-handoff-";

/// What was handed to Open MPI before `MPI_Init`, until [`agree`].
struct Pending {
    handoff: Handoff,
    file: PathBuf,
}

static PENDING: Mutex<Option<Pending>> = Mutex::new(None);

/// Why nothing was handed off, for the trace.
static WHY_NOT: Mutex<Option<String>> = Mutex::new(None);

/// Per communicator size (the index), the byte ranges Open MPI's rules
/// decide; published by [`agree`], read by [`pass`]. Never freed once
/// published (a few bytes per size): a call in flight may still read it.
struct Fast {
    by_size: Vec<Vec<(u64, u64)>>,
}

static FAST: AtomicPtr<Fast> = AtomicPtr::new(std::ptr::null_mut());

/// Why the handoff does not apply in this process; None: it may.
fn unwanted() -> Option<&'static str> {
    let get = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    if get("COLLTUNE_HANDOFF").is_some_and(|v| v == "0") {
        return Some("COLLTUNE_HANDOFF=0");
    }
    if get("COLLTUNE_TABLE").is_none() {
        return Some("no table");
    }
    if get("COLLTUNE_BCAST").is_some() {
        return Some("COLLTUNE_BCAST forces one choice everywhere");
    }
    if abi::runtime().family != Family::OpenMpi || abi::foreign_family() {
        return Some("not Open MPI");
    }
    // A rules file of the user's (one of ours left from an exec'd parent
    // is not).
    if let Some(f) = get(RULES_VAR) {
        let ours = std::path::Path::new(&f)
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(FILE_PREFIX));
        if !ours {
            return Some("the user's own rules file");
        }
    }
    if get("OMPI_MCA_coll_tuned_bcast_algorithm").is_some_and(|v| v != "0") {
        return Some("the user's forced broadcast algorithm");
    }
    if get("OMPI_MCA_coll_tuned_use_dynamic_rules")
        .is_some_and(|v| v == "0" || v.eq_ignore_ascii_case("false"))
    {
        return Some("coll_tuned_use_dynamic_rules=0");
    }
    None
}

/// Before the library's `MPI_Init`: reads the table, and where it has rules
/// Open MPI can run, writes them for Open MPI and points it at them. Any
/// problem (unreadable or invalid table, no such rules, a file that cannot
/// be written) means no handoff; the table's own errors are reported after
/// `MPI_Init`, as without it.
pub fn before_init() {
    let why_not = |why: String| *lock(&WHY_NOT) = Some(why);
    if let Some(why) = unwanted() {
        why_not(why.into());
        return;
    }
    let Some(path) = std::env::var_os("COLLTUNE_TABLE").map(PathBuf::from) else {
        return;
    };
    let Ok(Ok(t)) = table::read_text(&path).map(|text| table::load_str(&text)) else {
        return why_not("the table could not be used before MPI_Init".into());
    };
    let handoff = match openmpi_handoff(&t) {
        Ok(Some(h)) => h,
        Ok(None) => return why_not("no rule names one of Open MPI's algorithms".into()),
        Err(e) => return why_not(e.to_string()),
    };
    let dir = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let file = dir.join(format!("{FILE_PREFIX}{}.rules", std::process::id()));
    if let Err(e) = std::fs::write(&file, &handoff.rules) {
        return why_not(format!("{}: {e}", file.display()));
    }
    // Before MPI_Init: no other thread of the library's reads the
    // environment yet.
    std::env::set_var(RULES_VAR, &file);
    std::env::set_var("OMPI_MCA_coll_tuned_use_dynamic_rules", "1");
    *lock(&PENDING) = Some(Pending { handoff, file });
}

/// Right after the library's `MPI_Init` (successful or not): Open MPI has
/// read the rules file; remove it.
pub fn after_init() {
    if let Some(p) = lock(&PENDING).as_ref() {
        let _ = std::fs::remove_file(&p.file);
    }
}

/// First thing after `MPI_Init` (collective over `MPI_COMM_WORLD`): every
/// rank handed Open MPI the same rules, or none did; the job stops where
/// they differ. Publishes [`pass`]'s ranges, unless calls are traced (a
/// traced call takes the full path, which says where it went).
pub fn agree() {
    let pending = lock(&PENDING).take();
    let mine = pending.as_ref().map_or(0, |p| p.handoff.digest());
    // max(d) and max(!d): every rank has the same d exactly when
    // max(d) == !max(!d).
    let send = [mine, !mine];
    let mut got = [0u64; 2];
    // SAFETY: two u64 in, two out; MPI_COMM_WORLD after MPI_Init.
    let agreed = unsafe {
        cffi::allreduce(
            send.as_ptr().cast(),
            got.as_mut_ptr().cast(),
            2,
            Datatype::U64,
            Op::Max,
            cffi::comm_world(),
        )
    };
    if agreed.is_err() {
        return;
    }
    if got[0] != !got[1] {
        let rank = cffi::comm_rank(cffi::comm_world()).unwrap_or(0);
        if rank == 0 {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "colltune: error: the ranks handed Open MPI different broadcast rules at MPI_Init (COLLTUNE_TABLE={}: some ranks read another file, or none), so the library's own broadcasts would run different algorithms on different ranks and hang. Make the table the same file on every node, or set COLLTUNE_HANDOFF=0.",
                std::env::var("COLLTUNE_TABLE").unwrap_or_default()
            );
            let _ = std::io::stderr().flush();
        }
        let _ = cffi::barrier(cffi::comm_world());
        cffi::abort(cffi::comm_world(), 3);
        return;
    }
    let traced = RuntimeSettings::trace_from_env() != Trace::Off;
    let lead = cffi::comm_rank(cffi::comm_world()).unwrap_or(0) == 0;
    let Some(p) = pending else {
        if let (true, true, Some(why)) = (traced, lead, lock(&WHY_NOT).take()) {
            report(&format!("no handoff to Open MPI's rules: {why}"));
        }
        return;
    };
    if traced && lead {
        report(&format!(
            "handoff: Open MPI runs the table's library rules itself ({})",
            describe(&p.handoff)
        ));
    }
    // Traced calls take the full path, which says where each went.
    publish(&p.handoff, !traced);
}

/// The handed-off ranges, for a trace line: `4 ranks 0-1448 B, ...`.
fn describe(h: &Handoff) -> String {
    h.ranges
        .iter()
        .map(|(size, r)| {
            let r: Vec<String> = r
                .iter()
                .map(|&(lo, hi)| {
                    if hi == u64::MAX {
                        format!("{lo} B and up")
                    } else {
                        format!("{lo}-{hi} B")
                    }
                })
                .collect();
            format!("{size} ranks {}", r.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Whether the handoff covers a call of `bytes` on a communicator of
/// `size` ranks (for the full path's trace, which then passes it on too).
pub fn covers(size: usize, bytes: u64) -> bool {
    // SAFETY: published once, never freed.
    let f = unsafe { HANDED.load(Ordering::Acquire).as_ref() };
    f.is_some_and(|f| within(f, size, bytes))
}

/// The ranges as [`covers`] sees them, whether or not [`pass`] takes them.
static HANDED: AtomicPtr<Fast> = AtomicPtr::new(std::ptr::null_mut());

fn publish(h: &Handoff, fast: bool) {
    let len = h.ranges.iter().map(|r| r.0 as usize + 1).max().unwrap_or(0);
    let mut by_size = vec![Vec::new(); len];
    for (size, r) in &h.ranges {
        by_size[*size as usize] = r.clone();
    }
    let f = Box::into_raw(Box::new(Fast { by_size }));
    HANDED.store(f, Ordering::Release);
    if fast {
        hot::start();
        FAST.store(f, Ordering::Release);
    }
}

#[inline]
fn within(f: &Fast, size: usize, bytes: u64) -> bool {
    f.by_size
        .get(size)
        .is_some_and(|r| r.iter().any(|&(lo, hi)| lo <= bytes && bytes <= hi))
}

/// Before [`super::finalize`]: calls go the full way (to the library,
/// colltune being gone).
pub fn retire() {
    FAST.store(std::ptr::null_mut(), Ordering::Release);
    HANDED.store(std::ptr::null_mut(), Ordering::Release);
    hot::clear();
}

/// A call the handoff covers, passed to `PMPI_Bcast` unchanged: its return
/// code; None: the full path decides. Reads the communicator's size from
/// the library, the datatype's size from colltune's cache of predefined
/// types (else from the library), and the ranges of that size; remembers
/// them in [`hot`] for the next call on this communicator with this
/// datatype.
///
/// # Safety
/// As for `MPI_Bcast`.
#[inline]
pub unsafe fn pass(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Option<c_int> {
    // SAFETY: published once, never freed.
    let f = FAST.load(Ordering::Acquire).as_ref()?;
    if count < 0 || comm == cffi::comm_null() || datatype == cffi::datatype_null() {
        return None;
    }
    let ranges = f
        .by_size
        .get(cffi::comm_size_raw(comm)?)
        .map_or(&[][..], |r| &r[..]);
    // A predefined type the full path has met: its size from colltune's
    // cache (no library call); else the library's answer.
    let each = match super::typecache::get(datatype) {
        Some((size, _)) => size,
        _ => {
            let size = cffi::type_size_raw(datatype)?;
            super::remember_predefined(datatype, size);
            size
        }
    };
    // Only predefined types (derived ones' handles are reused once freed).
    if super::typecache::get(datatype).is_some() {
        hot::fill(comm, datatype, each, ranges);
    }
    if ranges.is_empty() {
        return None;
    }
    let bytes = each.checked_mul(count as u64)?;
    if !ranges.iter().any(|&(lo, hi)| lo <= bytes && bytes <= hi) {
        return None;
    }
    let rc = cffi::user_bcast(buffer, count, datatype, root, comm);
    Some(rc)
}

/// What [`hot::pass`] knows of a call.
pub enum Hot {
    /// Handed off: passed to `PMPI_Bcast`, its return code.
    Passed(c_int),
    /// Not handed off (the communicator's size has no library rule for
    /// these bytes): the full path decides, [`pass`] need not be asked.
    Kept,
    /// Not cached: ask [`pass`].
    Unknown,
}

/// The drop-in's first look at a call, before anything else: one cache
/// line per (communicator, predefined datatype) recently seen holds the
/// datatype's size and the handed-off ranges of the communicator's size,
/// so a handed-off call costs one line and a few compares, with no call
/// into the library before its `PMPI_Bcast`. (In an application the
/// interposition's lines are cold at every call: each line touched costs
/// there. docs/measurements/2026-12-01-hotpath.)
///
/// Entries are filled by [`pass`] (under a lock, as a sequence lock:
/// readers never wait and never see a half-written entry), and only for
/// predefined datatypes, which live as long as MPI. A communicator's
/// handle can be reused once it is freed, so a communicator gets an
/// attribute of colltune's when its entry is made, whose delete callback
/// (run by MPI whenever the communicator is freed, by whatever path)
/// empties its entries first. Entries exist only while the handoff is
/// published ([`publish`] to [`retire`]), and only for Open MPI (the
/// handoff's only library), so a hit is an Open MPI handle.
pub mod hot {
    use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
    use std::sync::Mutex;

    use super::*;

    const SLOTS: usize = 4;
    const RANGES: usize = 4;
    /// A range word `lo << 32 | hi` that matches nothing (lo > hi).
    const NO_RANGE: u64 = (u32::MAX as u64) << 32;

    /// One cache line: a sequence (odd while written), the key, the
    /// datatype's size and up to [`RANGES`] byte ranges, each as
    /// `lo << 32 | hi` (`hi` = `u32::MAX`: and up).
    #[repr(C, align(64))]
    struct Slot {
        seq: AtomicU64,
        comm: AtomicUsize,
        dtype: AtomicUsize,
        each: AtomicU64,
        ranges: [AtomicU64; RANGES],
    }

    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Slot = Slot {
        seq: AtomicU64::new(0),
        comm: AtomicUsize::new(0),
        dtype: AtomicUsize::new(0),
        each: AtomicU64::new(0),
        ranges: [const { AtomicU64::new(NO_RANGE) }; RANGES],
    };

    static SLOTS_: [Slot; SLOTS] = [EMPTY; SLOTS];

    /// Serialises writers of [`SLOTS_`] (fills and [`clear`]).
    static FILL: Mutex<()> = Mutex::new(());

    /// The key of the attribute marking a communicator that has entries;
    /// -1 until [`publish`](super::publish) made it.
    static KEY: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

    #[inline(always)]
    fn index(comm: usize, dtype: usize) -> usize {
        ((comm ^ dtype.rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 62) as usize % SLOTS
    }

    /// Encodes byte ranges as range words; None where they do not fit
    /// (more than [`RANGES`], or bounds beyond 32 bits other than "and up").
    pub(super) fn encode(ranges: &[(u64, u64)]) -> Option<[u64; RANGES]> {
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
    pub(super) fn matches(words: &[u64; RANGES], bytes: u64) -> bool {
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
        let s = &SLOTS_[index(comm, dtype)];
        let q = s.seq.load(Ordering::Acquire);
        if s.comm.load(Ordering::Relaxed) != comm || s.dtype.load(Ordering::Relaxed) != dtype {
            return Hot::Unknown;
        }
        let each = s.each.load(Ordering::Relaxed);
        let words = [
            s.ranges[0].load(Ordering::Relaxed),
            s.ranges[1].load(Ordering::Relaxed),
            s.ranges[2].load(Ordering::Relaxed),
            s.ranges[3].load(Ordering::Relaxed),
        ];
        fence(Ordering::Acquire);
        if q & 1 != 0 || s.seq.load(Ordering::Relaxed) != q || count < 0 {
            return Hot::Unknown;
        }
        if !matches(&words, each * count as u64) {
            return Hot::Kept;
        }
        Hot::Passed(cffi::user_bcast(
            buffer,
            count,
            abi::datatype_from_reg(dtype),
            root,
            abi::comm_from_reg(comm),
        ))
    }

    fn reg<T: Copy>(h: T) -> usize {
        const { assert!(size_of::<T>() == 8 || size_of::<T>() == 4) };
        if size_of::<T>() == 8 {
            // SAFETY: 8 bytes of a handle as an integer.
            unsafe { std::mem::transmute_copy::<T, u64>(&h) as usize }
        } else {
            // SAFETY: 4 bytes of a handle as an integer.
            unsafe { std::mem::transmute_copy::<T, u32>(&h) as usize }
        }
    }

    /// Writes one slot (the caller holds [`FILL`]).
    fn write(s: &Slot, comm: usize, dtype: usize, each: u64, words: &[u64; RANGES]) {
        let q = s.seq.load(Ordering::Relaxed);
        s.seq.store(q.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        s.comm.store(comm, Ordering::Relaxed);
        s.dtype.store(dtype, Ordering::Relaxed);
        s.each.store(each, Ordering::Relaxed);
        for (r, &w) in s.ranges.iter().zip(words) {
            r.store(w, Ordering::Relaxed);
        }
        s.seq.store(q.wrapping_add(2), Ordering::Release);
    }

    /// Remembers `comm`'s ranges for `dtype` (a predefined datatype of
    /// `each` bytes), once the communicator carries colltune's attribute.
    pub(super) fn fill(comm: MPI_Comm, dtype: MPI_Datatype, each: u64, ranges: &[(u64, u64)]) {
        let key = KEY.load(Ordering::Acquire);
        let Some(words) = encode(ranges).filter(|_| key >= 0) else {
            return;
        };
        let _g = lock(&FILL);
        // Marked already (an entry with another datatype): no library
        // call. Else set the attribute, once: setting it again would run
        // the delete callback.
        let (c, d) = (reg(comm), reg(dtype));
        let marked = SLOTS_.iter().any(|s| s.comm.load(Ordering::Relaxed) == c)
            || matches!(
                // SAFETY: comm is the caller's valid communicator.
                unsafe { cffi::comm_get_attr(comm, key) },
                Ok(Some(_))
            );
        if !marked {
            let marker = std::ptr::addr_of!(KEY) as *mut c_void;
            // SAFETY: as above; the value is never dereferenced.
            if unsafe { cffi::comm_set_attr(comm, key, marker) }.is_err() {
                return;
            }
        }
        write(&SLOTS_[index(c, d)], c, d, each, &words);
    }

    /// The attribute's delete callback: `comm` is being freed (its handle
    /// may be reused), so its entries go. Takes no lock (MPI may call it
    /// with locks of its own held); a fill running at the same time is
    /// for another communicator (using one while freeing it is erroneous).
    pub(super) unsafe extern "C" fn forget(
        comm: MPI_Comm,
        _key: c_int,
        _val: *mut c_void,
        _extra: *mut c_void,
    ) -> c_int {
        let c = reg(comm);
        for s in &SLOTS_ {
            let _ = s
                .comm
                .compare_exchange(c, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
        mpi::ffi::MPI_SUCCESS as c_int
    }

    unsafe extern "C" fn no_copy(
        _old: MPI_Comm,
        _key: c_int,
        _extra: *mut c_void,
        _val_in: *mut c_void,
        _val_out: *mut c_void,
        flag: *mut c_int,
    ) -> c_int {
        // A duplicate has no entries of its own yet.
        *flag = 0;
        mpi::ffi::MPI_SUCCESS as c_int
    }

    /// Makes the marking attribute's key (after `MPI_Init`, before the
    /// first fill); without it nothing is cached.
    pub(super) fn start() {
        if KEY.load(Ordering::Acquire) >= 0 {
            return;
        }
        if let Ok(k) = cffi::comm_create_keyval(Some(no_copy), Some(forget)) {
            KEY.store(k, Ordering::Release);
        }
    }

    /// Empties every entry (the handoff retired: calls go the full way).
    pub(super) fn clear() {
        let _g = lock(&FILL);
        for s in &SLOTS_ {
            write(s, 0, 0, 0, &[NO_RANGE; RANGES]);
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
            assert_eq!(encode(&[(0, 1), (3, 4), (6, 7), (9, 10), (12, 13)]), None);
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
    }
}
