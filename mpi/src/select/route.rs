//! The per-call dispatch of a broadcast, without a lock: what every choice
//! of one communicator runs, worked out once when the communicator is set
//! up ([`Routes`], immutable but for a hint, shared by every thread), and
//! per call a check of the last call's rule (else a binary search over the
//! rules) and one match ([`Route`]).
//!
//! - [`Route::Library`]: the library's own `MPI_Bcast` with the user's
//!   arguments; for a choice of one of its algorithms (`ompi_tuned`), on
//!   a private communicator with that algorithm forced, found per call in the
//!   rule's [`ForcedSlot`] (one atomic load once it is made);
//! - [`Route::Direct`]: a tree pass over the whole message
//!   ([`direct`](super::direct)): linear, binomial, k-nomial, binary, and
//!   chain or pipeline when the message is one segment;
//! - [`Route::Plan`]: anything else, through a prepared schedule and the
//!   general executor ([`CommSelector::bcast`](super::CommSelector::bcast),
//!   under the communicator's lock).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use colltune_algorithms::Collective;

use super::direct::{self, Tree};
use super::library::Forcing;
use super::{Choice, CommSelector, Decisions, Private, Trace};
use crate::transport::mpi::ffi::{self, MPI_Comm};
use crate::transport::mpi::MpiError;

/// What a decision runs, worked out once per rule.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Library,
    /// A tree and its segment size (0: none).
    Tree(Tree, u64),
    General,
}

/// How a rule that chooses one of the library's own algorithms runs: the
/// forced communicator and the variables written around the call
/// ([`Forcing`]; None: forcing is unavailable, the library's default on
/// the user's communicator), set at the first call of the rule (made under
/// the selector's lock, collectively), read without a lock after.
#[derive(Debug, Default)]
pub struct ForcedSlot(OnceLock<Option<Forcing>>);

impl ForcedSlot {
    /// The forcing, once set up.
    #[inline]
    pub fn get(&self) -> Option<Option<Forcing>> {
        self.0.get().copied()
    }

    /// Records what the first call found (the first record wins; every
    /// thread finds the same forcing).
    pub fn set(&self, forcing: Option<Forcing>) -> Option<Forcing> {
        *self.0.get_or_init(|| forcing)
    }
}

/// How one call runs.
#[derive(Clone, Copy, Debug)]
pub enum Route<'a> {
    /// The MPI library's own collective; for a choice of one of its
    /// algorithms, where that rule's forced communicator is kept.
    Library(&'a Choice, &'a ForcedSlot),
    /// One tree pass over the whole message, as plain point-to-point calls.
    Direct(&'a Choice, Tree),
    /// A prepared schedule through the general executor.
    Plan(&'a Choice),
}

/// A communicator's broadcast decisions and what each runs; immutable once
/// built (but for the last-rule hint, an atomic any value of which is
/// correct), so any thread reads it without a lock.
pub struct Routes {
    /// How the communicator's private communicator is made (shared with
    /// the `CommSelector` these were made from).
    private: Arc<Private>,
    rank: usize,
    size: usize,
    trace: bool,
    decisions: Decisions,
    /// By rule index.
    kinds: Vec<Kind>,
    forced: Kind,
    fallback: Kind,
    /// By rule index, then the forced choice's and the fallback's.
    slots: Vec<ForcedSlot>,
    /// The rule the last call used (a hint: a program repeats its sizes;
    /// any value is correct, so threads may race on it).
    last: AtomicUsize,
}

// SAFETY: `private` holds MPI handles (process-wide, used only in calls
// MPI allows from any thread under MPI_THREAD_MULTIPLE) and a OnceLock; the
// rest is plain data never written after construction.
unsafe impl Send for Routes {}
unsafe impl Sync for Routes {}

fn kind(c: &Choice) -> Kind {
    match &c.algorithm {
        None => Kind::Library,
        Some((spec, exec)) => match direct::tree_of(spec, *exec) {
            Some((t, seg)) => Kind::Tree(t, seg),
            None => Kind::General,
        },
    }
}

/// The byte ranges of [`Routes::library_default_ranges`]: the `rules` (ascending, apart:
/// min, max (None: open), plain or not) and, below, between and above
/// them, the fallback (plain or not).
fn plain_ranges(
    rules: impl Iterator<Item = (u64, Option<u64>, bool)>,
    fallback: bool,
) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut push = |lo: u64, hi: u64| match out.last_mut() {
        Some(last) if last.1.checked_add(1) == Some(lo) => last.1 = hi,
        _ => out.push((lo, hi)),
    };
    let mut next = Some(0u64);
    for (min, max, plain) in rules {
        let Some(from) = next else { break };
        if fallback && min > from {
            push(from, min - 1);
        }
        let hi = max.unwrap_or(u64::MAX);
        if plain && hi >= min.max(from) {
            push(min.max(from), hi);
        }
        next = hi.checked_add(1);
    }
    if let (true, Some(from)) = (fallback, next) {
        push(from, u64::MAX);
    }
    out
}

