//! `tune`'s library candidates: the MPI library's own broadcast algorithms
//! that it lets colltune force, measured beside colltune's.

use colltune_core::libraries::mpich::Choice;
use colltune_core::measure::method::Origin;
use colltune_core::tune::Candidate;
use colltune_mpi::transport::mpi::Comm;

/// What the running library offers (every rank reads the same library, so
/// all agree): Open MPI's coll/tuned, and its coll/adapt where MPI_T may
/// write adapt's variables (5.0); MPICH's (with the values this library
/// gives their names, for the driver). `whole_job_only`: no sub-communicator
/// is tuned (MPICH's smp needs several nodes). Rank 0 says what it found.
pub fn candidates(
    world: &Comm,
    prov: &Origin,
    whole_job_only: bool,
) -> (Vec<Candidate>, Vec<Choice>) {
    let lead = world.rank() == 0;
    let mut library_candidates = Vec::new();
    let mut mpich_offered = Vec::new();
    let family = colltune_mpi::abi::runtime().family;
    if colltune_core::libraries::ompi::is_open_mpi(&prov.mpi) {
        library_candidates.extend(colltune_core::tune::library_candidates());
        match colltune_mpi::bench::adapt::bcast_algorithms() {
            Ok(offered) => {
                let adapt = colltune_core::tune::adapt_candidates(&offered);
                if lead {
                    outln!(
                        "colltune tune: {} coll/adapt candidates ({} algorithms at segments {:?})",
                        adapt.len(),
                        adapt.len() / colltune_core::libraries::ompi::adapt::TUNE_SEGMENTS.len(),
                        colltune_core::libraries::ompi::adapt::TUNE_SEGMENTS
                    );
                }
                library_candidates.extend(adapt);
            }
            Err(e) => {
                if lead {
                    eprintln!("colltune tune: no coll/adapt candidates: {e}");
                }
            }
        }
    } else if family == colltune_mpi::abi::Family::Mpich {
        match colltune_mpi::bench::mpich::bcast_algorithms() {
            Ok(offered) => {
                // smp needs several nodes (MPICH 5.0.2 hangs refusing it on one).
                let multi_node = world.nodes().num_nodes() > 1 && whole_job_only;
                let mpich = colltune_core::tune::mpich_candidates(&offered.all, multi_node);
                if lead {
                    outln!(
                        "colltune tune: MPICH's candidates: {}",
                        mpich
                            .iter()
                            .map(|c| c.spec.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                library_candidates.extend(mpich);
                mpich_offered = offered.all;
            }
            Err(e) => {
                if lead {
                    eprintln!("colltune tune: no MPICH algorithm candidates: {e}");
                }
            }
        }
    } else if lead {
        eprintln!(
            "colltune tune: {} is neither Open MPI nor MPICH: its own broadcast algorithms are not candidates",
            prov.mpi
        );
    }
    (library_candidates, mpich_offered)
}
