//! What became of a point: measured, or why not. Bench, evaluate and the
//! tuner's driver sort a measurement's outcome here, one way.

use colltune_core::measure::record::Sample;

use super::{BenchError, Measurer, Point};

/// What became of one point of one run.
#[derive(Debug)]
pub enum Outcome {
    /// Its samples (rank 0; other ranks none).
    Measured(Vec<Sample>),
    /// Not measured: its subject was found unavailable at an earlier point.
    Skipped,
    /// Not measured: its subject cannot run with this MPI and network
    /// (found now, on every rank alike; its later points are skipped).
    Unavailable(BenchError),
    /// Not measured: the library cannot apply this forced algorithm at this
    /// point (it would run its own choice instead).
    NotApplicable(BenchError),
}

/// What a measurement could not measure, for its closing lines.
#[derive(Debug, Default)]
pub struct Skips {
    /// (subject label, why), in the order found.
    pub unavailable: Vec<(String, String)>,
    /// (subject label, the sizes, the first reason).
    pub not_applicable: Vec<(String, Vec<u64>, String)>,
}

impl Skips {
    /// Whether `label`'s subject was found unavailable.
    pub fn is_unavailable(&self, label: &str) -> bool {
        self.unavailable.iter().any(|(l, _)| l == label)
    }
}

impl Measurer<'_> {
    /// Measures `pt` for run `run` unless its subject was found unavailable
    /// (`skips` says, and learns of what this point finds). Any other error
    /// ends the measurement.
    pub fn try_measure(
        &mut self,
        pt: &Point,
        run: u32,
        skips: &mut Skips,
    ) -> Result<Outcome, BenchError> {
        let label = pt.subject.label();
        if skips.is_unavailable(&label) {
            return Ok(Outcome::Skipped);
        }
        match self.measure(pt, run) {
            Ok(s) => Ok(Outcome::Measured(s)),
            Err(e) if e.is_not_applicable() => {
                match skips
                    .not_applicable
                    .iter_mut()
                    .find(|(l, _, _)| *l == label)
                {
                    Some((_, sizes, _)) => {
                        if !sizes.contains(&pt.bytes) {
                            sizes.push(pt.bytes)
                        }
                    }
                    None => skips
                        .not_applicable
                        .push((label, vec![pt.bytes], e.to_string())),
                }
                Ok(Outcome::NotApplicable(e))
            }
            Err(e) if e.is_unavailable() => {
                skips.unavailable.push((label, e.to_string()));
                Ok(Outcome::Unavailable(e))
            }
            Err(e) => Err(e),
        }
    }
}
