//! The tuning space: which (algorithm, parameters, execution) candidates the
//! tuner compares, and the segment sizes an exhaustive sweep tries.
//!
//! Derived from the registry, which says of every algorithm whether it is a
//! candidate ([`Tuning`]) and how each parameter is set ([`ParamTuning`]):
//!
//! ```text
//!   knomial   radix: Sweep 3, 4, 8    segment: Brent   ─►  knomial:radix=3,segment=0
//!                                                          knomial:radix=4,segment=0
//!                                                          knomial:radix=8,segment=0
//! ```
//!
//! each under every execution, in registry order.

use std::collections::BTreeMap;
use std::fmt;

use colltune_algorithms::bcast::shm::{self, SMALL_MAX};
use colltune_algorithms::registry::{SEGMENT_MAX, SEGMENT_MIN};

use crate::libraries::library::LibraryChoice;
use crate::libraries::ompi::Forced;
use colltune_algorithms::{
    algorithms, resolve, AlgoSpec, AlgorithmInfo, Collective, Execution, ParamTuning, ParamValue,
    Restriction, Tuning, Variant,
};

/// One thing the tuner can choose: a [`Variant`] (its fields read through
/// it), or one of the MPI library's own algorithms written as one (the spec
/// `ompi_tuned:...`, `ompi_adapt:...`, `mpich:...`; the execution a
/// placeholder, the library runs it).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Candidate(pub Variant);

impl std::ops::Deref for Candidate {
    type Target = Variant;
    fn deref(&self) -> &Variant {
        &self.0
    }
}

impl Candidate {
    pub fn new(collective: Collective, text: &str, exec: Execution) -> Candidate {
        let spec = resolve(
            collective,
            &AlgoSpec::parse(text).expect("valid built-in spec"),
        )
        .expect("built-in spec resolves");
        Candidate(Variant {
            collective,
            spec,
            exec,
        })
    }

    /// One of the MPI library's own algorithms (Open MPI coll/tuned or
    /// coll/adapt, MPICH's), compared beside colltune's. Its `exec` is a
    /// placeholder: the library runs it.
    pub fn library(f: impl Into<LibraryChoice>) -> Candidate {
        Candidate(Variant {
            collective: Collective::Bcast,
            spec: f.into().spec(),
            exec: Execution::Blocking,
        })
    }

    /// The library algorithm this candidate forces, if it is one.
    pub fn forced(&self) -> Option<LibraryChoice> {
        crate::libraries::library::is_table_name(&self.spec.name)
            .then(|| LibraryChoice::from_spec(&self.spec).ok())
            .flatten()
    }

    /// Whether this is the library's own decision (Open MPI's algorithm 0,
    /// MPICH's `auto`): the reference every gain in a table is measured
    /// against.
    pub fn is_reference(&self) -> bool {
        self.forced().is_some_and(|l| l.is_default())
    }

    /// The execution as samples and labels write it (`library` for the
    /// library's own algorithms).
    pub fn exec_name(&self) -> &'static str {
        match self.forced() {
            Some(_) => crate::libraries::ompi::LIBRARY_EXECUTION,
            None => self.exec.name(),
        }
    }

    /// The segment size, if the algorithm is segmented (and colltune tunes
    /// it: a library algorithm's segment sizes are fixed candidates).
    pub fn segment(&self) -> Option<u64> {
        if self.forced().is_some() {
            return None;
        }
        self.spec.int("segment").ok()
    }

    /// The same candidate with another segment size.
    pub fn with_segment(&self, segment: u64) -> Candidate {
        let mut c = self.clone();
        c.0.spec
            .params
            .insert("segment".into(), ParamValue::Int(segment));
        c
    }

    /// The candidate with its segment reset to 0: the family a segment sweep varies.
    pub fn family(&self) -> Candidate {
        match self.segment() {
            Some(_) => self.with_segment(0),
            None => self.clone(),
        }
    }

    pub fn label(&self) -> String {
        format!("{} [{}]", self.spec, self.exec_name())
    }
}

