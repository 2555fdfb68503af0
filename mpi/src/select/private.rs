//! colltune's private communicators: made only where something of
//! colltune's runs on a communicator, made so that the application cannot
//! see them, and shared where that is provably safe.
//!
//! - Lazily: a communicator's set-up finds only its shape (ranks, nodes:
//!   from `MPI_COMM_WORLD`'s node map, no communicator made); the private
//!   communicator is made at the first call that runs one of colltune's
//!   algorithms on it (or, with a forced choice of the library's, at that
//!   rule's first call). That call is collective and every rank makes the
//!   same decision there (it depends only on what they share), so every
//!   rank gets there at the same call. A communicator whose calls all go
//!   to the library (no table, a table with no rule for it, the handoff)
//!   never gets one.
//! - Unseen: made with `MPI_Comm_create_group` on colltune's own private
//!   `MPI_COMM_WORLD` (where every rank is in the world and threads are
//!   not `MPI_THREAD_MULTIPLE`, see below), not `MPI_Comm_dup`, so no
//!   attribute of the application's is copied (its copy callbacks never
//!   run, nor its delete callbacks later), with `MPI_ERRORS_RETURN` on the
//!   result, and a failure to make one reaches no error handler of the
//!   application's: it is agreed (one allreduce), and every rank then runs
//!   the library's collective for those calls. Elsewhere, with
//!   `MPI_Comm_split` on the application's communicator (which copies no
//!   attribute either; Open MPI 4.1's `MPI_Comm_create_group` would copy
//!   the parent's).
//! - Shared: communicators of the same ranks in the same order (say, every
//!   `MPI_Comm_dup` of `MPI_COMM_WORLD`) share one private communicator
//!   (per forced library choice, one each), `MPI_COMM_WORLD`'s own
//!   included, so an application can keep as many communicators alive as
//!   without colltune, give or take a few. That is safe where the
//!   application cannot have two of colltune's collectives in flight at
//!   once in one process: below `MPI_THREAD_MULTIPLE`, a process calls
//!   `MPI_Bcast` on one communicator at a time, and MPI requires the ranks
//!   to call blocking collectives in an order that cannot deadlock, so
//!   each pair of processes sends and receives colltune's messages on the
//!   shared communicator in the same order, and MPI's non-overtaking rule
//!   matches them as on one communicator. (Nonblocking collectives are not
//!   intercepted: they are the library's, on the application's
//!   communicator.) Under `MPI_THREAD_MULTIPLE` two threads may broadcast
//!   on two communicators of the same ranks at once, and their messages
//!   would cross: nothing is shared, and each private communicator is split
//!   from the application's communicator itself (two threads' creations on
//!   colltune's world could match each other's; on the application's
//!   communicators they cannot), whose error handler would hear only of
//!   MPI itself running out of communicators.
//!
//! Whether to share is agreed, not assumed: each shared communicator has a
//! serial number all its ranks agreed on when it was made, and a rank
//! offers the one it would share; one allreduce on the application's
//! communicator says whether every rank offers the same one, else a new
//! one is made (and becomes the one to share).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use colltune_core::libraries::library::LibraryChoice;

use crate::transport::mpi::ffi::{self, MPI_Comm};
use crate::transport::mpi::{Comm, MpiError, Op, Shape};

/// A private communicator, possibly shared, and its agreed serial number.
pub struct Shared {
    comm: Comm,
    serial: u64,
}

// SAFETY: a `Shared` is used by several threads only under
// MPI_THREAD_MULTIPLE, and then it is never shared between application
// communicators: its one owner uses its window (the only interior state)
// under that communicator's selector lock; MPI handles are process-wide.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl Shared {
    pub fn comm(&self) -> &Comm {
        &self.comm
    }
}

/// One registry entry: the world ranks, what was forced on it, and the
/// communicator while anyone holds it.
struct Entry {
    ranks: Vec<i32>,
    forced: Option<LibraryChoice>,
    shared: Weak<Shared>,
}

static REGISTRY: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// The highest serial number this process has agreed on.
static SERIAL: AtomicU64 = AtomicU64::new(0);

fn registry() -> std::sync::MutexGuard<'static, Vec<Entry>> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// A communicator's private communicator made at its set-up under MPI 4
/// sessions ([`Private::session`]): never registered for sharing.
pub fn unshared(comm: Comm) -> Arc<Shared> {
    Arc::new(Shared { comm, serial: 0 })
}

