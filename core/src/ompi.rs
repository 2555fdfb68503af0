//! Open MPI's coll/tuned broadcast algorithms: their numeric ids (as
//! `coll_tuned_bcast_algorithm` and the dynamic rules file use them), their
//! names, and colltune's equivalent. Used to force them as benchmark
//! baselines and to export tables to Open MPI's formats.

/// One coll/tuned broadcast algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TunedBcast {
    pub id: u32,
    pub name: &'static str,
    /// colltune's algorithm with the same schedule shape.
    pub ours: &'static str,
    /// Whether Open MPI segments it (`coll_tuned_bcast_algorithm_segmentsize`).
    pub segmented: bool,
}

/// Open MPI 4.1's broadcast algorithms (`ompi_info --param coll tuned --level 9`).
pub const TUNED_BCAST: &[TunedBcast] = &[
    TunedBcast {
        id: 1,
        name: "basic_linear",
        ours: "linear",
        segmented: false,
    },
    TunedBcast {
        id: 2,
        name: "chain",
        ours: "chain",
        segmented: true,
    },
    TunedBcast {
        id: 3,
        name: "pipeline",
        ours: "pipeline",
        segmented: true,
    },
    TunedBcast {
        id: 4,
        name: "split_binary_tree",
        ours: "split_binary",
        segmented: true,
    },
    TunedBcast {
        id: 5,
        name: "binary_tree",
        ours: "binary",
        segmented: true,
    },
    TunedBcast {
        id: 6,
        name: "binomial",
        ours: "binomial",
        segmented: true,
    },
    TunedBcast {
        id: 7,
        name: "knomial",
        ours: "knomial",
        segmented: true,
    },
    TunedBcast {
        id: 8,
        name: "scatter_allgather",
        ours: "scatter_allgather",
        segmented: false,
    },
    TunedBcast {
        id: 9,
        name: "scatter_allgather_ring",
        ours: "scatter_allgather_ring",
        segmented: false,
    },
];

pub fn tuned_by_id(id: u32) -> Option<&'static TunedBcast> {
    TUNED_BCAST.iter().find(|t| t.id == id)
}

/// Whether an MPI library version string is Open MPI's.
pub fn is_open_mpi(library: &str) -> bool {
    library.contains("Open MPI")
}
