//! A variant: what colltune runs for one call, the triple (collective,
//! resolved algorithm specification, execution). Tuning candidates, the
//! benchmark's subjects, table rules and the selector's choices are all
//! variants; [`label`] is the one way they are written for people and in
//! reports: `pipeline:segment=65536 [nonblocking]`.

use std::fmt;
use std::str::FromStr;

use crate::error::SpecError;
use crate::registry::resolve;
use crate::spec::{AlgoSpec, Collective, Execution, ParamValue};

/// One collective's algorithm, with its parameters resolved to canonical
/// form (defaults filled in), under one execution.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Variant {
    pub collective: Collective,
    /// Resolved (canonical) specification.
    pub spec: AlgoSpec,
    pub exec: Execution,
}

/// How a variant is written: `spec [execution]`. The one place that says so:
/// labels of measured series, of the library's own calls (`mpi [library]`)
/// and of table rules all come from here.
pub fn label(spec: impl fmt::Display, exec: impl fmt::Display) -> String {
    format!("{spec} [{exec}]")
}

impl Variant {
    /// Resolves `spec` for `collective` (defaults filled in, every
    /// parameter checked against the registry).
    pub fn new(
        collective: Collective,
        spec: &AlgoSpec,
        exec: Execution,
    ) -> Result<Variant, SpecError> {
        Ok(Variant {
            collective,
            spec: resolve(collective, spec)?,
            exec,
        })
    }

    /// Parses `text` as a specification and resolves it.
    pub fn parse(
        collective: Collective,
        text: &str,
        exec: Execution,
    ) -> Result<Variant, SpecError> {
        Variant::new(collective, &AlgoSpec::parse(text)?, exec)
    }

    /// The segment size, if the algorithm is segmented.
    pub fn segment(&self) -> Option<u64> {
        self.spec.int("segment").ok()
    }

    /// The same variant with another segment size.
    pub fn with_segment(&self, segment: u64) -> Variant {
        let mut v = self.clone();
        v.spec
            .params
            .insert("segment".into(), ParamValue::Int(segment));
        v
    }

    /// `spec [execution]`, as [`label`] writes it.
    pub fn label(&self) -> String {
        label(&self.spec, self.exec)
    }
}

/// `spec [execution]`.
impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.spec, self.exec)
    }
}

/// Splits `spec [execution]` (the execution defaults to blocking when the
/// brackets are absent).
pub fn split_label(text: &str) -> Result<(&str, Execution), String> {
    let text = text.trim();
    match text.strip_suffix(']').and_then(|t| t.rsplit_once(" [")) {
        Some((spec, exec)) => Ok((spec.trim(), exec.parse()?)),
        None if text.contains('[') => Err(format!(
            "`{text}`: write `spec [execution]`, e.g. `pipeline:segment=65536 [nonblocking]`"
        )),
        None => Ok((text, Execution::Blocking)),
    }
}

/// A variant written `collective spec [execution]`: `bcast linear [blocking]`.
impl FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> Result<Variant, String> {
        let (collective, rest) = s.trim().split_once(' ').ok_or_else(|| {
            format!("`{s}`: write `collective spec [execution]`, e.g. `bcast linear [blocking]`")
        })?;
        let collective: Collective = collective.parse().map_err(|e| format!("`{s}`: {e}"))?;
        let (spec, exec) = split_label(rest)?;
        Variant::parse(collective, spec, exec).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip() {
        let v = Variant::parse(Collective::Bcast, "pipeline", Execution::Nonblocking).unwrap();
        assert_eq!(v.to_string(), v.label());
        assert!(v.label().ends_with(" [nonblocking]"), "{v}");
        let back: Variant = format!("bcast {v}").parse().unwrap();
        assert_eq!(back, v);
        assert_eq!(label("mpi", "library"), "mpi [library]");
    }

    #[test]
    fn defaults_are_resolved_and_segments_replaced() {
        let v = Variant::parse(Collective::Bcast, "binomial", Execution::Blocking).unwrap();
        assert_eq!(v.segment(), Some(0), "the default segment is filled in");
        assert_eq!(v.with_segment(8192).segment(), Some(8192));
        let plain: Variant = "bcast binomial".parse().unwrap();
        assert_eq!(plain, v);
    }

    #[test]
    fn bad_text_says_what_to_write() {
        assert!("bcast nosuch [blocking]"
            .parse::<Variant>()
            .unwrap_err()
            .contains("nosuch"));
        assert!("linear".parse::<Variant>().is_err());
        assert!("bcast linear [sideways]"
            .parse::<Variant>()
            .unwrap_err()
            .contains("blocking or nonblocking"));
        assert!("bcast linear [blocking".parse::<Variant>().is_err());
    }
}
