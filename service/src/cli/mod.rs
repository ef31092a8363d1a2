//! The binary's command line, one file per concept: its shape (`args`),
//! the options of `serve` (`serve_args`) and of a job (`submit`), the value
//! parsers (`parse`), the daemon (`serve`), the dispatch and client
//! subcommands (`run`) and what they print (`output`).

mod args;
mod output;
mod parse;
mod run;
mod serve;
mod serve_args;
mod submit;

pub(crate) use args::Cli;
pub(crate) use run::run;
