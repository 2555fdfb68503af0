//! The MPI library's own algorithms as table choices
//! ([`LibraryChoice`]): per communicator, what each choice the table makes
//! needs to run forced ([`Forcing`]), set up once.
//!
//! - Open MPI coll/tuned (`ompi_tuned`): Open MPI reads
//!   `coll_tuned_bcast_algorithm` and `_segmentsize` when a communicator is
//!   created (and only with `coll_tuned_use_dynamic_rules` on, which it
//!   reads once at `MPI_Init`; the interposition library turns it on there,
//!   see `capi::mpi_init`). So forcing is: remember the two variables,
//!   write them through `MPI_T`, duplicate, write back what they were, so
//!   the application's later communicators keep Open MPI's own decision.
//!   Then `PMPI_Bcast` on the duplicate runs the forced algorithm.
//!   Algorithm 0 (Open MPI's own decision) needs none: the interposer runs
//!   the library's `MPI_Bcast` on the user's communicator for it.
//! - Open MPI 5.0 coll/adapt (`ompi_adapt`): Open MPI picks a
//!   communicator's components when it is made, by priority, so the
//!   duplicate is made with `coll_adapt_priority` raised and put back at
//!   once (`bench::adapt::dup_with_adapt`, shared with the benchmark).
//!   adapt reads `coll_adapt_bcast_algorithm` and `_segment_size` at every
//!   call, process-wide, so each call writes them (where they differ from
//!   what is set) before `PMPI_Bcast` on the duplicate and puts back what
//!   it found after: the application's other broadcasts, and other
//!   duplicates' calls, see their own values.
//! - MPICH (`mpich`): `MPIR_CVAR_BCAST_INTRA_ALGORITHM`, read at every call
//!   process-wide, written around `PMPI_Bcast` on the user's communicator
//!   and put back, as for adapt (MPICH's own collectives call its
//!   broadcast inside, so it must not stay forced). `auto` is MPICH's own
//!   decision: nothing forced, like coll/tuned's 0.
//!
//! The variables are held open ([`ffi::Cvar`]: one `MPI_T_cvar_read` and
//! up to two `MPI_T_cvar_write` per variable and call, no lookup). Their
//! values come from the running library, read as the benchmark reads them
//! (`bench::adapt::bcast_algorithms`, `bench::mpich::bcast_algorithms`),
//! which also checks that `MPI_T` may write them.
//!
//! Threads: a per-call variable is process-wide, so under
//! `MPI_THREAD_MULTIPLE` two threads' broadcasts could each read the
//! other's value, and ranks run different algorithms (a hang). Holding a
//! lock across the broadcast would not help (a lock held across a blocking
//! collective deadlocks when two threads' calls meet in another order on
//! another rank). So adapt and MPICH choices are not forced under
//! `MPI_THREAD_MULTIPLE`: the library's default runs, warned once.
//! coll/tuned choices are (their variables are read once, when the
//! duplicate is made under [`FORCING`]).
//!
//! A forcing is set up lazily, at the first call that chooses it, and that
//! is collective-safe: the choice depends only on what every rank shares
//! (the communicator, the byte count), so every rank sets it up at the
//! same call. Setting up ends with one allreduce on the communicator, so
//! every rank agrees whether forcing worked; where it did not (another
//! library, a variable `MPI_T` will not write, an algorithm this library
//! does not have, dynamic rules off, threads), every rank runs the
//! library's default `MPI_Bcast` for that choice instead, with one
//! warning. The duplicates are freed with the communicator's state (when
//! the application frees the communicator, or at `MPI_Finalize`).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ffi::c_int;
use std::sync::Mutex;

use colltune_core::library::LibraryChoice;
use colltune_core::mpich;
use colltune_core::ompi::{adapt, Forced};

use crate::transport::mpi::control::CommHandle;
use crate::transport::mpi::ffi::{Cvar, MPI_Comm};
use crate::transport::mpi::{ffi, Comm, Control, MpiError, Op};

const ALGORITHM: &str = "coll_tuned_bcast_algorithm";
const SEGMENT: &str = "coll_tuned_bcast_algorithm_segmentsize";
const DYNAMIC: &str = "coll_tuned_use_dynamic_rules";

/// What one library choice runs with on one communicator, once set up:
/// the communicator (a forced duplicate, or the user's) and the variables
/// written around each call. Plain data: read by any thread without a lock.
#[derive(Clone, Copy, Debug)]
pub struct Forcing {
    /// The duplicate to run on; None: the user's communicator.
    comm: Option<MPI_Comm>,
    per_call: PerCall,
}

