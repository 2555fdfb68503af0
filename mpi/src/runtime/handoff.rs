//! The handoff: where a table gives calls to one of Open MPI's own
//! broadcast algorithms (or to its default decision), Open MPI is told so
//! itself, before `MPI_Init`, through a coll/tuned rules file
//! ([`colltune_core::tables::export::openmpi_handoff`]); those calls then go
//! straight to `PMPI_Bcast` on the application's communicator, and
//! colltune's per-call work there is one size check ([`pass_if_handed_off`]): no
//! communicator lookup, no decision, no duplicate.
//!
//! Why: a small broadcast takes 0.2-0.3 us, and in an application the
//! interposition's cache lines are cold at every call (other ranks and the
//! library's own work run between calls), so every line the path touches
//! costs there what a warm benchmark does not show (13 ns for the whole
//! dispatch warm, 40-70 ns in situ: docs/measurements/2026-12-01-handoff).
//!
//! When: the drop-in's `MPI_Init` (not a program calling `colltune_init`
//! itself) on Open MPI, with a table (`COLLTUNE_TABLE`), no forced choice
//! (`COLLTUNE_BCAST`), and no forced broadcast algorithm or
//! `coll_tuned_use_dynamic_rules=0` of the user's (`OMPI_MCA_...` in the
//! environment, or a parameter file); `COLLTUNE_HANDOFF=0` turns it off. A
//! rules file of the site's or the user's is merged where active
//! ([`merged_rules`], [`super::rules`]) and replaced where dormant. Every rank reads the
//! table itself for this (before `MPI_Init` there is no communication),
//! writes the rules to `$TMPDIR/colltune-handoff-PID.rules` and sets
//! `OMPI_MCA_coll_tuned_dynamic_rules_filename`; the file is removed once
//! `MPI_Init` has read it.
//!
//! Every rank must have handed Open MPI the same rules (one that could not
//! read the table, or read another, would run another algorithm in the
//! same broadcast): [`agree`], first thing after `MPI_Init`, compares a
//! digest of them over `MPI_COMM_WORLD`. Where they differ, nothing is
//! handed off on any rank, and for every communicator size some rank's
//! rules name, colltune runs every broadcast with its own algorithms (the
//! table's library rules as their twins, Open MPI's own decision as the
//! twins of its fixed decision: `Decisions::without_library`), the same on
//! every rank; `select::load` warns once, naming who read what.
//!
//! Open MPI keys rules by communicator size: a communicator of a size the
//! table has rules for, but of another node layout, gets that size's
//! library rules too (where colltune alone would give it the library's
//! default); sizes with several layouts in the table are not handed off.
//!
//! Nothing else changes (docs/transparency.md lists what an application
//! reading MPI_T sees): `coll_tuned_use_dynamic_rules` is turned on, and a
//! rules file given, only where the table has a rule naming one of
//! coll/tuned's algorithms (not Open MPI's own decision, which needs
//! neither: those calls go to `PMPI_Bcast` as they are, through the same
//! fast path); never where the site or the user turned dynamic rules off,
//! or where turning them on would wake settings they left dormant
//! ([`site::Site::dormant`]: a forced algorithm of another collective, a
//! rules file). There, and wherever Open MPI did not load what colltune
//! gave it on every rank (MPI_T initialised before `MPI_Init` makes Open MPI
//! read its variables before colltune sets them), every rank runs the
//! table's coll/tuned rules as colltune's own algorithms of the same family
//! (`select::own_routes`), and the trace says why. [`agree`] reads back
//! through MPI_T what Open MPI loaded, and agrees on it over
//! `MPI_COMM_WORLD`: every rank takes the same route.

