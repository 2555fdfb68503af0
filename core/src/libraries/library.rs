//! The MPI library's own broadcast algorithms as table choices, of every
//! library colltune can force them on:
//!
//! | table `algorithm` | library, component | forced how (at run time) |
//! |---|---|---|
//! | `ompi_tuned` ([`crate::libraries::ompi::Forced`]) | Open MPI coll/tuned | a duplicate made with `coll_tuned_bcast_algorithm` / `_segmentsize` written |
//! | `ompi_adapt` ([`crate::libraries::ompi::adapt::Forced`]) | Open MPI 5.0 coll/adapt | a duplicate made with `coll_adapt_priority` raised; algorithm and segment written around each call |
//! | `mpich` ([`crate::libraries::mpich::Forced`]) | MPICH 4, 5 | `MPIR_CVAR_BCAST_INTRA_ALGORITHM` written around each call |
//! | `ompi_libnbc` ([`crate::libraries::ompi::libnbc::Forced`]) | Open MPI coll/libnbc: `MPI_Ibcast`, `MPI_Bcast_init` | `coll_libnbc_ibcast_algorithm` written around each call |
//! | `mpich_ibcast` ([`crate::libraries::mpich_ibcast::Forced`]) | MPICH 4, 5: `MPI_Ibcast`, `MPI_Bcast_init` | `MPIR_CVAR_IBCAST_INTRA_ALGORITHM` written around each call |
//!
//! The first three run a blocking `MPI_Bcast` (a table's `bcast:` rules),
//! the last two a nonblocking or persistent one (its `ibcast:` and
//! `bcast_init:` rules): [`LibraryChoice::call`].
//!
//! Each is written with `execution: library`; `colltune_mpi::select::library`
//! forces them, and falls back to the library's default `MPI_Bcast` (one
//! warning, agreed by every rank) where the running library cannot.

use colltune_algorithms::AlgoSpec;

use crate::libraries::{mpich, mpich_ibcast, ompi};

/// One of the MPI library's own broadcast algorithms, as a table chooses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LibraryChoice {
    /// Open MPI coll/tuned (`ompi_tuned`).
    Tuned(ompi::Forced),
    /// Open MPI coll/adapt (`ompi_adapt`).
    Adapt(ompi::adapt::Forced),
    /// MPICH's `MPIR_CVAR_BCAST_INTRA_ALGORITHM` (`mpich`).
    Mpich(mpich::Forced),
    /// Open MPI coll/libnbc's nonblocking schedules (`ompi_libnbc`).
    Libnbc(ompi::libnbc::Forced),
    /// MPICH's `MPIR_CVAR_IBCAST_INTRA_ALGORITHM` (`mpich_ibcast`).
    MpichIbcast(mpich_ibcast::Forced),
}

/// Which broadcast call a library choice runs: the blocking `MPI_Bcast`,
/// or the nonblocking and persistent ones (`MPI_Ibcast`, `MPI_Bcast_init`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    Blocking,
    Nonblocking,
}

/// The table names (`algorithm:`) of the library's own algorithms.
pub const TABLE_NAMES: [&str; 5] = [
    ompi::TABLE_NAME,
    ompi::adapt::TABLE_NAME,
    mpich::TABLE_NAME,
    ompi::libnbc::TABLE_NAME,
    mpich_ibcast::TABLE_NAME,
];

/// Whether a table's `algorithm` names one of the library's own algorithms.
pub fn is_table_name(name: &str) -> bool {
    TABLE_NAMES.contains(&name)
}

impl LibraryChoice {
    /// Reads a specification whose name is one of [`TABLE_NAMES`]; the
    /// error says what is wrong and what to write.
    pub fn from_spec(spec: &AlgoSpec) -> Result<LibraryChoice, String> {
        match spec.name.as_str() {
            ompi::TABLE_NAME => ompi::Forced::from_spec(spec).map(LibraryChoice::Tuned),
            ompi::adapt::TABLE_NAME => {
                ompi::adapt::Forced::from_spec(spec).map(LibraryChoice::Adapt)
            }
            mpich::TABLE_NAME => mpich::Forced::from_spec(spec).map(LibraryChoice::Mpich),
            ompi::libnbc::TABLE_NAME => {
                ompi::libnbc::Forced::from_spec(spec).map(LibraryChoice::Libnbc)
            }
            mpich_ibcast::TABLE_NAME => {
                mpich_ibcast::Forced::from_spec(spec).map(LibraryChoice::MpichIbcast)
            }
            other => Err(format!(
                "`{other}` is none of the library choices ({})",
                TABLE_NAMES.join(", ")
            )),
        }
    }

