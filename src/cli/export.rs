//! `colltune export TABLE --format F`: a table in the format Open MPI or
//! MPICH reads.

use std::path::{Path, PathBuf};

use colltune_core::tables::export;

use super::inspect::load;
use super::{Code, UsageError};

/// The formats `export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Open MPI 4.1's classic coll/tuned rules file.
    Openmpi,
    /// Open MPI 6.0's JSON rules.
    OpenmpiJson,
    /// MPICH's JSON collective selection.
    Mpich,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    table: PathBuf,
    /// openmpi (classic rules file, Open MPI 4.1), openmpi-json (Open MPI
    /// 6.0), or mpich (JSON collective selection).
    #[arg(long, value_enum)]
    format: Format,
    /// Write here (default: standard output).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// For mpich: MPICH's rules for the other collectives, from its
    /// selection JSON or an installed libmpich.so (`auto`: find one; `none`:
    /// broadcast only).
    #[arg(long, default_value = "auto")]
    mpich_base: String,
    /// The placement the application runs with (`block/cyclic`, or the
    /// mpirun mapping `core`, `socket`, `node`): of a table's entries for
    /// several placements, those that would serve it are exported (the
    /// libraries' rules know no placement).
    #[arg(long)]
    placement: Option<String>,
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    let mut t = load(&a.table)?;
    if let Some(p) = &a.placement {
        let p = colltune_core::model::placed::Placement::parse(p).map_err(UsageError)?;
        t = t.for_placement(&colltune_core::model::placed::Detected::of(Some(p)));
    }
    let (text, notes) = match a.format {
        Format::Openmpi => export::openmpi_classic(&t)?,
        Format::OpenmpiJson => export::openmpi_json(&t)?,
        Format::Mpich => {
            let base = match a.mpich_base.as_str() {
                "none" => None,
                "auto" => match export::find_libmpich() {
                    Some(p) => Some(export::mpich_base(&p)?),
                    None => {
                        return Err(UsageError(
                            "--format mpich: no MPICH library found for the other collectives' rules (MPICH reads a tuning file instead of its built-in rules); give --mpich-base PATH (coll_selection.json or libmpich.so), or --mpich-base none for broadcast rules only".into(),
                        )
                        .into())
                    }
                },
                p => Some(export::mpich_base(Path::new(p)).map_err(|e| UsageError(e.to_string()))?),
            };
            export::mpich_json(&t, base)?
        }
    };
    for n in &notes {
        eprintln!("colltune export: note: {n}");
    }
    match a.output {
        Some(p) => {
            std::fs::write(&p, text).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
            eprintln!("colltune export: wrote {}", p.display());
        }
        None => out!("{text}"),
    }
    Ok(Code::Ok)
}
