//! `tune --calls ibcast,bcast_init`: after the blocking search, the
//! library's nonblocking and persistent broadcasts under each of its
//! nonblocking algorithms, measured at every size of the grid
//! (`colltune_mpi::driver::MpiOracle::sweep_calls`); the table builder
//! writes their `ibcast:` and `bcast_init:` sections from the samples.

use colltune_core::measure::record::Call;
use colltune_mpi::driver::MpiOracle;

use super::Args;

/// Rank 0: the nonblocking calls `--calls` names, every algorithm the
/// library offers for them, at every size, on every communicator.
pub fn sweep(
    args: &Args,
    oracle: &mut MpiOracle,
    on: &[(usize, bool)],
    sizes: &[u64],
) -> anyhow::Result<()> {
    let calls: Vec<Call> = args
        .calls
        .iter()
        .copied()
        .filter(|c| c.is_nonblocking())
        .collect();
    if calls.is_empty() {
        return Ok(());
    }
    let choices = colltune_mpi::forcing::nonblocking::offered_choices();
    if choices.is_empty() {
        eprintln!(
            "colltune tune: this MPI library offers no nonblocking broadcast algorithm colltune can force (neither coll/libnbc's nor MPICH's ibcast variable): {} not tuned",
            calls.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ")
        );
        return Ok(());
    }
    outln!(
        "colltune tune: {} with the library's nonblocking algorithms: {}",
        calls
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", "),
        choices
            .iter()
            .map(|c| c.spec().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let comms: Vec<usize> = on.iter().map(|&(c, _)| c).collect();
    let runs = (args.screen_runs + args.full_runs).max(1);
    oracle.sweep_calls(&calls, &choices, &comms, sizes, runs)?;
    Ok(())
}
