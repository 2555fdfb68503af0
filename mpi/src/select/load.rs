//! Loading the decision collectively: the table (rank 0 reads it for
//! every rank, or the lowest rank that can where it cannot; where ranks
//! read different tables, one warning naming who read what), the settings
//! every rank must share, and which communicator sizes the library's own
//! broadcast may differ on ([`LibraryDiffers`]).

use super::*;

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
pub(super) static PREPARSED: std::sync::Mutex<Option<Preparsed>> = std::sync::Mutex::new(None);

pub(super) struct Preparsed {
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

/// Under MPI 4 sessions, the table this process read and validated when
/// its first session opened (`keep_for_sessions`), offered to each
/// communicator's set-up as [`PREPARSED`] is to `MPI_Init`'s: the file is
/// read once per process, however many communicators are set up.
static SESSION: std::sync::Mutex<Option<Preparsed>> = std::sync::Mutex::new(None);

/// Reads `COLLTUNE_TABLE` for the communicators of MPI 4 sessions (local:
/// no message; a file that cannot be used is remembered for the warning
/// that names who read what, as before `MPI_Init`).
pub fn keep_for_sessions() {
    let Some(path) = std::env::var_os("COLLTUNE_TABLE")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
    else {
        return;
    };
    let text = match table::read_text(&path) {
        Ok(t) => t,
        Err(e) => return keep_unread(&path, e.to_string()),
    };
    let digest = cached::digest(&text);
    match cached::load(&text) {
        Ok(table) => {
            *SESSION.lock().unwrap_or_else(|p| p.into_inner()) = Some(Preparsed {
                path,
                table,
                digest,
            })
        }
        Err(_) => keep_unread(&path, format!("not a valid table (content {digest:016x})")),
    }
}

/// The table kept for `MPI_Init` ([`PREPARSED`], taken), else a copy of the
/// one kept for sessions.
fn preparsed() -> Option<Preparsed> {
    PREPARSED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .or_else(|| {
            SESSION
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .map(|p| Preparsed {
                    path: p.path.clone(),
                    table: p.table.clone(),
                    digest: p.digest,
                })
        })
}

/// Why this rank could not use its table before `MPI_Init` (the drop-in
/// reads it there on Open MPI): for the warning that names who read what.
pub(super) static UNREAD: std::sync::Mutex<Option<(std::path::PathBuf, String)>> =
    std::sync::Mutex::new(None);

/// See [`UNREAD`] (before `MPI_Init`).
pub fn keep_unread(path: &std::path::Path, why: String) {
    *UNREAD.lock().unwrap_or_else(|p| p.into_inner()) = Some((path.to_path_buf(), why));
}

/// What this rank has of its table: a key every rank compares (the same
/// content read before `MPI_Init`, wherever its file is; else the path it
/// was given) and the words the warning writes.
pub(super) fn read_status(path: &std::path::Path, pre: Option<&Preparsed>) -> (String, String) {
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
            let why = unprefixed(&path, &why);
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
pub(super) const READ_RECORD: usize = 384;

/// Where ranks read different tables, or some none: every rank's host and
/// what it read, gathered at rank 0 of `world`, which warns once, grouping
/// the ranks by what they read (`source`: the rank whose table every rank
/// runs; None: none could be read). Collective.
pub(super) fn warn_who_read_what(
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
        let what = if what.is_empty() {
            "read nothing"
        } else {
            what
        };
        match groups.iter_mut().find(|g| g.0 == what) {
            Some(g) => g.1.push((rank, host.to_string())),
            None => groups.push((what.to_string(), vec![(rank, host.to_string())])),
        }
    }
    if groups.len() < 2 {
        return Ok(());
    }
    let mut msg =
        String::from("warning: the ranks did not all read the same table (COLLTUNE_TABLE):");
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
    // Once per process (under sessions each communicator's set-up agrees
    // on a table, and would find the same files again).
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::AcqRel) {
        crate::say(&msg);
    }
    Ok(())
}

/// The table as rank 0 read and validated it, on every rank (one read of
/// the file per job, one validation; the others receive it in a compact
/// form), or why it could not be used (the same on every rank).
pub(super) fn load_on_rank0(
    world: &Comm,
    path: &std::path::Path,
) -> Result<Result<Table, TableError>, MpiError> {
    let pre = preparsed();
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
pub(super) fn load_from_some_rank(
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
    // No rank: the communicator's size (not u64::MAX: MPICH 4.0.2's MPI_MIN
    // on MPI_UINT64_T compares as signed, so u64::MAX would be the least).
    let none = world.size() as u64;
    let vote = if ok { world.rank() as u64 } else { none };
    let src = world.allreduce(vote, Op::Min)?;
    if src >= none {
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
pub(super) fn load_at(
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
        let why = unprefixed(path, &why);
        let why = why.strip_prefix("cannot read: ").unwrap_or(&why);
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
                    // Once per process (under sessions every communicator
                    // loads the table).
                    static SAID: std::sync::atomic::AtomicBool =
                        std::sync::atomic::AtomicBool::new(false);
                    if world.rank() == 0 && !SAID.swap(true, std::sync::atomic::Ordering::AcqRel) {
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
    let mine = if broken { u64::MAX } else { settings.digest() };
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

/// Prints a warning once per process, on rank 0 of `world`.
pub(super) fn warn_once(world: &Comm, msg: &str) {
    use std::sync::Once;
    static ONCE: Once = Once::new();
    if world.rank() == 0 {
        ONCE.call_once(|| crate::say(&format!("warning: {msg}")));
    }
}

/// Per communicator size, whether the library's `MPI_Bcast` may run
/// different algorithms on different ranks: the ranks of the job handed
/// Open MPI different broadcast rules at `MPI_Init` (a node that could not
/// read the table, or read another; `runtime::handoff::agree`), and some rank's
/// rules name this size. Set once, right after `MPI_Init`, agreed by every
/// rank; read when a communicator is set up.
pub(super) static LIBRARY_DIFFERS: std::sync::OnceLock<LibraryDiffers> = std::sync::OnceLock::new();

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

/// A table error's message without its leading `PATH: ` (the caller names
/// the file itself).
fn unprefixed(path: &std::path::Path, why: &str) -> String {
    let prefix = format!("{}: ", path.display());
    why.strip_prefix(&prefix).unwrap_or(why).to_string()
}