/// Variables a choice writes around each call (and puts back after).
#[derive(Clone, Copy, Debug)]
enum PerCall {
    None,
    Set([Option<(Cvar, c_int)>; 2]),
}

impl Forcing {
    /// The duplicate it runs on, if any (None: the user's communicator).
    pub fn comm(&self) -> Option<MPI_Comm> {
        self.comm
    }

    /// Runs `call` on the communicator to use (the duplicate, else `user`)
    /// with the choice's variables written before and put back after.
    /// A variable that cannot be written here (it could at setup, on every
    /// rank) is left as it is: the call still runs, never skipped, so no
    /// rank is left waiting.
    #[inline]
    pub fn run<T>(&self, user: MPI_Comm, call: impl FnOnce(MPI_Comm) -> T) -> T {
        let comm = self.comm.unwrap_or(user);
        let PerCall::Set(vars) = self.per_call else {
            return call(comm);
        };
        let mut old: [Option<c_int>; 2] = [None; 2];
        for (i, (var, value)) in vars
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Some((i, (*v)?)))
        {
            match var.read() {
                Ok(now) if now == value => {}
                Ok(now) => {
                    if var.write(value).is_ok() {
                        old[i] = Some(now);
                    }
                }
                Err(_) => {}
            }
        }
        let r = call(comm);
        for (i, v) in vars.iter().enumerate() {
            if let (Some((var, _)), Some(was)) = (v, old[i]) {
                let _ = var.write(was);
            }
        }
        r
    }
}

/// Per communicator: the forcings set up so far, by choice (None: forcing
/// is unavailable here, the library's default runs), and the duplicates
/// they own.
#[derive(Default)]
pub(crate) struct LibraryComms {
    made: RefCell<Vec<(LibraryChoice, Made)>>,
}

/// What one choice's set-up made: the forcing and its duplicate, or
/// nothing where the choice could not be forced.
type Made = Option<(Forcing, Option<CommHandle>)>;

impl LibraryComms {
    /// How `f` runs on `comm`: set up at the first call (collective over
    /// `comm`, as that call is); None where it cannot be forced (then the
    /// library's default broadcast on the user's communicator).
    pub(crate) fn get(&self, comm: &Comm, f: LibraryChoice) -> Option<Forcing> {
        if let Some((_, c)) = self.made.borrow().iter().find(|(k, _)| *k == f) {
            return c.as_ref().map(|(x, _)| *x);
        }
        let made = match make(comm, f) {
            Ok(c) => Some(c),
            Err(why) => {
                warn_once(
                    comm,
                    &format!(
                        "cannot force {f} here: {why}; the table's rule runs the MPI library's default MPI_Bcast instead"
                    ),
                );
                None
            }
        };
        let forcing = made.as_ref().map(|(x, _)| *x);
        self.made.borrow_mut().push((f, made));
        forcing
    }

    /// How many duplicates were made (for tests and traces).
    pub(crate) fn len(&self) -> usize {
        self.made
            .borrow()
            .iter()
            .filter(|(_, c)| matches!(c, Some((_, Some(_)))))
            .count()
    }
}

/// Serialises forcing in this process: the variables are process-wide.
static FORCING: Mutex<()> = Mutex::new(());

/// Sets up a forcing (collective over `comm`): this rank's part, then one
/// allreduce so that every rank agrees.
fn make(comm: &Comm, f: LibraryChoice) -> Result<(Forcing, Option<CommHandle>), String> {
    let guard = FORCING.lock().unwrap_or_else(|p| p.into_inner());
    let (mine, dup): (
        Result<PerCall, String>,
        Option<Result<CommHandle, MpiError>>,
    ) = match f {
        LibraryChoice::Tuned(t) => {
            let forced = force(t);
            // Every rank duplicates, forced or not, so the collective calls match.
            let dup = CommHandle::dup_private(comm.raw());
            let restored = forced.as_ref().ok().map(|old| restore(*old));
            let mine = match (forced, restored) {
                (Err(e), _) => Err(e),
                (_, Some(Err(e))) => Err(format!(
                    "restoring {ALGORITHM} after forcing it: {e} (the application's next communicators may run the forced algorithm)"
                )),
                _ => Ok(PerCall::None),
            };
            (mine, Some(dup))
        }
        LibraryChoice::Adapt(a) => {
            let mine = adapt_vars(a);
            // Every rank duplicates (with adapt's priority raised where it
            // can be), so the collective calls match.
            let dup = crate::bench::adapt::dup_with_adapt(comm);
            (mine, Some(dup))
        }
        LibraryChoice::Mpich(m) => (mpich_vars(m), None),
    };
    drop(guard);
    let mine: Result<PerCall, String> = match (mine, &dup) {
        (Err(e), _) => Err(e),
        (_, Some(Err(e))) => Err(e.to_string()),
        (Ok(p), _) => Ok(p),
    };
    // Every rank agrees: forced everywhere, or nowhere.
    let ok = comm
        .allreduce(u64::from(mine.is_ok()), Op::Min)
        .map_err(|e| e.to_string())?;
    match (mine, dup) {
        (Ok(per_call), dup) if ok == 1 => {
            let dup = dup.and_then(Result::ok);
            Ok((
                Forcing {
                    comm: dup.as_ref().map(CommHandle::raw),
                    per_call,
                },
                dup,
            ))
        }
        (Err(why), _) => Err(why),
        // Dropping a duplicate made here frees it.
        _ => Err("it could not be forced on another rank".into()),
    }
}

