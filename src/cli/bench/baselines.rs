//! `bench`'s baselines: the MPI library's own broadcast and the algorithms
//! it lets colltune force (Open MPI's coll/tuned, coll/adapt, coll/han;
//! MPICH's), as far as the running library offers them.

use colltune_core::libraries::ompi::{adapt, han, is_open_mpi, TUNED_BCAST};
use colltune_core::measure::method::Subject;
use colltune_mpi::bench::adapt::bcast_algorithms as adapt_algorithms;
use colltune_mpi::bench::mpich::{bcast_algorithms, fallback_error_value};
use colltune_mpi::forcing::han::{bcast_algorithms as han_algorithms, HanUnavailable};
use colltune_mpi::transport::mpi::Comm;

use super::wanted::Wanted;
use super::Args;

/// The broadcast baselines `want` names that this library offers, each a
/// subject; rank 0 says what it found (every rank reads the same library
/// and layout: all agree).
pub fn subjects(
    args: &Args,
    want: &Wanted,
    comm: &Comm,
    prov: &colltune_core::measure::method::Origin,
) -> anyhow::Result<Vec<Subject>> {
    let mut subjects = Vec::new();
    if want.mpi {
        subjects.push(match &args.baseline_label {
            Some(label) => Subject::LibraryLabelled {
                label: label.clone(),
            },
            None => Subject::Library,
        });
    }
    if want.interposed {
        subjects.push(Subject::Interposed);
    }
    if want.tuned {
        tuned_baselines(args, want, comm, prov, &mut subjects);
    }
    if want.adapt {
        adapt_baselines(args, want, comm, prov, &mut subjects);
    }
    if want.han {
        han_baselines(args, want, comm, prov, &mut subjects);
    }
    if want.mpich {
        mpich_baselines(want, comm, prov, &mut subjects);
    }
    Ok(subjects)
}

/// Open MPI's coll/tuned algorithms, each forced (the segmented ones at
/// each `--ompi-segment`).
fn tuned_baselines(
    args: &Args,
    want: &Wanted,
    comm: &Comm,
    prov: &colltune_core::measure::method::Origin,
    subjects: &mut Vec<Subject>,
) {
    let lead = comm.rank() == 0;
    if is_open_mpi(&prov.mpi) {
        for t in TUNED_BCAST {
            let segs: &[u64] = if t.segmented {
                &args.ompi_segment
            } else {
                &[0]
            };
            for &segment in segs {
                subjects.push(Subject::OmpiTuned { tuned: t, segment });
            }
        }
    } else if lead && want.asked {
        eprintln!(
            "colltune bench: {} is not Open MPI: no coll/tuned baselines",
            prov.mpi
        );
    }
}

/// Open MPI's coll/adapt algorithms offered through MPI_T, each forced
/// at each `--ompi-segment`.
fn adapt_baselines(
    args: &Args,
    want: &Wanted,
    comm: &Comm,
    prov: &colltune_core::measure::method::Origin,
    subjects: &mut Vec<Subject>,
) {
    let lead = comm.rank() == 0;
    if is_open_mpi(&prov.mpi) {
        // Every rank reads the same library: all agree.
        match adapt_algorithms() {
            Ok(offered) => {
                let forced = adapt::baselines(&offered);
                if lead {
                    outln!(
                            "colltune bench: {} offers coll/adapt broadcasts through MPI_T ({}): {}; forced on a communicator made with {} = {}, the algorithm and {} written per point{}",
                            prov.mpi,
                            adapt::ALGORITHM,
                            offered
                                .iter()
                                .map(|c| format!("{} ({})", c.name, c.id))
                                .collect::<Vec<_>>()
                                .join(", "),
                            adapt::PRIORITY,
                            adapt::FORCE_PRIORITY,
                            adapt::SEGMENT,
                            if forced.len() < offered.len() {
                                format!("; not `{}`, which adapt does not implement", adapt::NOT_IMPLEMENTED)
                            } else {
                                String::new()
                            }
                        );
                }
                for choice in forced {
                    for &segment in &args.ompi_segment {
                        subjects.push(Subject::OmpiAdapt {
                            choice: choice.clone(),
                            segment,
                        });
                    }
                }
            }
            Err(e) => {
                if lead {
                    eprintln!("colltune bench: no coll/adapt baselines: {e}");
                }
            }
        }
    } else if lead && want.asked {
        eprintln!(
            "colltune bench: {} is not Open MPI: no coll/adapt baselines",
            prov.mpi
        );
    }
}

