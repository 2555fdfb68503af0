//! Command-line interface: one module per subcommand, each with
//! `run(args) -> anyhow::Result<Code>`.

/// `println!` for a command's output, to standard output. When the reader
/// has gone (`colltune report t.yaml | head`) the command ends there,
/// quietly and successfully, as `head`'s reader expects; any other write
/// error ends it with a message (exit 3). `println!` would panic on both.
macro_rules! outln {
    () => { $crate::cli::out_fmt(format_args!("\n")) };
    ($($t:tt)*) => { $crate::cli::out_fmt(format_args!("{}\n", format_args!($($t)*))) };
}

/// `print!` as [`outln!`] does it.
macro_rules! out {
    ($($t:tt)*) => { $crate::cli::out_fmt(format_args!($($t)*)) };
}

/// Writes to standard output for [`outln!`] and [`out!`].
pub fn out_fmt(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        stdout_failed(&e);
    }
}

/// Ends the process after a failed write to standard output: quietly with
/// success for a reader that went away, else with the error.
pub fn stdout_failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(Code::Ok as i32);
    }
    eprintln!("colltune: error: writing to standard output: {e}");
    std::process::exit(Code::Error as i32);
}

mod args;
#[cfg(feature = "mpi")]
mod bench;
#[cfg(feature = "mpi")]
mod calibrate;
mod deploy;
mod diff;
#[cfg(feature = "mpi")]
mod emu;
mod evaluate;
mod export;
mod fit;
mod generate;
mod help;
mod import;
mod inspect;
mod list;
#[cfg(feature = "mpi")]
mod measure;
mod noise;
mod p2p;
mod plan;
mod plot;
mod predict;
mod report;
mod simulate;
mod table;
mod tune;
mod validate;
#[cfg(feature = "mpi")]
mod verify;

use clap::{Parser, Subcommand};

/// Exit codes shared by every subcommand.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Code {
    /// Everything worked and every check passed.
    Ok = 0,
    /// A check failed (wrong data, a failed verification).
    Failed = 1,
    /// Bad usage or bad input (arguments, files): nothing was run.
    Usage = 2,
    /// The run itself broke (MPI error, I/O error).
    Error = 3,
    /// A watchdog fired: a case did not finish in time.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    Timeout = 4,
}

#[derive(Parser, Debug)]
#[command(
    name = "colltune",
    version = help::version(),
    about = "Autotuner for MPI collective algorithms",
    long_about = "colltune measures broadcast and pairwise-swap algorithms on this cluster, \
                  builds a decision table, and selects the best algorithm per call at run time.\n\
                  Commands that talk to MPI run under mpirun (or srun).",
    after_help = "One command's help: colltune help <COMMAND> (or man colltune-<COMMAND>). \
                  The guide, one page per task: docs/README.md."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List every algorithm with its parameters and restrictions.
    List(list::Args),
    #[cfg(feature = "mpi")]
    /// Run every algorithm x execution x root x size on this communicator
    /// and check every byte (under mpirun).
    Verify(verify::Args),
    #[cfg(feature = "mpi")]
    /// Time algorithms and the MPI library's own collectives, IMB-style;
    /// raw samples to CSV (under mpirun).
    Bench(Box<bench::Args>),
    /// Fit T(n) = latency + n / bandwidth to a raw CSV; report peak
    /// bandwidth, latency, the fit's max relative error and knees.
    Fit(fit::Args),
    /// Tune: a budgeted adaptive sweep that writes a decision table and
    /// raw CSV, resumable (under mpirun).
    Tune(Box<tune::Args>),
    /// Build tables from raw CSVs.
    Table(table::Args),
    /// Judge a table's choices against every candidate, measured at sizes
    /// off the tuning grid (under mpirun), or scored against measured CSVs
    /// (`--measured`, no MPI).
    Evaluate(evaluate::Args),
    /// A readable summary of a table.
    Show(inspect::ShowArgs),
    /// Check tables: every problem with file:line; exit 1 if any.
    Validate(validate::Args),
    /// Where two tables decide differently, with expected time ratios.
    Diff(diff::DiffArgs),
    /// The rule that applies to a call, and why.
    Explain(inspect::ExplainArgs),
    /// Write a table in the format Open MPI or MPICH reads.
    Export(export::Args),
    /// Which route a table needs at run time (the library's own rules
    /// file, no preload; or the drop-in), its files and environment.
    Deploy(deploy::Args),
    /// Per algorithm, the share of measured points where it was fastest,
    /// and the fit table.
    Report(report::Args),
    /// Time and bandwidth against size: one line per algorithm with run
    /// bands, the library dashed, the table's choice marked; given a table
    /// alone, its decision map (SVG or PNG).
    Plot(plot::Args),
    /// Times on a network model, in bench's CSV format (no MPI needed).
    Simulate(simulate::Args),
    /// Read OSU / IMB results, plain CSVs or any table (--columns) into
    /// colltune's raw-sample or point-to-point CSV.
    Import(import::Args),
    /// Predict which of Open MPI's broadcast algorithms wins, from
    /// point-to-point results, and check it against measured broadcasts.
    Predict(predict::Args),
    /// Which broadcast points to measure so that `calibrate --collectives`
    /// pins the model best, with the command lines that measure them.
    Plan(plan::Args),
    /// Fit a machine's noise profile from raw CSVs, or benchmark the tuner
    /// on the simulator with a profile's noise laid over it.
    Noise(noise::Args),
    #[cfg(feature = "mpi")]
    /// Measure this cluster's links (ping-pong inside and between nodes)
    /// and fit a network model for `simulate` (under mpirun).
    Calibrate(calibrate::Args),
    /// Man pages and shell completions from these definitions.
    Generate(generate::Args),
    #[cfg(feature = "mpi")]
    /// The emulated cluster's delay relay (started by jobs/emucluster).
    #[command(hide = true)]
    EmuRelay(emu::Args),
}

