//! `colltune deploy TABLE`: which route a table needs at run time, and the
//! files and environment for it (colltune_core::tables::deploy decides): the MPI
//! library's own rules file where every rule is one of its algorithms (no
//! preload at all), else the drop-in with the table (its library rules
//! handed to Open MPI's rules file at `MPI_Init`).

use std::path::{Path, PathBuf};

use super::{Code, UsageError};
use colltune_core::tables::deploy::{deploy, Library, Route};
use colltune_core::tables::export;
use colltune_core::tables::table;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The decision table.
    table: PathBuf,
    /// The MPI library the jobs run on: openmpi or mpich (default: the
    /// table's provenance `mpi`).
    #[arg(long)]
    mpi: Option<String>,
    /// Where to write the deployment: the rules file or the table, and
    /// env.sh (to source in a job script).
    #[arg(short, long, default_value = "colltune-deploy")]
    output: PathBuf,
    /// The drop-in library, for the preload route (default:
    /// libcolltune_preload.so beside this colltune, or in ../lib).
    #[arg(long)]
    preload: Option<PathBuf>,
    /// For MPICH's rules file: MPICH's rules for the other collectives,
    /// as `export --mpich-base` (auto, none, or a path).
    #[arg(long, default_value = "auto")]
    mpich_base: String,
    /// Say which route the table needs, and why; write nothing.
    #[arg(long)]
    check: bool,
}

/// libcolltune_preload.so beside the running colltune, or in ../lib.
fn find_preload() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    ["", "../lib", "../lib64"]
        .iter()
        .map(|d| dir.join(d).join("libcolltune_preload.so"))
        .find(|p| p.is_file())
        .and_then(|p| p.canonicalize().ok())
}

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(p).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Prints the environment (and an equivalent launcher line) for `vars`,
/// and writes them to DIR/env.sh.
fn environment(
    vars: &[(&str, String)],
    library: Library,
    dir: &Path,
    check: bool,
) -> anyhow::Result<()> {
    let exports: String = vars
        .iter()
        .map(|(k, v)| format!("export {k}={}\n", shell_quote(v)))
        .collect();
    outln!("environment (each rank's):");
    for l in exports.lines() {
        outln!("  {l}");
    }
    let launcher = match library {
        Library::OpenMpi => {
            let args: Vec<String> = vars
                .iter()
                .map(|(k, v)| match k.strip_prefix("OMPI_MCA_") {
                    Some(mca) => format!("--mca {mca} {}", shell_quote(v)),
                    None => format!("-x {k}={}", shell_quote(v)),
                })
                .collect();
            format!("mpirun {} ./app", args.join(" "))
        }
        Library::Mpich => {
            let args: Vec<String> = vars
                .iter()
                .map(|(k, v)| format!("-genv {k} {}", shell_quote(v)))
                .collect();
            format!("mpiexec {} ./app", args.join(" "))
        }
    };
    outln!("or on the command line:\n  {launcher}");
    if !check {
        let env = dir.join("env.sh");
        write(
            &env,
            &format!("# made by colltune deploy: source it in the job script\n{exports}"),
        )?;
        outln!("wrote {}", env.display());
    }
    Ok(())
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn ranges(handed: &[(u32, Vec<(u64, u64)>)]) -> String {
    handed
        .iter()
        .map(|(size, r)| {
            let r: Vec<String> = r
                .iter()
                .map(|&(lo, hi)| match hi {
                    u64::MAX => format!("{lo} B and up"),
                    _ => format!("{lo}-{hi} B"),
                })
                .collect();
            format!("{size} ranks {}", r.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    let t = table::load(&a.table).map_err(|e| UsageError(e.to_string()))?;
    let named = a.mpi.clone().unwrap_or_else(|| t.provenance.mpi.clone());
    let library = Library::from_name(&named).ok_or_else(|| {
        UsageError(format!(
            "{}: MPI library `{named}`{}: give --mpi openmpi or --mpi mpich",
            a.table.display(),
            if a.mpi.is_some() {
                ""
            } else {
                " (the table's provenance)"
            }
        ))
    })?;
    let base = match (library, a.mpich_base.as_str()) {
        (Library::OpenMpi, _) | (_, "none") => None,
        (Library::Mpich, "auto") => export::find_libmpich()
            .map(|p| export::mpich_base(&p))
            .transpose()?,
        (Library::Mpich, p) => {
            Some(export::mpich_base(Path::new(p)).map_err(|e| UsageError(e.to_string()))?)
        }
    };
    let d =
        deploy(&t, library, base).map_err(|e| UsageError(format!("{}: {e}", a.table.display())))?;
    for n in &d.notes {
        eprintln!("colltune deploy: note: {n}");
    }
    let dir = absolute(&a.output)?;
    if !a.check {
        std::fs::create_dir_all(&dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    }
    match d.route {
        Route::RulesFile { library, text } => {
            outln!(
                "route: {}'s own rules file, no preload: every rule of every communicator shape is one of {}'s algorithms",
                library.name(),
                library.name()
            );
            let (file, vars) = match library {
                Library::OpenMpi => {
                    let f = dir.join("bcast.rules");
                    let v = vec![
                        ("OMPI_MCA_coll_tuned_use_dynamic_rules", "1".to_string()),
                        (
                            "OMPI_MCA_coll_tuned_dynamic_rules_filename",
                            f.display().to_string(),
                        ),
                    ];
                    (f, v)
                }
                Library::Mpich => {
                    let f = dir.join("coll_selection.json");
                    let v = vec![(
                        "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE",
                        f.display().to_string(),
                    )];
                    (f, v)
                }
            };
            if !a.check {
                write(&file, &text)?;
                outln!("wrote {}", file.display());
            }
            environment(&vars, library, &dir, a.check)?;
        }
        Route::Preload { why, handed } => {
            outln!("route: colltune's drop-in (LD_PRELOAD), since a rules file cannot run:");
            for w in &why {
                outln!("  {w}");
            }
            if !handed.is_empty() {
                outln!(
                    "its library rules go to Open MPI's rules file at MPI_Init (the handoff: one range check per call): {}",
                    ranges(&handed)
                );
            }
            let preload = match &a.preload {
                Some(p) if !p.is_file() => {
                    return Err(UsageError(format!("--preload {}: no such file", p.display())).into())
                }
                Some(p) => absolute(p)?,
                None => find_preload().ok_or_else(|| {
                    UsageError(
                        "libcolltune_preload.so is not beside this colltune nor in ../lib: build it (cargo build --release -p colltune-preload) or give --preload PATH".into(),
                    )
                })?,
            };
            let copy = dir.join("table.yaml");
            if !a.check {
                let text = table::read_text(&a.table).map_err(|e| UsageError(e.to_string()))?;
                write(&copy, &text)?;
                outln!("wrote {} (the table)", copy.display());
            }
            let vars = [
                ("LD_PRELOAD", preload.display().to_string()),
                ("COLLTUNE_TABLE", copy.display().to_string()),
            ];
            environment(&vars, library, &dir, a.check)?;
        }
    }
    Ok(Code::Ok)
}
