//! The Filecoin crate's integration tests, one test binary: each file here
//! is a module (one subject each, named as before) sharing `common/` (so
//! the 2 KiB sector is sealed and the TEST parameters are found once per
//! run), compiled and linked once instead of once per file.
//! `cargo test --workspace --release --test all NAME` runs the tests whose
//! path contains NAME (`filecoin_c2`, `filecoin_parallel_witness`, ...).
//! `filecoin_c1_memory.rs` stays a binary of its own: it measures memory
//! through its own global allocator.

mod common;

mod filecoin_bad_input;
mod filecoin_c2;
mod filecoin_parallel_witness;
mod filecoin_post;
mod filecoin_snapdeals;
mod filecoin_test_c1;
mod filecoin_test_params;
mod filecoin_test_post;