/// Parses the command line, runs the command, prints errors, returns the
/// exit code.
pub fn main() -> i32 {
    let cli = match help::parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                Code::Usage as i32
            } else {
                0
            };
        }
    };
    let result = match cli.command {
        Command::List(a) => list::run(a),
        #[cfg(feature = "mpi")]
        Command::Verify(a) => verify::run(a),
        #[cfg(feature = "mpi")]
        Command::Bench(a) => bench::run(*a),
        Command::Fit(a) => fit::run(a),
        Command::Tune(a) => tune::run(*a),
        Command::Table(a) => table::run(a),
        Command::Evaluate(a) => evaluate::run(a),
        Command::Show(a) => inspect::show(a),
        Command::Validate(a) => validate::run(a),
        Command::Diff(a) => diff::diff(a),
        Command::Explain(a) => inspect::explain(a),
        Command::Export(a) => export::run(a),
        Command::Deploy(a) => deploy::run(a),
        Command::Report(a) => report::run(a),
        Command::Plot(a) => plot::run(a),
        #[cfg(feature = "mpi")]
        Command::EmuRelay(a) => emu::run(a),
        Command::Simulate(a) => simulate::run(a),
        Command::Import(a) => import::run(a),
        Command::Predict(a) => predict::run(a),
        Command::Plan(a) => plan::run(a),
        Command::Noise(a) => noise::run(a),
        #[cfg(feature = "mpi")]
        Command::Calibrate(a) => calibrate::run(a),
        Command::Generate(a) => generate::run(a),
    };
    match result {
        Ok(code) => code as i32,
        Err(e) => {
            eprintln!("colltune: error: {e:#}");
            match e.downcast_ref::<UsageError>() {
                Some(_) => Code::Usage as i32,
                None => Code::Error as i32,
            }
        }
    }
}

/// An error in what the user asked for (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Initialises MPI (once per process) through rsmpi; rank 0 warns when the
/// library is not the one colltune was built for (`colltune_mpi::abi`).
#[cfg(feature = "mpi")]
pub fn init_mpi() -> anyhow::Result<mpi::environment::Universe> {
    use mpi::traits::Communicator;
    let u = mpi::initialize().ok_or_else(|| anyhow::anyhow!("MPI was already initialised"))?;
    colltune_mpi::transport::mpi::hold_mpi_t_for_process();
    if u.world().rank() == 0 {
        if let Some(w) = colltune_mpi::abi::mismatch() {
            eprintln!("colltune: warning: {w}");
        }
    }
    Ok(u)
}

/// Parses a list of sizes: `1,7,64K` or a range `1..4M` (powers of two).
pub fn parse_sizes(text: &str) -> Result<Vec<u64>, UsageError> {
    let size = |t: &str| {
        colltune_algorithms::parse_size(t).map_err(|e| UsageError(format!("--sizes: {e}")))
    };
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some((a, b)) = part.split_once("..") {
            let (a, b) = (size(a)?, size(b)?);
            if a == 0 || a > b {
                return Err(UsageError(format!(
                    "--sizes: range `{part}` must go from a positive size up to a larger one"
                )));
            }
            let mut s = a;
            while s <= b {
                out.push(s);
                s = s.saturating_mul(2);
                if s == u64::MAX {
                    break;
                }
            }
        } else {
            out.push(size(part)?);
        }
    }
    if out.is_empty() {
        return Err(UsageError("--sizes: no sizes given".into()));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_sizes("1..8").unwrap(), vec![1, 2, 4, 8]);
        assert_eq!(parse_sizes("7,1,64K").unwrap(), vec![1, 7, 65536]);
        assert!(parse_sizes("8..1").is_err());
        assert!(parse_sizes("x").is_err());
        assert!(parse_sizes("").is_err());
    }
}