impl fmt::Display for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.collective, self.label())
    }
}

/// What shapes the space.
#[derive(Clone, Debug)]
pub struct SpaceOptions {
    pub executions: Vec<Execution>,
    /// Swap pairing (the call's semantics, not a choice).
    pub pairing: String,
    /// The communicator spans several nodes (node-aware algorithms apply).
    pub multi_node: bool,
}

impl SpaceOptions {
    /// The call's value of a parameter the registry says the call sets
    /// ([`ParamTuning::FromCall`]).
    fn call_value(&self, param: &str) -> &str {
        match param {
            "pairing" => &self.pairing,
            other => panic!(
                "the registry says the call sets `{other}`, but SpaceOptions has no value for it: add one"
            ),
        }
    }
}

/// Every candidate for a collective: each registry algorithm marked a
/// candidate (node-aware ones only on several nodes, shared-memory ones
/// (`shm`) only on one: on several, `hierarchical`'s `intra` sweep offers
/// it inside each node), in registry order,
/// one per combination of its swept values, segmented ones unsegmented (the
/// tuner then tunes their segment size), each under every execution.
pub fn candidates(c: Collective, o: &SpaceOptions) -> Vec<Candidate> {
    let mut out = Vec::new();
    for info in algorithms(c) {
        let misplaced = if o.multi_node {
            info.has(Restriction::SharedMemory)
        } else {
            info.has(Restriction::NodeAware)
        };
        if info.tuning != Tuning::Candidate || misplaced {
            continue;
        }
        for spec in specs(info, o) {
            for &e in &o.executions {
                out.push(Candidate::new(c, &spec, e));
            }
        }
    }
    out
}

/// The MPI library's own broadcast algorithms as candidates: Open MPI
/// coll/tuned's 9, the segmented ones at each of
/// [`crate::libraries::ompi::TUNED_SEGMENTS`] (the tuner measures them only on Open
/// MPI; `tune --no-library-candidates` leaves them out).
pub fn library_candidates() -> Vec<Candidate> {
    Forced::candidates()
        .into_iter()
        .map(Candidate::library)
        .collect()
}

/// Open MPI 5.0's coll/adapt broadcast algorithms as candidates: each one
/// the library offers (`offered`, read from it: `colltune_mpi::bench::adapt`)
/// that a table can name, at each of [`crate::libraries::ompi::adapt::TUNE_SEGMENTS`].
pub fn adapt_candidates(offered: &[crate::libraries::ompi::adapt::Choice]) -> Vec<Candidate> {
    let mut out = Vec::new();
    for c in offered {
        for &segment in crate::libraries::ompi::adapt::TUNE_SEGMENTS {
            if let Some(f) = crate::libraries::ompi::adapt::Forced::from_choice(c, segment) {
                out.push(Candidate::library(LibraryChoice::Adapt(f)));
            }
        }
    }
    out
}

/// MPICH's broadcast algorithms as candidates: each one the library offers
/// (`offered`, read from it: `colltune_mpi::bench::mpich`) that a table can
/// name, `auto` (MPICH's own decision) first; `smp` only when
/// `multi_node` (MPICH cannot apply it on one node).
pub fn mpich_candidates(
    offered: &[crate::libraries::mpich::Choice],
    multi_node: bool,
) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = offered
        .iter()
        .filter_map(crate::libraries::mpich::Forced::from_choice)
        .filter(|f| multi_node || f.name != "smp")
        .map(|f| Candidate::library(LibraryChoice::Mpich(f)))
        .collect();
    out.sort_by_key(|c| !c.is_reference());
    out
}