/// Why a per-call variable cannot be forced under `MPI_THREAD_MULTIPLE`.
fn threads(var: &str) -> Result<(), String> {
    if ffi::thread_multiple() {
        return Err(format!(
            "MPI runs with MPI_THREAD_MULTIPLE, and {var} is process-wide and read at every call: two threads' broadcasts could read each other's value and ranks run different algorithms"
        ));
    }
    Ok(())
}

/// coll/adapt's algorithm and segment for `a`, checked against what this
/// library offers and that `MPI_T` may write them.
fn adapt_vars(a: adapt::Forced) -> Result<PerCall, String> {
    threads(adapt::ALGORITHM)?;
    let offered = crate::bench::adapt::bcast_algorithms().map_err(|e| e.to_string())?;
    let Some(c) = offered.iter().find(|c| c.id == a.id) else {
        return Err(format!(
            "this library's {} has no value {}",
            adapt::ALGORITHM,
            a.id
        ));
    };
    if c.name != a.name() {
        return Err(format!(
            "this library's coll/adapt algorithm {} is {}, not {}",
            a.id,
            c.name,
            a.name()
        ));
    }
    let segment =
        c_int::try_from(a.segment).map_err(|_| format!("segment {}: too large", a.segment))?;
    let open = |n: &'static str| Cvar::open(n).map_err(|e| e.to_string());
    Ok(PerCall::Set([
        Some((open(adapt::ALGORITHM)?, a.id)),
        Some((open(adapt::SEGMENT)?, segment)),
    ]))
}

/// MPICH's broadcast algorithm variable and the value of `m`'s name in
/// this library, checked writable.
fn mpich_vars(m: mpich::Forced) -> Result<PerCall, String> {
    threads(mpich::BCAST_CVAR)?;
    let offered = crate::bench::mpich::bcast_algorithms().map_err(|e| e.to_string())?;
    let Some(c) = offered.all.iter().find(|c| c.name == m.name) else {
        return Err(format!(
            "this library's {} has no `{}` (it offers {})",
            mpich::BCAST_CVAR,
            m.name,
            offered
                .all
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    let var = Cvar::open(mpich::BCAST_CVAR).map_err(|e| e.to_string())?;
    Ok(PerCall::Set([Some((var, c.value)), None]))
}

/// Writes the coll/tuned forcing variables; returns what they were.
fn force(f: Forced) -> Result<(i32, i32), String> {
    let why = |e: MpiError| e.to_string();
    if ffi::cvar_read_int(DYNAMIC).map_err(why)? == 0 {
        return Err(format!(
            "Open MPI's {DYNAMIC} is off, and it is read only at MPI_Init: set OMPI_MCA_{DYNAMIC}=1 (the colltune preload does when COLLTUNE_TABLE is set)"
        ));
    }
    let old = (
        ffi::cvar_read_int(ALGORITHM).map_err(why)?,
        ffi::cvar_read_int(SEGMENT).map_err(why)?,
    );
    ffi::cvar_write_int(ALGORITHM, f.id as i32).map_err(why)?;
    if let Err(e) = ffi::cvar_write_int(SEGMENT, f.segment as i32) {
        let _ = restore(old);
        return Err(why(e));
    }
    Ok(old)
}

fn restore((algorithm, segment): (i32, i32)) -> Result<(), MpiError> {
    let a = ffi::cvar_write_int(ALGORITHM, algorithm);
    let s = ffi::cvar_write_int(SEGMENT, segment);
    a.and(s)
}

/// Prints a warning once per process and message, on rank 0 of `comm`.
fn warn_once(comm: &Comm, msg: &str) {
    static SEEN: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    if comm.rank() == 0
        && SEEN
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(msg.to_string())
    {
        crate::say(&format!("warning: {msg}"));
    }
}
