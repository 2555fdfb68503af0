//! `colltune --help` with the commands grouped by task (clap lists them
//! in one block): the groups are rendered into the top-level help template
//! from the commands themselves, so a command's summary is written once
//! (its doc comment) and a command no group names is still listed, under
//! "Other commands".

use clap::{CommandFactory, FromArgMatches};

use super::Cli;

/// `colltune --version`: the version and the MPI library it was built for
/// and (when it can be asked without `mpirun`) runs on.
pub fn version() -> &'static str {
    static V: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        #[cfg(feature = "mpi")]
        {
            use colltune_mpi::abi;
            format!(
                "{}\nMPI: built for {}\nMPI: runs on {}",
                env!("CARGO_PKG_VERSION"),
                abi::built_for(),
                abi::runtime().name
            )
        }
        #[cfg(not(feature = "mpi"))]
        {
            format!(
                "{}\nMPI: none (built without the `mpi` feature)",
                env!("CARGO_PKG_VERSION")
            )
        }
    })
}

/// The task groups of `colltune --help`, in order, each with its commands
/// in order. Names a build lacks (no `mpi` feature) are left out.
pub const GROUPS: &[(&str, &[&str])] = &[
    (
        "Tune a cluster",
        &["verify", "bench", "tune", "table", "evaluate"],
    ),
    (
        "Inspect a table or a measurement",
        &[
            "show", "explain", "diff", "validate", "plot", "report", "fit",
        ],
    ),
    ("Run an application with a table", &["export", "deploy"]),
    (
        "Model a cluster: simulate, import published results, predict",
        &[
            "simulate",
            "import",
            "predict",
            "plan",
            "calibrate",
            "noise",
        ],
    ),
    ("Set up and reference", &["list", "generate"]),
];

/// The heading of commands no group names.
const OTHER: &str = "Other commands";

/// The `colltune` command with the grouped help: used to parse the command
/// line and to generate man pages and completions.
pub fn command() -> clap::Command {
    let cmd = Cli::command();
    let template = template(&cmd);
    cmd.help_template(template)
}

/// Parses the process's arguments with [`command`].
pub fn parse() -> Result<Cli, clap::Error> {
    let mut m = command().try_get_matches()?;
    Cli::from_arg_matches_mut(&mut m).map_err(|e| e.format(&mut command()))
}

/// The visible commands of `cmd` grouped as [`GROUPS`] says, then the
/// ones no group names: (heading, [(name, summary)]), empty groups left out.
pub fn grouped(cmd: &clap::Command) -> Vec<(&'static str, Vec<(String, String)>)> {
    let visible: Vec<&clap::Command> = cmd.get_subcommands().filter(|c| !c.is_hide_set()).collect();
    let entry = |c: &clap::Command| {
        let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
        (c.get_name().to_string(), about)
    };
    let mut out = Vec::new();
    for (heading, names) in GROUPS {
        let rows: Vec<_> = names
            .iter()
            .filter_map(|n| visible.iter().find(|c| c.get_name() == *n))
            .map(|c| entry(c))
            .collect();
        if !rows.is_empty() {
            out.push((*heading, rows));
        }
    }
    let named = |n: &str| GROUPS.iter().any(|(_, names)| names.contains(&n));
    let rest: Vec<_> = visible
        .iter()
        .filter(|c| !named(c.get_name()))
        .map(|c| entry(c))
        .collect();
    if !rest.is_empty() {
        out.push((OTHER, rest));
    }
    out
}

/// The top-level help template: clap's own parts around the grouped
/// command list, styled as clap styles its headings.
fn template(cmd: &clap::Command) -> String {
    let styles = cmd.get_styles();
    let (h, lit) = (styles.get_header(), styles.get_literal());
    let groups = grouped(cmd);
    let width = groups
        .iter()
        .flat_map(|(_, rows)| rows.iter().map(|(n, _)| n.len()))
        .max()
        .unwrap_or(0);
    let mut list = String::new();
    for (heading, rows) in &groups {
        list.push_str(&format!("{h}{heading}:{h:#}\n"));
        for (name, about) in rows {
            let pad = " ".repeat(width - name.len());
            list.push_str(&format!("  {lit}{name}{lit:#}{pad}  {about}\n"));
        }
        list.push('\n');
    }
    format!(
        "{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{list}{h}Options:{h:#}\n{{options}}{{after-help}}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command is listed once, under a group; every name a group
    /// gives that this build has is a real command.
    #[test]
    fn every_command_in_one_group() {
        let cmd = Cli::command();
        let listed: Vec<String> = grouped(&cmd)
            .into_iter()
            .flat_map(|(_, rows)| rows.into_iter().map(|(n, _)| n))
            .collect();
        let visible: Vec<String> = cmd
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .map(|c| c.get_name().to_string())
            .collect();
        let mut a = listed.clone();
        a.sort();
        let mut b = visible.clone();
        b.sort();
        assert_eq!(a, b, "each visible command exactly once");
        for need in [
            "tune", "show", "explain", "diff", "export", "simulate", "list", "generate",
        ] {
            assert!(listed.iter().any(|n| n == need), "{need} listed");
        }
    }

    /// The rendered help names the groups and the commands under them, in
    /// order, and still has clap's usage and options.
    #[test]
    fn help_is_grouped() {
        let help = command().render_help().to_string();
        let tune = help.find("Tune a cluster").expect("tuning group");
        let inspect = help.find("Inspect a table").expect("inspection group");
        assert!(tune < inspect, "{help}");
        let show = help.find("\n  show ").expect("show listed");
        assert!(show > inspect, "show under inspection:\n{help}");
        assert!(help.contains("Usage:") && help.contains("--help"), "{help}");
        assert!(!help.contains("emu-relay"), "hidden commands stay hidden");
    }
}