impl Routes {
    /// The routes of `sel`'s broadcasts; valid as long as `sel` lives.
    pub fn new(sel: &CommSelector) -> Routes {
        let decisions = sel.decisions(Collective::Bcast).clone();
        let kinds = decisions.rules().iter().map(|r| kind(&r.choice)).collect();
        // Decisions::choose answers a forced choice and the fallback with
        // ids past the rules.
        let forced = decisions.forced().map_or(Kind::Library, kind);
        let fallback = kind(decisions.fallback());
        let slots = (0..decisions.rules().len() + 2)
            .map(|_| ForcedSlot::default())
            .collect();
        Routes {
            slots,
            last: AtomicUsize::new(0),
            private: Arc::clone(sel.private()),
            rank: sel.shape().rank(),
            size: sel.shape().size(),
            trace: sel.settings().trace != Trace::Off,
            decisions,
            kinds,
            forced,
            fallback,
        }
    }

    /// The communicator's size.
    #[inline]
    pub fn size(&self) -> usize {
        self.size
    }

    /// This process's rank in the communicator.
    #[inline]
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// A private communicator for local checks of the call's arguments
    /// ([`Private::probe`]): never one an error handler of the
    /// application's hears.
    #[inline]
    pub(crate) fn probe_comm(&self) -> MPI_Comm {
        self.private.probe()
    }

    /// Whether calls are traced (`COLLTUNE_TRACE`): then the caller takes
    /// the lock to write the line.
    #[inline]
    pub fn tracing(&self) -> bool {
        self.trace
    }

    /// The byte ranges (inclusive, ascending, merged) whose calls this
    /// communicator hands to the library's `MPI_Bcast` unchanged: a rule
    /// (or the forced choice, or the fallback) of the library's own
    /// decision, nothing forced (no table: every size). None while calls
    /// are traced (each is written). The drop-in's line for the
    /// communicator sends such calls straight to `PMPI_Bcast`
    /// (`runtime::hot`), as the handed-off ones.
    pub fn library_default_ranges(&self) -> Vec<(u64, u64)> {
        if self.trace {
            return Vec::new();
        }
        let plain = |c: &Choice, k: Kind| {
            matches!(k, Kind::Library) && c.library.is_none_or(|f| f.is_default())
        };
        if let Some(f) = self.decisions.forced() {
            return if plain(f, self.forced) {
                vec![(0, u64::MAX)]
            } else {
                Vec::new()
            };
        }
        let rules = self.decisions.rules().iter().zip(&self.kinds);
        plain_ranges(
            rules.map(|(r, &k)| (r.min, r.max, plain(&r.choice, k))),
            plain(self.decisions.fallback(), self.fallback),
        )
    }

    /// How a broadcast of `bytes` runs: no allocation, no lock.
    #[inline]
    pub fn route_for(&self, bytes: u64) -> Route<'_> {
        let hint = self.last.load(Ordering::Relaxed);
        let (choice, id) = self.decisions.choose_hinted(bytes, hint);
        let n = self.kinds.len();
        if id != hint && id < n {
            self.last.store(id, Ordering::Relaxed);
        }
        let (k, slot) = match self.kinds.get(id) {
            Some(k) => (*k, id),
            None if self.decisions.forced().is_some() => (self.forced, n),
            None => (self.fallback, n + 1),
        };
        match k {
            Kind::Library => Route::Library(choice, &self.slots[slot]),
            Kind::Tree(t, seg) if direct::one_segment(bytes, seg) => Route::Direct(choice, t),
            Kind::Tree(..) | Kind::General => Route::Plan(choice),
        }
    }

    /// Runs [`Route::Direct`]'s `tree` on `buf` from `root`, on the
    /// private communicator (made at the first such call); where that could
    /// not be made (agreed by every rank), the library's broadcast of the
    /// bytes on the application's communicator.
    ///
    /// # Safety
    /// The communicator these routes were made from is alive.
    pub unsafe fn run_direct(
        &self,
        tree: Tree,
        buf: &mut [u8],
        root: usize,
    ) -> Result<(), MpiError> {
        let Some(comm) = self.private.get() else {
            return ffi::library_bcast(
                buf.as_mut_ptr(),
                buf.len() as u64,
                root,
                self.private.user(),
            );
        };
        direct::run(
            comm.raw(),
            self.rank,
            self.size,
            root,
            tree,
            buf.as_mut_ptr(),
            buf.len() as u64,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::plain_ranges;

    #[test]
    fn plain_ranges_cover_the_library_default_rules_and_gaps() {
        // no rules: the fallback's, every size or none
        assert_eq!(plain_ranges([].into_iter(), true), vec![(0, u64::MAX)]);
        assert_eq!(plain_ranges([].into_iter(), false), vec![]);
        let rules = [
            (0, Some(99), true),
            (100, Some(999), false),
            (1000, Some(4999), true),
            (5000, None, true),
        ];
        assert_eq!(
            plain_ranges(rules.into_iter(), false),
            vec![(0, 99), (1000, u64::MAX)]
        );
        // gaps below, between and above the rules are the fallback's
        let rules = [(10, Some(19), false), (30, Some(39), true)];
        assert_eq!(
            plain_ranges(rules.into_iter(), true),
            vec![(0, 9), (20, u64::MAX)]
        );
        assert_eq!(plain_ranges(rules.into_iter(), false), vec![(30, 39)]);
    }
}