/// The specifications (as text) one candidate algorithm is compared in.
fn specs(info: &AlgorithmInfo, o: &SpaceOptions) -> Vec<String> {
    let mut settings: Vec<Vec<String>> = vec![Vec::new()];
    for p in info.params {
        let values: Vec<&str> = match p.tuning {
            ParamTuning::Sweep(values) => values.to_vec(),
            ParamTuning::Brent => vec!["0"],
            ParamTuning::FromCall => vec![o.call_value(p.name)],
        };
        settings = settings
            .iter()
            .flat_map(|s| {
                values.iter().map(move |v| {
                    let mut s = s.clone();
                    s.push(format!("{}={v}", p.name));
                    s
                })
            })
            .collect();
    }
    settings
        .into_iter()
        .map(|s| match s.is_empty() {
            true => info.name.to_string(),
            false => format!("{}:{}", info.name, s.join(",")),
        })
        .collect()
}

/// Smallest segment the tuner tries (a specification may give any size
/// down to the registry's [`SEGMENT_MIN`]).
pub const TUNED_SEGMENT_MIN: u64 = 4096;
/// Largest segment the tuner tries (the registry's limit is [`SEGMENT_MAX`]).
pub const TUNED_SEGMENT_MAX: u64 = 1 << 20;

const _: () = assert!(SEGMENT_MIN <= TUNED_SEGMENT_MIN && TUNED_SEGMENT_MAX <= SEGMENT_MAX);

