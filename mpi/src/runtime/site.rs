//! The site's and the user's own Open MPI coll/tuned settings, read before
//! `MPI_Init` (MPI-free), so that the drop-in turns nothing on that would
//! change what they do.
//!
//! With `coll_tuned_use_dynamic_rules` off (Open MPI's default), coll/tuned
//! ignores its forced algorithms (`coll_tuned_<collective>_algorithm`) and
//! its rules file (`coll_tuned_dynamic_rules_filename`): they lie dormant.
//! Turning dynamic rules on for a table's rule would wake them, and the
//! application's other collectives (or its broadcasts the library runs)
//! would change algorithm. So before turning it on, colltune looks where
//! Open MPI looks: the environment (`OMPI_MCA_<name>`, which `mpirun --mca`
//! also sets), then the parameter files in Open MPI's order
//! (`mca_base_param_files`, by default `$HOME/.openmpi/mca-params.conf`,
//! then the installation's `openmpi-mca-params.conf`); the first that names
//! a variable gives its value.

use std::path::{Path, PathBuf};

/// `coll_tuned_use_dynamic_rules`.
pub const DYNAMIC: &str = "coll_tuned_use_dynamic_rules";
/// `coll_tuned_dynamic_rules_filename`.
pub const RULES_FILE: &str = "coll_tuned_dynamic_rules_filename";
/// `coll_tuned_bcast_algorithm`.
pub const BCAST_ALGORITHM: &str = "coll_tuned_bcast_algorithm";
/// Settings that make Open MPI read further sources this reader does not:
/// aggregate parameter files (`mpirun -am`, `mca_base_param_file_prefix`)
/// and environment-variable files (`mca_base_envar_file_prefix`). What they
/// set for coll/tuned is unknown here.
pub const UNREAD_SOURCES: [&str; 2] = ["mca_base_param_file_prefix", "mca_base_envar_file_prefix"];

/// One setting and where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    pub name: String,
    pub value: String,
    /// `the environment (OMPI_MCA_...)` or the file's path.
    pub source: String,
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={} ({})", self.name, self.value, self.source)
    }
}

/// What the site and the user set for coll/tuned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Site {
    /// `coll_tuned_use_dynamic_rules`, where set.
    pub dynamic: Option<Setting>,
    /// `coll_tuned_dynamic_rules_filename`, where set (not empty).
    pub rules_file: Option<Setting>,
    /// Every `coll_tuned_<collective>_algorithm` set to something else than
    /// 0 (Open MPI's own decision).
    pub algorithms: Vec<Setting>,
    /// Further sources Open MPI reads and this reader does not
    /// ([`UNREAD_SOURCES`]), where set.
    pub unread: Vec<Setting>,
}

/// Whether an Open MPI boolean's text is true.
fn truthy(v: &str) -> bool {
    let v = v.trim().to_ascii_lowercase();
    !(v.is_empty() || v == "0" || v == "false" || v == "no" || v == "disabled" || v == "f")
}

fn is_algorithm(name: &str) -> bool {
    name.strip_prefix("coll_tuned_")
        .and_then(|r| r.strip_suffix("_algorithm"))
        .is_some_and(|c| !c.is_empty() && c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '_'))
}

impl Site {
    /// Reads this process's settings: its environment and the parameter
    /// files Open MPI would read.
    pub fn of_process() -> Site {
        let env: Vec<(String, String)> = std::env::vars().collect();
        let files = param_files(
            std::env::var("OMPI_MCA_mca_base_param_files").ok(),
            std::env::var_os("HOME").map(PathBuf::from),
            std::env::var_os("OPAL_PREFIX").map(PathBuf::from),
        );
        let texts: Vec<(String, String)> = files
            .iter()
            .filter_map(|f| Some((f.display().to_string(), std::fs::read_to_string(f).ok()?)))
            .collect();
        Site::from_sources(&env, &texts)
    }

