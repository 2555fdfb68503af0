//! Broadcast algorithms, one file each.

pub mod binary;
pub mod bine;
pub mod binomial;
pub mod chain;
pub mod circulant;
pub mod hierarchical;
pub mod knomial;
pub mod linear;
pub mod pipeline;
pub mod scatter_allgather;
pub mod shm;
pub mod split_binary;
pub mod tree;
