//! Every algorithm, by name, with its parameters and restrictions, as data.
//!
//! Nothing outside this file knows the list: the CLI, the benchmark, the
//! tuner, the checker and the exporters all iterate [`REGISTRY`]. Each entry
//! also says how the tuner treats it ([`Tuning`], and each parameter's
//! [`ParamTuning`]): the tuning space is derived from these, not listed.

use crate::builder::Builder;
use crate::error::{BuildError, ShapeError, SpecError};
use crate::schedule::Schedule;
pub use crate::shape::Shape;
use crate::spec::{AlgoSpec, Collective, ParamValue};
use crate::topo::NodeMap;
use crate::{bcast, swap};

/// Builds one rank's schedule: `(shape, resolved spec, builder)`.
pub type BuildFn = fn(&Shape, &AlgoSpec, &mut Builder) -> Result<(), SpecError>;

/// What kind of value a parameter takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// Segment size in bytes: 0 (not segmented) or `min..=max`.
    Segment { min: u64, max: u64 },
    /// A count in `min..=max`.
    Count { min: u64, max: u64 },
    /// One of these words.
    Choice(&'static [&'static str]),
    /// An algorithm of this collective, itself resolved against the registry.
    Algorithm(Collective),
}

/// A parameter's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultValue {
    Int(u64),
    Word(&'static str),
    Algo(&'static str),
}

/// How the tuner sets a parameter of an algorithm it compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamTuning {
    /// Each of these values (written as in a specification: `3`,
    /// `knomial(radix=4)`) makes a candidate of its own; several swept
    /// parameters give every combination, the first parameter's values
    /// outermost.
    Sweep(&'static [&'static str]),
    /// A segment size tuned per message size: the candidate starts
    /// unsegmented (0) and the search tunes the size (Brent's method over
    /// log2(segment); an exhaustive search tries every size of a grid).
    Brent,
    /// Part of the call, not a choice (a swap's pairing): the tuning space
    /// gives its value.
    FromCall,
}

#[derive(Clone, Copy, Debug)]
pub struct ParamInfo {
    pub name: &'static str,
    pub kind: ParamKind,
    pub default: DefaultValue,
    pub help: &'static str,
    pub tuning: ParamTuning,
}

/// A restriction on where an algorithm may be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restriction {
    /// Cannot be a phase of another (hierarchical) algorithm.
    NotNested,
    /// Uses one-sided communication (an MPI window per communicator).
    OneSided,
    /// Meaningful only when ranks span several nodes; on one node it runs
    /// its intra-node phase alone.
    NodeAware,
    /// Only for ranks that share one node (a shared-memory window over
    /// them): not applicable on a communicator that spans nodes, nor as the
    /// inter-node phase of a hierarchical algorithm (its intra-node phase
    /// is fine).
    SharedMemory,
}

/// Whether the tuner compares an algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tuning {
    /// A candidate, with each parameter set as its [`ParamTuning`] says
    /// (a [`Restriction::NodeAware`] one only where ranks span nodes).
    Candidate,
    /// Never a candidate, for this reason.
    Excluded(&'static str),
}

#[derive(Clone, Copy, Debug)]
pub struct AlgorithmInfo {
    pub name: &'static str,
    pub collective: Collective,
    pub summary: &'static str,
    pub params: &'static [ParamInfo],
    pub restrictions: &'static [Restriction],
    pub tuning: Tuning,
    pub build: BuildFn,
}

impl AlgorithmInfo {
    pub fn param(&self, name: &str) -> Option<&ParamInfo> {
        self.params.iter().find(|p| p.name == name)
    }
    pub fn has(&self, r: Restriction) -> bool {
        self.restrictions.contains(&r)
    }
}

/// Smallest segment size a specification may give (besides 0: unsegmented).
pub const SEGMENT_MIN: u64 = 64;
/// Largest segment size a specification may give.
pub const SEGMENT_MAX: u64 = 1 << 30;

