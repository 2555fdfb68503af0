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
pub mod private;
mod route;

pub use library::{own_routes, own_routes_reason, twin, Forcing};
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

/// Loads settings and table; collective over `world`. A bad table or
/// setting is a warning (printed once, on rank 0) and the MPI library's
/// collectives are used; with `COLLTUNE_STRICT=1` it is an error instead.
pub fn load(world: &Comm) -> Result<Selector, SelectError> {
    match RuntimeSettings::from_env() {
        Ok(s) => load_with(world, s, None),
        Err(e) => {
            let strict = std::env::var("COLLTUNE_STRICT").is_ok_and(|v| v != "0");
            if strict {
                // Keep the collective agreement: every rank reads the same env.
                return Err(e.into());
            }
            let s = RuntimeSettings {
                trace: RuntimeSettings::trace_from_env(),
                ..Default::default()
            };
            load_with(world, s, Some(e.to_string()))
        }
    }
}

/// The table the drop-in read and validated before `MPI_Init` (for the
/// handoff, on every rank), kept for [`load_on_rank0`]: rank 0 then does
/// not read and validate the same file again, which for a large table is
/// most of colltune's start-up cost (a 1,000-rule table: about 5 ms of
/// YAML per read, on the path every other rank waits on).
/// Every rank keeps its own, with a digest of the file's text: where every
/// rank read the same text as rank 0, each takes its own (one 8-byte
/// broadcast and one allreduce instead of the table's compact form sent
/// and decoded on every rank).
static PREPARSED: std::sync::Mutex<Option<Preparsed>> = std::sync::Mutex::new(None);

struct Preparsed {
    path: std::path::PathBuf,
    table: Table,
    /// [`cached::digest`] of the file's text; never 0.
    digest: u64,
}

/// See [`PREPARSED`] (before `MPI_Init`).
pub fn keep_preparsed(path: &std::path::Path, text: &str, table: Table) {
    *PREPARSED.lock().unwrap_or_else(|p| p.into_inner()) = Some(Preparsed {
        path: path.to_path_buf(),
        table,
        digest: cached::digest(text),
    });
}

/// Why this rank could not use its table before `MPI_Init` (the drop-in
/// reads it there on Open MPI): for the warning that names who read what.
static UNREAD: std::sync::Mutex<Option<(std::path::PathBuf, String)>> =
    std::sync::Mutex::new(None);

/// See [`UNREAD`] (before `MPI_Init`).
pub fn keep_unread(path: &std::path::Path, why: String) {
    *UNREAD.lock().unwrap_or_else(|p| p.into_inner()) = Some((path.to_path_buf(), why));
}

/// What this rank has of its table: a key every rank compares (the same
/// content read before `MPI_Init`, wherever its file is; else the path it
/// was given) and the words the warning writes.
fn read_status(path: &std::path::Path, pre: Option<&Preparsed>) -> (String, String) {
    if path.as_os_str().is_empty() {
        return ("none".into(), "had no COLLTUNE_TABLE set".into());
    }
    if let Some(p) = pre.filter(|p| p.path == path) {
        return (
            format!("content {:016x}", p.digest),
            format!("read {} (content {:016x})", p.path.display(), p.digest),
        );
    }
    let unread = UNREAD.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match unread.filter(|(p, _)| p == path) {
        Some((path, why)) => {
            let prefix = format!("{}: ", path.display());
            let why = why.strip_prefix(&prefix).unwrap_or(&why).to_string();
            (
                format!("unread {why}"),
                format!("could not use {}: {why}", path.display()),
            )
        }
        None => (
            format!("path {}", path.display()),
            format!(
                "had COLLTUNE_TABLE={} (read by one rank for all)",
                path.display()
            ),
        ),
    }
}

/// Bytes per rank of the who-read-what gather.
const READ_RECORD: usize = 384;

