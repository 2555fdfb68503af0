//! Open MPI 5.0's coll/han broadcast choices as baselines: which ones the
//! library offers (the `MPI_T` enumeration of
//! `coll_han_use_bcast_algorithm`, which [`colltune_core::libraries::ompi::han`]
//! reads), a communicator on which han serves the broadcast, and forcing
//! one choice for a point: as coll/adapt (`crate::forcing::component`), the priority
//! raised while the communicator is made; per point, the algorithm and
//! (for `intra`) the segment, read by han at every call.
//!
//! han serves only communicators that span several nodes with as many
//! ranks on each; where this one does not, [`bcast_algorithms`] says why.
//! The modules of `intra`'s two steps are read only at `MPI_Init`
//! ([`colltune_core::libraries::ompi::han`]): the samples record those in effect.
//!
//! That it takes effect is checked outside the process, against Open MPI
//! itself, on the emulated cluster (`jobs/check-ompi-forcing.sh`):
//! `coll_base_verbose` shows han enabled at priority 100 on the duplicate
//! and han's own verbose output the algorithm written; the pml monitoring
//! shows each choice's messages the same as forced by the environment at
//! `MPI_Init`, and the modules unchanged by an `MPI_T` write.

use colltune_core::libraries::ompi::han::{
    baselines, from_items, module_in_effect, Choice, Modules, ALGORITHM, FORCE_PRIORITY,
    LOW_MODULE, LOW_MODULES, PRIORITY, SEGMENT, UP_MODULE, UP_MODULES,
};
use colltune_core::libraries::ompi::HAN_ONE_NODE;

use crate::forcing::component::Component;
use crate::transport::mpi::{ffi, Comm};

/// coll/han, forced (`crate::forcing::component`): its algorithm and segment per
/// point, in that order.
pub(crate) static COMPONENT: Component = Component {
    priority: PRIORITY,
    force_priority: FORCE_PRIORITY,
    per_call: &[ALGORITHM, SEGMENT],
};

/// Why coll/han's choices cannot be forced here, said once.
#[derive(Debug, thiserror::Error)]
pub enum HanUnavailable {
    #[error("{library} has no coll/han broadcast choices through MPI_T ({why})")]
    NoComponent { library: String, why: String },
    #[error("{library}: cannot read coll/han's choices: {why}")]
    Unreadable { library: String, why: String },
    #[error("{library} does not let MPI_T write coll/han's variables: {why}")]
    NotWritable { library: String, why: String },
    #[error("{HAN_ONE_NODE}")]
    OneNode,
    #[error("coll/han hands every broadcast to the component below it when nodes hold different numbers of ranks (here {layout}: are_ppn_imbalanced, coll_han_bcast.c), so its choices cannot run on this layout")]
    Imbalanced { layout: String },
}

/// What this library's coll/han offers on `comm`: the algorithms worth
/// forcing (all but `default`) and the modules of `intra`'s two steps in
/// effect; after checking that han can serve `comm` (several nodes, as
/// many ranks on each, as the library sees them) and that `MPI_T` may
/// write the three variables (each current value is written back).
pub fn bcast_algorithms(comm: &Comm) -> Result<(Vec<Choice>, Modules), HanUnavailable> {
    let library = super::library_short();
    let info = ffi::cvar_info(ALGORITHM).map_err(|e| HanUnavailable::NoComponent {
        library: library.clone(),
        why: e.message,
    })?;
    let unreadable = |why: String| HanUnavailable::Unreadable {
        library: library.clone(),
        why,
    };
    let items = info
        .items
        .ok_or_else(|| unreadable(format!("{ALGORITHM} has no enumeration")))?;
    let all = from_items(&items).map_err(|e| unreadable(format!("{ALGORITHM}: {e}")))?;
    let nodes = comm.shared_memory_nodes();
    if nodes.num_nodes() < 2 {
        return Err(HanUnavailable::OneNode);
    }
    if !nodes.is_uniform() {
        return Err(HanUnavailable::Imbalanced {
            layout: nodes.to_string(),
        });
    }
    COMPONENT
        .check_writable()
        .map_err(|e| HanUnavailable::NotWritable {
            library: library.clone(),
            why: e.to_string(),
        })?;
    let module = |var: &str, names: &[&'static str]| {
        let text = ffi::cvar_read_string(var).map_err(|e| unreadable(format!("{var}: {e}")))?;
        module_in_effect(&text, names)
            .map(str::to_string)
            .map_err(|e| unreadable(format!("{var}: {e}")))
    };
    let modules = Modules {
        up: module(UP_MODULE, UP_MODULES)?,
        low: module(LOW_MODULE, LOW_MODULES)?,
    };
    Ok((baselines(&all), modules))
}
