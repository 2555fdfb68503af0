//! Where two tables decide differently (`colltune diff`): per collective
//! and communicator, a shape only one table has, or the size ranges (cut
//! at every boundary of either table) where their choices differ, with the
//! expected time ratio where both tables measured their choice inside the
//! range.

use colltune_algorithms::Collective;

use super::{CommKey, Rule, Table};

/// One of the two tables compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    A,
    B,
}

/// How the tables differ on one (collective, communicator).
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// Only this table has rules for the communicator.
    OnlyIn(Side),
    /// Both have; these ranges are decided differently (never empty).
    Ranges(Vec<RangeDiff>),
}

/// A difference on one (collective, communicator).
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    pub collective: Collective,
    /// A's key (B's where only B has the communicator).
    pub key: CommKey,
    /// B's key: `key`, or the same shape placed where only one table
    /// names a placement.
    pub b_key: CommKey,
    pub kind: Kind,
}

/// A size range where the tables choose differently.
#[derive(Clone, Debug, PartialEq)]
pub struct RangeDiff {
    pub min_bytes: u64,
    /// Inclusive; None: no upper bound.
    pub max_bytes: Option<u64>,
    /// Each table's choice, `spec [execution]` ([`Rule::label`]).
    pub a: String,
    pub b: String,
    /// The choices' measured times, where both were measured inside the
    /// range.
    pub expected: Option<Expected>,
    /// Each rule's evidence (schema 2), as [`super::rule_evidence_line`]
    /// writes it.
    pub a_evidence: Option<String>,
    pub b_evidence: Option<String>,
}

/// Both choices' measured times (microseconds) and where they were
/// measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Expected {
    pub a_us: f64,
    pub a_at: u64,
    pub b_us: f64,
    pub b_at: u64,
}

impl Expected {
    /// B's expected time over A's.
    pub fn ratio(&self) -> f64 {
        self.b_us / self.a_us
    }
}

/// Every difference between tables `a` and `b`, by collective, then
/// communicator; empty when they decide alike everywhere. A shape one
/// table keys without a placement (an older table, or one built from
/// samples that did not record it) and the other with exactly one is
/// compared as one communicator ([`Difference::b_key`] says B's key), as
/// the selector would apply either table's rules to it.
pub fn diff(a: &Table, b: &Table) -> Vec<Difference> {
    let mut out = Vec::new();
    for collective in Collective::ALL {
        let keys_of = |t: &Table| {
            let mut k: Vec<CommKey> = t.rules(collective).iter().map(|r| r.key()).collect();
            k.sort_unstable();
            k.dedup();
            k
        };
        for (ka, kb) in pairs(&keys_of(a), &keys_of(b)) {
            let ra = ka.and_then(|k| a.rules(collective).iter().find(|r| r.key() == k));
            let rb = kb.and_then(|k| b.rules(collective).iter().find(|r| r.key() == k));
            let kind = match (ra, rb) {
                (Some(ra), Some(rb)) => {
                    let r = ranges(&ra.rules, &rb.rules);
                    if r.is_empty() {
                        continue;
                    }
                    Kind::Ranges(r)
                }
                (Some(_), None) => Kind::OnlyIn(Side::A),
                _ => Kind::OnlyIn(Side::B),
            };
            let key = ka.or(kb).expect("a pair has a key");
            out.push(Difference {
                collective,
                key,
                b_key: kb.unwrap_or(key),
                kind,
            });
        }
    }
    out
}

/// The communicators of A's and B's keys (each sorted, distinct) matched:
/// equal keys; then a shape with no placement on one side and exactly one
/// placed key of that shape on the other; the rest alone. In key order.
fn pairs(a: &[CommKey], b: &[CommKey]) -> Vec<(Option<CommKey>, Option<CommKey>)> {
    let same_shape =
        |x: &CommKey, y: &CommKey| (x.ranks, x.ppn, x.nodes) == (y.ranks, y.ppn, y.nodes);
    let (mut left_a, mut left_b): (Vec<CommKey>, Vec<CommKey>) = (
        a.iter().filter(|k| !b.contains(k)).copied().collect(),
        b.iter().filter(|k| !a.contains(k)).copied().collect(),
    );
    let mut out: Vec<(Option<CommKey>, Option<CommKey>)> = a
        .iter()
        .filter(|k| b.contains(k))
        .map(|&k| (Some(k), Some(k)))
        .collect();
    // An unplaced key and the one placed key of its shape across.
    let mut i = 0;
    while i < left_a.len() {
        let ka = left_a[i];
        let across: Vec<usize> = (0..left_b.len())
            .filter(|&j| same_shape(&ka, &left_b[j]))
            .filter(|&j| ka.placement.is_none() != left_b[j].placement.is_none())
            .collect();
        let alone_here = left_a.iter().filter(|k| same_shape(k, &ka)).count() == 1;
        if let ([j], true) = (across.as_slice(), alone_here) {
            let kb = left_b.remove(*j);
            out.push((Some(left_a.remove(i)), Some(kb)));
        } else {
            i += 1;
        }
    }
    out.extend(left_a.into_iter().map(|k| (Some(k), None)));
    out.extend(left_b.into_iter().map(|k| (None, Some(k))));
    out.sort_by_key(|&(ka, kb)| ka.or(kb));
    out
}

