//! How the campaign counts: the tally of answers (`Counts`), what a request
//! must do (`Expect`), the time each request gets, and how one answer (a
//! reply or a status) counts.

use std::time::Duration;

use cuda_prover_service::ClientError;
use tonic::{Code, Status};

#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) requests: u64,
    pub(super) clean_errors: u64,
    pub(super) successes: u64,
    pub(super) wrong_successes: u64,
    pub(super) unclean_errors: u64,
    pub(super) hangs: u64,
    pub(super) crashes: u64,
    pub(super) lost_jobs: u64,
}

/// What a request must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expect {
    Fail,
    Either,
}

pub(super) const PER_REQUEST: Duration = Duration::from_secs(20);

impl Counts {
    pub(super) fn add(&mut self, o: &Counts) {
        self.requests += o.requests;
        self.clean_errors += o.clean_errors;
        self.successes += o.successes;
        self.wrong_successes += o.wrong_successes;
        self.unclean_errors += o.unclean_errors;
        self.hangs += o.hangs;
        self.crashes += o.crashes;
        self.lost_jobs += o.lost_jobs;
    }

    pub(super) fn line(&self) -> String {
        format!(
            "{} requests, {} clean errors, {} successes, {} wrong successes, \
             {} unclean errors, {} hangs, {} crashes, {} lost jobs",
            self.requests,
            self.clean_errors,
            self.successes,
            self.wrong_successes,
            self.unclean_errors,
            self.hangs,
            self.crashes,
            self.lost_jobs
        )
    }

    /// Counts one answer that had `PER_REQUEST` to come: one that did not
    /// come in time is a hang (named on stderr), else as [`Counts::answer`].
    pub(super) fn answer_within<T>(
        &mut self,
        what: &str,
        r: Result<Result<T, Status>, tokio::time::error::Elapsed>,
        expect: Expect,
    ) -> Option<T> {
        match r {
            Err(_) => {
                self.requests += 1;
                self.hangs += 1;
                eprintln!("HANG: {what}");
                None
            }
            Ok(r) => self.answer(what, r, expect),
        }
    }

    /// Counts one answer; returns the status of a failure.
    pub(super) fn answer<T>(
        &mut self,
        what: &str,
        r: Result<T, Status>,
        expect: Expect,
    ) -> Option<T> {
        self.requests += 1;
        match r {
            Ok(v) => {
                if expect == Expect::Fail {
                    self.wrong_successes += 1;
                    eprintln!("WRONG SUCCESS: {what}");
                } else {
                    self.successes += 1;
                }
                Some(v)
            }
            Err(st) => {
                // A handler that panicked or a connection torn down reads
                // as UNKNOWN / INTERNAL / UNAVAILABLE (tonic's own decode
                // failure is INTERNAL too, and clean).
                let decode = st.code() == Code::Internal && st.message().contains("decode");
                if matches!(st.code(), Code::Unknown | Code::Unavailable)
                    || (st.code() == Code::Internal && !decode)
                {
                    self.crashes += 1;
                    eprintln!("CRASH? {what}: {st:?}");
                } else if st.message().is_empty() || st.message().len() > 1024 {
                    self.unclean_errors += 1;
                    eprintln!("UNCLEAN: {what}: {} bytes of message", st.message().len());
                } else {
                    self.clean_errors += 1;
                }
                None
            }
        }
    }
}

pub(super) fn status_of(e: ClientError) -> Status {
    match e {
        ClientError::Rpc(st) => st,
        other => Status::unknown(other.to_string()),
    }
}
