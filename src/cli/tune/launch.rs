//! What a measured tune's launch settles on rank 0 before measuring, and
//! tells the other ranks: the communicators' sizes, the CSV (refusing to overwrite one, or checking
//! that a resume matches) and, for a further launch (`--focus`), the open
//! points of the earlier launches.
//!
//! ```text
//! rank 0: check --csv / read --focus  --bcast(go)-->  every rank:
//!         refused (said why) -> Usage; nothing open -> Ok; else measure
//! ```

use std::path::PathBuf;

use colltune_core::measure::record::Sample;
use colltune_core::tune::focus::Focus;
use colltune_core::tune::resume::{read_for_resume, TuneConfig};
use colltune_mpi::transport::mpi::{Comm, Control};

use super::Args;
use crate::cli::Code;

/// The communicators' sizes: the whole job's, then `--comm-sizes`' (each
/// once); None when one is out of range (rank 0 has said why).
pub fn comm_sizes_of(args: &Args, world: &Comm) -> anyhow::Result<Option<Vec<u32>>> {
    let mut comm_sizes: Vec<u32> = vec![world.size() as u32];
    for &k in &args.comm_sizes {
        if k == 0 || k as usize > world.size() {
            if world.rank() == 0 {
                eprintln!(
                    "colltune: error: --comm-sizes {k}: must be between 1 and the job's {} ranks",
                    world.size()
                );
            }
            // The others exit once rank 0 has said why (see calibrate).
            world.barrier()?;
            return Ok(None);
        }
        if !comm_sizes.contains(&k) {
            comm_sizes.push(k);
        }
    }
    Ok(Some(comm_sizes))
}

/// What a further launch measures: the sizes, and its focus (None: every size).
pub type Further = (Vec<u64>, Option<Focus>);

/// A further launch's focus, agreed by every rank: `Err(code)` when the
/// tune ends here (refused, or nothing is open), else the sizes to measure
/// (the open points' where there is a focus) and the focus itself.
pub fn further(
    args: &Args,
    world: &Comm,
    prov: &colltune_core::measure::method::Origin,
    comm_sizes: &[u32],
    sizes: Vec<u64>,
) -> anyhow::Result<Result<Further, Code>> {
    if args.focus.is_empty() {
        return Ok(Ok((sizes, None)));
    }
    let lead = world.rank() == 0;
    let f = if lead {
        match focus_of(&args.focus, prov, args, comm_sizes, &sizes) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("colltune: error: {e}");
                None
            }
        }
    } else {
        None
    };
    // 0: refused (said why), 1: measure, 2: nothing is open.
    let go = match &f {
        Some(f) if f.is_empty() => 2,
        Some(_) => 1,
        None => u64::from(!lead),
    };
    match world.bcast(go, 0)? {
        0 => {
            world.barrier()?;
            return Ok(Err(Code::Usage));
        }
        2 => {
            if lead {
                outln!(
                "colltune tune: nothing is open in {} earlier launch(es) ({} point(s) of other communicator sizes): no further launch needed; nothing written",
                args.focus.len(),
                    f.as_ref().map_or(0, |f| f.elsewhere)
                );
            }
            return Ok(Err(Code::Ok));
        }
        _ => {}
    }
    let mut sizes = sizes;
    if let Some(f) = &f {
        sizes = f.sizes();
        outln!(
            "colltune tune: a further launch at {} open point(s) of {} earlier launch(es), sizes {}{}",
            f.len(),
            args.focus.len(),
            sizes.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
            if f.elsewhere > 0 {
                format!(
                    " ({} open point(s) of communicator sizes this tune does not measure left as they are)",
                    f.elsewhere
                )
            } else {
                String::new()
            }
        );
    }
    Ok(Ok((sizes, f)))
}

/// Rank 0 checks the CSV ([`prepare_csv`]) and tells everyone whether to
/// go on: the samples resumed (rank 0's; none elsewhere), or None when
/// refused (rank 0 has said why).
pub fn check_csv(
    world: &Comm,
    csv: &std::path::Path,
    config: &TuneConfig,
    resume: bool,
) -> anyhow::Result<Option<Vec<Sample>>> {
    let mut resumed = Vec::new();
    let mut problem: Option<String> = None;
    if world.rank() == 0 {
        match prepare_csv(csv, config, resume) {
            Ok(s) => resumed = s,
            Err(e) => problem = Some(e),
        }
    }
    let go = world.bcast(u64::from(problem.is_none()), 0)?;
    if go == 0 {
        if let Some(p) = problem {
            eprintln!("colltune: error: {p}");
        }
        world.barrier()?;
        return Ok(None);
    }
    Ok(Some(resumed))
}

/// Checks the raw CSV before a tune: refuses to overwrite one, and for a
/// resume checks that it was made with the same configuration.
fn prepare_csv(
    csv: &std::path::Path,
    config: &TuneConfig,
    resume: bool,
) -> Result<Vec<Sample>, String> {
    let side = TuneConfig::sidecar(csv);
    let exists = csv.metadata().map(|m| m.len() > 0).unwrap_or(false);
    if !resume {
        if exists {
            return Err(format!(
                "{} already holds samples: continue that sweep with --resume, or name a new file with --csv (nothing was overwritten)",
                csv.display()
            ));
        }
        if let Some(d) = csv.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let text = serde_yaml::to_string(config).map_err(|e| e.to_string())?;
        std::fs::write(&side, text).map_err(|e| format!("{}: {e}", side.display()))?;
        return Ok(Vec::new());
    }
    if !exists {
        return Err(format!(
            "--resume: {} does not exist or is empty: start without --resume",
            csv.display()
        ));
    }
    let text = std::fs::read_to_string(&side).map_err(|e| {
        format!("--resume: {} cannot be read ({e}): it records the sweep's settings; without it the CSV cannot be resumed safely", side.display())
    })?;
    let theirs: TuneConfig =
        serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", side.display()))?;
    let diff = config.differences(&theirs);
    if !diff.is_empty() {
        return Err(format!(
            "--resume: {} comes from a different configuration, so its samples cannot continue this sweep (nothing was changed):\n  {}\nresume with the same options, or start a new --csv",
            csv.display(),
            diff.join("\n  ")
        ));
    }
    read_for_resume(csv).map_err(|e| e.to_string())
}

/// The open points of the earlier launches `csv` (`tune --focus`), which
/// must come from this library, host and call pattern.
fn focus_of(
    csv: &[PathBuf],
    prov: &colltune_core::measure::method::Origin,
    args: &Args,
    comm_sizes: &[u32],
    grid: &[u64],
) -> Result<Focus, String> {
    let pattern = args.timing.pattern.to_string();
    let mut launches = Vec::new();
    for p in csv {
        let (got, _) =
            colltune_core::measure::record::read_launch(p).map_err(|e| format!("--focus: {e}"))?;
        // (Not the host: a batch job's later launch may land on other
        // nodes of the same cluster.)
        if let Some(s) = got.iter().find(|s| s.mpi != prov.mpi) {
            return Err(format!(
                "--focus: {} was measured with {}, this launch runs {}: a further launch continues a tune of this library",
                p.display(),
                s.mpi,
                prov.mpi
            ));
        }
        if let Some(s) = got.iter().find(|s| s.pattern != pattern) {
            return Err(format!(
                "--focus: {} holds samples of the {} call pattern, this launch measures {pattern}: give the same --pattern",
                p.display(),
                s.pattern
            ));
        }
        launches.push(got);
    }
    let per: Vec<&[Sample]> = launches.iter().map(Vec::as_slice).collect();
    Ok(Focus::from_launches(&per, args.min_gain, comm_sizes, grid))
}
