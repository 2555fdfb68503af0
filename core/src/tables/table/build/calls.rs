//! The table's `ibcast:` and `bcast_init:` sections from samples: at each
//! communicator and measured size, the library's nonblocking algorithm
//! (`ompi_libnbc`, `mpich_ibcast`) with the fastest time to completion
//! (post then wait), where its gain over the library's own decision clears
//! zero on the evidence; else the library's own decision. Each rule
//! records the overlap its choice achieved there (post, compute for the
//! call's own time, wait: the samples' `overlap` column).
//!
//! ```text
//! samples (call = ibcast | bcast_init)
//!   ├─ overlap_us = 0 ─> times per (section, comm, bytes, choice) ─> fastest, gain over default
//!   └─ overlap_us > 0 ─> overlap per (section, comm, bytes, choice) ─> rule.overlap
//!      ─> one rule per size, neighbours with one choice merged (boundaries at geo_mid)
//! ```
//!
//! Cost: one pass over the samples and a sort per point. Blocking samples
//! (`call` = `bcast`) are the rest of the builder's ([`blocking_only`]).

use std::borrow::Cow;
use std::collections::BTreeMap;

use colltune_algorithms::AlgoSpec;

use super::geo_mid;
use crate::libraries::library::LibraryChoice;
use crate::measure::record::{Call, Sample};
use crate::measure::stats;
use crate::tables::table::evidence::{self, RuleEvidence, Times, Unresolved};
use crate::tables::table::{spec_to_fields, CommKey, CommRules, Rule, Section, Table};

/// The launches with only their blocking samples (`call` = `bcast`):
/// borrowed as they are where none has another call.
pub fn blocking_only<'a>(launches: &[&'a [Sample]]) -> Vec<Cow<'a, [Sample]>> {
    launches
        .iter()
        .map(|l| {
            if l.iter().all(|s| s.call == Call::Bcast.name()) {
                Cow::Borrowed(*l)
            } else {
                Cow::Owned(
                    l.iter()
                        .filter(|s| s.call == Call::Bcast.name())
                        .cloned()
                        .collect(),
                )
            }
        })
        .collect()
}

/// The section of a call's rules.
fn section_of(c: Call) -> Option<Section> {
    match c {
        Call::Bcast => None,
        Call::Ibcast => Some(Section::Ibcast),
        Call::BcastInit => Some(Section::BcastInit),
    }
}

/// One choice's figures at one point: its times without computation by
/// (launch, run), and the overlaps measured with computation.
#[derive(Default)]
struct Figures {
    times: Times,
    overlaps: Vec<f64>,
}

type Points = BTreeMap<(Section, CommKey, u64), BTreeMap<LibraryChoice, Figures>>;

fn points(launches: &[&[Sample]]) -> Points {
    let mut out: Points = BTreeMap::new();
    for (l, samples) in launches.iter().enumerate() {
        for s in samples.iter() {
            let Some(section) = s.call.parse::<Call>().ok().and_then(section_of) else {
                continue;
            };
            let Some(choice) = AlgoSpec::parse(&s.spec)
                .ok()
                .and_then(|spec| LibraryChoice::from_spec(&spec).ok())
            else {
                continue;
            };
            let key = CommKey {
                ranks: s.ranks,
                ppn: s.ppn,
                nodes: s.nodes,
                placement: s.placement(),
            };
            let f = out
                .entry((section, key, s.bytes))
                .or_default()
                .entry(choice)
                .or_default();
            if s.overlap_us > 0.0 {
                f.overlaps.extend(s.overlap);
            } else if s.outlier == 0 {
                f.times.runs.entry((l, s.run)).or_default().push(s.time_us);
            }
        }
    }
    out
}

/// The decision at one point: the choice, its figures, the runner-up.
struct Decided {
    bytes: u64,
    choice: LibraryChoice,
    time_us: f64,
    overlap: Option<f64>,
    runner_up: Option<(LibraryChoice, f64)>,
    evidence: Option<RuleEvidence>,
}