/// The ranges where two rule lists for one communicator choose
/// differently: the union of their range boundaries walked in order,
/// skipping ranges either list leaves uncovered.
pub fn ranges(a: &[Rule], b: &[Rule]) -> Vec<RangeDiff> {
    let mut cuts: Vec<u64> = a.iter().chain(b).map(|r| r.min_bytes).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::new();
    for (i, &lo) in cuts.iter().enumerate() {
        let hi = cuts.get(i + 1).map(|n| n - 1);
        let x = a.iter().find(|r| r.covers(lo));
        let y = b.iter().find(|r| r.covers(lo));
        let (Some(x), Some(y)) = (x, y) else { continue };
        let (la, lb) = (x.label(), y.label());
        if la == lb {
            continue;
        }
        // A ratio only where both figures were measured inside this range.
        let inside = |at: Option<u64>| at.filter(|&b| b >= lo && hi.is_none_or(|h| b <= h));
        let expected = match (x.time_us, y.time_us, inside(x.at_bytes), inside(y.at_bytes)) {
            (Some(a_us), Some(b_us), Some(a_at), Some(b_at)) if a_us > 0.0 => Some(Expected {
                a_us,
                a_at,
                b_us,
                b_at,
            }),
            _ => None,
        };
        out.push(RangeDiff {
            min_bytes: lo,
            max_bytes: hi,
            a: la,
            b: lb,
            expected,
            a_evidence: x.evidence.as_ref().map(super::rule_evidence_line),
            b_evidence: y.evidence.as_ref().map(super::rule_evidence_line),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "schema: 1\nprovenance:\n  host: test\n  mpi: Open MPI v4.1.4\n  date: 2026-11-30T00:00:00Z\n  command: test\n  colltune: test\n  source: measured\n  sweep:\n    mode: built\n";

    /// A table of bcast rules on `ranks` ranks of one node: (min_bytes,
    /// algorithm, execution, time, measured at).
    fn table(ranks: u32, rules: &[(u64, &str, &str, f64, u64)]) -> Table {
        let mut y =
            format!("{HEAD}bcast:\n- ranks: {ranks}\n  ppn: {ranks}\n  nodes: 1\n  rules:\n");
        for (i, (min, algo, exec, t, at)) in rules.iter().enumerate() {
            let spec = colltune_algorithms::AlgoSpec::parse(algo).unwrap();
            y += &format!("  - min_bytes: {min}\n");
            if let Some(next) = rules.get(i + 1) {
                y += &format!("    max_bytes: {}\n", next.0 - 1);
            }
            y += &format!("    algorithm: {}\n", spec.name);
            if !spec.params.is_empty() {
                y += "    params:\n";
                for (k, v) in &spec.params {
                    y += &format!("      {k}: \"{v}\"\n");
                }
            }
            y += &format!("    execution: {exec}\n    time_us: {t}\n    at_bytes: {at}\n");
        }
        crate::tables::table::load_str(&y).unwrap()
    }

    fn a() -> Table {
        table(
            4,
            &[
                (0, "linear", "blocking", 3.0, 0),
                (4096, "pipeline:segment=65536", "nonblocking", 100.0, 4096),
            ],
        )
    }

    fn b() -> Table {
        table(
            4,
            &[
                (0, "linear", "blocking", 3.0, 0),
                (1024, "binomial", "blocking", 8.0, 5000),
            ],
        )
    }

    #[test]
    fn ranges_decided_differently_with_expected_ratios() {
        let d = diff(&a(), &b());
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].collective, Collective::Bcast);
        assert_eq!(d[0].key, CommKey::shape(4, 4, 1));
        let Kind::Ranges(r) = &d[0].kind else {
            panic!("{d:?}")
        };
        // 0..=1023: both linear, alike.
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!((r[0].min_bytes, r[0].max_bytes), (1024, Some(4095)));
        assert_eq!(r[0].a, "linear [blocking]");
        assert_eq!(r[0].b, "binomial:segment=0 [blocking]");
        // A's linear was measured at 0, outside the range: no ratio.
        assert_eq!(r[0].expected, None);
        assert_eq!((r[1].min_bytes, r[1].max_bytes), (4096, None));
        assert_eq!(r[1].a, "pipeline:segment=65536 [nonblocking]");
        assert_eq!(r[1].b, "binomial:segment=0 [blocking]");
        let e = r[1].expected.unwrap();
        assert_eq!((e.a_us, e.a_at, e.b_us, e.b_at), (100.0, 4096, 8.0, 5000));
        assert!((e.ratio() - 0.08).abs() < 1e-12, "{}", e.ratio());
        // The other way round: the same ranges, B/A inverted.
        let d = diff(&b(), &a());
        let Kind::Ranges(r) = &d[0].kind else {
            panic!("{d:?}")
        };
        assert_eq!(r[1].a, "binomial:segment=0 [blocking]");
        assert!((r[1].expected.unwrap().ratio() - 12.5).abs() < 1e-12);
    }

    #[test]
    fn alike_tables_have_no_differences() {
        assert_eq!(diff(&a(), &a()), []);
        // The same choices cut at other boundaries decide alike.
        let split = table(
            4,
            &[
                (0, "linear", "blocking", 3.0, 0),
                (100, "linear", "blocking", 3.0, 100),
                (4096, "pipeline", "nonblocking", 50.0, 8192),
            ],
        );
        assert_eq!(diff(&a(), &split), []);
    }

    #[test]
    fn a_communicator_in_one_table_only() {
        let eight = table(8, &[(0, "linear", "blocking", 3.0, 0)]);
        let d = diff(&a(), &eight);
        let only: Vec<(u32, &Kind)> = d.iter().map(|x| (x.key.ranks, &x.kind)).collect();
        assert_eq!(
            only,
            [(4, &Kind::OnlyIn(Side::A)), (8, &Kind::OnlyIn(Side::B))]
        );
    }

    #[test]
    fn an_unplaced_shape_is_compared_with_the_one_placed_key_across() {
        let placed = |t: &Table| {
            let y = t.to_yaml().unwrap();
            let y = y.replacen("  nodes: 1\n", "  nodes: 1\n  placement: block/block\n", 1);
            crate::tables::table::load_str(&y).unwrap()
        };
        let pb = placed(&b());
        let key = pb.bcast[0].key();
        assert!(key.placement.is_some(), "{key:?}");
        // One communicator, its ranges compared, either way round.
        let d = diff(&a(), &pb);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!((d[0].key, d[0].b_key), (CommKey::shape(4, 4, 1), key));
        assert!(
            matches!(&d[0].kind, Kind::Ranges(r) if r.len() == 2),
            "{d:?}"
        );
        let d = diff(&pb, &a());
        assert_eq!((d[0].key, d[0].b_key), (key, CommKey::shape(4, 4, 1)));
        assert_eq!(diff(&placed(&a()), &a()), []);
        // Two placed keys of the shape: which one is meant is not known.
        let mut two = pb.clone();
        let y = pb
            .to_yaml()
            .unwrap()
            .replacen("block/block", "cyclic/block", 1);
        two.bcast
            .push(crate::tables::table::load_str(&y).unwrap().bcast[0].clone());
        let kinds: Vec<Kind> = diff(&a(), &two).into_iter().map(|d| d.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::OnlyIn(Side::A),
                Kind::OnlyIn(Side::B),
                Kind::OnlyIn(Side::B)
            ]
        );
    }

    #[test]
    fn no_ratio_without_times_or_with_a_zero_time() {
        let mut x = a();
        x.bcast[0].rules[1].time_us = Some(0.0);
        let mut y = b();
        let d = diff(&x, &y);
        let Kind::Ranges(r) = &d[0].kind else {
            panic!("{d:?}")
        };
        assert_eq!(r[1].expected, None);
        y.bcast[0].rules[1].time_us = None;
        let Kind::Ranges(r) = &diff(&a(), &y)[0].kind else {
            panic!()
        };
        assert_eq!(r[1].expected, None);
    }

    #[test]
    fn a_range_one_table_leaves_uncovered_is_skipped() {
        // A covers 0..=100 and 4096..; B 0..=199 and 200..: at the cut
        // 200, A has no rule.
        let mut hole = a();
        hole.bcast[0].rules[0].max_bytes = Some(100);
        let mut other = b();
        other.bcast[0].rules[0].max_bytes = Some(199);
        other.bcast[0].rules[1].min_bytes = 200;
        let r = ranges(&hole.bcast[0].rules, &other.bcast[0].rules);
        assert_eq!(
            r.iter()
                .map(|d| (d.min_bytes, d.max_bytes))
                .collect::<Vec<_>>(),
            [(4096, None)]
        );
    }
}