/// Open MPI 5.0's coll/han broadcasts, across nodes (the segmented ones
/// at each `--ompi-segment`).
fn han_baselines(
    args: &Args,
    want: &Wanted,
    comm: &Comm,
    prov: &colltune_core::measure::method::Origin,
    subjects: &mut Vec<Subject>,
) {
    let lead = comm.rank() == 0;
    if is_open_mpi(&prov.mpi) {
        // Every rank reads the same library and layout: all agree.
        match han_algorithms(comm) {
            Ok((forced, modules)) => {
                if lead {
                    outln!(
                            "colltune bench: {} offers coll/han broadcasts through MPI_T ({}): {}; forced on a communicator made with {} = {}, the algorithm (and for {} {}) written per point; {} = {}, {} = {} as MPI_Init read them (han reads them only there)",
                            prov.mpi,
                            han::ALGORITHM,
                            forced
                                .iter()
                                .map(|c| format!("{} ({})", c.name, c.id))
                                .collect::<Vec<_>>()
                                .join(", "),
                            han::PRIORITY,
                            han::FORCE_PRIORITY,
                            han::SEGMENTED.join(", "),
                            han::SEGMENT,
                            han::UP_MODULE,
                            modules.up,
                            han::LOW_MODULE,
                            modules.low,
                        );
                }
                for choice in forced {
                    let segs: &[u64] = if choice.segmented() {
                        &args.ompi_segment
                    } else {
                        &[0]
                    };
                    for &segment in segs {
                        subjects.push(Subject::OmpiHan {
                            choice: choice.clone(),
                            segment,
                            modules: modules.clone(),
                        });
                    }
                }
            }
            // One node: said on Open MPI 5.0 (where han has the
            // variable), whatever was asked; the rest only
            // when asked for.
            Err(e @ (HanUnavailable::OneNode | HanUnavailable::Imbalanced { .. })) => {
                if lead {
                    outln!("colltune bench: no coll/han baselines: {e}");
                }
            }
            Err(e) => {
                if lead && want.asked {
                    eprintln!("colltune bench: no coll/han baselines: {e}");
                }
            }
        }
    } else if lead && want.asked {
        eprintln!(
            "colltune bench: {} is not Open MPI: no coll/han baselines",
            prov.mpi
        );
    }
}

/// The algorithms MPICH's `MPIR_CVAR_BCAST_INTRA_ALGORITHM` offers (not
/// `smp` on one node).
fn mpich_baselines(
    want: &Wanted,
    comm: &Comm,
    prov: &colltune_core::measure::method::Origin,
    subjects: &mut Vec<Subject>,
) {
    let lead = comm.rank() == 0;
    let multi_node = comm.nodes().num_nodes() > 1;
    if colltune_mpi::abi::runtime().family == colltune_mpi::abi::Family::Mpich {
        // Every rank reads the same library: all agree.
        match bcast_algorithms() {
            Ok(offered) => {
                if lead {
                    outln!(
                            "colltune bench: {} offers {} through MPI_T: {}; set now: {} ({}), put back after each forced point; {}",
                            prov.mpi,
                            colltune_core::libraries::mpich::BCAST_CVAR,
                            offered
                                .all
                                .iter()
                                .map(|c| format!("{} ({})", c.name, c.value))
                                .collect::<Vec<_>>()
                                .join(", "),
                            offered.current_name(),
                            offered.current,
                            match fallback_error_value() {
                                Ok(_) => "before timing a point, one call under MPIR_CVAR_COLLECTIVE_FALLBACK=error checks that MPICH can apply it".to_string(),
                                Err(why) => format!("whether MPICH can apply each one is not checked (MPIR_CVAR_COLLECTIVE_FALLBACK: {why}): where it cannot, it runs its own choice under that name"),
                            }
                        );
                }
                for choice in offered.baselines() {
                    // MPICH's smp is its node-aware broadcast: on
                    // one node it cannot apply it, and MPICH 5.0.2
                    // hangs when its error fallback refuses it there.
                    if choice.name == "smp" && !multi_node {
                        if lead {
                            outln!("colltune bench: not forcing MPICH's smp: it needs ranks on several nodes (MPICH runs its own choice instead on one)");
                        }
                        continue;
                    }
                    subjects.push(Subject::Mpich { choice });
                }
            }
            Err(e) => {
                if lead {
                    eprintln!("colltune bench: no MPICH algorithm baselines: {e}");
                }
            }
        }
    } else if lead && want.asked {
        eprintln!(
            "colltune bench: {} is not MPICH-derived: no MPICH algorithm baselines",
            prov.mpi
        );
    }
}
