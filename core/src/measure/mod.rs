//! Measurement and its statistics: what is measured and how (`method`), the
//! raw-sample schema (`record`), order statistics and outliers (`stats`),
//! the latency/bandwidth fit (`fit`), IMB-style reports (`report`), what
//! the pictures show (`figure`), and the byte patterns checks use
//! (`pattern`), and
//! benchmarks' published output read into raw samples (`import`), and
//! a machine's noise fitted from its launches (`noise`).

pub mod figure;
#[cfg(feature = "tuner")]
pub mod fit;
pub mod import;
pub mod method;
pub mod noise;
pub mod pattern;
pub mod record;
pub mod report;
pub mod stats;