    /// From environment variables and parameter files' (path, text), in
    /// Open MPI's order of precedence (the environment first, then the
    /// files as listed).
    pub fn from_sources(env: &[(String, String)], files: &[(String, String)]) -> Site {
        let mut found: Vec<Setting> = Vec::new();
        let mut add = |name: &str, value: &str, source: &str| {
            if !found.iter().any(|s| s.name == name) {
                found.push(Setting {
                    name: name.to_string(),
                    value: value.trim().to_string(),
                    source: source.to_string(),
                });
            }
        };
        for (k, v) in env {
            if let Some(name) = k.strip_prefix("OMPI_MCA_") {
                add(name, v, &format!("the environment, {k}"));
            }
        }
        for (path, text) in files {
            for line in text.lines() {
                let line = line.split('#').next().unwrap_or("").trim();
                if let Some((k, v)) = line.split_once('=') {
                    add(k.trim(), v.trim().trim_matches('"'), path);
                }
            }
        }
        let mut site = Site::default();
        for s in found {
            if s.name == DYNAMIC {
                site.dynamic = Some(s);
            } else if s.name == RULES_FILE {
                if !s.value.is_empty() {
                    site.rules_file = Some(s);
                }
            } else if is_algorithm(&s.name) && s.value != "0" && !s.value.is_empty() {
                site.algorithms.push(s);
            } else if UNREAD_SOURCES.contains(&s.name.as_str()) && !s.value.is_empty() {
                site.unread.push(s);
            }
        }
        site.algorithms.sort_by(|a, b| a.name.cmp(&b.name));
        site
    }

    /// Whether dynamic rules are on by the site's or the user's own choice
    /// (Some(true)), off by it (Some(false)), or left to Open MPI's default
    /// (None: off).
    pub fn dynamic_rules(&self) -> Option<bool> {
        self.dynamic.as_ref().map(|s| truthy(&s.value))
    }

    /// What turning dynamic rules on would wake (settings coll/tuned now
    /// ignores): its forced algorithms and its rules file; empty where
    /// dynamic rules are on already (nothing is dormant then).
    pub fn dormant(&self) -> Vec<&Setting> {
        if self.dynamic_rules() == Some(true) {
            return Vec::new();
        }
        self.algorithms.iter().chain(&self.rules_file).collect()
    }
}

