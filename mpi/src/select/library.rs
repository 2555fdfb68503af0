//! The MPI library's own algorithms as table choices: per communicator, one
//! duplicate for each Open MPI coll/tuned broadcast algorithm the table
//! chooses (`algorithm: ompi_tuned`), made with that algorithm forced.
//! Algorithm 0 (Open MPI's own decision) needs none: the interposer runs the
//! library's `MPI_Bcast` on the user's communicator for it.
//!
//! Open MPI reads `coll_tuned_bcast_algorithm` and `_segmentsize` when a
//! communicator is created (and only with `coll_tuned_use_dynamic_rules`
//! on, which it reads once at `MPI_Init`; the interposition library turns
//! it on there, see `capi::mpi_init`). So forcing is: remember the two
//! variables, write them through `MPI_T`, duplicate, write back what they
//! were, so the application's later communicators keep Open MPI's own
//! decision. Then `PMPI_Bcast` on the duplicate runs the forced algorithm.
//!
//! A duplicate is made lazily, at the first call that chooses it, and that
//! is collective-safe: the choice depends only on what every rank shares
//! (the communicator, the byte count), so every rank makes it at the same
//! call. Making it ends with one allreduce on the communicator, so every
//! rank agrees whether forcing worked; where it did not (not Open MPI, no
//! coll/tuned, dynamic rules off), every rank runs the library's default
//! `MPI_Bcast` for that choice instead, with one warning.
//! The duplicates are freed with the communicator's state (when the
//! application frees the communicator, or at `MPI_Finalize`).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::Mutex;

use colltune_core::ompi::Forced;

use crate::transport::mpi::control::CommHandle;
use crate::transport::mpi::{ffi, Comm, Control, MpiError, Op};

const ALGORITHM: &str = "coll_tuned_bcast_algorithm";
const SEGMENT: &str = "coll_tuned_bcast_algorithm_segmentsize";
const DYNAMIC: &str = "coll_tuned_use_dynamic_rules";

/// Per communicator: the forced duplicates made so far, by choice (None:
/// forcing is unavailable here, the library's default runs).
#[derive(Default)]
pub(crate) struct LibraryComms {
    made: RefCell<Vec<(Forced, Option<CommHandle>)>>,
}

impl LibraryComms {
    /// The communicator to run `f` on: its forced duplicate of `comm`, made
    /// at the first call (collective over `comm`, as that call is); None
    /// where it cannot be forced (then `comm`'s own library broadcast, or
    /// the user's communicator, is the fallback).
    pub(crate) fn get(&self, comm: &Comm, f: Forced) -> Option<ffi::MPI_Comm> {
        if let Some((_, c)) = self.made.borrow().iter().find(|(k, _)| *k == f) {
            return c.as_ref().map(CommHandle::raw);
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
        let raw = made.as_ref().map(CommHandle::raw);
        self.made.borrow_mut().push((f, made));
        raw
    }

    /// How many duplicates were made (for tests and traces).
    pub(crate) fn len(&self) -> usize {
        self.made
            .borrow()
            .iter()
            .filter(|(_, c)| c.is_some())
            .count()
    }
}

/// Serialises forcing in this process: the variables are process-wide.
static FORCING: Mutex<()> = Mutex::new(());

/// Makes the forced duplicate (collective over `comm`).
fn make(comm: &Comm, f: Forced) -> Result<CommHandle, String> {
    let guard = FORCING.lock().unwrap_or_else(|p| p.into_inner());
    let forced = force(f);
    // Every rank duplicates, forced or not, so the collective calls match.
    let dup = CommHandle::dup_private(comm.raw());
    let restored = forced.as_ref().ok().map(|old| restore(*old));
    drop(guard);
    let mine: Result<(), String> = match (&forced, &dup, restored) {
        (Err(e), _, _) => Err(e.clone()),
        (_, Err(e), _) => Err(e.to_string()),
        (_, _, Some(Err(e))) => Err(format!(
            "restoring {ALGORITHM} after forcing it: {e} (the application's next communicators may run the forced algorithm)"
        )),
        _ => Ok(()),
    };
    // Every rank agrees: forced everywhere, or nowhere.
    let ok = comm
        .allreduce(u64::from(mine.is_ok()), Op::Min)
        .map_err(|e| e.to_string())?;
    match (mine, dup) {
        (Ok(()), Ok(d)) if ok == 1 => Ok(d),
        (Err(why), _) => Err(why),
        // Dropping a duplicate made here frees it.
        _ => Err("it could not be forced on another rank".into()),
    }
}

/// Writes the forcing variables; returns what they were.
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
        eprintln!("colltune: warning: {msg}");
    }
}
