//! Open MPI coll/tuned's broadcast algorithm, forced on a communicator of
//! its own: Open MPI reads `coll_tuned_bcast_algorithm` and `_segmentsize`
//! when a communicator is created (and only with
//! `coll_tuned_use_dynamic_rules` on, which it reads once, at `MPI_Init`).
//! So forcing is: remember the two variables, write them through `MPI_T`,
//! create the communicator, write back what they were, so that the
//! application's later communicators keep Open MPI's own decision.

use colltune_core::libraries::ompi::Forced;

use crate::transport::mpi::{ffi, MpiError};

/// The forced algorithm (0: Open MPI's own decision).
pub const ALGORITHM: &str = "coll_tuned_bcast_algorithm";
/// Its segment size in bytes (0: not segmented).
pub const SEGMENT: &str = "coll_tuned_bcast_algorithm_segmentsize";
/// Whether coll/tuned looks at forced algorithms and rules files at all.
pub const DYNAMIC: &str = "coll_tuned_use_dynamic_rules";

/// Runs `make` (the creation of a communicator: collective, so it runs
/// whether or not forcing worked here) with `f` forced, and writes the
/// variables back after it. Returns what `make` returned, and whether the
/// communicator runs `f` (the error says why not). `check_dynamic`: refuse
/// where `coll_tuned_use_dynamic_rules` is off (the runtime; the benchmark
/// turns it on itself before `MPI_Init`).
pub fn made_forced<T>(
    f: Forced,
    check_dynamic: bool,
    make: impl FnOnce() -> T,
) -> (T, Result<(), String>) {
    // One session around the reads and writes below, so that they nest in
    // it: on Open MPI each session that starts from none registers every
    // framework again (0.2 s here), and this makes seven.
    let _session = ffi::MpiT::open();
    let forced = force(f, check_dynamic);
    let made = make();
    let forced = match forced {
        Err(e) => Err(e),
        Ok(old) => restore(old).map_err(|e| {
            format!("restoring {ALGORITHM} after forcing it: {e} (the application's next communicators may run the forced algorithm)")
        }),
    };
    (made, forced)
}

/// Writes the two variables; returns what they were.
fn force(f: Forced, check_dynamic: bool) -> Result<(i32, i32), String> {
    let why = |e: MpiError| e.to_string();
    if check_dynamic && ffi::cvar_read_int(DYNAMIC).map_err(why)? == 0 {
        return Err(format!(
            "Open MPI's {DYNAMIC} is off, and it is read only at MPI_Init: set OMPI_MCA_{DYNAMIC}=1 (the colltune preload does when a table's rule needs it)"
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

/// Writes the two variables (0: Open MPI's own decision), for calls that
/// read them per call (the benchmark writes them per point, too).
pub fn write(id: u32, segment: u64) -> Result<(), MpiError> {
    ffi::cvar_write_int(ALGORITHM, id as i32)?;
    ffi::cvar_write_int(SEGMENT, i32::try_from(segment).unwrap_or(i32::MAX))
}
