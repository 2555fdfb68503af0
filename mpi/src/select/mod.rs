//! The runtime selector on MPI: loads the decision table once per job, and
//! dispatches each broadcast and swap on a communicator to the choice for
//! its shape and the call's size.
//!
//! The decision itself is MPI-free (`colltune_core::tables::decide`: the settings,
//! the one precedence rule, [`Decisions`]); this module loads it
//! collectively and runs it.
//!
//! [`load`] is collective over the world: rank 0 alone reads the table file
//! (a regular file of bounded size, so a FIFO or a device cannot block
//! `MPI_Init`) and broadcasts its text; every rank parses and validates the
//! same text, so every rank reaches the same verdict, and no file system
//! sees one open per rank at job start. The environment's settings
//! (`COLLTUNE_BCAST`, ...) are per rank, so one allreduce pair checks that
//! every rank has the same. A broken table never stops an application: it
//! is a warning (once, on rank 0, naming the file, the line and the
//! problem) and the MPI library's collectives; `COLLTUNE_STRICT=1` makes it
//! an error instead.
//!
//! Per communicator, [`CommSelector`] holds its shape (node map and
//! placement class, found once), its private communicator ([`private`]: made at the first call
//! that runs one of colltune's algorithms, shared between communicators of
//! the same ranks where that is safe), the table's rules for its shape,
//! and prepared schedules per (choice, root, size), reused across calls.

pub mod cached;
pub mod direct;
mod library;
mod load;
pub mod nonblocking;
pub mod private;
mod route;

pub use library::{own_routes, own_routes_reason, twin, Forcing};
pub use load::{
    keep_for_sessions, keep_preparsed, keep_unread, library_differs, load, load_with,
    set_library_differs, LibraryDiffers,
};
pub use private::Private;
pub use route::{ForcedSlot, Route, Routes};

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use colltune_algorithms::{build_resolved, AlgoSpec, Collective, Execution, Plan};
use thiserror::Error;

pub use colltune_core::tables::decide::{
    builtin_default, decide, parse_forced, Choice, Decided, Decisions, Layer, RuntimeSettings,
    Selector, SettingsError, Source, Trace,
};

use crate::transport::mpi::{
    execute, ffi, small, Buffers, Comm, Control, MpiError, Op, Shape, TransportError,
};
use colltune_algorithms::bcast::shm::SMALL_MAX;
use colltune_core::tables::table::{self, CommKey, Table, TableError};

#[derive(Debug, Error)]
pub enum SelectError {
    #[error(transparent)]
    Table(#[from] TableError),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("the ranks disagree on the settings (different COLLTUNE_* environment on different nodes?): using the MPI library's collectives")]
    Disagree,
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error(transparent)]
    Mpi(#[from] MpiError),
}

/// The selector for one communicator, given as colltune's private one.
pub fn for_comm(sel: &Arc<Selector>, comm: Comm) -> CommSelector {
    CommSelector::new(Arc::clone(sel), Arc::new(Private::ready(comm)))
}

/// The selector for one communicator whose private communicators are
/// made when needed ([`private`]).
pub fn for_private(sel: &Arc<Selector>, p: Private) -> CommSelector {
    CommSelector::new(Arc::clone(sel), Arc::new(p))
}

/// Warns once per process (on rank 0 of `comm`) that a shared-memory
/// algorithm cannot run here and the library's broadcast runs instead.
fn warn_unfit_once(rank: usize, why: &str) {
    use std::sync::Once;
    static ONCE: Once = Once::new();
    if rank == 0 {
        ONCE.call_once(|| {
            crate::say(&format!(
                "warning: {why}; the MPI library's broadcast runs instead"
            ))
        });
    }
}

/// Dispatching on one communicator.
pub struct CommSelector {
    sel: Arc<Selector>,
    private: Arc<Private>,
    key: CommKey,
    bcast: Decisions,
    swap: Decisions,
    /// Prepared schedules by (collective, choice id, pairing, root, bytes).
    plans: RefCell<HashMap<PlanKey, Arc<Plan>>>,
    /// Duplicates with one of the library's algorithms forced, made at
    /// their first call (`ompi_tuned` rules).
    library: library::LibraryComms,
    /// Whether `shm` runs here (the communicator's ranks share memory),
    /// found at its first small call.
    shm_fits: std::cell::OnceCell<bool>,
}

type PlanKey = (Collective, usize, u8, usize, u64);

/// Most prepared schedules kept per communicator.
const PLAN_CACHE: usize = 256;

impl CommSelector {
    fn new(sel: Arc<Selector>, private: Arc<Private>) -> Self {
        let shape = private.shape();
        let n = shape.nodes();
        // Its placement (block or cyclic over nodes and sockets), found
        // from the shape's node and socket ids: the table's entry for it
        // decides.
        let key = CommKey {
            placement: shape.placement().placement(),
            ..CommKey::shape(
                shape.size() as u32,
                n.max_ppn() as u32,
                n.num_nodes() as u32,
            )
        };
        let mut bcast = sel.decisions(Collective::Bcast, key);
        if library_differs(shape.size()) {
            bcast.without_library(shape.size());
        } else if own_routes_reason().is_some() {
            bcast.replace_library(library::twin_of);
        }
        CommSelector {
            bcast,
            swap: sel.decisions(Collective::Swap, key),
            sel,
            private,
            key,
            plans: RefCell::new(HashMap::new()),
            library: Default::default(),
            shm_fits: Default::default(),
        }
    }