/// Where ranks read different tables, or some none: every rank's host and
/// what it read, gathered at rank 0 of `world`, which warns once, grouping
/// the ranks by what they read (`source`: the rank whose table every rank
/// runs; None: none could be read). Collective.
fn warn_who_read_what(
    world: &Comm,
    mine: &str,
    source: Option<usize>,
) -> Result<(), MpiError> {
    let mut rec = format!("{}\t{mine}", ffi::processor_name()).into_bytes();
    rec.truncate(READ_RECORD);
    rec.resize(READ_RECORD, 0);
    let all = world.gather(&rec, 0)?;
    if world.rank() != 0 {
        return Ok(());
    }
    let mut groups: Vec<(String, Vec<(usize, String)>)> = Vec::new();
    for (rank, r) in all.chunks(READ_RECORD).enumerate() {
        let end = r.iter().position(|&b| b == 0).unwrap_or(r.len());
        let text = String::from_utf8_lossy(&r[..end]).into_owned();
        let (host, what) = text.split_once('\t').unwrap_or((&text, ""));
        let what = if what.is_empty() { "read nothing" } else { what };
        match groups.iter_mut().find(|g| g.0 == what) {
            Some(g) => g.1.push((rank, host.to_string())),
            None => groups.push((what.to_string(), vec![(rank, host.to_string())])),
        }
    }
    if groups.len() < 2 {
        return Ok(());
    }
    let mut msg = String::from(
        "warning: the ranks did not all read the same table (COLLTUNE_TABLE):",
    );
    for (what, ranks) in &groups {
        let mut hosts: Vec<&str> = Vec::new();
        for (_, h) in ranks {
            if !hosts.contains(&h.as_str()) {
                hosts.push(h);
            }
        }
        let some = |items: Vec<String>| {
            let more = items.len().saturating_sub(8);
            let mut s = items.into_iter().take(8).collect::<Vec<_>>().join(", ");
            if more > 0 {
                s.push_str(&format!(" and {more} more"));
            }
            s
        };
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        msg.push_str(&format!(
            "\n  {} rank{} ({}; host{} {}) {what}",
            ranks.len(),
            plural(ranks.len()),
            some(ranks.iter().map(|(r, _)| r.to_string()).collect()),
            plural(hosts.len()),
            some(hosts.iter().map(|h| h.to_string()).collect()),
        ));
    }
    match source {
        Some(r) => msg.push_str(&format!(
            "\ncolltune: every rank runs the table rank {r} read"
        )),
        None => msg.push_str("\ncolltune: no rank could use its table"),
    }
    if let Some(d) = LIBRARY_DIFFERS.get().filter(|d| d.count() > 0) {
        let sizes: Vec<String> = d
            .by_size
            .iter()
            .enumerate()
            .filter(|(_, &b)| b)
            .map(|(n, _)| n.to_string())
            .collect();
        let more = sizes.len().saturating_sub(8);
        msg.push_str(&format!(
            "; the ranks handed Open MPI different broadcast rules at MPI_Init, so broadcasts on communicators of {} rank{}{} run colltune's own algorithms (Open MPI's fixed decision's twins where the table keeps the library's), the same on every rank",
            sizes.iter().take(8).cloned().collect::<Vec<_>>().join(", "),
            if sizes.len() == 1 && sizes[0] == "1" { "" } else { "s" },
            if more > 0 { format!(" and {more} more sizes") } else { String::new() },
        ));
    }
    msg.push_str(". Make the table the same file on every node to silence this.");
    crate::say(&msg);
    Ok(())
}

/// The table as rank 0 read and validated it, on every rank (one read of
/// the file per job, one validation; the others receive it in a compact
/// form), or why it could not be used (the same on every rank).
fn load_on_rank0(
    world: &Comm,
    path: &std::path::Path,
) -> Result<Result<Table, TableError>, MpiError> {
    let pre = PREPARSED.lock().unwrap_or_else(|p| p.into_inner()).take();
    let (key, status) = read_status(path, pre.as_ref());
    let pre = pre.filter(|p| p.path == path);
    // Rank 0's key; where every rank has the same (the same content read
    // before MPI_Init, or the same path), each keeps its own table if it
    // read one, else rank 0 reads it for everyone.
    let mine = cached::digest(&key);
    let root = world.bcast(mine, 0)?;
    let mixed = world.allreduce(u64::from(mine != root), Op::Max)? != 0;
    if !mixed {
        if let Some(p) = pre {
            return Ok(Ok(p.table));
        }
    }
    let loaded = load_from_some_rank(world, path, pre)?;
    if mixed {
        let source = loaded.as_ref().ok().map(|(_, r)| *r);
        warn_who_read_what(world, &status, source)?;
    }
    Ok(loaded.map(|(t, _)| t))
}