/// The parameter files Open MPI reads, in its order: `mca_base_param_files`
/// where given (colon-separated), else `$HOME/.openmpi/mca-params.conf`,
/// then the installation's (`$OPAL_PREFIX/etc`, Debian's `/etc/openmpi`).
pub fn param_files(
    given: Option<String>,
    home: Option<PathBuf>,
    prefix: Option<PathBuf>,
) -> Vec<PathBuf> {
    if let Some(g) = given.filter(|g| !g.trim().is_empty()) {
        return g
            .split(':')
            .filter(|p| !p.is_empty())
            .map(|p| match (p.strip_prefix("~/"), &home) {
                (Some(rest), Some(h)) => h.join(rest),
                _ => PathBuf::from(p),
            })
            .collect();
    }
    let mut v = Vec::new();
    if let Some(h) = home {
        v.push(h.join(".openmpi/mca-params.conf"));
    }
    if let Some(p) = prefix {
        v.push(p.join("etc/openmpi-mca-params.conf"));
    }
    for sys in [
        "/etc/openmpi/openmpi-mca-params.conf",
        "/usr/etc/openmpi-mca-params.conf",
    ] {
        if !v.iter().any(|p: &PathBuf| p == Path::new(sys)) {
            v.push(PathBuf::from(sys));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn environment_wins_over_files_and_files_in_order() {
        let files = vec![
            (
                "/home/u/.openmpi/mca-params.conf".to_string(),
                "# mine\ncoll_tuned_allreduce_algorithm = 3\ncoll_tuned_use_dynamic_rules=0\n".to_string(),
            ),
            (
                "/etc/openmpi/openmpi-mca-params.conf".to_string(),
                "coll_tuned_allreduce_algorithm = 1\ncoll_tuned_reduce_algorithm = 2 # site\ncoll_tuned_dynamic_rules_filename = /etc/rules.conf\n".to_string(),
            ),
        ];
        let s = Site::from_sources(
            &env(&[
                ("OMPI_MCA_coll_tuned_use_dynamic_rules", "1"),
                ("HOME", "/home/u"),
            ]),
            &files,
        );
        assert_eq!(s.dynamic_rules(), Some(true));
        assert!(s.dynamic.as_ref().unwrap().source.contains("environment"));
        let algs: Vec<String> = s.algorithms.iter().map(|a| a.to_string()).collect();
        assert_eq!(
            algs,
            [
                "coll_tuned_allreduce_algorithm=3 (/home/u/.openmpi/mca-params.conf)",
                "coll_tuned_reduce_algorithm=2 (/etc/openmpi/openmpi-mca-params.conf)"
            ]
        );
        assert_eq!(s.rules_file.as_ref().unwrap().value, "/etc/rules.conf");
        // Dynamic rules on by the user's choice: nothing is dormant.
        assert!(s.dormant().is_empty());
    }

    /// `mpirun -am FILE` (and an environment-variable file) are sources
    /// this reader does not read: they are listed, from the environment or
    /// a parameter file, so that the drop-in does not guess.
    #[test]
    fn sources_not_read_here_are_listed() {
        let files = vec![(
            "/etc/openmpi/openmpi-mca-params.conf".to_string(),
            "mca_base_envar_file_prefix = /etc/site.env\n".to_string(),
        )];
        let s = Site::from_sources(
            &env(&[("OMPI_MCA_mca_base_param_file_prefix", "tuned.conf")]),
            &files,
        );
        let got: Vec<String> = s.unread.iter().map(|u| u.to_string()).collect();
        assert_eq!(
            got,
            [
                "mca_base_param_file_prefix=tuned.conf (the environment, OMPI_MCA_mca_base_param_file_prefix)",
                "mca_base_envar_file_prefix=/etc/site.env (/etc/openmpi/openmpi-mca-params.conf)"
            ]
        );
        assert!(Site::from_sources(&env(&[]), &[]).unread.is_empty());
    }

    #[test]
    fn dormant_settings_are_those_dynamic_rules_would_wake() {
        let s = Site::from_sources(
            &env(&[
                ("OMPI_MCA_coll_tuned_allreduce_algorithm", "1"),
                ("OMPI_MCA_coll_tuned_bcast_algorithm", "0"),
                (
                    "OMPI_MCA_coll_tuned_allreduce_algorithm_segmentsize",
                    "4096",
                ),
                ("OMPI_MCA_btl", "self,vader"),
            ]),
            &[],
        );
        assert_eq!(s.dynamic_rules(), None);
        let d: Vec<&str> = s.dormant().iter().map(|x| x.name.as_str()).collect();
        assert_eq!(d, ["coll_tuned_allreduce_algorithm"]);
        let off = Site::from_sources(
            &env(&[("OMPI_MCA_coll_tuned_use_dynamic_rules", "false")]),
            &[],
        );
        assert_eq!(off.dynamic_rules(), Some(false));
        assert!(Site::from_sources(&[], &[]).dormant().is_empty());
    }

    #[test]
    fn parameter_files_follow_open_mpi() {
        let home = Some(PathBuf::from("/home/u"));
        assert_eq!(
            param_files(Some("~/a.conf:/b.conf".into()), home.clone(), None),
            [PathBuf::from("/home/u/a.conf"), PathBuf::from("/b.conf")]
        );
        let d = param_files(None, home, Some(PathBuf::from("/opt/ompi")));
        assert_eq!(d[0], PathBuf::from("/home/u/.openmpi/mca-params.conf"));
        assert_eq!(d[1], PathBuf::from("/opt/ompi/etc/openmpi-mca-params.conf"));
        assert!(d.contains(&PathBuf::from("/etc/openmpi/openmpi-mca-params.conf")));
    }
}
