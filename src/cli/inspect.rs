//! Reading tables: `show`, `explain` (`diff`, `validate`, `export` and
//! `report` have files of their own).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use colltune_algorithms::Collective;

use super::{Code, UsageError};
use colltune_core::measure::fit::human_bytes;
use colltune_core::tables::decide::{parse_forced, RuntimeSettings, Selector, Source};
use colltune_core::tables::table::{self, CommKey, Section, Table};

/// Reads a table, its problems a usage error (every command that reads
/// tables reports them alike, file:line).
pub(super) fn load(path: &Path) -> Result<Table, UsageError> {
    table::load(path).map_err(|e| UsageError(e.to_string()))
}

#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    table: PathBuf,
}

pub fn show(a: ShowArgs) -> anyhow::Result<Code> {
    let t = load(&a.table)?;
    out!("{}", table::summary(&t));
    Ok(Code::Ok)
}

#[derive(clap::Args, Debug)]
pub struct ExplainArgs {
    table: PathBuf,
    /// Communicator size.
    #[arg(long)]
    ranks: u32,
    /// Ranks per node (default: all on one node).
    #[arg(long)]
    ppn: Option<u32>,
    /// Nodes (default: ranks / ppn, rounded up).
    #[arg(long)]
    nodes: Option<u32>,
    /// Message bytes (K/M/G accepted).
    #[arg(long, value_parser = |s: &str| colltune_algorithms::parse_size(s))]
    bytes: u64,
    #[arg(long, default_value = "bcast")]
    collective: Collective,
    /// How the communicator's ranks sit: `block` (consecutive ranks share a
    /// node), `cyclic` (round-robin over nodes), with the sockets' order
    /// inside nodes (`block/cyclic`), or the mpirun mapping (`core`,
    /// `socket`, `node`); `irregular` for neither. The selector finds it
    /// at a communicator's first call.
    #[arg(long, default_value = "block")]
    placement: String,
    /// Explain a nonblocking or persistent broadcast instead: `ibcast`
    /// (MPI_Ibcast) or `bcast_init` (MPI_Bcast_init), the table's sections
    /// of those names.
    #[arg(long, value_parser = |s: &str| s.parse::<Section>().and_then(|x| if Section::NONBLOCKING.contains(&x) { Ok(x) } else { Err(format!("`{s}`: --call takes ibcast or bcast_init")) }))]
    call: Option<Section>,
}