fn label(c: &LibraryChoice) -> String {
    colltune_algorithms::label(
        c.spec().to_string(),
        crate::libraries::ompi::LIBRARY_EXECUTION,
    )
}

/// The fastest choice at one point, kept only where its gain over the
/// library's own decision (where measured) clears zero.
fn decide(bytes: u64, figs: &BTreeMap<LibraryChoice, Figures>) -> Option<Decided> {
    let mut ranked: Vec<(LibraryChoice, f64)> = figs
        .iter()
        .filter(|(_, f)| !f.times.runs.is_empty())
        .map(|(c, f)| (*c, f.times.median()))
        .collect();
    ranked.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let &(fastest, _) = ranked.first()?;
    let reference = figs.keys().find(|c| c.is_default()).copied();
    let mut choice = fastest;
    let mut ev = None;
    if let Some(r) = reference.filter(|r| *r != fastest) {
        let g = evidence::gain(&figs[&r].times, &figs[&fastest].times);
        let clears = g.as_ref().is_some_and(|g| g.clears(0.0));
        if !clears {
            choice = r;
        }
        ev = g.map(|g| RuleEvidence {
            reference: label(&r),
            reference_is_library: true,
            candidate: label(&fastest),
            gain: round4(g.gain),
            low: round4(g.low),
            high: g.high.is_finite().then(|| round4(g.high)),
            launches: g.launches,
            runs: g.runs,
            basis: g.basis.name().into(),
            verdict: if clears {
                "clears"
            } else if g.straddles(0.0) {
                "unresolved"
            } else {
                "no gain"
            }
            .into(),
            model: None,
            fit_error: None,
        });
    }
    let time_us = figs[&choice].times.median();
    let overlaps = &figs[&choice].overlaps;
    Some(Decided {
        bytes,
        choice,
        time_us,
        overlap: (!overlaps.is_empty()).then(|| round4(stats::median(overlaps))),
        runner_up: ranked.into_iter().find(|(c, _)| *c != choice),
        evidence: ev,
    })
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// One communicator's rules from its decisions in size order.
fn rules_of(decided: &[Decided]) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    let mut last_choice = None;
    for (i, d) in decided.iter().enumerate() {
        let max_bytes = decided.get(i + 1).map(|n| geo_mid(d.bytes, n.bytes));
        if last_choice == Some(d.choice) {
            let last = out.last_mut().expect("a rule per choice seen");
            last.max_bytes = max_bytes;
            continue;
        }
        let min_bytes = match i {
            0 => 0,
            _ => geo_mid(decided[i - 1].bytes, d.bytes) + 1,
        };
        let (algorithm, params) = spec_to_fields(&d.choice.spec());
        out.push(Rule {
            min_bytes,
            max_bytes,
            algorithm,
            params,
            execution: crate::libraries::ompi::LIBRARY_EXECUTION.into(),
            time_us: Some((d.time_us * 1000.0).round() / 1000.0),
            at_bytes: Some(d.bytes),
            runner_up: d.runner_up.as_ref().map(|(c, _)| label(c)),
            margin: d
                .runner_up
                .as_ref()
                .map(|(_, t)| round4(t / d.time_us.max(1e-9) - 1.0)),
            evidence: d.evidence.clone(),
            overlap: d.overlap,
        });
        last_choice = Some(d.choice);
    }
    out
}

