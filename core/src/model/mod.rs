//! The model: the discrete-event simulator and its network model (`sim`),
//! the fit of a model to measured links (`calibrate`), simulated samples
//! (`simulate`) and the model judged against measurements (`compare`).

#[cfg(feature = "tuner")]
pub mod calibrate;
pub mod compare;
pub mod sim;
pub mod simulate;
