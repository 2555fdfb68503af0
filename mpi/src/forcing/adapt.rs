//! Open MPI's coll/adapt broadcast algorithms as baselines: which ones the
//! library offers (read through `MPI_T` from its own description, which
//! [`colltune_core::libraries::ompi::adapt`] parses), a communicator on which adapt
//! serves the broadcast, and forcing one algorithm for a point.
//!
//! Open MPI picks a communicator's collective components when the
//! communicator is made, by priority; coll/adapt's is 0, below coll/tuned
//! and coll/han. So the measurer raises `coll_adapt_priority` through
//! `MPI_T` while it duplicates its communicator (`super::component`, shared
//! with coll/han). adapt reads `coll_adapt_bcast_algorithm` and
//! `_segment_size` at every call, process-wide, so a point writes them
//! before its first call (read back) and the measurer writes back the
//! values found at start after the point, as for MPICH. Open MPI 5.0 lets
//! `MPI_T` write the three; 4.1 has them read-only (read at `MPI_Init`),
//! which [`bcast_algorithms`] finds and says.
//!
//! That it takes effect is checked outside the process, against Open MPI
//! itself (`jobs/check-ompi-forcing.sh`): `coll_base_verbose` shows adapt
//! enabled at priority 100 on the duplicate, and the pml monitoring shows
//! each algorithm's messages the same as with adapt forced by the
//! environment at `MPI_Init`.

use colltune_core::libraries::ompi::adapt::{
    from_description, Choice, ALGORITHM, FORCE_PRIORITY, PRIORITY, SEGMENT,
};

use super::component::Component;
use crate::transport::mpi::ffi;

/// coll/adapt, forced (`super::component`): its algorithm and segment per
/// point, in that order.
pub(crate) static COMPONENT: Component = Component {
    priority: PRIORITY,
    force_priority: FORCE_PRIORITY,
    per_call: &[ALGORITHM, SEGMENT],
};

/// Why coll/adapt's algorithms cannot be forced here, said once.
#[derive(Debug, thiserror::Error)]
pub enum AdaptUnavailable {
    #[error("{library} has no coll/adapt broadcast ({why})")]
    NoComponent { library: String, why: String },
    #[error("{library}: cannot read the algorithms {ALGORITHM} takes: {why}")]
    Unreadable { library: String, why: String },
    #[error("{library} does not let MPI_T write coll/adapt's variables (Open MPI 4.1 reads them only at MPI_Init; 5.0 lets MPI_T write them): {why}")]
    NotWritable { library: String, why: String },
}

/// Every broadcast algorithm this library's coll/adapt offers (its value 0,
/// `tuned`, included: [`colltune_core::libraries::ompi::adapt::baselines`] leaves it
/// out), after checking that the three variables can be written (each
/// current value is written back).
pub fn bcast_algorithms() -> Result<Vec<Choice>, AdaptUnavailable> {
    let library = super::library_short();
    let info = ffi::cvar_info(ALGORITHM).map_err(|e| AdaptUnavailable::NoComponent {
        library: library.clone(),
        why: e.message,
    })?;
    let all = from_description(&info.description).map_err(|why| AdaptUnavailable::Unreadable {
        library: library.clone(),
        why,
    })?;
    COMPONENT
        .check_writable()
        .map_err(|e| AdaptUnavailable::NotWritable {
            library: library.clone(),
            why: e.to_string(),
        })?;
    Ok(all)
}