/// Writes the `ibcast:` and `bcast_init:` sections of `table` from the
/// launches' nonblocking samples (nothing where there are none).
pub fn add_sections(table: &mut Table, launches: &[&[Sample]]) {
    let mut by_comm: BTreeMap<(Section, CommKey), Vec<Decided>> = BTreeMap::new();
    for ((section, key, bytes), figs) in points(launches) {
        if let Some(d) = decide(bytes, &figs) {
            by_comm.entry((section, key)).or_default().push(d);
        }
    }
    for ((section, key), decided) in by_comm {
        // Sizes left open go into the provenance beside the blocking
        // call's, where job scripts look for them (`table unresolved`).
        if let Some(summary) = table.provenance.evidence.as_mut() {
            summary
                .unresolved
                .extend(decided.iter().filter_map(|d| unresolved(section, key, d)));
        }
        let rules = CommRules {
            ranks: key.ranks,
            ppn: key.ppn,
            nodes: key.nodes,
            placement: key.placement,
            rules: rules_of(&decided),
        };
        match section {
            Section::Ibcast => table.ibcast.push(rules),
            Section::BcastInit => table.bcast_init.push(rules),
            Section::Bcast | Section::Swap => {}
        }
    }
}

/// The provenance's entry for a decision whose evidence is unresolved.
fn unresolved(section: Section, key: CommKey, d: &Decided) -> Option<Unresolved> {
    let e = d.evidence.as_ref().filter(|e| e.verdict == "unresolved")?;
    Some(Unresolved {
        collective: section.name().into(),
        ranks: key.ranks,
        ppn: key.ppn,
        nodes: key.nodes,
        bytes: d.bytes,
        candidate: e.candidate.clone(),
        gain: e.gain,
        low: e.low,
        high: e.high,
        over_choice: None,
        unconfirmed: false,
    })
}

/// How `show` prints a nonblocking section's rule: its choice, its time
/// to completion, the overlap achieved and its gain over the library's
/// decision.
pub fn rule_line(r: &Rule) -> String {
    let range = match r.max_bytes {
        Some(m) => format!("{}..={m}", r.min_bytes),
        None => format!("{}..", r.min_bytes),
    };
    let spec = r
        .spec()
        .map(|s| s.to_string())
        .unwrap_or_else(|_| r.algorithm.clone());
    let mut line = format!("{range:>22} B  {spec}");
    if let Some(t) = r.time_us {
        line += &format!("  {t:.2} us");
    }
    if let Some(o) = r.overlap {
        line += &format!("  overlap {:.0}%", 100.0 * o);
    }
    if let Some(e) = &r.evidence {
        line += &format!("  ({})", e.line());
    }
    line
}

