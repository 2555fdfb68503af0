//! Errors, each saying what was wrong and what to do.

use thiserror::Error;

/// A malformed or impossible algorithm specification.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SpecError {
    #[error("empty algorithm specification: write a name such as `binomial` or `pipeline:segment=65536`")]
    Empty,
    #[error("cannot parse algorithm specification `{text}` at byte {at}: {why}")]
    Syntax {
        text: String,
        at: usize,
        why: String,
    },
    #[error("unknown {collective} algorithm `{name}`; known: {known}")]
    UnknownAlgorithm {
        collective: String,
        name: String,
        known: String,
    },
    #[error("algorithm `{algorithm}` has no parameter `{param}`; it takes: {known}")]
    UnknownParam {
        algorithm: String,
        param: String,
        known: String,
    },
    #[error("parameter `{param}` of `{algorithm}`: {why}")]
    BadValue {
        algorithm: String,
        param: String,
        why: String,
    },
    #[error("`{algorithm}` cannot be used as the {role} part of `{outer}`: {why}")]
    NotComposable {
        algorithm: String,
        outer: String,
        role: String,
        why: String,
    },
}

/// An impossible communicator shape.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ShapeError {
    #[error("a node holds no ranks: every node needs at least one")]
    EmptyNode,
    #[error(
        "cannot read node layout `{0}`: write `4` (one node), `2x3` (2 nodes of 3 ranks), `3+2`, or each rank's node `0,1,0,1`"
    )]
    BadNodeSpec(String),
    #[error("rank {rank} or root {root} is outside a communicator of {size} ranks")]
    RankOutOfRange {
        rank: usize,
        root: usize,
        size: usize,
    },
    #[error("node map covers {map} ranks but the communicator has {size}")]
    NodeMapSize { map: usize, size: usize },
}

/// Anything that stops a schedule from being built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BuildError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(transparent)]
    Shape(#[from] ShapeError),
}
