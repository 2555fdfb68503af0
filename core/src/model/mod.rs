//! The model: the discrete-event simulator and its network model (`sim`),
//! the fit of a model to measured links (`calibrate`), simulated samples
//! (`simulate`), the model judged against measurements (`compare`), where
//! ranks sit on a machine (`placement`; from a job's allocation, `alloc`) and a communicator's placement class
//! (`placed`: block or cyclic over nodes and sockets), a model with a link per level of
//! distance fitted to published ping-pong (`levels`), and Open MPI's own
//! algorithms predicted from it against published broadcasts (`predict`).

pub mod alloc;
#[cfg(feature = "tuner")]
pub mod calibrate;
pub mod compare;
#[cfg(feature = "tuner")]
pub mod fit;
#[cfg(feature = "tuner")]
pub mod levels;
pub mod own;
pub mod placed;
pub mod placement;
#[cfg(feature = "tuner")]
pub mod predict;
pub mod sim;
pub mod simulate;
