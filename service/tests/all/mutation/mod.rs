//! A seeded mutation campaign against the daemon (host backend), in three
//! classes:
//!
//! - requests (one simulated device, in process): submits whose encoded
//!   bytes are flipped, cut, spliced, padded with unknown fields or replaced
//!   by garbage; jobs with extreme field values; oversized built-in and
//!   Filecoin requests; await and cancel of unknown or malformed ids;
//! - params links (in process): a job's params subdirectory swapped for a
//!   link to a directory outside after the job was accepted, a key file
//!   that is a link (to a valid key outside, to `/dev/zero`, to nothing),
//!   a `<key>.lock` that is a link, each before or after submission: every
//!   such job must fail naming the link, and nothing outside may be
//!   created or written (a link followed to the valid key outside would
//!   prove: a wrong success);
//! - fd exhaustion (a daemon process under `ulimit -n 96`, so a bound of 32
//!   connections): floods of idle, garbage-sending and half-greeting
//!   connections must be refused beyond the bound, each served one closed
//!   when idle or on garbage, the daemon must serve a client again and
//!   finish the job accepted before the flood, survive its soft file limit cut
//!   below the descriptors it holds (accept failing with EMFILE), and end
//!   only when asked, with status 0 then.
//!
//! Every request must end within its time in a clean error (a status with
//! a short message, or a refused connection) or a correct success; every
//! job the daemon accepted must finish. The counts are printed per class
//! and in total: requests, clean errors, successes, wrong successes,
//! unclean errors, hangs, crashes and lost jobs (the last five must be 0).
//!
//! `CP_MUTATION_SEED` picks the seed (default 34).
//!
//! The files, one concept each:
//!
//! - `counts.rs`: the tally of answers (`Counts`), what a request must do
//!   (`Expect`) and how an answer counts;
//! - `raw_codec.rs`: the gRPC codec of raw message bytes (`Raw`), so that
//!   any bytes can be sent as a request;
//! - `requests.rs`: the requests class (`base_job`, `mutate`,
//!   `request_mutations`);
//! - `links.rs`: the params-links class (`LinkCase`, `tree`, `LinkRound`,
//!   `link_swaps`);
//! - `fd_daemon.rs`: the fd class's daemon process under `ulimit -n`
//!   (`Proc`);
//! - `fd_exhaustion.rs`: the fd-exhaustion class (`fd_exhaustion`) and its
//!   connection probes (`first`, `closes`, `status_within`, `all`);
//! - here: the seed's `Rng` and the campaign's test, which runs the three
//!   classes in turn and prints and checks their counts.

mod counts;
mod fd_daemon;
mod fd_exhaustion;
mod links;
mod raw_codec;
mod requests;

use std::time::Instant;

use counts::Counts;
use fd_exhaustion::fd_exhaustion;
use links::link_swaps;
use requests::request_mutations;

/// xorshift64*: the campaign's only source of randomness.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_mutation_campaign_ends_cleanly() {
    let seed = std::env::var("CP_MUTATION_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(34u64);
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let t0 = Instant::now();

    let mut requests = Counts::default();
    let accepted = request_mutations(&mut rng, &mut requests).await;
    let t_requests = t0.elapsed();

    let mut links = Counts::default();
    let rounds = link_swaps(&mut rng, &mut links).await;
    let t_links = t0.elapsed() - t_requests;

    let mut fds = Counts::default();
    let notes = fd_exhaustion(&mut rng, &mut fds).await;
    let t_fds = t0.elapsed() - t_requests - t_links;

    let mut n = Counts::default();
    for c in [&requests, &links, &fds] {
        n.add(c);
    }
    println!(
        "mutation campaign (seed {seed}, {:.1} s): {}",
        t0.elapsed().as_secs_f64(),
        n.line()
    );
    println!(
        "  requests ({:.1} s, {accepted} jobs accepted): {}",
        t_requests.as_secs_f64(),
        requests.line()
    );
    println!(
        "  params links ({:.1} s, {rounds} rounds): {}",
        t_links.as_secs_f64(),
        links.line()
    );
    println!(
        "  fd exhaustion ({:.1} s): {}",
        t_fds.as_secs_f64(),
        fds.line()
    );
    println!("    {notes}");
    assert_eq!(n.wrong_successes, 0);
    assert_eq!(n.unclean_errors, 0);
    assert_eq!(n.hangs, 0);
    assert_eq!(n.crashes, 0);
    assert_eq!(n.lost_jobs, 0);
    assert!(requests.clean_errors > 100 && accepted > 0, "{requests:?}");
    assert_eq!(
        links.clean_errors as usize, rounds,
        "every link round refused: {links:?}"
    );
    assert!(fds.clean_errors > 0 && fds.successes > 0, "{fds:?}");
}