/// Registers `MPI_COMM_WORLD`'s private communicator (made at init on
/// every rank, serial 1 everywhere) for sharing with communicators of the
/// same ranks.
pub fn world(comm: Comm) -> Arc<Shared> {
    SERIAL.fetch_max(1, Ordering::AcqRel);
    let s = Arc::new(Shared { comm, serial: 1 });
    let ranks = (0..s.comm.size() as i32).collect();
    let mut r = registry();
    r.retain(|e| e.shared.strong_count() > 0);
    r.push(Entry {
        ranks,
        forced: None,
        shared: Arc::downgrade(&s),
    });
    s
}

/// How one application communicator gets its private communicators.
pub struct Private {
    /// The application's communicator (null for a [`Private::ready`] one).
    user: MPI_Comm,
    /// Where private communicators are made (`MPI_Comm_create_group`).
    parent: MPI_Comm,
    /// colltune's private `MPI_COMM_WORLD` (or the ready communicator).
    probe: MPI_Comm,
    /// The user's ranks in `MPI_COMM_WORLD`: the key to share by; None:
    /// never shared.
    ranks: Option<Vec<i32>>,
    shape: Shape,
    made: OnceLock<Option<Arc<Shared>>>,
}

// SAFETY: MPI handles are process-wide; the lazy cell is a OnceLock.
unsafe impl Send for Private {}
unsafe impl Sync for Private {}

impl Private {
    /// A private communicator made already (the Rust API's `Comm`): its
    /// forced communicators are made on it, never shared.
    pub fn ready(comm: Comm) -> Private {
        let raw = comm.raw();
        Private::of_shared(Arc::new(Shared { comm, serial: 0 }), raw, None)
    }

    /// `MPI_COMM_WORLD`'s (`user`), made already ([`world`]).
    pub fn world(s: Arc<Shared>) -> Private {
        let ranks = (!ffi::thread_multiple()).then(|| (0..s.comm.size() as i32).collect());
        Private::of_shared(s, ffi::comm_world(), ranks)
    }

    /// Under MPI 4 sessions: the application's communicator `user`, whose
    /// private communicator `s` was made at its set-up (a world of its
    /// own); its forced choices' private communicators are made on `s`.
    /// Never shared with another communicator: there is no world whose
    /// ranks could key the sharing.
    pub fn session(s: Arc<Shared>, user: MPI_Comm) -> Private {
        Private::of_shared(s, user, None)
    }

    fn of_shared(s: Arc<Shared>, user: MPI_Comm, ranks: Option<Vec<i32>>) -> Private {
        let made = OnceLock::new();
        let shape = s.comm.shape().clone();
        let parent = s.comm.raw();
        let _ = made.set(Some(s));
        Private {
            user,
            parent,
            probe: parent,
            ranks,
            shape,
            made,
        }
    }

    /// The application's communicator `user`, of shape `shape`, whose
    /// private communicators are made when first needed, on `world` (the
    /// private `MPI_COMM_WORLD`) where all its ranks are in the world and
    /// threads are not `MPI_THREAD_MULTIPLE`, else on `user`.
    ///
    /// # Safety
    /// `user` is a valid intra-communicator, alive as long as this.
    pub unsafe fn lazy(user: MPI_Comm, shape: Shape, world: MPI_Comm) -> Private {
        let ranks = if ffi::thread_multiple() {
            None
        } else {
            ffi::world_ranks(user).ok().flatten()
        };

        Private {
            user,
            parent: if ranks.is_some() { world } else { user },
            probe: world,
            ranks,
            shape,
            made: OnceLock::new(),
        }
    }

    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The application's communicator (the private one where it was given
    /// ready).
    pub fn user(&self) -> MPI_Comm {
        self.user
    }

    /// A private communicator for local checks (`MPI_Send` to
    /// `MPI_PROC_NULL`, `MPI_Pack`) that never reach an error handler of
    /// the application's: colltune's private `MPI_COMM_WORLD` (any
    /// communicator serves such a check).
    pub fn probe(&self) -> MPI_Comm {
        self.probe
    }

