//! `colltune emu-relay` (hidden): the emulated cluster's delay relay.

use std::path::PathBuf;
use std::time::Duration;

use super::Code;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Delay added to every frame leaving a node, microseconds.
    #[arg(long)]
    delay_us: u64,
    /// Write the relay's process id here once its devices are open.
    #[arg(long)]
    pid_file: Option<PathBuf>,
    /// Links: netns:device=hostdevice.
    #[arg(required = true)]
    pairs: Vec<String>,
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    colltune_mpi::emu::relay(
        Duration::from_micros(a.delay_us),
        &a.pairs,
        a.pid_file.as_deref(),
    )?;
    Ok(Code::Ok)
}