    /// The canonical specification (what bench and tables write).
    pub fn spec(&self) -> AlgoSpec {
        match self {
            LibraryChoice::Tuned(f) => f.spec(),
            LibraryChoice::Adapt(f) => f.spec(),
            LibraryChoice::Mpich(f) => f.spec(),
            LibraryChoice::Libnbc(f) => f.spec(),
            LibraryChoice::MpichIbcast(f) => f.spec(),
        }
    }

    /// Which call it runs: a blocking broadcast's choices (`ompi_tuned`,
    /// `ompi_adapt`, `mpich`) or a nonblocking or persistent one's
    /// (`ompi_libnbc`, `mpich_ibcast`).
    pub fn call(&self) -> CallKind {
        match self {
            LibraryChoice::Tuned(_) | LibraryChoice::Adapt(_) | LibraryChoice::Mpich(_) => {
                CallKind::Blocking
            }
            LibraryChoice::Libnbc(_) | LibraryChoice::MpichIbcast(_) => CallKind::Nonblocking,
        }
    }

    /// Whether this is the library's own decision, nothing forced (coll/tuned
    /// algorithm 0, MPICH's `auto`): the library's `MPI_Bcast` on the
    /// user's communicator.
    pub fn is_default(&self) -> bool {
        match self {
            LibraryChoice::Tuned(f) => f.is_default(),
            LibraryChoice::Adapt(_) => false,
            LibraryChoice::Mpich(f) => f.is_default(),
            LibraryChoice::Libnbc(f) => f.is_default(),
            LibraryChoice::MpichIbcast(f) => f.is_default(),
        }
    }

    /// The library it belongs to, as messages say it.
    pub fn library(&self) -> &'static str {
        match self {
            LibraryChoice::Tuned(_) | LibraryChoice::Adapt(_) | LibraryChoice::Libnbc(_) => {
                "Open MPI"
            }
            LibraryChoice::Mpich(_) | LibraryChoice::MpichIbcast(_) => "MPICH",
        }
    }

    /// Where a table's author finds the ids or names (for `validate`'s fixes).
    pub fn reference(table_name: &str) -> &'static str {
        match table_name {
            ompi::adapt::TABLE_NAME => "see `ompi_adapt` in tuning-tables/README.md (ompi_info --param coll adapt --level 9 lists the algorithms of coll_adapt_bcast_algorithm)",
            mpich::TABLE_NAME => "see `mpich` in tuning-tables/README.md (MPICH's MPIR_CVAR_BCAST_INTRA_ALGORITHM names, as `mpivars` lists them)",
            ompi::libnbc::TABLE_NAME => "see `ompi_libnbc` in tuning-tables/README.md (ompi_info --param coll libnbc --level 9 lists coll_libnbc_ibcast_algorithm's ids)",
            mpich_ibcast::TABLE_NAME => "see `mpich_ibcast` in tuning-tables/README.md (MPICH's MPIR_CVAR_IBCAST_INTRA_ALGORITHM names, as `mpivars` lists them)",
            _ => "see `ompi_tuned` in tuning-tables/README.md (ompi_info --param coll tuned --level 9 lists the ids)",
        }
    }
}

impl std::fmt::Display for LibraryChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LibraryChoice::Tuned(x) => x.fmt(f),
            LibraryChoice::Adapt(x) => x.fmt(f),
            LibraryChoice::Mpich(x) => x.fmt(f),
            LibraryChoice::Libnbc(x) => x.fmt(f),
            LibraryChoice::MpichIbcast(x) => x.fmt(f),
        }
    }
}