/// The table as rank 0 read it, on every rank; where rank 0 could not read
/// it, the lowest rank's that could (every rank tries its own file then),
/// with the rank it came from. Collective.
fn load_from_some_rank(
    world: &Comm,
    path: &std::path::Path,
    pre: Option<Preparsed>,
) -> Result<Result<(Table, usize), TableError>, MpiError> {
    let mut pre = pre;
    let first = load_at(world, path, 0, &mut pre)?;
    if first.is_ok() || world.size() == 1 {
        return Ok(first.map(|t| (t, 0)));
    }
    // Rank 0 could not: the lowest rank whose own file is a valid table.
    let mine = match pre.take() {
        Some(p) => Some(Ok(p.table)),
        None if world.rank() == 0 => None,
        None => table::read_text(path).ok().map(|t| table::load_str(&t)),
    };
    let ok = matches!(mine, Some(Ok(_)));
    let vote = if ok { world.rank() as u64 } else { u64::MAX };
    let src = world.allreduce(vote, Op::Min)?;
    if src == u64::MAX {
        return Ok(first.map(|t| (t, 0)));
    }
    let src = src as usize;
    let mut pre = match mine {
        Some(Ok(table)) if world.rank() == src => Some(Preparsed {
            path: path.to_path_buf(),
            table,
            digest: 0,
        }),
        _ => None,
    };
    Ok(load_at(world, path, src, &mut pre)?.map(|t| (t, src)))
}

/// The table as `src` read it (from `pre` where it has it, else from its
/// file), on every rank, or why it could not be used. Collective.
fn load_at(
    world: &Comm,
    path: &std::path::Path,
    src: usize,
    pre: &mut Option<Preparsed>,
) -> Result<Result<Table, TableError>, MpiError> {
    const READ: u8 = b'-';
    const INVALID: u8 = b'!';
    const OK: u8 = b'+';
    let mine = if world.rank() == src {
        let read = match pre.take() {
            Some(p) => Ok(Ok(p.table)),
            None => table::read_text(path).map(|t| table::load_str(&t)),
        };
        match read {
            Ok(Ok(tb)) => [&[OK][..], &tb.to_wire()].concat(),
            Ok(Err(problems)) => [
                &[INVALID][..],
                &table::validate::problems_to_wire(&problems),
            ]
            .concat(),
            Err(e) => [&[READ][..], e.to_string().as_bytes()].concat(),
        }
    } else {
        Vec::new()
    };
    let got = world.bcast_bytes(&mine, src)?;
    let body = got.get(1..).unwrap_or_default();
    let read_error = |why: String| {
        // Rank 0's message names the file; say it once.
        let prefix = format!("{}: ", path.display());
        let why = why.strip_prefix(&prefix).unwrap_or(&why);
        let why = why.strip_prefix("cannot read: ").unwrap_or(why);
        TableError::Read {
            path: path.into(),
            source: std::io::Error::other(why.to_string()),
        }
    };
    Ok(match got.first() {
        Some(&OK) => Table::from_wire(body).map_err(read_error),
        Some(&INVALID) => Err(TableError::Invalid {
            path: path.into(),
            problems: table::validate::problems_from_wire(body),
        }),
        _ => Err(read_error(String::from_utf8_lossy(body).into_owned())),
    })
}