const fn segment(default: u64) -> ParamInfo {
    ParamInfo {
        name: "segment",
        kind: ParamKind::Segment {
            min: SEGMENT_MIN,
            max: SEGMENT_MAX,
        },
        default: DefaultValue::Int(default),
        help: "segment size in bytes (0: send the message whole)",
        tuning: ParamTuning::Brent,
    }
}

const PAIRING: ParamInfo = ParamInfo {
    name: "pairing",
    kind: ParamKind::Choice(&["neighbors", "halves"]),
    default: DefaultValue::Word("neighbors"),
    help: "partners: neighbors (0-1, 2-3, ...) or halves (i with i+p/2); an odd rank out idles",
    tuning: ParamTuning::FromCall,
};

const fn swap_algo(name: &'static str, summary: &'static str, build: BuildFn) -> AlgorithmInfo {
    AlgorithmInfo {
        name,
        collective: Collective::Swap,
        summary,
        params: &[PAIRING],
        restrictions: &[],
        tuning: Tuning::Candidate,
        build,
    }
}

/// Every algorithm colltune knows.
pub static REGISTRY: &[AlgorithmInfo] = &[
    AlgorithmInfo {
        name: "linear",
        collective: Collective::Bcast,
        summary: "root sends the whole message to every other rank",
        params: &[],
        restrictions: &[],
        tuning: Tuning::Candidate,
        build: bcast::linear::build,
    },
    AlgorithmInfo {
        name: "binomial",
        collective: Collective::Bcast,
        summary: "binomial tree, ceil(log2 p) rounds",
        params: &[segment(0)],
        restrictions: &[],
        tuning: Tuning::Candidate,
        build: bcast::binomial::build,
    },
    AlgorithmInfo {
        name: "knomial",
        collective: Collective::Bcast,
        summary: "k-nomial tree: each rank feeds radix-1 children per round",
        params: &[
            ParamInfo {
                name: "radix",
                kind: ParamKind::Count { min: 2, max: 64 },
                default: DefaultValue::Int(4),
                help: "tree radix k (2: binomial)",
                tuning: ParamTuning::Sweep(&["3", "4", "8"]),
            },
            segment(0),
        ],
        restrictions: &[],
        tuning: Tuning::Candidate,
        build: bcast::knomial::build,
    },
    AlgorithmInfo {
        name: "binary",
        collective: Collective::Bcast,
        summary: "complete binary tree",
        params: &[segment(0)],
        restrictions: &[],
        tuning: Tuning::Candidate,
        build: bcast::binary::build,
    },
    AlgorithmInfo {
        name: "split_binary",
        collective: Collective::Bcast,
        summary: "binary tree, each half of the message down one subtree, then halves swapped",
        params: &[segment(0)],
        restrictions: &[],
        tuning: Tuning::Candidate,
        build: bcast::split_binary::build,
    },
    AlgorithmInfo {
        name: "chain",
        collective: Collective::Bcast,
        summary: "root feeds `fanout` chains, segments forwarded along each",
        params: &[
            ParamInfo {
                name: "fanout",
                kind: ParamKind::Count { min: 1, max: 64 },
                default: DefaultValue::Int(4),
                help: "number of chains the root feeds",
                tuning: ParamTuning::Sweep(&["2", "4"]),
            },
            segment(65536),
        ],
        restrictions: &[],
        tuning: Tuning::Candidate,
        build: bcast::chain::build,
    },
    AlgorithmInfo {
        name: "pipeline",
        collective: Collective::Bcast,
        summary: "one chain through all ranks, segments forwarded as they arrive",
        params: &[segment(65536)],
        restrictions: &[],
        tuning: Tuning::Candidate,
        build: bcast::pipeline::build,
    },
    AlgorithmInfo {
        name: "scatter_allgather",
        collective: Collective::Bcast,
        summary: "binomial scatter of p chunks, then recursive-doubling allgather",
        params: &[],
        restrictions: &[],
        tuning: Tuning::Candidate,
        build: bcast::scatter_allgather::build_doubling,
    },
    AlgorithmInfo {
        name: "scatter_allgather_ring",
        collective: Collective::Bcast,
        summary: "binomial scatter of p chunks, then ring allgather",
        params: &[],
        restrictions: &[],
        tuning: Tuning::Candidate,
        build: bcast::scatter_allgather::build_ring,
    },
    AlgorithmInfo {
        name: "shm",
        collective: Collective::Bcast,
        summary: "root copies each segment once into a shared-memory ring, every rank of the node copies it out",
        params: &[
            segment(65536),
            ParamInfo {
                name: "slots",
                kind: ParamKind::Count { min: 1, max: 16 },
                default: DefaultValue::Int(4),
                help: "segments the ring holds at once (the root reuses a slot once every rank copied it out; messages of at most 1 KiB take a 16-slot ring of their own, a slot per call)",
                tuning: ParamTuning::Sweep(&["2", "4", "8"]),
            },
        ],
        restrictions: &[Restriction::SharedMemory],
        tuning: Tuning::Candidate,
        build: bcast::shm::build,
    },
    AlgorithmInfo {
        name: "hierarchical",
        collective: Collective::Bcast,
        summary: "inter-node algorithm over node leaders, then intra-node algorithm in each node",
        params: &[
            ParamInfo {
                name: "inter",
                kind: ParamKind::Algorithm(Collective::Bcast),
                default: DefaultValue::Algo("binomial"),
                help: "broadcast among node leaders",
                tuning: ParamTuning::Sweep(&[
                    "binomial",
                    "linear",
                    "pipeline",
                    "scatter_allgather_ring",
                    "bine",
                    "circulant",
                ]),
            },
            ParamInfo {
                name: "intra",
                kind: ParamKind::Algorithm(Collective::Bcast),
                default: DefaultValue::Algo("binomial"),
                help: "broadcast inside each node from its leader",
                tuning: ParamTuning::Sweep(&["linear", "binomial", "knomial(radix=4)", "shm"]),
            },
        ],
        restrictions: &[Restriction::NotNested, Restriction::NodeAware],
        tuning: Tuning::Candidate,
        // Its phases are any registry broadcasts: it builds them through
        // `build_into`, handed to it here.
        build: |sh, spec, b| bcast::hierarchical::build(sh, spec, b, build_into),
    },
    AlgorithmInfo {
        name: "bine",
        collective: Collective::Bcast,
        summary: "Bine tree (SC'25): binomial-like, partners from negabinary numbering, most messages between nearby ranks",
        params: &[segment(0)],
        restrictions: &[],
        tuning: Tuning::Candidate,
        build: bcast::bine::build,
    },
    AlgorithmInfo {
        name: "bine_bdw",
        collective: Collective::Bcast,
        summary: "scatter then allgather along the Bine tree, each subtree's blocks contiguous",
        params: &[],
        restrictions: &[],
        tuning: Tuning::Candidate,
        build: bcast::bine::build_bdw,
    },
    AlgorithmInfo {
        name: "circulant",
        collective: Collective::Bcast,
        summary: "Traff's circulant-graph pipeline (TOPC 2025): n blocks in n - 1 + ceil(log2 p) rounds, any p",
        params: &[segment(65536)],
        restrictions: &[],
        tuning: Tuning::Candidate,
        build: bcast::circulant::build,
    },
    swap_algo(
        "ordered",
        "blocking send and receive, the lower rank sending first",
        swap::ordered::build,
    ),
    swap_algo("sendrecv", "one MPI_Sendrecv", swap::sendrecv::build),
    swap_algo(
        "isend_recv",
        "nonblocking send, blocking receive, wait",
        swap::nonblocking::build_isend_recv,
    ),
    swap_algo(
        "irecv_send",
        "nonblocking receive, blocking send, wait",
        swap::nonblocking::build_irecv_send,
    ),
    swap_algo(
        "isend_irecv",
        "nonblocking receive and send, wait for both",
        swap::nonblocking::build_isend_irecv,
    ),
    swap_algo(
        "rsend",
        "pre-posted receive, zero-byte go-ahead, ready-mode send",
        swap::rsend::build,
    ),
    AlgorithmInfo {
        name: "put_fence",
        collective: Collective::Swap,
        summary: "one-sided put into the partner's window between two fences",
        params: &[PAIRING],
        restrictions: &[Restriction::OneSided],
        tuning: Tuning::Candidate,
        build: swap::put::build_fence,
    },
    AlgorithmInfo {
        name: "put_pscw",
        collective: Collective::Swap,
        summary: "one-sided put with post-start-complete-wait synchronisation",
        params: &[PAIRING],
        restrictions: &[Restriction::OneSided],
        tuning: Tuning::Candidate,
        build: swap::put::build_pscw,
    },
];