impl From<ompi::Forced> for LibraryChoice {
    fn from(f: ompi::Forced) -> Self {
        LibraryChoice::Tuned(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<LibraryChoice, String> {
        LibraryChoice::from_spec(&AlgoSpec::parse(text).unwrap())
    }

    #[test]
    fn each_family_reads_and_writes_its_canonical_spec() {
        for (text, canonical) in [
            (
                "ompi_tuned:algorithm=binomial",
                "ompi_tuned:algorithm=6,name=binomial,segment=0",
            ),
            (
                "ompi_adapt:algorithm=2,segment=65536",
                "ompi_adapt:algorithm=2,name=in_order_binomial,segment=65536",
            ),
            (
                "ompi_adapt:algorithm=chain",
                "ompi_adapt:algorithm=5,name=chain,segment=0",
            ),
            (
                "ompi_adapt:name=linear,segment=0",
                "ompi_adapt:algorithm=6,name=linear,segment=0",
            ),
            (
                "mpich:algorithm=scatter_ring_allgather",
                "mpich:algorithm=scatter_ring_allgather",
            ),
        ] {
            let c = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(c.spec().to_string(), canonical, "{text}");
            // The canonical spec reads back as the same choice.
            assert_eq!(LibraryChoice::from_spec(&c.spec()).unwrap(), c);
        }
        assert!(parse("mpich:algorithm=auto").unwrap().is_default());
        assert!(parse("ompi_tuned:algorithm=0").unwrap().is_default());
        assert!(!parse("ompi_adapt:algorithm=1").unwrap().is_default());
        assert_eq!(
            parse("mpich:algorithm=tree").unwrap().to_string(),
            "MPICH's tree (MPIR_CVAR_BCAST_INTRA_ALGORITHM)"
        );
        assert_eq!(
            parse("ompi_adapt:algorithm=3,segment=8192")
                .unwrap()
                .to_string(),
            "Open MPI's coll/adapt binary (algorithm 3, segment 8192)"
        );
    }

    #[test]
    fn bad_choices_say_why_and_what_to_write() {
        for (text, says) in [
            ("ompi_adapt", "needs `algorithm`"),
            ("ompi_adapt:algorithm=0", "not implemented"),
            ("ompi_adapt:algorithm=tuned", "not implemented"),
            (
                "ompi_adapt:algorithm=7",
                "unknown coll/adapt broadcast algorithm `7`",
            ),
            ("ompi_adapt:algorithm=warp", "1 (binomial)"),
            ("ompi_adapt:algorithm=1,name=chain", "make them agree"),
            ("ompi_adapt:algorithm=1,radix=4", "no parameter `radix`"),
            ("ompi_adapt:algorithm=1,segment=4294967296", "larger than"),
            ("mpich", "needs `algorithm`"),
            (
                "mpich:algorithm=warp",
                "unknown MPICH broadcast algorithm `warp`",
            ),
            ("mpich:algorithm=warp", "scatter_ring_allgather"),
            ("mpich:algorithm=6", "unknown MPICH broadcast algorithm `6`"),
            ("mpich:algorithm=tree,k=4", "no parameter `k`"),
            ("binomial", "none of the library choices"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn library_read_choices_map_to_table_choices() {
        let c = ompi::adapt::Choice {
            id: 4,
            name: "pipeline".into(),
        };
        assert_eq!(
            ompi::adapt::Forced::from_choice(&c, 8192),
            Some(ompi::adapt::Forced {
                id: 4,
                segment: 8192
            })
        );
        // A library whose values differ from the documented ones: no choice.
        let odd = ompi::adapt::Choice {
            id: 4,
            name: "chain".into(),
        };
        assert_eq!(ompi::adapt::Forced::from_choice(&odd, 0), None);
        let tuned = ompi::adapt::Choice {
            id: 0,
            name: "tuned".into(),
        };
        assert_eq!(ompi::adapt::Forced::from_choice(&tuned, 0), None);
        let m = mpich::Choice {
            value: 5,
            name: "scatter_ring_allgather".into(),
        };
        assert_eq!(
            mpich::Forced::from_choice(&m).map(|f| f.spec().to_string()),
            Some(m.spec())
        );
        let new = mpich::Choice {
            value: 8,
            name: "fancy_new".into(),
        };
        assert_eq!(mpich::Forced::from_choice(&new), None);
    }
}