    /// How a library choice runs: on a private communicator with `f` forced, or with
    /// its variables written around each call (`select::library`), set up
    /// at its first call (collective: every rank makes the same choice at
    /// the same call); None where forcing is unavailable (warned once), and
    /// the library's default runs.
    pub(crate) fn library_comm(
        &self,
        f: colltune_core::libraries::library::LibraryChoice,
    ) -> Option<library::Forcing> {
        self.library.get(&self.private, f)
    }

    /// How many forced communicators this communicator holds.
    pub fn library_comms(&self) -> usize {
        self.library.len()
    }

    /// Its ranks and nodes.
    pub fn shape(&self) -> &Shape {
        self.private.shape()
    }

    /// How its private communicators are made.
    pub fn private(&self) -> &Arc<Private> {
        &self.private
    }

    pub fn key(&self) -> CommKey {
        self.key
    }

    pub fn settings(&self) -> &RuntimeSettings {
        &self.sel.settings
    }

    /// The lock-free dispatch of this communicator's broadcasts (valid as
    /// long as this selector lives).
    pub fn routes(&self) -> Routes {
        Routes::new(self)
    }

    /// The decision for a call of `bytes` (no MPI; what a trace shows).
    pub fn choose(&self, c: Collective, bytes: u64) -> &Choice {
        self.decisions(c).choose(bytes).0
    }

    pub fn decisions(&self, c: Collective) -> &Decisions {
        match c {
            Collective::Bcast => &self.bcast,
            Collective::Swap => &self.swap,
        }
    }

    /// The prepared schedule for `key`, built (from `spec()`) only when it
    /// is not cached.
    fn plan(
        &self,
        key: PlanKey,
        spec: impl FnOnce() -> AlgoSpec,
    ) -> Result<Arc<Plan>, TransportError> {
        let (c, _, _, root, bytes) = key;
        if let Some(p) = self.plans.borrow().get(&key) {
            return Ok(Arc::clone(p));
        }
        let spec = spec();
        self.shape()
            .shared_memory_fits(c, &spec)
            .map_err(TransportError::SharedMemoryUnfit)?;
        let s = build_resolved(
            c,
            &spec,
            &colltune_algorithms::Shape {
                rank: self.shape().rank(),
                size: self.shape().size(),
                root,
                bytes,
                nodes: self.shape().nodes(),
            },
        )?;
        let p = Arc::new(Plan::new(s));
        let mut plans = self.plans.borrow_mut();
        if plans.len() >= PLAN_CACHE {
            plans.clear();
        }
        plans.insert(key, Arc::clone(&p));
        Ok(p)
    }

    /// The prepared broadcast schedule a call of `bytes` from `root` runs
    /// (None: the library's); for `benches/callpath.rs`.
    #[doc(hidden)]
    pub fn bench_plan(
        &self,
        bytes: u64,
        root: usize,
    ) -> Result<Option<(Arc<Plan>, Execution)>, TransportError> {
        let (choice, id) = self.bcast.choose(bytes);
        match &choice.algorithm {
            Some((spec, exec)) => Ok(Some((
                self.plan((Collective::Bcast, id, 0, root, bytes), || spec.clone())?,
                *exec,
            ))),
            None => Ok(None),
        }
    }

