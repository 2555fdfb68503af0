//! `colltune generate man|completions`: man pages and shell completions
//! from the command-line definitions themselves (clap_mangen,
//! clap_complete), so they cannot disagree with `--help`.
//! `jobs/install.sh` installs both.

use std::path::PathBuf;

use anyhow::Context;
use clap_complete::Shell;

use super::{Code, UsageError};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand, Debug)]
enum What {
    /// Man pages: colltune.1 and colltune-<command>.1 for every command.
    Man {
        /// Directory to write the pages into (made if missing).
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
    },
    /// A completion script for SHELL, to standard output (bash: install it
    /// as share/bash-completion/completions/colltune).
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
}

/// The command as the generated files describe it: the version without the
/// MPI library it runs on (a fact of one machine, not of the program).
fn described() -> clap::Command {
    super::help::command().version(env!("CARGO_PKG_VERSION"))
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    match a.what {
        What::Man { dir } => {
            if dir.exists() && !dir.is_dir() {
                return Err(UsageError(format!(
                    "--dir {}: not a directory; give a directory for the man pages",
                    dir.display()
                ))
                .into());
            }
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("making the man page directory {}", dir.display()))?;
            clap_mangen::generate_to(described(), &dir)
                .with_context(|| format!("writing man pages into {}", dir.display()))?;
            eprintln!(
                "colltune: man pages in {} (read one with: man -l {}/colltune.1)",
                dir.display(),
                dir.display()
            );
        }
        What::Completions { shell } => {
            let mut cmd = described();
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut cmd, "colltune", &mut buf);
            out!("{}", String::from_utf8_lossy(&buf));
        }
    }
    Ok(Code::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One page per visible command (and the top page), each naming its
    /// command and its options in roff.
    #[test]
    fn man_pages_for_every_command() {
        let dir = std::env::temp_dir().join(format!("colltune-man-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        run(Args {
            what: What::Man { dir: dir.clone() },
        })
        .unwrap();
        let top = std::fs::read_to_string(dir.join("colltune.1")).unwrap();
        assert!(top.contains(".TH colltune 1"), "{top}");
        assert!(
            top.contains("colltune\\-tune(1)"),
            "the top page lists the commands: {top}"
        );
        for c in described().get_subcommands().filter(|c| !c.is_hide_set()) {
            let page = dir.join(format!("colltune-{}.1", c.get_name()));
            let text = std::fs::read_to_string(&page)
                .unwrap_or_else(|e| panic!("{}: {e}", page.display()));
            let title = format!(".TH colltune-{} 1", c.get_name());
            assert!(text.contains(&title), "{}: {text}", page.display());
        }
        let show = std::fs::read_to_string(dir.join("colltune-explain.1")).unwrap();
        assert!(show.contains("\\-\\-bytes"), "explain's options: {show}");
        assert!(
            !dir.join("colltune-emu-relay.1").exists(),
            "hidden commands have no page"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Each shell's script names the commands (bash: its function).
    #[test]
    fn completions_name_the_commands() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut described(), "colltune", &mut buf);
            let s = String::from_utf8(buf).unwrap();
            for name in ["tune", "show", "explain", "generate"] {
                assert!(s.contains(name), "{shell}: {name} missing");
            }
        }
    }
}