/// As [`load`] with explicit settings; `problem` is a reason to fall back
/// found before.
pub fn load_with(
    world: &Comm,
    mut settings: RuntimeSettings,
    problem: Option<String>,
) -> Result<Selector, SelectError> {
    let mut table = None;
    let mut error: Option<TableError> = None;
    // Every rank asks for the same file or none (the settings agreement
    // below checks the path too): rank 0 reads it for everyone.
    let wants = world.allreduce(u64::from(settings.table.is_some()), Op::Max)?;
    if wants == 1 {
        let path = settings.table.clone().unwrap_or_default();
        match load_on_rank0(world, &path)? {
            Ok(tb) => {
                if let Some(w) = crate::abi::table_mismatch(&tb.provenance.mpi) {
                    if world.rank() == 0 {
                        crate::say(&format!("warning: {}: {w}", path.display()));
                    }
                }
                table = Some(Arc::new(tb))
            }
            Err(e) => error = Some(e),
        }
    }
    // Every rank must decide alike: the same settings (the table is
    // rank 0's on every rank).
    let broken = problem.is_some();
    let mine = if broken {
        u64::MAX
    } else {
        settings.digest()
    };
    let lo = world.allreduce(mine, Op::Min)?;
    let hi = world.allreduce(mine, Op::Max)?;
    let reason = match (error, problem) {
        (Some(e), _) => {
            if settings.strict {
                return Err(e.into());
            }
            Some(e.to_string())
        }
        (None, Some(p)) => Some(p),
        (None, None) if lo != hi => {
            if settings.strict {
                return Err(SelectError::Disagree);
            }
            Some(SelectError::Disagree.to_string())
        }
        _ => None,
    };
    if let Some(r) = &reason {
        warn_once(
            world,
            &format!("{r}\ncolltune: using the MPI library's own collectives"),
        );
        table = None;
        settings.forced_bcast = None;
        settings.forced_swap = None;
    }
    Ok(Selector {
        settings,
        table,
        fallback: reason,
    })
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

/// Prints a warning once per process, on rank 0 of `world`.
fn warn_once(world: &Comm, msg: &str) {
    use std::sync::Once;
    static ONCE: Once = Once::new();
    if world.rank() == 0 {
        ONCE.call_once(|| crate::say(&format!("warning: {msg}")));
    }
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

/// Per communicator size, whether the library's `MPI_Bcast` may run
/// different algorithms on different ranks: the ranks of the job handed
/// Open MPI different broadcast rules at `MPI_Init` (a node that could not
/// read the table, or read another; `capi::handoff::agree`), and some rank's
/// rules name this size. Set once, right after `MPI_Init`, agreed by every
/// rank; read when a communicator is set up.
static LIBRARY_DIFFERS: std::sync::OnceLock<LibraryDiffers> = std::sync::OnceLock::new();

/// See [`LIBRARY_DIFFERS`].
#[derive(Debug)]
pub struct LibraryDiffers {
    /// By communicator size up to the world's.
    pub by_size: Vec<bool>,
    /// Sizes above the world's (an intercommunicator's merge, a spawn).
    pub above: bool,
}

impl LibraryDiffers {
    /// Whether a communicator of `size` ranks is affected.
    pub fn at(&self, size: usize) -> bool {
        self.by_size.get(size).copied().unwrap_or(self.above)
    }

    /// How many communicator sizes are affected (for the warning).
    pub fn count(&self) -> usize {
        self.by_size.iter().filter(|&&b| b).count()
    }
}

/// Records which communicator sizes the library's broadcast may differ on
/// (see [`LIBRARY_DIFFERS`]; the first record wins).
pub fn set_library_differs(d: LibraryDiffers) {
    let _ = LIBRARY_DIFFERS.set(d);
}

/// Whether the library's `MPI_Bcast` may run different algorithms on
/// different ranks for a communicator of `size` ranks: then colltune runs
/// every broadcast there with its own algorithms
/// ([`Decisions::without_library`]).
pub fn library_differs(size: usize) -> bool {
    LIBRARY_DIFFERS.get().is_some_and(|d| d.at(size))
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
    /// (also used by [`capi`](crate::capi) for calls it hands to the
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
            let world = ffi::comm_rank(ffi::comm_world()).unwrap_or(0);
            // One write per line, so lines of several processes never interleave.
            let line = format!(
                "colltune trace: rank {world} (rank {} of {}) {what} {bytes} B{}: {choice}\n",
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

    /// Broadcasts `buf` from `root` with the chosen algorithm.
    pub fn bcast(&self, buf: &mut [u8], root: usize) -> Result<&Choice, TransportError> {
        let bytes = buf.len() as u64;
        let (choice, id) = self.bcast.choose(bytes);
        self.trace("bcast", bytes, Some(root), choice);
        match &choice.algorithm {
            // `shm`'s small messages: straight through the small ring, no
            // plan (the ops of the schedule the checker proves).
            Some((spec, _))
                if spec.name == "shm"
                    && (1..=SMALL_MAX).contains(&bytes)
                    && *self.shm_fits.get_or_init(|| {
                        self.shape()
                            .shared_memory_fits(Collective::Bcast, spec)
                            .is_ok()
                    })
                    && self.private.get().is_some() =>
            {
                let c = self.private.get().expect("checked above");
                let ran = small::bcast(c, buf, root);
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