/// Algorithms that a hierarchical algorithm's phases are varied over when
/// exercising it (see [`variants`]).
const PHASE_VARIANTS: &[&str] = &[
    "linear",
    "pipeline",
    "scatter_allgather_ring",
    "split_binary",
    "shm",
    "circulant",
];

/// The configurations of an algorithm worth exercising: its defaults, then
/// one parameter at a time changed to each value that changes the schedule's
/// shape (segment size `segment` or none, the smallest counts, every choice,
/// other phase algorithms). Used by the checker, `colltune verify` and the
/// benchmark's `--variants`.
pub fn variants(info: &AlgorithmInfo, segment: u64) -> Vec<AlgoSpec> {
    let base = resolve(info.collective, &AlgoSpec::new(info.name)).expect("defaults resolve");
    let mut out = vec![base.clone()];
    for p in info.params {
        let alts: Vec<ParamValue> = match p.kind {
            ParamKind::Segment { .. } => vec![ParamValue::Int(match p.default {
                DefaultValue::Int(0) => segment,
                _ => 0,
            })],
            ParamKind::Count { min, .. } => vec![ParamValue::Int(min), ParamValue::Int(min + 1)],
            ParamKind::Choice(words) => words
                .iter()
                .map(|w| ParamValue::Word((*w).into()))
                .collect(),
            ParamKind::Algorithm(c) => PHASE_VARIANTS
                .iter()
                .map(|a| {
                    let mut spec = AlgoSpec::new(*a);
                    if lookup(c, a).is_ok_and(|i| i.param("segment").is_some()) {
                        spec = spec.with_int("segment", segment);
                    }
                    ParamValue::Algo(spec)
                })
                .collect(),
        };
        for v in alts {
            let mut spec = base.clone();
            spec.params.insert(p.name.into(), v);
            if let Ok(r) = resolve(info.collective, &spec) {
                if !out.contains(&r) {
                    out.push(r);
                }
            }
        }
    }
    out
}

