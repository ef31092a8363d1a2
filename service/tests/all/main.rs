//! The daemon's integration tests, one test binary: each file here is a
//! module (one subject each, named as before; `mutation/` is a folder,
//! one file per concept) sharing `common/`, compiled
//! and linked once instead of once per file (each binary linked the
//! service, the engine and the Filecoin crate again, 17 to 36 s on 2
//! cores). `cargo test --workspace --release --test all NAME` runs the
//! tests whose path contains NAME (a module's name selects it: `cuzk`,
//! `deploy`, `go_client`, ...).

mod common;

mod cuzk;
mod cuzk_kinds;
mod deploy;
mod error_codes;
mod filecoin;
mod filecoin_test_post;
mod go_client;
mod health;
mod load;
mod load_kill;
mod mutation;
mod process;
mod service;