/// `cands` without those that run the same code at `bytes` as another of
/// them, one standing for each such group (the least by label): `shm`'s
/// messages of 1 to [`SMALL_MAX`] bytes take its small ring whatever its
/// segment, slots and execution say, and above that two `shm` candidates
/// of one execution whose ring is the same at `bytes` ([`shm::ring`]: a
/// message in one slot, say, whatever the slot count) are one schedule.
/// Measured apart they are one thing timed several times, and chance
/// picks among them: rule splits where nothing differs.
pub fn distinct_at(bytes: u64, cands: &[Candidate]) -> Vec<Candidate> {
    let runs = |c: &Candidate| -> Option<(&'static str, u64, u64)> {
        if c.spec.name != "shm" {
            return None;
        }
        if (1..=SMALL_MAX).contains(&bytes) {
            return Some(("small ring", 0, 0));
        }
        let (segment, slots) = (c.spec.int("segment").ok()?, c.spec.int("slots").ok()?);
        let (slot, n) = shm::ring(bytes, segment, slots);
        Some((c.exec_name(), slot, n))
    };
    let mut stand: BTreeMap<(&'static str, u64, u64), String> = BTreeMap::new();
    for c in cands {
        if let Some(k) = runs(c) {
            let l = c.label();
            stand
                .entry(k)
                .and_modify(|s| {
                    if l < *s {
                        *s = l.clone()
                    }
                })
                .or_insert(l);
        }
    }
    cands
        .iter()
        .filter(|c| runs(c).is_none_or(|k| stand[&k] == c.label()))
        .cloned()
        .collect()
}

/// Segment sizes worth trying at `bytes`: powers of two from 4 KiB up to
/// half the message (at least two segments) and 1 MiB. Empty when the
/// message is too small to split.
pub fn segment_grid(bytes: u64) -> Vec<u64> {
    let top = (bytes / 2).min(TUNED_SEGMENT_MAX);
    let mut v = Vec::new();
    let mut s = TUNED_SEGMENT_MIN;
    while s <= top {
        v.push(s);
        s *= 2;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At 1 B-1 KiB one shm candidate stands for all six, the same one
    /// whatever the order it is offered in; elsewhere all are kept.
    #[test]
    fn one_shm_candidate_where_every_variant_runs_the_small_ring() {
        let o = SpaceOptions {
            executions: Execution::ALL.to_vec(),
            pairing: "neighbors".into(),
            multi_node: false,
        };
        let all = candidates(Collective::Bcast, &o);
        let shm = |v: &[Candidate]| -> Vec<String> {
            let mut l: Vec<String> = v
                .iter()
                .filter(|c| c.spec.name == "shm")
                .map(Candidate::label)
                .collect();
            l.sort();
            l
        };
        assert_eq!(shm(&all).len(), 6);
        let mut rev = all.clone();
        rev.reverse();
        for b in [1, 64, SMALL_MAX] {
            let kept = distinct_at(b, &all);
            assert_eq!(shm(&kept).len(), 1, "{b} B");
            assert_eq!(shm(&kept), shm(&distinct_at(b, &rev)), "{b} B");
            assert_eq!(kept.len(), all.len() - 5);
        }
        // At 0 B, and above the small ring with the whole message in one
        // slot (segment 0), the slot count changes nothing: one per
        // execution.
        for b in [0, SMALL_MAX + 1, 1 << 20] {
            let kept = distinct_at(b, &all);
            assert_eq!(shm(&kept).len(), 2, "{b} B: {:?}", shm(&kept));
            assert_eq!(shm(&kept), shm(&distinct_at(b, &rev)), "{b} B");
        }
        // Segmented rings of different depths differ.
        let seg: Vec<Candidate> = all
            .iter()
            .filter(|c| c.spec.name == "shm")
            .map(|c| c.with_segment(64 << 10))
            .collect();
        assert_eq!(distinct_at(1 << 20, &seg).len(), 6);
        // A 64 KiB message in 64 KiB slots: one slot used, whatever the count.
        assert_eq!(distinct_at(64 << 10, &seg).len(), 2);
        // Nothing to merge without shm.
        let no_shm: Vec<Candidate> = all
            .iter()
            .filter(|c| c.spec.name != "shm")
            .cloned()
            .collect();
        assert_eq!(distinct_at(64, &no_shm), no_shm);
    }

    #[test]
    fn spaces() {
        let o = SpaceOptions {
            executions: Execution::ALL.to_vec(),
            pairing: "neighbors".into(),
            multi_node: false,
        };
        let b = candidates(Collective::Bcast, &o);
        // 30 (15 configurations, 2 executions), and shm's 3 ring sizes
        // under 2 executions.
        assert_eq!(b.len(), 30 + 6);
        assert!(b.iter().all(|c| c.spec.name != "hierarchical"));
        let multi = candidates(
            Collective::Bcast,
            &SpaceOptions {
                multi_node: true,
                ..o.clone()
            },
        );
        // No shm on its own; hierarchical: 6 inter x 4 intra (shm one of
        // them) x 2 executions.
        assert_eq!(multi.len(), 30 + 48);
        assert!(multi.iter().all(|c| c.spec.name != "shm"));
        assert!(multi
            .iter()
            .any(|c| c.spec.name == "hierarchical" && c.spec.to_string().contains("intra=shm")));
        assert_eq!(candidates(Collective::Swap, &o).len(), 16);
        let p = Candidate::new(Collective::Bcast, "pipeline", Execution::Blocking);
        assert_eq!(p.segment(), Some(65536));
        assert_eq!(
            p.with_segment(8192).label(),
            "pipeline:segment=8192 [blocking]"
        );
        assert_eq!(p.family().segment(), Some(0));
        assert!(segment_grid(4096).is_empty());
        assert_eq!(segment_grid(32768), vec![4096, 8192, 16384]);
        assert_eq!(*segment_grid(1 << 30).last().unwrap(), 1 << 20);
    }

    /// A registry algorithm is a candidate (and then in the space, on one
    /// node or on several) or says why it is not.
    #[test]
    fn every_registry_algorithm_is_a_candidate_or_says_why_not() {
        let o = SpaceOptions {
            executions: Execution::ALL.to_vec(),
            pairing: "neighbors".into(),
            multi_node: true,
        };
        for c in Collective::ALL {
            let mut space = candidates(c, &o);
            space.extend(candidates(
                c,
                &SpaceOptions {
                    multi_node: false,
                    ..o.clone()
                },
            ));
            for info in algorithms(c) {
                let n = space.iter().filter(|k| k.spec.name == info.name).count();
                match info.tuning {
                    Tuning::Candidate => assert!(
                        n >= o.executions.len(),
                        "{c} {}: a tuning candidate, yet not in the tuning space",
                        info.name
                    ),
                    Tuning::Excluded(why) => {
                        assert_eq!(n, 0, "{c} {}: excluded, yet in the space", info.name);
                        assert!(
                            !why.trim().is_empty(),
                            "{c} {}: not a tuning candidate: the registry must say why",
                            info.name
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn library_candidates_are_fixed_and_labelled_library() {
        let l = library_candidates();
        assert_eq!(l.len(), Forced::candidates().len());
        for c in &l {
            let Some(LibraryChoice::Tuned(f)) = c.forced() else {
                panic!("{c}: not a coll/tuned candidate")
            };
            assert_eq!(c.segment(), None, "the tuner does not vary their segment");
            assert_eq!(c.family(), *c);
            assert!(c.label().ends_with(" [library]"), "{}", c.label());
            assert_eq!(Candidate::library(f), *c);
            // The tuner's samples (measured as this subject) key back to it.
            let subject = crate::measure::method::Subject::OmpiTuned {
                tuned: f.tuned(),
                segment: u64::from(f.segment),
            };
            assert_eq!(subject.label(), c.label());
        }
        // Every one of Open MPI's 9, the unsegmented once each.
        for id in 1..=9 {
            assert!(
                l.iter()
                    .any(|c| matches!(c.forced(), Some(LibraryChoice::Tuned(f)) if f.id == id)),
                "{id}"
            );
        }
        assert!(l
            .iter()
            .any(|c| c.label() == "ompi_tuned:algorithm=6,name=binomial,segment=0 [library]"));
        assert!(
            Candidate::new(Collective::Bcast, "binomial", Execution::Blocking)
                .forced()
                .is_none()
        );
    }

    #[test]
    fn adapt_and_mpich_candidates_key_back_to_what_bench_records() {
        let offered = crate::libraries::ompi::adapt::from_description(
            "Algorithm of broadcast, 0: tuned, 1: binomial, 2: in_order_binomial, 3: binary, 4: pipeline, 5: chain, 6: linear",
        )
        .unwrap();
        let a = adapt_candidates(&offered);
        // tuned (0) is not implemented: 6 algorithms at each segment.
        assert_eq!(
            a.len(),
            6 * crate::libraries::ompi::adapt::TUNE_SEGMENTS.len()
        );
        for c in &a {
            let Some(LibraryChoice::Adapt(f)) = c.forced() else {
                panic!("{c}: not a coll/adapt candidate")
            };
            assert_eq!(c.segment(), None);
            let choice = offered.iter().find(|o| o.id == f.id).unwrap().clone();
            let subject = crate::measure::method::Subject::OmpiAdapt {
                choice,
                segment: u64::from(f.segment),
            };
            assert_eq!(subject.label(), c.label());
        }
        let offered = crate::libraries::mpich::from_description(
            "x\nauto - a\nbinomial - b\nsmp - c\nscatter_ring_allgather - d\nfancy_new - e",
            crate::libraries::mpich::DOCUMENTED_BCAST,
        )
        .unwrap();
        let one_node = mpich_candidates(&offered, false);
        let names: Vec<String> = one_node.iter().map(|c| c.spec.to_string()).collect();
        // auto first; smp only on several nodes; an undocumented name is
        // no table choice.
        assert_eq!(
            names,
            [
                "mpich:algorithm=auto",
                "mpich:algorithm=binomial",
                "mpich:algorithm=scatter_ring_allgather"
            ]
        );
        assert_eq!(mpich_candidates(&offered, true).len(), 4);
        for c in &one_node {
            let Some(LibraryChoice::Mpich(f)) = c.forced() else {
                panic!("{c}: not an MPICH candidate")
            };
            let choice = offered.iter().find(|o| o.name == f.name).unwrap().clone();
            assert_eq!(
                crate::measure::method::Subject::Mpich { choice }.label(),
                c.label()
            );
        }
    }
}
