//! `colltune list`: the registry, as a user reads it.

use colltune_algorithms::{algorithms, Collective, ParamKind, Restriction};

use super::Code;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only this collective (bcast or swap).
    #[arg(long)]
    collective: Option<Collective>,
}

pub fn run(args: Args) -> anyhow::Result<Code> {
    for c in Collective::ALL {
        if args.collective.is_some_and(|x| x != c) {
            continue;
        }
        outln!("{c}:");
        for a in algorithms(c) {
            outln!("  {:<24} {}", a.name, a.summary);
            for p in a.params {
                let kind = match p.kind {
                    ParamKind::Segment { min, max } => format!("bytes: 0 or {min}..={max}"),
                    ParamKind::Count { min, max } => format!("{min}..={max}"),
                    ParamKind::Choice(w) => w.join(" | "),
                    ParamKind::Algorithm(c) => format!("a {c} algorithm"),
                };
                let default = match p.default {
                    colltune_algorithms::registry::DefaultValue::Int(i) => i.to_string(),
                    colltune_algorithms::registry::DefaultValue::Word(w) => w.to_string(),
                    colltune_algorithms::registry::DefaultValue::Algo(a) => a.to_string(),
                };
                outln!(
                    "      {:<24} {} ({kind}; default {default})",
                    format!("{}=", p.name),
                    p.help
                );
            }
            for r in a.restrictions {
                let text = match r {
                    Restriction::NotNested => "cannot be a phase of another algorithm",
                    Restriction::OneSided => "uses an MPI one-sided window",
                    Restriction::NodeAware => {
                        "node-aware: needs ranks on several nodes to differ from its intra phase"
                    }
                    Restriction::SharedMemory => {
                        "shared memory: only for ranks of one node (or as hierarchical's intra)"
                    }
                };
                outln!("      note: {text}");
            }
        }
    }
    outln!(
        "\nWrite an algorithm as `name`, `name:param=value,...` or, nested, \
              `hierarchical:inter=knomial(radix=4),intra=linear`. Sizes accept K/M/G (binary)."
    );
    Ok(Code::Ok)
}