    /// With `COLLTUNE_TRACE`, one line saying what a call of `bytes` ran
    /// (also used by [`runtime`](crate::runtime) for calls it hands to the
    /// library).
    pub(crate) fn trace(
        &self,
        what: &str,
        bytes: u64,
        root: Option<usize>,
        choice: &dyn std::fmt::Display,
    ) {
        let on = match self.sel.settings.trace {
            Trace::Off => false,
            Trace::Lead => self.shape().rank() == 0,
            Trace::All => true,
        };
        if on {
            use std::io::Write;
            let world = ffi::world_rank().map_or_else(
                || format!("pid {}", std::process::id()),
                |w| format!("rank {w}"),
            );
            // One write per line, so lines of several processes never interleave.
            let line = format!(
                "colltune trace: {world} (rank {} of {}) {what} {bytes} B{}: {choice}\n",
                self.shape().rank(),
                self.key,
                root.map(|r| format!(" root {r}")).unwrap_or_default(),
            );
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
    }

    /// `ran`, unless it says a shared-memory algorithm cannot run here
    /// (ranks that share no node, or a shared window the library refused:
    /// decided alike on every rank before any data moved): then the
    /// library's broadcast of `buf` runs instead, warned once.
    fn unless_unfit(
        &self,
        ran: Result<(), TransportError>,
        buf: &mut [u8],
        root: usize,
    ) -> Result<(), TransportError> {
        match ran {
            Err(TransportError::SharedMemoryUnfit(why)) => {
                warn_unfit_once(self.shape().rank(), &why);
                // SAFETY: buf holds buf.len() bytes.
                unsafe { self.library_or_own(buf, root)? };
                Ok(())
            }
            ran => ran,
        }
    }

    /// The library's broadcast of `buf` on the application's communicator,
    /// where colltune's chosen route cannot run (agreed on every rank);
    /// where the library's may differ between ranks ([`library_differs`]),
    /// a binomial tree of plain messages on the private communicator
    /// instead (the library's, where there is none: every rank alike).
    ///
    /// # Safety
    /// The communicator is alive.
    unsafe fn library_or_own(&self, buf: &mut [u8], root: usize) -> Result<(), MpiError> {
        let len = buf.len() as u64;
        match self.private.get() {
            Some(c) if library_differs(self.shape().size()) => {
                ffi::tree_bcast(buf.as_mut_ptr(), len, root, c.raw())
            }
            _ => ffi::library_bcast(buf.as_mut_ptr(), len, root, self.private.user()),
        }
    }

    /// Whether `shm` (`spec`) runs straight here: the ranks share memory
    /// (asked once) and this rank has the private communicator.
    fn shm_straight(&self, spec: &AlgoSpec) -> bool {
        *self.shm_fits.get_or_init(|| {
            self.shape()
                .shared_memory_fits(Collective::Bcast, spec)
                .is_ok()
        }) && self.private.get().is_some()
    }

    /// Broadcasts `buf` from `root` with the chosen algorithm.
    pub fn bcast(&self, buf: &mut [u8], root: usize) -> Result<&Choice, TransportError> {
        let bytes = buf.len() as u64;
        let (choice, id) = self.bcast.choose(bytes);
        self.trace("bcast", bytes, Some(root), choice);
        match &choice.algorithm {
            // `shm`'s small messages: straight through the small ring, no
            // plan (the ops of the schedule the checker proves, `small`).
            Some((spec, _))
                if spec.name == "shm"
                    && (1..=SMALL_MAX).contains(&bytes)
                    && self.shm_straight(spec) =>
            {
                let c = self.private.get().expect("checked above");
                let ran = small::bcast(c, buf, root);
                self.unless_unfit(ran, buf, root)?;
            }
            // Longer ones its ring holds in one slot: straight too (the
            // schedule of one segment).
            Some((spec, _))
                if spec.name == "shm"
                    && small::one_slot(
                        bytes,
                        spec.int("segment").unwrap_or(0),
                        spec.int("slots").unwrap_or(0),
                    )
                    && self.shm_straight(spec) =>
            {
                let c = self.private.get().expect("checked above");
                let ran = small::bcast_one_slot(c, buf, root);
                self.unless_unfit(ran, buf, root)?;
            }
            Some((spec, exec)) => {
                match self.plan((Collective::Bcast, id, 0, root, bytes), || spec.clone()) {
                    Err(e @ TransportError::SharedMemoryUnfit(_)) => {
                        self.unless_unfit(Err(e), buf, root)?
                    }
                    plan => {
                        let plan = plan?;
                        match self.private.get() {
                            Some(c) => {
                                let ran = execute(c, &plan, *exec, Buffers::bcast(buf));
                                self.unless_unfit(ran, buf, root)?
                            }
                            // No private communicator on some rank (agreed): the
                            // library's, on every rank.
                            // SAFETY: buf holds buf.len() bytes.
                            None => unsafe { self.library_or_own(buf, root)? },
                        }
                    }
                }
            }
            None => {
                let user = self.private.user();
                match choice
                    .library
                    .filter(|f| !f.is_default())
                    .and_then(|f| self.library_comm(f))
                {
                    // SAFETY: buf holds buf.len() bytes; the forced
                    // communicator lives as long as self.
                    Some(forced) => forced.run(user, |c| unsafe {
                        ffi::library_bcast(buf.as_mut_ptr(), bytes, root, c)
                    })?,
                    // SAFETY: as above.
                    None => unsafe { ffi::library_bcast(buf.as_mut_ptr(), bytes, root, user)? },
                }
            }
        }
        Ok(choice)
    }

    /// Swaps `out` with the partner's (pairing `neighbors` or `halves`),
    /// receiving into `inn`; the odd rank out receives nothing.
    pub fn swap(
        &self,
        out: &mut [u8],
        inn: &mut [u8],
        pairing: &str,
    ) -> Result<&Choice, TransportError> {
        let bytes = out.len() as u64;
        if inn.len() < out.len() {
            return Err(TransportError::BufferTooSmall {
                buffer: "receive",
                have: inn.len(),
                need: bytes,
            });
        }
        let (choice, id) = self.swap.choose(bytes);
        self.trace("swap", bytes, None, choice);
        let exec = choice
            .algorithm
            .as_ref()
            .map_or(Execution::Blocking, |a| a.1);
        let halves = pairing == "halves";
        let plan = self.plan((Collective::Swap, id, u8::from(halves), 0, bytes), || {
            let mut spec = match &choice.algorithm {
                Some(a) => a.0.clone(),
                None => {
                    builtin_default(Collective::Swap)
                        .expect("swap has a built-in default")
                        .0
                }
            };
            // The call's pairing, not the table's, decides the partners.
            spec.params.insert(
                "pairing".into(),
                colltune_algorithms::ParamValue::Word(
                    if halves { "halves" } else { "neighbors" }.into(),
                ),
            );
            spec
        })?;
        match self.private.get() {
            Some(c) => execute(c, &plan, exec, Buffers::swap(out, inn))?,
            // No private communicator (agreed): one MPI_Sendrecv with the
            // partner, on the application's communicator, on every rank.
            None => {
                let (rank, size) = (self.shape().rank(), self.shape().size());
                if let Some(q) = colltune_algorithms::swap::partner(rank, size, pairing) {
                    // SAFETY: out and inn hold `bytes` bytes.
                    unsafe {
                        ffi::sendrecv(
                            out.as_ptr(),
                            bytes,
                            q,
                            0x5A,
                            inn.as_mut_ptr(),
                            bytes,
                            q,
                            0x5A,
                            self.private.user(),
                        )?
                    };
                }
            }
        }
        Ok(choice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence() {
        assert_eq!(decide(Some(1), Some(2), Some(3)), (Layer::Forced, Some(1)));
        assert_eq!(decide(None, Some(2), Some(3)), (Layer::Table, Some(2)));
        assert_eq!(decide(None, None, Some(3)), (Layer::Builtin, Some(3)));
        assert_eq!(decide::<u8>(None, None, None), (Layer::Library, None));
    }

    #[test]
    fn forced_settings_parse() {
        let (s, e) = parse_forced(
            Collective::Bcast,
            "COLLTUNE_BCAST",
            "pipeline:segment=65536@nonblocking",
        )
        .unwrap();
        assert_eq!(s.to_string(), "pipeline:segment=65536");
        assert_eq!(e, Execution::Nonblocking);
        assert!(parse_forced(Collective::Bcast, "COLLTUNE_BCAST", "warp").is_err());
        assert!(parse_forced(Collective::Bcast, "COLLTUNE_BCAST", "linear@sometimes").is_err());
    }
}
