//! Algorithm specifications: a registry name plus parameters, written
//! `pipeline:segment=64KiB` or, nested, `hierarchical:inter=knomial(radix=4),intra=linear`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::error::SpecError;

/// The collectives colltune implements.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Collective {
    /// `MPI_Bcast`.
    Bcast,
    /// Pairwise exchange of equal-size buffers between partners.
    Swap,
}

impl Collective {
    pub const ALL: [Collective; 2] = [Collective::Bcast, Collective::Swap];
    pub fn name(self) -> &'static str {
        match self {
            Collective::Bcast => "bcast",
            Collective::Swap => "swap",
        }
    }
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Collective {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bcast" | "broadcast" => Ok(Collective::Bcast),
            "swap" | "exchange" => Ok(Collective::Swap),
            other => Err(format!("unknown collective `{other}`: use bcast or swap")),
        }
    }
}

/// How a schedule is executed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Execution {
    /// Program order; each op completes before the next, except `Immediate`
    /// ops, which complete at the next wait.
    Blocking,
    /// Dataflow: every receive is posted as early as its dependencies allow,
    /// and each op starts as soon as the ops it depends on have completed, so
    /// segmented trees pipeline.
    Nonblocking,
}

impl Execution {
    pub const ALL: [Execution; 2] = [Execution::Blocking, Execution::Nonblocking];
    pub fn name(self) -> &'static str {
        match self {
            Execution::Blocking => "blocking",
            Execution::Nonblocking => "nonblocking",
        }
    }
}

impl fmt::Display for Execution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Execution {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "blocking" | "b" => Ok(Execution::Blocking),
            "nonblocking" | "non-blocking" | "nb" => Ok(Execution::Nonblocking),
            other => Err(format!(
                "unknown execution `{other}`: use blocking or nonblocking"
            )),
        }
    }
}

/// A parameter's value.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ParamValue {
    /// A count or a size in bytes.
    Int(u64),
    /// One of a fixed set of words (a pairing, say).
    Word(String),
    /// A nested algorithm (the phases of a hierarchical one).
    Algo(AlgoSpec),
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Int(i) => write!(f, "{i}"),
            ParamValue::Word(w) => f.write_str(w),
            ParamValue::Algo(a) => a.fmt_nested(f),
        }
    }
}

/// An algorithm name with parameters. Parameters left out take the
/// registry's defaults when the spec is resolved.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AlgoSpec {
    pub name: String,
    pub params: BTreeMap<String, ParamValue>,
}

impl AlgoSpec {
    pub fn new(name: impl Into<String>) -> Self {
        AlgoSpec {
            name: name.into(),
            params: BTreeMap::new(),
        }
    }

    pub fn with(mut self, key: &str, value: ParamValue) -> Self {
        self.params.insert(key.to_string(), value);
        self
    }

    pub fn with_int(self, key: &str, value: u64) -> Self {
        self.with(key, ParamValue::Int(value))
    }

    pub fn parse(text: &str) -> Result<Self, SpecError> {
        let mut p = Parser {
            text,
            pos: 0,
            bytes: text.as_bytes(),
        };
        p.skip_ws();
        if p.pos == text.len() {
            return Err(SpecError::Empty);
        }
        let spec = p.spec(true)?;
        p.skip_ws();
        if p.pos != text.len() {
            return Err(p.err("unexpected text after the specification"));
        }
        Ok(spec)
    }

    /// Integer parameter (resolved specs always carry every parameter).
    pub fn int(&self, key: &str) -> Result<u64, SpecError> {
        match self.params.get(key) {
            Some(ParamValue::Int(i)) => Ok(*i),
            other => Err(self.missing(key, other)),
        }
    }

    pub fn word(&self, key: &str) -> Result<&str, SpecError> {
        match self.params.get(key) {
            Some(ParamValue::Word(w)) => Ok(w),
            other => Err(self.missing(key, other)),
        }
    }

    pub fn algo(&self, key: &str) -> Result<&AlgoSpec, SpecError> {
        match self.params.get(key) {
            Some(ParamValue::Algo(a)) => Ok(a),
            other => Err(self.missing(key, other)),
        }
    }

    fn missing(&self, key: &str, found: Option<&ParamValue>) -> SpecError {
        SpecError::BadValue {
            algorithm: self.name.clone(),
            param: key.to_string(),
            why: match found {
                None => "missing (resolve the specification against the registry first)".into(),
                Some(v) => format!("`{v}` has the wrong type"),
            },
        }
    }

    fn fmt_params(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (k, v)) in self.params.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{k}={v}")?;
        }
        Ok(())
    }

    fn fmt_nested(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if !self.params.is_empty() {
            f.write_str("(")?;
            self.fmt_params(f)?;
            f.write_str(")")?;
        }
        Ok(())
    }
}

