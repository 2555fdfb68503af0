//! `colltune evaluate TABLE`: the quality of a table's choices, measured
//! under mpirun ([`live`]), or scored against measurements already taken
//! (`--measured`, [`scored`], no MPI).

#[cfg(feature = "mpi")]
mod live;
mod scored;

use std::path::PathBuf;

use colltune_algorithms::Collective;

use super::Code;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The decision table to judge.
    pub table: PathBuf,
    /// Sizes to judge at (default: off the power-of-two grid).
    #[arg(long, default_value = "3000,70000,300000,3000000")]
    pub sizes: String,
    /// Collectives (default: those the table has).
    #[arg(long, value_delimiter = ',')]
    pub collective: Vec<Collective>,
    /// Independent runs.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    #[arg(long, default_value_t = 50)]
    pub budget_ms: u64,
    /// Also try every segment size of the tuning grid for segmented algorithms.
    #[arg(long)]
    pub segments: bool,
    /// Raw samples of the evaluation.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Score the table against measurements instead of measuring: raw CSVs
    /// (`colltune import` writes them from OSU/IMB results; bench and tune
    /// CSVs too). No MPI: each measured point's regret (the table's
    /// choice's median over the fastest measured there) beside the
    /// library default's, per placement.
    #[arg(long, num_args = 1..)]
    pub measured: Vec<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<Code> {
    if !args.measured.is_empty() {
        return scored::run(&args);
    }
    #[cfg(feature = "mpi")]
    return live::run(args);
    #[cfg(not(feature = "mpi"))]
    Err(super::UsageError(
        "this colltune was built without MPI (--no-default-features): give --measured CSV... to score the table against measurements; build with the default features to measure".into(),
    )
    .into())
}
