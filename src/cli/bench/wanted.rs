//! `bench --baseline`: the baselines a user names, and which are measured
//! (none named: the library's call and every algorithm it lets colltune
//! force).

/// `--baseline`: what to measure beside colltune's algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Baseline {
    /// The library's own MPI_Bcast.
    Mpi,
    /// Each Open MPI coll/tuned algorithm, forced.
    OmpiTuned,
    /// Each Open MPI coll/adapt algorithm, forced through MPI_T (5.0).
    OmpiAdapt,
    /// Each Open MPI 5.0 coll/han broadcast, across nodes.
    OmpiHan,
    /// Each algorithm MPICH's MPIR_CVAR_BCAST_INTRA_ALGORITHM offers.
    MpichAlgorithms,
    /// MPI_Bcast through its MPI_ symbol (the drop-in, under LD_PRELOAD).
    Interposed,
    /// No baseline.
    None,
}

/// Which baselines are measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wanted {
    pub mpi: bool,
    pub tuned: bool,
    pub adapt: bool,
    pub han: bool,
    pub mpich: bool,
    pub interposed: bool,
    /// Named on the command line (then a missing one is said).
    pub asked: bool,
}

impl Wanted {
    /// Those named; none named: the library's call and every algorithm it
    /// lets colltune force (not `interposed`).
    pub fn of(named: &[Baseline]) -> Wanted {
        let has = |b| named.is_empty() || named.contains(&b);
        Wanted {
            mpi: has(Baseline::Mpi),
            tuned: has(Baseline::OmpiTuned),
            adapt: has(Baseline::OmpiAdapt),
            han: has(Baseline::OmpiHan),
            mpich: has(Baseline::MpichAlgorithms),
            interposed: named.contains(&Baseline::Interposed),
            asked: !named.is_empty(),
        }
    }
}