/// The rule that applies to a call and why, and what forcing would change.
pub fn explain(a: ExplainArgs) -> anyhow::Result<Code> {
    let t = load(&a.table)?;
    let ppn = a.ppn.unwrap_or(a.ranks);
    if a.ranks == 0 || ppn == 0 {
        return Err(UsageError("--ranks and --ppn must be at least 1".into()).into());
    }
    let placement = match a.placement.trim() {
        "irregular" => None,
        p => Some(colltune_core::model::placed::Placement::parse(p).map_err(UsageError)?),
    };
    let key = CommKey {
        placement,
        ..CommKey::shape(a.ranks, ppn, a.nodes.unwrap_or(a.ranks.div_ceil(ppn)))
    };
    let env = RuntimeSettings::from_env().map_err(|e| UsageError(e.to_string()))?;
    let sel = Arc::new(Selector {
        settings: RuntimeSettings {
            table: Some(a.table.clone()),
            ..env.clone()
        },
        table: Some(Arc::new(t.clone())),
        fallback: None,
    });
    if let Some(s) = a.call {
        return explain_call(&sel, s, key, a.bytes);
    }
    let c = a.collective;
    let decisions = sel.decisions(c, key);
    let (choice, _) = decisions.choose(a.bytes);
    outln!("{c} of {} bytes on {key}:", a.bytes);
    let placed = colltune_core::model::placed::Detected::of(placement);
    let others: Vec<String> = t
        .rules(c)
        .iter()
        .filter(|r| r.key().unplaced() == key.unplaced())
        .map(|r| r.placement.map_or("any".into(), |p| p.to_string()))
        .collect();
    if others.len() > 1 {
        outln!(
            "  the table has entries of this shape for placements {}; the best fit for {placed} decides",
            others.join(", ")
        );
    }
    match t.placed_rules(c, key, &placed) {
        None => {
            let near: Vec<String> = t
                .rules(c)
                .iter()
                .filter(|r| r.ranks == key.ranks)
                .map(|r| r.key().to_string())
                .collect();
            outln!(
                "  the table has no {c} rules for this shape and placement ({} of {} ranks: {})",
                near.len(),
                key.ranks,
                if near.is_empty() {
                    "none".into()
                } else {
                    near.join("; ")
                }
            );
        }
        Some(cr) => {
            if let Some((i, r)) = cr.rules.iter().enumerate().find(|(_, r)| r.covers(a.bytes)) {
                outln!(
                    "  table rule {} covers {} bytes: {}",
                    i + 1,
                    r.range(),
                    r.label()
                );
                let model = r
                    .evidence
                    .as_ref()
                    .filter(|e| e.predicted())
                    .map(|e| e.model.clone().unwrap_or_else(|| "a model".into()));
                match (r.time_us, r.at_bytes, model) {
                    (Some(tm), Some(at), Some(m)) => outln!(
                        "  predicted: {tm:.2} us at {} by {m}, not measured",
                        human_bytes(at)
                    ),
                    (Some(tm), Some(at), None) => outln!(
                        "  measured: {tm:.2} us at {} ({} calls)",
                        human_bytes(at),
                        t.provenance.pattern
                    ),
                    _ => {}
                }
                if let Some(e) = &r.evidence {
                    outln!("  {}", table::rule_evidence_line(e));
                }
                match (&r.runner_up, r.margin) {
                    (Some(u), Some(m)) if m >= 0.0 => {
                        outln!("  runner-up there: {u}, {:.1}% slower", 100.0 * m)
                    }
                    (Some(u), Some(m)) => outln!(
                        "  runner-up there: {u}, {:.1}% faster (within noise: merged into this rule)",
                        -100.0 * m
                    ),
                    _ => {}
                }
            }
        }
    }
    outln!("  decision: {choice}");
    match choice.source {
        Source::Forced => outln!(
            "  (COLLTUNE_{} is set; unset it to use the table)",
            c.name().to_uppercase()
        ),
        _ => {
            let var = format!("COLLTUNE_{}", c.name().to_uppercase());
            let example = match c {
                Collective::Bcast => "pipeline:segment=65536@nonblocking",
                Collective::Swap => "sendrecv",
            };
            let forced = parse_forced(
                c,
                if c == Collective::Bcast {
                    "COLLTUNE_BCAST"
                } else {
                    "COLLTUNE_SWAP"
                },
                example,
            )
            .map(|(s, e)| colltune_algorithms::label(s, e))
            .unwrap_or_default();
            outln!("  forcing it, e.g. {var}={example}, would run {forced} for every {c} instead, on every shape and size");
        }
    }
    Ok(Code::Ok)
}

/// `explain --call ibcast|bcast_init`: the rule of the table's section for
/// the call and what the drop-in does with it.
fn explain_call(sel: &Selector, s: Section, key: CommKey, bytes: u64) -> anyhow::Result<Code> {
    outln!("{} ({}) of {bytes} bytes on {key}:", s.name(), s.mpi_call());
    let d = sel.call_decisions(s, key);
    let (choice, _) = d.choose(bytes);
    outln!("  runs: {choice}");
    if choice.library.is_none_or(|f| f.is_default()) {
        outln!(
            "  the library's own decision: no {} rule for this shape and size",
            s.name()
        );
    } else {
        outln!(
            "  the drop-in writes the library's variable through MPI_T around {}, under a lock (the call never waits for another rank), and writes the old value back",
            s.mpi_call()
        );
    }
    if s == Section::BcastInit {
        outln!("  decided once, when the request is made: MPI_Start and MPI_Wait are the library's, untouched");
    }
    outln!(
        "  colltune's own schedules are not offered for {}: its requests complete in the library's MPI_Wait and MPI_Test, which progress only the library's own schedules",
        s.mpi_call()
    );
    Ok(Code::Ok)
}
