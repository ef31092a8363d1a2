//! The engine's integration tests, one test binary (each file a module,
//! compiled and linked once).

mod cli;
mod error_kinds;
mod hardening;
mod key_store;
mod ready_key;