/// Algorithms of one collective, in registry order.
pub fn algorithms(collective: Collective) -> impl Iterator<Item = &'static AlgorithmInfo> {
    REGISTRY.iter().filter(move |a| a.collective == collective)
}

/// Looks an algorithm up by name.
pub fn lookup(collective: Collective, name: &str) -> Result<&'static AlgorithmInfo, SpecError> {
    algorithms(collective)
        .find(|a| a.name == name)
        .ok_or_else(|| SpecError::UnknownAlgorithm {
            collective: collective.to_string(),
            name: name.to_string(),
            known: algorithms(collective)
                .map(|a| a.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Checks names and values, fills every default, and returns the canonical
/// spec (the one tables store and schedules are cached under).
pub fn resolve(collective: Collective, spec: &AlgoSpec) -> Result<AlgoSpec, SpecError> {
    resolve_in(collective, spec, None)
}

fn resolve_in(
    collective: Collective,
    spec: &AlgoSpec,
    outer: Option<(&str, &str)>,
) -> Result<AlgoSpec, SpecError> {
    let info = lookup(collective, &spec.name)?;
    if let Some((outer, role)) = outer {
        if info.has(Restriction::SharedMemory) && role == "inter" {
            return Err(SpecError::NotComposable {
                algorithm: info.name.into(),
                outer: outer.into(),
                role: role.into(),
                why: "it needs ranks that share a node (use it as `intra`)".into(),
            });
        }
        if info.has(Restriction::NotNested) {
            return Err(SpecError::NotComposable {
                algorithm: info.name.into(),
                outer: outer.into(),
                role: role.into(),
                why: "it cannot be nested".into(),
            });
        }
    }
    for key in spec.params.keys() {
        if info.param(key).is_none() {
            return Err(SpecError::UnknownParam {
                algorithm: info.name.into(),
                param: key.clone(),
                known: if info.params.is_empty() {
                    "no parameters".into()
                } else {
                    info.params
                        .iter()
                        .map(|p| p.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            });
        }
    }
    let mut out = AlgoSpec::new(info.name);
    for p in info.params {
        let bad = |why: String| SpecError::BadValue {
            algorithm: info.name.into(),
            param: p.name.into(),
            why,
        };
        let given = spec.params.get(p.name).cloned();
        let value = match (p.kind, given) {
            (ParamKind::Segment { min, max }, Some(ParamValue::Int(v))) => {
                if v != 0 && !(min..=max).contains(&v) {
                    return Err(bad(format!(
                        "{v} is out of range: use 0 (whole message) or {min}..={max} bytes"
                    )));
                }
                ParamValue::Int(v)
            }
            (ParamKind::Count { min, max }, Some(ParamValue::Int(v))) => {
                if !(min..=max).contains(&v) {
                    return Err(bad(format!("{v} is out of range {min}..={max}")));
                }
                ParamValue::Int(v)
            }
            (ParamKind::Choice(words), Some(ParamValue::Word(w))) => {
                if !words.contains(&w.as_str()) {
                    return Err(bad(format!("`{w}`: use one of {}", words.join(", "))));
                }
                ParamValue::Word(w)
            }
            (ParamKind::Algorithm(c), Some(ParamValue::Algo(a))) => {
                ParamValue::Algo(resolve_in(c, &a, Some((info.name, p.name)))?)
            }
            (ParamKind::Algorithm(c), Some(ParamValue::Word(w))) => {
                ParamValue::Algo(resolve_in(c, &AlgoSpec::new(w), Some((info.name, p.name)))?)
            }
            (_, Some(v)) => {
                return Err(bad(format!(
                    "`{v}` is not {}",
                    match p.kind {
                        ParamKind::Segment { .. } => "a size in bytes",
                        ParamKind::Count { .. } => "a number",
                        ParamKind::Choice(_) => "a word",
                        ParamKind::Algorithm(_) => "an algorithm",
                    }
                )))
            }
            (_, None) => match p.default {
                DefaultValue::Int(i) => ParamValue::Int(i),
                DefaultValue::Word(w) => ParamValue::Word(w.into()),
                DefaultValue::Algo(a) => ParamValue::Algo(resolve_in(
                    match p.kind {
                        ParamKind::Algorithm(c) => c,
                        _ => collective,
                    },
                    &AlgoSpec::new(a),
                    Some((info.name, p.name)),
                )?),
            },
        };
        out.params.insert(p.name.into(), value);
    }
    Ok(out)
}

/// Builds one rank's schedule for `spec` (resolved here if it is not yet).
pub fn build(
    collective: Collective,
    spec: &AlgoSpec,
    shape: &Shape,
) -> Result<Schedule, BuildError> {
    let spec = resolve(collective, spec)?;
    build_resolved(collective, &spec, shape)
}

/// Builds one rank's schedule for a spec already resolved (canonical).
pub fn build_resolved(
    collective: Collective,
    spec: &AlgoSpec,
    shape: &Shape,
) -> Result<Schedule, BuildError> {
    if shape.rank >= shape.size || shape.root >= shape.size {
        return Err(ShapeError::RankOutOfRange {
            rank: shape.rank,
            root: shape.root,
            size: shape.size,
        }
        .into());
    }
    if shape.nodes.size() != shape.size {
        return Err(ShapeError::NodeMapSize {
            map: shape.nodes.size(),
            size: shape.size,
        }
        .into());
    }
    let mut b = Builder::new();
    build_into(collective, spec, shape, &mut b)?;
    Ok(b.finish())
}

/// Appends the ops of a resolved spec to `b` (used for composition).
pub fn build_into(
    collective: Collective,
    spec: &AlgoSpec,
    shape: &Shape,
    b: &mut Builder,
) -> Result<(), SpecError> {
    let info = lookup(collective, &spec.name)?;
    if shape.size <= 1 || shape.bytes == 0 {
        return Ok(());
    }
    (info.build)(shape, spec, b)
}

/// The schedules of every rank of a communicator.
pub fn build_all(
    collective: Collective,
    spec: &AlgoSpec,
    root: usize,
    bytes: u64,
    nodes: &NodeMap,
) -> Result<Vec<Schedule>, BuildError> {
    let spec = resolve(collective, spec)?;
    (0..nodes.size())
        .map(|rank| {
            build_resolved(
                collective,
                &spec,
                &Shape {
                    rank,
                    size: nodes.size(),
                    root,
                    bytes,
                    nodes,
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_resolve_with_defaults() {
        for (i, a) in REGISTRY.iter().enumerate() {
            assert!(
                REGISTRY[..i]
                    .iter()
                    .all(|b| b.name != a.name || b.collective != a.collective),
                "{} twice",
                a.name
            );
            let r = resolve(a.collective, &AlgoSpec::new(a.name)).unwrap();
            assert_eq!(r.params.len(), a.params.len());
        }
    }

    #[test]
    fn tuning_data_is_coherent() {
        for a in REGISTRY {
            if let Tuning::Excluded(why) = a.tuning {
                assert!(
                    !why.trim().is_empty(),
                    "{}: say why it is not a tuning candidate",
                    a.name
                );
            }
            for p in a.params {
                match p.tuning {
                    ParamTuning::Brent => assert!(
                        matches!(p.kind, ParamKind::Segment { .. }),
                        "{} {}: only segment sizes are tuned by Brent's method",
                        a.name,
                        p.name
                    ),
                    ParamTuning::Sweep(values) => {
                        assert!(!values.is_empty(), "{} {}: sweeps nothing", a.name, p.name);
                        for v in values {
                            let text = format!("{}:{}={v}", a.name, p.name);
                            let spec = AlgoSpec::parse(&text).unwrap();
                            if let Err(e) = resolve(a.collective, &spec) {
                                panic!("{text}: a swept value does not resolve: {e}");
                            }
                        }
                    }
                    ParamTuning::FromCall => {}
                }
            }
        }
    }

    #[test]
    fn bad_specs_are_refused_with_reasons() {
        let e = |t: &str| resolve(Collective::Bcast, &AlgoSpec::parse(t).unwrap()).unwrap_err();
        assert!(matches!(e("bogus"), SpecError::UnknownAlgorithm { .. }));
        assert!(matches!(
            e("binomial:radix=3"),
            SpecError::UnknownParam { .. }
        ));
        assert!(matches!(e("knomial:radix=1"), SpecError::BadValue { .. }));
        assert!(matches!(
            e("pipeline:segment=10"),
            SpecError::BadValue { .. }
        ));
        assert!(matches!(
            e("pipeline:segment=fast"),
            SpecError::BadValue { .. }
        ));
        assert!(matches!(
            e("hierarchical:inter=hierarchical"),
            SpecError::NotComposable { .. }
        ));
        assert!(matches!(
            e("hierarchical:inter=ordered"),
            SpecError::UnknownAlgorithm { .. }
        ));
        let ok = resolve(
            Collective::Bcast,
            &AlgoSpec::parse("hierarchical:intra=knomial(radix=3)").unwrap(),
        )
        .unwrap();
        assert_eq!(
            ok.to_string(),
            "hierarchical:inter=binomial(segment=0),intra=knomial(radix=3,segment=0)"
        );
    }
}