impl fmt::Display for AlgoSpec {
    /// `name` or `name:key=value,...`; nested algorithms as `name(key=value)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if !self.params.is_empty() {
            f.write_str(":")?;
            self.fmt_params(f)?;
        }
        Ok(())
    }
}

impl FromStr for AlgoSpec {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        AlgoSpec::parse(s)
    }
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn err(&self, why: &str) -> SpecError {
        SpecError::Syntax {
            text: self.text.to_string(),
            at: self.pos,
            why: why.to_string(),
        }
    }

    fn skip_ws(&mut self) {
        while self.pos < self.bytes.len() && self.bytes[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn ident(&mut self) -> Result<String, SpecError> {
        self.skip_ws();
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == b'_' || c == b'-' {
                self.pos += 1;
            } else {
                break;
            }
        }
        if start == self.pos {
            return Err(self.err("expected a name"));
        }
        Ok(self.text[start..self.pos]
            .to_ascii_lowercase()
            .replace('-', "_"))
    }

    /// `name`, `name(k=v,...)` or, at top level, `name:k=v,...`.
    fn spec(&mut self, top: bool) -> Result<AlgoSpec, SpecError> {
        let name = self.ident()?;
        let mut spec = AlgoSpec::new(name);
        self.skip_ws();
        match self.peek() {
            Some(b'(') => {
                self.pos += 1;
                self.params(&mut spec, Some(b')'))?;
                self.skip_ws();
                if self.peek() != Some(b')') {
                    return Err(self.err("expected `)`"));
                }
                self.pos += 1;
            }
            Some(b':') if top => {
                self.pos += 1;
                self.params(&mut spec, None)?;
            }
            _ => {}
        }
        Ok(spec)
    }

    fn params(&mut self, spec: &mut AlgoSpec, close: Option<u8>) -> Result<(), SpecError> {
        loop {
            self.skip_ws();
            if self.peek() == close || self.peek().is_none() {
                return Ok(());
            }
            let key = self.ident()?;
            self.skip_ws();
            if self.peek() != Some(b'=') {
                return Err(self.err("expected `=` after the parameter name"));
            }
            self.pos += 1;
            let value = self.value()?;
            if spec.params.insert(key.clone(), value).is_some() {
                return Err(self.err(&format!("parameter `{key}` given twice")));
            }
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                c if c == close || c.is_none() => return Ok(()),
                _ => return Err(self.err("expected `,` between parameters")),
            }
        }
    }

    fn value(&mut self) -> Result<ParamValue, SpecError> {
        self.skip_ws();
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {
                let start = self.pos;
                while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric()) {
                    self.pos += 1;
                }
                let tok = &self.text[start..self.pos];
                parse_size(tok)
                    .map(ParamValue::Int)
                    .map_err(|why| SpecError::Syntax {
                        text: self.text.to_string(),
                        at: start,
                        why,
                    })
            }
            Some(_) => {
                let save = self.pos;
                let word = self.ident()?;
                self.skip_ws();
                if self.peek() == Some(b'(') {
                    self.pos = save;
                    return Ok(ParamValue::Algo(self.spec(false)?));
                }
                Ok(ParamValue::Word(word))
            }
            None => Err(self.err("expected a value")),
        }
    }
}

/// Parses `65536`, `64K`, `64KiB`, `1M`, `1MiB`, `2G` (binary multiples).
pub fn parse_size(tok: &str) -> Result<u64, String> {
    let t = tok.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{tok}` is not a number of bytes"))?;
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => {
            return Err(format!(
                "`{tok}`: unknown unit `{unit}` (use B, KiB, MiB or GiB)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("`{tok}` is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print_round_trip() {
        for text in [
            "binomial",
            "pipeline:segment=65536",
            "hierarchical:inter=knomial(radix=4),intra=linear",
            "hierarchical:inter=pipeline(segment=8192),intra=chain(fanout=2,segment=1024)",
        ] {
            let s = AlgoSpec::parse(text).unwrap();
            assert_eq!(s.to_string(), text);
        }
        let s = AlgoSpec::parse(" Pipeline( segment = 64KiB ) ").unwrap();
        assert_eq!(s.to_string(), "pipeline:segment=65536");
        assert_eq!(
            AlgoSpec::parse("split-binary").unwrap().name,
            "split_binary"
        );
    }

    #[test]
    fn syntax_errors_say_where() {
        for bad in [
            "",
            "pipeline:segment",
            "pipeline:segment=",
            "pipeline:segment=12Q",
            "a(b=1",
            "a:b=1,b=2",
            "a b",
        ] {
            let e = AlgoSpec::parse(bad).unwrap_err();
            assert!(!e.to_string().is_empty(), "{bad}");
        }
        match AlgoSpec::parse("pipeline:segment=12Q").unwrap_err() {
            SpecError::Syntax { at, .. } => assert_eq!(at, 17),
            e => panic!("{e}"),
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert!(parse_size("1X").is_err());
        assert!(parse_size("99999999999999999999").is_err());
    }
}
