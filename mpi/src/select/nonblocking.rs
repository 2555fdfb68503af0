//! The table's choices for `MPI_Ibcast` and `MPI_Bcast_init` (its `ibcast`
//! and `bcast_init` sections): each one of the MPI library's own
//! nonblocking algorithms, forced around the call
//! ([`forcing::nonblocking`]), or the library's own decision.
//!
//! ```text
//!  MPI_Init ── Forcings::agree: each choice the table names, forceable
//!              here? one allreduce per choice on MPI_COMM_WORLD: forced on
//!              every rank, or on none (then the library's own, warned once)
//!  first MPI_Ibcast / MPI_Bcast_init on a communicator ── CallDecisions:
//!              its shape from MPI_COMM_WORLD's node map (local: no message;
//!              a communicator with ranks outside MPI_COMM_WORLD gets the
//!              library's own), the sections' rules for it
//!  each call ── a binary search on the bytes, the variable written around
//!              PMPI_Ibcast / PMPI_Bcast_init under a lock
//! ```
//!
//! Nothing here may wait for another rank: a nonblocking call must return
//! whatever the others do, so every decision is local and made from what
//! every rank shares (the table, agreed at `MPI_Init`; the communicator's
//! ranks; the signature's bytes).
//!
//! colltune's own schedules are no choice for these calls: their requests
//! complete in the library's `MPI_Wait` and `MPI_Test`, which progress only
//! the library's own schedules (Open MPI has no generalized request that
//! it polls; MPICH's `MPIX_Grequest_start` would be one way, not built).

use std::collections::BTreeSet;

use colltune_core::libraries::library::LibraryChoice;
use colltune_core::tables::decide::{Choice, Decisions, Selector};
use colltune_core::tables::table::{CommKey, Section};

use crate::forcing::nonblocking::{forcing, NbForcing};
use crate::transport::mpi::ffi::MPI_Comm;
use crate::transport::mpi::Shape;

/// Each library choice the table's nonblocking sections name, and how it
/// runs in this process: agreed by every rank at `MPI_Init`.
#[derive(Debug, Default)]
pub struct Forcings {
    made: Vec<(LibraryChoice, NbForcing)>,
}

impl Forcings {
    /// Whether the table has no nonblocking rules (then every call is the
    /// library's own, with nothing looked up).
    pub fn is_empty(&self) -> bool {
        self.made.is_empty()
    }

    /// Sets up each choice the table's `ibcast` and `bcast_init` rules name
    /// (collective over `world`, colltune's private `MPI_COMM_WORLD`: one
    /// allreduce per choice, only where the table has such rules). A choice
    /// this library cannot force on every rank runs as the library's own
    /// decision, said once on rank 0.
    /// `usable`: whether this rank can keep per-communicator decisions (its
    /// attribute key was made); where not, nothing is forced anywhere.
    pub fn agree(sel: &Selector, world: MPI_Comm, rank: usize, usable: bool) -> Forcings {
        let Some(t) = sel.table.as_ref() else {
            return Forcings::default();
        };
        let named: BTreeSet<LibraryChoice> = Section::NONBLOCKING
            .into_iter()
            .flat_map(|s| t.section(s))
            .flat_map(|cr| &cr.rules)
            .filter_map(|r| r.library()?.ok())
            .collect();
        let mut made = Vec::new();
        for f in named {
            let mine = if usable {
                forcing(f)
            } else {
                Err("a communicator attribute key could not be made".into())
            };
            let all = super::private::min1(world, u64::from(mine.is_ok()));
            let forced = match (mine, all) {
                (Ok(x), Ok(1)) => x,
                (mine, all) => {
                    if rank == 0 {
                        let why = match (mine, all) {
                            (Err(why), _) | (_, Err(why)) => why,
                            _ => "it cannot be forced on another rank".into(),
                        };
                        crate::say(&format!(
                            "warning: cannot force {f} for MPI_Ibcast and MPI_Bcast_init here: {why}; the table's rules that choose it run the MPI library's own decision"
                        ));
                    }
                    NbForcing::LIBRARY
                }
            };
            made.push((f, forced));
        }
        Forcings { made }
    }

    /// How `choice` runs: its forcing, or nothing forced.
    pub fn of(&self, choice: &Choice) -> NbForcing {
        choice
            .library
            .and_then(|f| self.made.iter().find(|(k, _)| *k == f).map(|(_, x)| *x))
            .unwrap_or(NbForcing::LIBRARY)
    }
}

/// One communicator's decisions for `MPI_Ibcast` and `MPI_Bcast_init`,
/// made at its first such call (kept as an attribute of it, freed with it).
pub struct CallDecisions {
    key: Option<CommKey>,
    ibcast: Decisions,
    bcast_init: Decisions,
}

impl CallDecisions {
    /// For a communicator of `shape` (None: one whose shape cannot be
    /// found without messages: the library's own decision for every call).
    pub fn new(sel: &Selector, shape: Option<&Shape>) -> CallDecisions {
        let key = shape.map(|s| {
            let n = s.nodes();
            CommKey {
                placement: s.placement().placement(),
                ..CommKey::shape(s.size() as u32, n.max_ppn() as u32, n.num_nodes() as u32)
            }
        });
        let of = |sec| {
            let k = key.unwrap_or(CommKey::shape(0, 0, 0));
            sel.call_decisions(sec, k)
        };
        CallDecisions {
            key,
            ibcast: of(Section::Ibcast),
            bcast_init: of(Section::BcastInit),
        }
    }

    /// The choice for a call of section `s` of `bytes`.
    #[inline]
    pub fn choose(&self, s: Section, bytes: u64) -> &Choice {
        let d = match s {
            Section::BcastInit => &self.bcast_init,
            _ => &self.ibcast,
        };
        d.choose(bytes).0
    }

    /// The communicator's shape as the table keys it (None: unknown).
    pub fn key(&self) -> Option<CommKey> {
        self.key
    }
}