/// The `ibcast:` and `bcast_init:` sections as `show` prints them (empty
/// where the table has none).
pub fn sections_text(table: &Table) -> String {
    let mut out = String::new();
    for section in Section::NONBLOCKING {
        for c in table.section(section) {
            out += &format!(
                "{} ({}) on {} ranks ({} per node, {} nodes):\n",
                section.name(),
                section.mpi_call(),
                c.ranks,
                c.ppn,
                c.nodes
            );
            for r in &c.rules {
                out += &format!("  {}\n", rule_line(r));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::sample;

    fn empty() -> Table {
        let p = crate::tables::table::Provenance::made_now(
            "h".into(),
            None,
            "Open MPI v4.1.4".into(),
            "measured".into(),
            Default::default(),
        );
        crate::tables::table::build::build(&[], p)
    }

    /// A nonblocking sample of libnbc algorithm `id` at `bytes`.
    fn nb(call: Call, id: i32, bytes: u64, run: u32, t: f64, overlap_us: f64) -> Sample {
        let spec = LibraryChoice::Libnbc(crate::libraries::ompi::libnbc::Forced { id }).spec();
        let mut s = sample(&spec.to_string(), "library", bytes, run, t);
        s.call = call.name().into();
        s.overlap_us = overlap_us;
        if overlap_us > 0.0 {
            s.overlap = Some(0.25 * f64::from(id));
        }
        s
    }

    fn grid(call: Call) -> Vec<Sample> {
        let mut v = Vec::new();
        for run in 1..=3 {
            for rep in 0..5 {
                let jitter = 0.01 * f64::from(rep);
                // Small: the default (0) fastest; large: binomial (2) by 2x.
                v.push(nb(call, 0, 8, run, 10.0 + jitter, 0.0));
                v.push(nb(call, 2, 8, run, 12.0 + jitter, 0.0));
                v.push(nb(call, 0, 1 << 20, run, 400.0 + jitter, 0.0));
                v.push(nb(call, 2, 1 << 20, run, 200.0 + jitter, 0.0));
                v.push(nb(call, 3, 1 << 20, run, 300.0 + jitter, 0.0));
                v.push(nb(call, 2, 1 << 20, run, 250.0, 200.0));
            }
        }
        v
    }

    #[test]
    fn sections_choose_the_fastest_that_clears_the_default() {
        let mut samples = grid(Call::Ibcast);
        samples.extend(grid(Call::BcastInit));
        samples.push(sample("binomial", "blocking", 8, 1, 5.0));
        let mut t = empty();
        add_sections(&mut t, &[&samples]);
        for section in Section::NONBLOCKING {
            let c = t.section(section);
            assert_eq!(c.len(), 1, "{section}");
            let r = &c[0].rules;
            assert_eq!(r.len(), 2, "{section}: {r:?}");
            assert_eq!(
                r[0].params.get("algorithm").map(|p| format!("{p:?}")),
                Some("Int(0)".into())
            );
            assert_eq!(r[0].max_bytes, Some(geo_mid(8, 1 << 20)));
            assert_eq!(r[1].min_bytes, geo_mid(8, 1 << 20) + 1);
            assert_eq!(r[1].max_bytes, None);
            assert_eq!(r[1].time_us, Some(200.02));
            // binomial's overlap samples say 0.5.
            assert_eq!(r[1].overlap, Some(0.5));
            let e = r[1].evidence.as_ref().expect("measured beside the default");
            assert_eq!(e.verdict, "clears");
            assert!(e.gain > 0.9 && e.gain < 1.1, "{e:?}");
            assert!(r[1].runner_up.as_deref().unwrap().contains("algorithm=3"));
        }
        // The blocking sample is none of theirs.
        assert!(t.bcast.is_empty());
        let text = sections_text(&t);
        assert!(
            text.contains("ibcast (MPI_Ibcast)") && text.contains("overlap 50%"),
            "{text}"
        );
    }

    #[test]
    fn a_gain_within_noise_keeps_the_default() {
        let mut v = Vec::new();
        for run in 1..=3 {
            for rep in 0..4 {
                // 2 is faster at one run and slower at the others: no clear gain.
                let j = 0.01 * f64::from(rep);
                v.push(nb(Call::Ibcast, 0, 64, run, 10.0 + j, 0.0));
                let t = [9.0, 11.0, 9.5][run as usize - 1];
                v.push(nb(Call::Ibcast, 2, 64, run, t + j, 0.0));
            }
        }
        let mut t = empty();
        add_sections(&mut t, &[&v]);
        let r = &t.ibcast[0].rules;
        assert_eq!(r.len(), 1);
        assert!(LibraryChoice::from_spec(&r[0].spec().unwrap())
            .unwrap()
            .is_default());
        let e = r[0].evidence.as_ref().unwrap();
        assert_ne!(e.verdict, "clears");
        // An unresolved size is listed where job scripts look for the
        // sizes to measure again (`table unresolved`), as a blocking one.
        let open = &t.provenance.evidence.as_ref().unwrap().unresolved;
        let listed = open
            .iter()
            .any(|u| u.collective == "ibcast" && u.bytes == 64);
        assert_eq!(listed, e.verdict == "unresolved", "{e:?} {open:?}");
    }

    #[test]
    fn blocking_only_drops_the_nonblocking_samples() {
        let plain = vec![sample("binomial", "blocking", 8, 1, 5.0)];
        let mixed = vec![plain[0].clone(), nb(Call::Ibcast, 0, 8, 1, 1.0, 0.0)];
        let got = blocking_only(&[&plain, &mixed]);
        assert!(matches!(got[0], Cow::Borrowed(_)));
        assert_eq!(got[1].len(), 1);
        assert_eq!(got[1][0].call, "bcast");
    }
}