    /// The private communicator, made at the first call (collective over
    /// the application's communicator: every rank asks at the same call);
    /// None where it could not be made on some rank (agreed: then the
    /// library's collective runs, on every rank).
    pub fn get(&self) -> Option<&Comm> {
        self.made
            .get_or_init(|| self.obtain(None, |make| (make(), Ok(()))).ok())
            .as_deref()
            .map(Shared::comm)
    }

    /// Whether the private communicator exists already (no call made).
    pub fn is_made(&self) -> bool {
        self.made.get().is_some_and(Option::is_some)
    }

    /// A private communicator for `forced` (collective over the
    /// application's communicator), made through `around` (which writes
    /// the library's variables around the creation it is given and says
    /// whether they took: `(made, forced)`), or shared where every rank has
    /// one for the same ranks and choice. The error says why not (the same
    /// failure anywhere is agreed: every rank gets an error).
    pub fn forced(
        &self,
        forced: LibraryChoice,
        around: impl FnOnce(
            &dyn Fn() -> Result<Comm, MpiError>,
        ) -> (Result<Comm, MpiError>, Result<(), String>),
    ) -> Result<Arc<Shared>, String> {
        self.obtain(Some(forced), around)
    }

    fn obtain(
        &self,
        forced: Option<LibraryChoice>,
        around: impl FnOnce(
            &dyn Fn() -> Result<Comm, MpiError>,
        ) -> (Result<Comm, MpiError>, Result<(), String>),
    ) -> Result<Arc<Shared>, String> {
        let user = self.user;
        let candidate = self.ranks.as_ref().and_then(|ranks| {
            registry()
                .iter()
                .find(|e| e.ranks == *ranks && e.forced == forced)
                .and_then(|e| e.shared.upgrade())
        });
        let offer = candidate.as_ref().map_or(0, |c| c.serial);
        // max(offer), max(!offer): every rank offers the same exactly when
        // max(offer) == !max(!offer); and the highest serial in use.
        let got = max3(user, [offer, !offer, SERIAL.load(Ordering::Acquire)])?;
        if let Some(c) = candidate.filter(|_| got[0] == !got[1] && got[0] != 0) {
            return Ok(c);
        }
        let serial = got[2] + 1;
        SERIAL.fetch_max(serial, Ordering::AcqRel);
        let make = || Comm::create(self.parent, user, self.shape.clone());
        let (made, took) = around(&make);
        let mine = match (&made, took) {
            (Err(e), _) => Err(e.to_string()),
            (_, Err(e)) => Err(e),
            _ => Ok(()),
        };
        let (rank, size) = (self.shape.rank() as u64, self.shape.size() as u64);
        let vote = if mine.is_ok() { size } else { rank };
        let first = min1(user, vote)?;
        match (made, mine) {
            (Ok(comm), Ok(())) if first == size => {
                let s = Arc::new(Shared { comm, serial });
                if let Some(ranks) = &self.ranks {
                    let mut r = registry();
                    r.retain(|e| {
                        e.shared.strong_count() > 0 && !(e.ranks == *ranks && e.forced == forced)
                    });
                    r.push(Entry {
                        ranks: ranks.clone(),
                        forced,
                        shared: Arc::downgrade(&s),
                    });
                }
                Ok(s)
            }
            (_, Err(why)) if first == rank => Err(why),
            // Dropping a communicator made here frees it.
            _ => Err(format!("it could not be set up on rank {first}")),
        }
    }
}

fn max3(comm: MPI_Comm, v: [u64; 3]) -> Result<[u64; 3], String> {
    let mut out = [0u64; 3];
    // SAFETY: three u64 in, three out, on the caller's communicator.
    unsafe {
        ffi::allreduce(
            v.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            3,
            ffi::Datatype::U64,
            Op::Max,
            comm,
        )
    }
    .map_err(|e| e.to_string())?;
    Ok(out)
}

/// The minimum of `v` over `comm`'s ranks (one allreduce).
pub(crate) fn min1(comm: MPI_Comm, v: u64) -> Result<u64, String> {
    let mut out = 0u64;
    // SAFETY: one u64 in, one out.
    unsafe {
        ffi::allreduce(
            (&v as *const u64).cast(),
            (&mut out as *mut u64).cast(),
            1,
            ffi::Datatype::U64,
            Op::Min,
            comm,
        )
    }
    .map_err(|e| e.to_string())?;
    Ok(out)
}