use std::ffi::{c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

use colltune_core::tables::decide::{RuntimeSettings, Trace};
use colltune_core::tables::export::{openmpi_handoff, Handoff};
use colltune_core::tables::table;
use mpi::ffi::{MPI_Comm, MPI_Datatype};

use super::rules;
use super::site::{self, Site};
use super::{lock, report};
use crate::abi::{self, Family};
use crate::transport::mpi::ffi::{self as cffi, Datatype};
use crate::transport::mpi::Op;

const RULES_VAR: &str = "OMPI_MCA_coll_tuned_dynamic_rules_filename";
const FILE_PREFIX: &str = "colltune-handoff-";

/// What was handed to Open MPI before `MPI_Init`, until [`agree`].
struct Pending {
    handoff: Handoff,
    /// The rules file, where a rule names one of coll/tuned's algorithms
    /// (None: every handed-off rule is Open MPI's own decision).
    file: Option<PathBuf>,
    /// The site's rules file merged into it, for the trace.
    merged: Option<String>,
}

/// What the table asks of Open MPI's dynamic rules, decided before
/// `MPI_Init`, until [`agree`].
#[derive(Default)]
struct Dynamic {
    /// The table has a rule naming one of coll/tuned's algorithms.
    needed: bool,
    /// Why they cannot be given it here (the site's settings).
    refused: Option<String>,
    /// MPI_T was initialised before `MPI_Init` (by the application): Open
    /// MPI may have read its variables before colltune set them, so what
    /// it loaded is read back after `MPI_Init` (else it read them there).
    early: bool,
}

static DYNAMIC: Mutex<Option<Dynamic>> = Mutex::new(None);

/// The rules file to remove at [`retire`] (kept while Open MPI names it).
static FILE: Mutex<Option<PathBuf>> = Mutex::new(None);

static PENDING: Mutex<Option<Pending>> = Mutex::new(None);

/// Why nothing was handed off, for the trace.
static WHY_NOT: Mutex<Option<String>> = Mutex::new(None);

/// Per communicator size (the index), the byte ranges Open MPI's rules
/// decide; published by [`agree`], read by [`pass_if_handed_off`]. Never freed once
/// published (a few bytes per size): a call in flight may still read it.
struct HandedRanges {
    by_size: Vec<Vec<(u64, u64)>>,
}

static PASSED: AtomicPtr<HandedRanges> = AtomicPtr::new(std::ptr::null_mut());

/// Why the handoff does not apply in this process; None: it may.
fn unwanted(site: &Site) -> Option<String> {
    let get = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    if get("COLLTUNE_HANDOFF").is_some_and(|v| v == "0") {
        return Some("COLLTUNE_HANDOFF=0".into());
    }
    if get("COLLTUNE_TABLE").is_none() {
        return Some("no table".into());
    }
    if get("COLLTUNE_BCAST").is_some() {
        return Some("COLLTUNE_BCAST forces one choice everywhere".into());
    }
    if abi::runtime().family != Family::OpenMpi || abi::foreign_family() {
        return Some("not Open MPI".into());
    }
    if let Some(why) = unread(site) {
        return Some(why);
    }
    if let Some(a) = site
        .algorithms
        .iter()
        .find(|a| a.name == site::BCAST_ALGORITHM)
    {
        return Some(format!(
            "the site's or the user's forced broadcast algorithm, {a}"
        ));
    }
    if site.dynamic_rules() == Some(false) {
        return Some(format!(
            "{}",
            site.dynamic.as_ref().expect("set where Some")
        ));
    }
    None
}

/// Where the site or the user made Open MPI read sources colltune does not
/// (`mpirun -am`, an environment-variable file): what they set for
/// coll/tuned is unknown, so neither a handoff nor dynamic rules can be
/// guaranteed to leave it as it is.
fn unread(site: &Site) -> Option<String> {
    (!site.unread.is_empty()).then(|| {
        format!(
            "Open MPI reads settings colltune does not ({}): what they set for coll/tuned is unknown",
            site.unread
                .iter()
                .map(|u| u.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// The site's or the user's own rules file (one of ours left from an
/// exec'd parent is not).
fn site_rules_file(site: &Site) -> Option<&site::Setting> {
    site.rules_file.as_ref().filter(|f| {
        !Path::new(&f.value)
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(FILE_PREFIX))
    })
}

/// The running Open MPI's major version (`Open MPI v4.1.4`: 4).
fn ompi_major() -> Option<u32> {
    let name = &abi::runtime().name;
    let v = name
        .strip_prefix("Open MPI")?
        .trim_start()
        .trim_start_matches('v');
    v.split('.').next()?.parse().ok()
}

/// The site's active rules file, read and checked for merging: where Open
/// MPI would not read it, or colltune cannot write it back faithfully, the
/// reason (the file and line).
fn read_site_rules(f: &site::Setting) -> Result<rules::RulesFile, String> {
    let text = std::fs::read_to_string(&f.value)
        .map_err(|e| format!("the site's or the user's rules file {f} cannot be read: {e}"))?;
    let parsed = rules::parse(&text, &f.value).map_err(|e| {
        format!(
            "the site's or the user's rules file ({}) cannot be merged into the handoff's: {e}",
            f.source
        )
    })?;
    if parsed.version > 1 && ompi_major().is_some_and(|m| m < 5) {
        return Err(format!(
            "the site's or the user's rules file {f} is rule-file-version-{}, which {} does not read (it ignores the whole file there), so colltune does not merge it",
            parsed.version,
            abi::runtime().name
        ));
    }
    Ok(parsed)
}

/// The rules file handed to Open MPI: the site's active one (where given)
/// with the handoff's broadcast rules for the sizes it covers, else the
/// handoff's alone (sizes below its smallest at Open MPI's fixed decision);
/// and what of the site's it supersedes, for the trace.
fn merged_rules(
    handoff: &Handoff,
    site: Option<(&site::Setting, rules::RulesFile)>,
) -> Result<(String, Option<String>), String> {
    let ours =
        rules::parse(&handoff.rules, "colltune's handoff").map_err(|e| format!("internal: {e}"))?;
    let covered: Vec<u64> = handoff.ranges.iter().map(|r| u64::from(r.0)).collect();
    let empty = rules::RulesFile::default();
    let (merged, superseded) =
        rules::merge(site.as_ref().map_or(&empty, |s| &s.1), &ours, &covered);
    let first = match &site {
        Some((f, _)) => format!("colltune's handoff merged into {}", f.value),
        None => "colltune's handoff".to_string(),
    };
    let note = site.map(|(f, _)| {
        let sup = if superseded.is_empty() {
            "none of its broadcast rules superseded".to_string()
        } else {
            format!(
                "its broadcast rules superseded for {}",
                superseded
                    .iter()
                    .map(|s| format!(
                        "{} ranks (its entry for {} ranks, {}:{})",
                        s.ranks, s.entry, f.value, s.line
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        format!(
            "the site's or the user's rules file {f} merged: its rules for other collectives and other communicator sizes kept, {sup}"
        )
    });
    Ok((merged.write(&first), note))
}

/// Whether a table has a rule naming one of coll/tuned's algorithms (not
/// Open MPI's own decision): what needs Open MPI's dynamic rules.
fn needs_dynamic_rules(t: &table::Table) -> bool {
    t.bcast.iter().flat_map(|cr| &cr.rules).any(|r| {
        matches!(
            r.library(),
            Some(Ok(colltune_core::libraries::library::LibraryChoice::Tuned(f))) if !f.is_default()
        )
    })
}

/// Before the library's `MPI_Init`, on Open MPI with a table: reads the
/// table and the site's settings, turns Open MPI's dynamic rules on where a
/// rule needs them and nothing the site left dormant would wake, and where
/// the table has rules Open MPI can run, writes them for Open MPI and
/// points it at them. Any problem (unreadable or invalid table, a file
/// that cannot be written) means no handoff; the table's own errors are
/// reported after `MPI_Init`, as without it.
pub fn before_init() {
    prepare(true)
}

/// Before the library's first `MPI_Session_init`: as [`before_init`], but
/// never a handoff (no world to agree on it: a node that could not read the
/// table would run other algorithms in the library's broadcast); only Open
/// MPI's dynamic rules turned on where a rule needs them, so the forced
/// routes can force coll/tuned's algorithms.
pub fn before_sessions() {
    prepare(false)
}

/// [`before_init`], with the handoff where `hand_off`.
fn prepare(hand_off: bool) {
    let why_not = |why: String| *lock(&WHY_NOT) = Some(why);
    // The handoff is Open MPI's alone: on another library there is nothing
    // to hand off and nothing for the trace to say about it.
    if abi::runtime().family != Family::OpenMpi || abi::foreign_family() {
        return;
    }
    let get = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let (Some(path), None) = (
        get("COLLTUNE_TABLE").map(PathBuf::from),
        get("COLLTUNE_BCAST"),
    ) else {
        return why_not(if get("COLLTUNE_TABLE").is_none() {
            "no table".into()
        } else {
            "COLLTUNE_BCAST forces one choice everywhere".into()
        });
    };
    let text = match table::read_text(&path) {
        Ok(text) => text,
        Err(e) => {
            crate::select::keep_unread(&path, e.to_string());
            return why_not("the table could not be used before MPI_Init".into());
        }
    };
    // Parsed and validated, or its compact form from an earlier start.
    let t = match crate::select::cached::load(&text) {
        Ok(t) => t,
        Err(_) => {
            crate::select::keep_unread(
                &path,
                format!(
                    "not a valid table (content {:016x})",
                    crate::select::cached::digest(&text)
                ),
            );
            return why_not("the table could not be used before MPI_Init".into());
        }
    };
    let site = Site::of_process();
    let needed = needs_dynamic_rules(&t);
    let unwanted = unwanted(&site);
    let handoff = match (&unwanted, openmpi_handoff(&t)) {
        _ if !hand_off => Err("MPI sessions: no world to agree on the handoff".to_string()),
        (Some(why), _) => Err(why.clone()),
        (None, Ok(Some(h))) => Ok(h),
        (None, Ok(None)) => Err("no rule names one of Open MPI's algorithms".into()),
        (None, Err(e)) => Err(e.to_string()),
    };
    // No rank need read it again after MPI_Init.
    crate::select::keep_preparsed(&path, &text, t);
    // The handoff points Open MPI at a rules file of its own (where a rule
    // needs one): that replaces a rules file of the site's in Open MPI's
    // variable, which therefore stays dormant where it was.
    let gives_file = needed && handoff.is_ok();
    let mut dynamic = Dynamic {
        needed,
        refused: None,
        early: cffi::mpi_t_initialized(),
    };
    // The site's active rules file, to merge the handoff's into.
    let mut site_file: Option<(&site::Setting, rules::RulesFile)> = None;
    if let (true, Some(why)) = (needed, unread(&site)) {
        dynamic.refused = Some(why);
    } else if needed {
        match site.dynamic_rules() {
            Some(true) => {
                if let (true, Some(f)) = (gives_file, site_rules_file(&site)) {
                    match read_site_rules(f) {
                        Ok(parsed) => site_file = Some((f, parsed)),
                        Err(why) => dynamic.refused = Some(why),
                    }
                }
            }
            Some(false) => {
                dynamic.refused = Some(format!(
                    "Open MPI's dynamic rules are off by the site's or the user's choice ({})",
                    site.dynamic.as_ref().expect("set where Some")
                ))
            }
            None => {
                let dormant: Vec<&site::Setting> = site
                    .dormant()
                    .into_iter()
                    .filter(|d| !(gives_file && d.name == site::RULES_FILE))
                    .collect();
                if dormant.is_empty() {
                    // Before MPI_Init: no other thread of the library's
                    // reads the environment yet.
                    std::env::set_var(format!("OMPI_MCA_{}", site::DYNAMIC), "1");
                } else {
                    dynamic.refused = Some(format!(
                        "turning Open MPI's dynamic rules on would wake settings left dormant: {}",
                        dormant
                            .iter()
                            .map(|d| d.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
        }
    }
    let refused = dynamic.refused.clone();
    *lock(&DYNAMIC) = Some(dynamic);
    let handoff = match handoff {
        Ok(h) => h,
        Err(why) => return why_not(why),
    };
    // Rules of Open MPI's own decision only: no rules file, no dynamic
    // rules (its fixed decision is what the rules would run), unless a
    // rules file of the site's decides those calls instead.
    if !needed {
        if let Some(f) = site_rules_file(&site) {
            return why_not(format!("the site's or the user's own rules file, {f}"));
        }
        *lock(&PENDING) = Some(Pending {
            handoff,
            file: None,
            merged: None,
        });
        return;
    }
    if let Some(why) = refused {
        return why_not(why);
    }
    let (text, merged) = match merged_rules(&handoff, site_file) {
        Ok(m) => m,
        Err(why) => return why_not(why),
    };
    let dir = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let file = dir.join(format!("{FILE_PREFIX}{}.rules", std::process::id()));
    if let Err(e) = std::fs::write(&file, text) {
        return why_not(format!("{}: {e}", file.display()));
    }
    std::env::set_var(RULES_VAR, &file);
    *lock(&FILE) = Some(file.clone());
    *lock(&PENDING) = Some(Pending {
        handoff,
        file: Some(file),
        merged,
    });
}

/// Right after the library's `MPI_Init` (successful or not). The rules
/// file stays until [`retire`]: Open MPI's `coll_tuned_dynamic_rules_filename`
/// names it, and an application may read that.
pub fn after_init() {}

/// What Open MPI loaded, read back through MPI_T (one session, paired):
/// whether its dynamic rules are on, and the rules file it read.
fn loaded() -> Result<(bool, String), String> {
    let _t = cffi::MpiT::open().map_err(|e| e.to_string())?;
    let dynamic = cffi::cvar_read_int(site::DYNAMIC).map_err(|e| e.to_string())? != 0;
    let file = cffi::cvar_read_string(site::RULES_FILE).map_err(|e| e.to_string())?;
    Ok((dynamic, file))
}

/// First thing after `MPI_Init` (collective over `MPI_COMM_WORLD`): every
/// rank handed Open MPI the same rules, or none did; the job stops where
/// they differ. Reads back what Open MPI loaded (where a table's rule needs
/// its dynamic rules) and agrees on it: where any rank could not give Open
/// MPI what the table needs, or Open MPI did not take it, every rank runs
/// the table's coll/tuned rules as colltune's own algorithms
/// (`select::own_routes`), and nothing is handed off. Publishes [`pass_if_handed_off`]'s
/// ranges, unless calls are traced (a traced call takes the full path,
/// which says where it went).
pub fn agree() {
    let pending = lock(&PENDING).take();
    let dynamic = lock(&DYNAMIC).take().unwrap_or_default();
    let mine = pending.as_ref().map_or(0, |p| p.handoff.digest());
    // Why this rank cannot run the table's coll/tuned rules as Open MPI's.
    // Read back only where MPI_T was initialised before MPI_Init (an MPI_T
    // session of colltune's own would cost Open MPI's registration of
    // every variable, a fifth of a second, at every start).
    let own: Option<String> = if !dynamic.needed {
        None
    } else if let Some(why) = dynamic.refused {
        Some(why)
    } else if !dynamic.early {
        None
    } else {
        match loaded() {
            Err(e) => Some(format!("cannot read back Open MPI's dynamic rules: {e}")),
            Ok((false, _)) => Some(format!(
                "Open MPI did not turn its dynamic rules on as asked ({} read it before MPI_Init: MPI_T initialised early?)",
                site::DYNAMIC
            )),
            Ok((true, file)) => match pending.as_ref().and_then(|p| p.file.as_ref()) {
                Some(f) if Path::new(&file) != f.as_path() => Some(format!(
                    "Open MPI did not load the rules file it was given ({} is {file:?}: MPI_T initialised before MPI_Init?)",
                    site::RULES_FILE
                )),
                _ => None,
            },
        }
    };
    // max(d) and max(!d): every rank has the same d exactly when
    // max(d) == !max(!d); max(own): some rank must take its own routes;
    // max(file): some rank gave Open MPI a rules file.
    let gave_file = pending.as_ref().is_some_and(|p| p.file.is_some());
    let send = [mine, !mine, u64::from(own.is_some()), u64::from(gave_file)];
    let mut got = [0u64; 4];
    // SAFETY: four u64 in, four out; MPI_COMM_WORLD after MPI_Init.
    let agreed = unsafe {
        cffi::allreduce(
            send.as_ptr().cast(),
            got.as_mut_ptr().cast(),
            4,
            Datatype::U64,
            Op::Max,
            cffi::comm_world(),
        )
    };
    if agreed.is_err() {
        return;
    }
    if got[0] != !got[1] {
        // The ranks handed Open MPI different rules (one could not read the
        // table, or read another): no abort. Where some rank gave Open MPI a
        // rules file, the library's broadcast on communicators of the sizes
        // it names may run different algorithms on different ranks: colltune
        // runs every broadcast there with its own algorithms, on every rank
        // alike, and its control plane avoids the library's broadcast.
        differ(pending.as_ref(), got[3] != 0);
        return;
    }
    let traced = RuntimeSettings::trace_from_env() != Trace::Off;
    let lead = cffi::comm_rank(cffi::comm_world()).unwrap_or(0) == 0;
    if got[2] != 0 {
        // Where some rank loaded the rules file and another did not, the
        // library's MPI_Bcast could run different algorithms on different
        // ranks: colltune's control plane no longer uses it, on any rank.
        if got[3] != 0 {
            cffi::set_p2p_bcasts();
        }
        let why = own.unwrap_or_else(|| {
            "another rank could not give Open MPI what the table's rules need, or Open MPI did not take it there".into()
        });
        if traced && lead {
            report(&format!(
                "the table's rules naming coll/tuned's algorithms run as colltune's own algorithms of the same family, on every rank: {why}"
            ));
        }
        crate::select::own_routes(why);
        return;
    }
    let Some(p) = pending else {
        if let (true, true, Some(why)) = (traced, lead, lock(&WHY_NOT).take()) {
            report(&format!("no handoff to Open MPI's rules: {why}"));
        }
        return;
    };
    if traced && lead {
        report(&format!(
            "handoff: Open MPI runs the table's library rules itself ({})",
            describe(&p.handoff)
        ));
        if let Some(m) = &p.merged {
            report(&format!("handoff: {m}"));
        }
    }
    // Traced calls take the full path, which says where each went.
    publish(&p.handoff, !traced);
}

/// Where the ranks handed Open MPI different rules ([`agree`]): which
/// communicator sizes any rank's rules file names, agreed over
/// `MPI_COMM_WORLD` (one allreduce of a flag per size), published for the
/// selector (`select::set_library_differs`); no handoff is published on any
/// rank, so every call takes the full path, whose table is the same on
/// every rank (`select::load`). The warning, naming who read what, is the
/// selector's (one, on rank 0).
fn differ(pending: Option<&Pending>, some_file: bool) {
    let world = cffi::comm_world();
    let size = cffi::comm_size(world).unwrap_or(1);
    let mut flags = vec![0u8; size + 2];
    if !some_file {
        // Every rank's Open MPI runs its own decision as it was.
        crate::select::set_library_differs(crate::select::LibraryDiffers {
            by_size: vec![false; size + 1],
            above: false,
        });
        return;
    }
    if let Some(p) = pending.filter(|p| p.file.is_some()) {
        for (n, _) in &p.handoff.ranges {
            let n = *n as usize;
            flags[n.min(size + 1)] = 1;
        }
    }
    let mut all = vec![0u8; flags.len()];
    // SAFETY: flags.len() bytes in and out; MPI_COMM_WORLD after MPI_Init.
    let agreed = unsafe {
        cffi::allreduce(
            flags.as_ptr().cast(),
            all.as_mut_ptr().cast(),
            flags.len() as u64,
            Datatype::U8,
            Op::Max,
            world,
        )
    };
    // Where even that failed, every size is taken as affected (the safe
    // side: colltune's own routes on every rank).
    let differs = match agreed {
        Ok(()) => crate::select::LibraryDiffers {
            by_size: all[..=size].iter().map(|&f| f != 0).collect(),
            above: all[size + 1] != 0,
        },
        Err(_) => crate::select::LibraryDiffers {
            by_size: vec![true; size + 1],
            above: true,
        },
    };
    cffi::set_p2p_bcasts();
    crate::select::set_library_differs(differs);
}

/// The handed-off ranges, for a trace line: `4 ranks 0-1448 B, ...`.
fn describe(h: &Handoff) -> String {
    h.ranges
        .iter()
        .map(|(size, r)| {
            let r: Vec<String> = r
                .iter()
                .map(|&(lo, hi)| {
                    if hi == u64::MAX {
                        format!("{lo} B and up")
                    } else {
                        format!("{lo}-{hi} B")
                    }
                })
                .collect();
            format!("{size} ranks {}", r.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Whether the handoff covers a call of `bytes` on a communicator of
/// `size` ranks (for the full path's trace, which then passes it on too).
pub fn covers(size: usize, bytes: u64) -> bool {
    // SAFETY: published once, never freed.
    let f = unsafe { COVERED.load(Ordering::Acquire).as_ref() };
    f.is_some_and(|f| in_ranges(f, size, bytes))
}

/// The ranges as [`covers`] sees them, whether or not [`pass_if_handed_off`] takes them.
static COVERED: AtomicPtr<HandedRanges> = AtomicPtr::new(std::ptr::null_mut());

fn publish(h: &Handoff, fast: bool) {
    let len = h.ranges.iter().map(|r| r.0 as usize + 1).max().unwrap_or(0);
    let mut by_size = vec![Vec::new(); len];
    for (size, r) in &h.ranges {
        by_size[*size as usize] = r.clone();
    }
    let f = Box::into_raw(Box::new(HandedRanges { by_size }));
    COVERED.store(f, Ordering::Release);
    if fast {
        PASSED.store(f, Ordering::Release);
    }
}

#[inline]
fn in_ranges(f: &HandedRanges, size: usize, bytes: u64) -> bool {
    f.by_size
        .get(size)
        .is_some_and(|r| r.iter().any(|&(lo, hi)| lo <= bytes && bytes <= hi))
}

/// Before [`super::finalize`]: calls go the full way (to the library,
/// colltune being gone); the rules file goes.
pub fn retire() {
    PASSED.store(std::ptr::null_mut(), Ordering::Release);
    COVERED.store(std::ptr::null_mut(), Ordering::Release);
    if let Some(f) = lock(&FILE).take() {
        let _ = std::fs::remove_file(f);
    }
}

/// A call the handoff covers, passed to `PMPI_Bcast` unchanged: its return
/// code; None: the full path decides. Reads the communicator's size from
/// the library, the datatype's size from colltune's cache of predefined
/// types (else from the library), and the ranges of that size; remembers
/// them in [`super::hot`] for the next call on this communicator with
/// this datatype (predefined or derived: its line goes when it is freed).
///
/// # Safety
/// As for `MPI_Bcast`.
#[inline]
pub unsafe fn pass_if_handed_off(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Option<c_int> {
    // SAFETY: published once, never freed.
    let f = PASSED.load(Ordering::Acquire).as_ref()?;
    if count < 0 || comm == cffi::comm_null() || datatype == cffi::datatype_null() {
        return None;
    }
    let ranges = f
        .by_size
        .get(cffi::comm_size_raw(comm)?)
        .map_or(&[][..], |r| &r[..]);
    // A predefined type the full path has met: its size from colltune's
    // cache (no library call); else the library's answer. The call's line
    // (the datatype classified once there) answers the next such call.
    let each = match super::typecache::get(datatype) {
        Some((size, _)) => size,
        None => cffi::type_size_raw(datatype)?,
    };
    if !super::hot::has_line(comm, datatype) {
        super::hot::fill_line(comm, datatype, each, None, ranges, ranges, std::ptr::null());
    }
    if ranges.is_empty() {
        return None;
    }
    let bytes = each.checked_mul(count as u64)?;
    if !ranges.iter().any(|&(lo, hi)| lo <= bytes && bytes <= hi) {
        return None;
    }
    let rc = cffi::user_bcast(buffer, count, datatype, root, comm);
    Some(rc)
}

/// The handed-off ranges of communicators of `size` ranks, as [`pass_if_handed_off`]
/// takes them (none while calls are traced, or without the handoff).
pub fn passed_ranges(size: usize) -> &'static [(u64, u64)] {
    // SAFETY: published once, never freed.
    match unsafe { PASSED.load(Ordering::Acquire).as_ref() } {
        Some(f) => f.by_size.get(size).map_or(&[][..], |r| &r[..]),
        None => &[],
    }
}
