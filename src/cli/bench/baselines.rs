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
    let mut found = Found {
        args,
        want,
        mpi: &prov.mpi,
        lead: comm.rank() == 0,
        subjects: Vec::new(),
    };
    if want.mpi {
        found.subjects.push(match &args.baseline_label {
            Some(label) => Subject::LibraryLabelled {
                label: label.clone(),
            },
            None => Subject::Library,
        });
    }
    if want.interposed {
        found.subjects.push(Subject::Interposed);
    }
    let open_mpi = is_open_mpi(&prov.mpi);
    if want.tuned && found.library_is(open_mpi, "Open MPI", "coll/tuned") {
        found.tuned();
    }
    if want.adapt && found.library_is(open_mpi, "Open MPI", "coll/adapt") {
        found.adapt();
    }
    if want.han && found.library_is(open_mpi, "Open MPI", "coll/han") {
        found.han(comm);
    }
    let mpich = colltune_mpi::abi::runtime().family == colltune_mpi::abi::Family::Mpich;
    if want.mpich && found.library_is(mpich, "MPICH-derived", "MPICH algorithm") {
        found.mpich(comm.nodes().num_nodes() > 1);
    }
    Ok(found.subjects)
}

/// What [`subjects`] has found so far, and what each family's baselines
/// need to know to add theirs.
struct Found<'a> {
    args: &'a Args,
    want: &'a Wanted,
    /// The running library, as its provenance names it.
    mpi: &'a str,
    /// Rank 0: the one that says what it found.
    lead: bool,
    subjects: Vec<Subject>,
}

/// `items` as `a, b, c`, each as `show` writes it.
fn listed<I: IntoIterator>(items: I, show: impl Fn(I::Item) -> String) -> String {
    items.into_iter().map(show).collect::<Vec<_>>().join(", ")
}

impl<'a> Found<'a> {
    /// Whether the running library `is` of `family`; where not, rank 0
    /// says that it has no `what` baselines (when they were asked for by
    /// name).
    fn library_is(&self, is: bool, family: &str, what: &str) -> bool {
        if !is && self.lead && self.want.asked {
            eprintln!(
                "colltune bench: {} is not {family}: no {what} baselines",
                self.mpi
            );
        }
        is
    }

    /// The segment sizes a segmented algorithm runs at (`--ompi-segment`),
    /// else none (0).
    fn segments(&self, segmented: bool) -> &'a [u64] {
        if segmented {
            &self.args.ompi_segment
        } else {
            &[0]
        }
    }

    /// Rank 0's word that a family offers no baselines here: `e`.
    fn none(&self, what: &str, e: impl std::fmt::Display) {
        if self.lead {
            eprintln!("colltune bench: no {what} baselines: {e}");
        }
    }

    /// Open MPI's coll/tuned algorithms, each forced (the segmented ones at
    /// each `--ompi-segment`).
    fn tuned(&mut self) {
        for t in TUNED_BCAST {
            for &segment in self.segments(t.segmented) {
                self.subjects.push(Subject::OmpiTuned { tuned: t, segment });
            }
        }
    }

    /// Open MPI's coll/adapt algorithms offered through MPI_T, each forced
    /// at each `--ompi-segment`.
    fn adapt(&mut self) {
        // Every rank reads the same library: all agree.
        let offered = match adapt_algorithms() {
            Ok(offered) => offered,
            Err(e) => return self.none("coll/adapt", e),
        };
        let forced = adapt::baselines(&offered);
        if self.lead {
            outln!(
                "colltune bench: {} offers coll/adapt broadcasts through MPI_T ({}): {}; forced on a communicator made with {} = {}, the algorithm and {} written per point{}",
                self.mpi,
                adapt::ALGORITHM,
                listed(&offered, |c| format!("{} ({})", c.name, c.id)),
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
            for &segment in &self.args.ompi_segment {
                self.subjects.push(Subject::OmpiAdapt {
                    choice: choice.clone(),
                    segment,
                });
            }
        }
    }

    /// Open MPI 5.0's coll/han broadcasts, across nodes (the segmented ones
    /// at each `--ompi-segment`).
    fn han(&mut self, comm: &Comm) {
        // Every rank reads the same library and layout: all agree.
        let (forced, modules) = match han_algorithms(comm) {
            Ok(found) => found,
            // One node: said on Open MPI 5.0 (where han has the
            // variable), whatever was asked; the rest only when asked for.
            Err(e @ (HanUnavailable::OneNode | HanUnavailable::Imbalanced { .. })) => {
                if self.lead {
                    outln!("colltune bench: no coll/han baselines: {e}");
                }
                return;
            }
            Err(e) if self.want.asked => return self.none("coll/han", e),
            Err(_) => return,
        };
        if self.lead {
            outln!(
                "colltune bench: {} offers coll/han broadcasts through MPI_T ({}): {}; forced on a communicator made with {} = {}, the algorithm (and for {} {}) written per point; {} = {}, {} = {} as MPI_Init read them (han reads them only there)",
                self.mpi,
                han::ALGORITHM,
                listed(&forced, |c| format!("{} ({})", c.name, c.id)),
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
            for &segment in self.segments(choice.segmented()) {
                self.subjects.push(Subject::OmpiHan {
                    choice: choice.clone(),
                    segment,
                    modules: modules.clone(),
                });
            }
        }
    }

    /// The algorithms MPICH's `MPIR_CVAR_BCAST_INTRA_ALGORITHM` offers (not
    /// `smp` on one node).
    fn mpich(&mut self, multi_node: bool) {
        // Every rank reads the same library: all agree.
        let offered = match bcast_algorithms() {
            Ok(offered) => offered,
            Err(e) => return self.none("MPICH algorithm", e),
        };
        if self.lead {
            outln!(
                "colltune bench: {} offers {} through MPI_T: {}; set now: {} ({}), put back after each forced point; {}",
                self.mpi,
                colltune_core::libraries::mpich::BCAST_CVAR,
                listed(&offered.all, |c| format!("{} ({})", c.name, c.value)),
                offered.current_name(),
                offered.current,
                match fallback_error_value() {
                    Ok(_) => "before timing a point, one call under MPIR_CVAR_COLLECTIVE_FALLBACK=error checks that MPICH can apply it".to_string(),
                    Err(why) => format!("whether MPICH can apply each one is not checked (MPIR_CVAR_COLLECTIVE_FALLBACK: {why}): where it cannot, it runs its own choice under that name"),
                }
            );
        }
        for choice in offered.baselines() {
            // MPICH's smp is its node-aware broadcast: on one node it
            // cannot apply it, and MPICH 5.0.2 hangs when its error
            // fallback refuses it there.
            if choice.name == "smp" && !multi_node {
                if self.lead {
                    outln!("colltune bench: not forcing MPICH's smp: it needs ranks on several nodes (MPICH runs its own choice instead on one)");
                }
                continue;
            }
            self.subjects.push(Subject::Mpich { choice });
        }
    }
}
