//! MPICH's nonblocking and persistent broadcasts: `MPI_Ibcast` picks its
//! schedule by `MPIR_CVAR_IBCAST_INTRA_ALGORITHM`, read at every call,
//! process-wide, as the blocking call's variable is
//! ([`super::mpich`]); `MPI_Bcast_init` builds its schedule from the same
//! algorithms when it is called. The names (MPICH 4.0 to 5.0):
//!
//! ```text
//!  auto, sched_auto                       MPICH's own decision
//!  sched_binomial, sched_smp              schedules of plain messages
//!  sched_scatter_recursive_doubling_allgather, sched_scatter_ring_allgather
//!  tsp_tree, tsp_ring                     the generic transport's tree, ring
//!  tsp_scatterv_recexch_allgatherv, tsp_scatterv_ring_allgatherv
//!  circ_graph                             MPICH 5: the circulant-graph pipeline
//! ```
//!
//! Which names a library offers, and their values, are read from the
//! library at run time, as for the blocking call.

use colltune_algorithms::{AlgoSpec, ParamValue};

/// MPICH's nonblocking broadcast algorithm selector.
pub const IBCAST_CVAR: &str = "MPIR_CVAR_IBCAST_INTRA_ALGORITHM";
/// The global that holds [`IBCAST_CVAR`]'s value in MPICH's sources (hidden
/// in the builds seen so far, MPICH 4.0 and 5.0: then it is written
/// through `MPI_T`).
pub const STORAGE: &std::ffi::CStr = c"MPIR_CVAR_IBCAST_INTRA_ALGORITHM";

/// The `algorithm` column of samples of a forced MPICH nonblocking one.
pub const TABLE_NAME: &str = "mpich_ibcast";

/// The names MPICH documents for [`IBCAST_CVAR`]: used to split a
/// description whose entries are joined without line breaks (4.0), and as
/// the names a table may write.
pub const DOCUMENTED: &[&str] = &[
    "auto",
    "sched_auto",
    "sched_binomial",
    "sched_smp",
    "sched_scatter_recursive_doubling_allgather",
    "sched_scatter_ring_allgather",
    "tsp_tree",
    "tsp_scatterv_recexch_allgatherv",
    "tsp_scatterv_ring_allgatherv",
    "tsp_ring",
    "circ_graph",
];

/// One of MPICH's nonblocking broadcasts as a table choice (`algorithm:
/// mpich_ibcast`, `params: {algorithm: <name>}`); `auto` is MPICH's own
/// decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Forced {
    pub name: &'static str,
}

impl Forced {
    /// Whether this is MPICH's own decision (`auto`), nothing forced.
    pub fn is_default(&self) -> bool {
        self.name == "auto"
    }

    /// The table choice of a name the library offers; None for one MPICH
    /// does not document.
    pub fn from_name(name: &str) -> Option<Forced> {
        DOCUMENTED
            .iter()
            .find(|d| **d == name)
            .map(|name| Forced { name })
    }

    /// Reads a table's `mpich_ibcast` specification: `algorithm`, one of
    /// [`DOCUMENTED`]. The error says what is wrong and what to write.
    pub fn from_spec(spec: &AlgoSpec) -> Result<Forced, String> {
        if spec.name != TABLE_NAME {
            return Err(format!("`{}` is not `{TABLE_NAME}`", spec.name));
        }
        let names = || DOCUMENTED.join(", ");
        let word = super::mpich::algorithm_word(spec, DOCUMENTED, IBCAST_CVAR)?;
        Forced::from_name(&word).ok_or_else(|| {
            format!(
                "{TABLE_NAME}: unknown MPICH nonblocking broadcast algorithm `{word}`; {IBCAST_CVAR} takes {}",
                names()
            )
        })
    }

    /// The canonical specification: `mpich_ibcast:algorithm=tsp_tree`.
    pub fn spec(&self) -> AlgoSpec {
        AlgoSpec::new(TABLE_NAME).with("algorithm", ParamValue::Word(self.name.into()))
    }
}

impl std::fmt::Display for Forced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_default() {
            return write!(
                f,
                "MPICH's own decision ({IBCAST_CVAR}=auto: nothing forced)"
            );
        }
        write!(f, "MPICH's {} ({IBCAST_CVAR})", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_bad_ones_say_what_to_write() {
        let p = |t: &str| Forced::from_spec(&AlgoSpec::parse(t).unwrap());
        let f = p("mpich_ibcast:algorithm=tsp_tree").unwrap();
        assert_eq!(f.spec().to_string(), "mpich_ibcast:algorithm=tsp_tree");
        assert_eq!(Forced::from_spec(&f.spec()).unwrap(), f);
        assert!(p("mpich_ibcast:algorithm=auto").unwrap().is_default());
        assert!(p("mpich_ibcast:algorithm=tree")
            .unwrap_err()
            .contains("sched_binomial"));
        assert!(p("mpich_ibcast").unwrap_err().contains("needs `algorithm`"));
        assert!(p("mpich_ibcast:algorithm=tsp_tree,k=2")
            .unwrap_err()
            .contains("no parameter `k`"));
    }
}
