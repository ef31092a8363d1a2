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

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{client, job, slow_partitions, start_with_params, temp_dir};
use cuda_prover_pipeline::circuits::{BuiltIn, Kind};
use cuda_prover_service::{proto, Client, ClientError};
use prost::bytes::{Buf, BufMut};
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::{Code, Status};

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

/// Raw message bytes both ways, so that anything can be sent.
#[derive(Debug, Clone, Copy, Default)]
struct Raw;
#[derive(Debug, Clone, Copy, Default)]
struct RawEncoder;
#[derive(Debug, Clone, Copy, Default)]
struct RawDecoder;

impl Encoder for RawEncoder {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawDecoder {
    type Item = Vec<u8>;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        let mut v = vec![0; src.remaining()];
        src.copy_to_slice(&mut v);
        Ok(Some(v))
    }
}

impl Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawEncoder;
    type Decoder = RawDecoder;
    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }
    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

#[derive(Debug, Default)]
struct Counts {
    requests: u64,
    clean_errors: u64,
    successes: u64,
    wrong_successes: u64,
    unclean_errors: u64,
    hangs: u64,
    crashes: u64,
    lost_jobs: u64,
}

/// What a request must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Fail,
    Either,
}

const LIMIT: usize = 16 << 10;
const C2_LIMIT: usize = 256 << 10;
const PER_REQUEST: Duration = Duration::from_secs(20);

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.requests += o.requests;
        self.clean_errors += o.clean_errors;
        self.successes += o.successes;
        self.wrong_successes += o.wrong_successes;
        self.unclean_errors += o.unclean_errors;
        self.hangs += o.hangs;
        self.crashes += o.crashes;
        self.lost_jobs += o.lost_jobs;
    }

    fn line(&self) -> String {
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

    /// Counts one answer; returns the status of a failure.
    fn answer<T>(&mut self, what: &str, r: Result<T, Status>, expect: Expect) -> Option<T> {
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

fn status_of(e: ClientError) -> Status {
    match e {
        ClientError::Rpc(st) => st,
        other => Status::unknown(other.to_string()),
    }
}

/// A small valid built-in job (the daemon's limits keep every mutation of
/// it small: log_constraints at most 8, partitions at most 4).
fn base_job(rng: &mut Rng) -> proto::SubmitRequest {
    let circuit = if rng.below(2) == 0 { "chain" } else { "bits" };
    job(circuit, 6 + rng.below(2) as u32, 1, rng.below(1000), 0)
}

/// A mutation of a valid job's encoded bytes, and what it must do.
fn mutate(rng: &mut Rng) -> (String, Vec<u8>, Expect) {
    let mut b = base_job(rng).encode_to_vec();
    let kind = rng.below(8);
    let what = match kind {
        0 => {
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len() as u64) as usize;
                b[i] ^= 1 << rng.below(8);
            }
            "bit flips"
        }
        1 => {
            b.truncate(rng.below(b.len() as u64) as usize);
            "cut"
        }
        2 => {
            let at = rng.below(b.len() as u64 + 1) as usize;
            let n = 1 + rng.below(40) as usize;
            let ins = rng.bytes(n);
            b.splice(at..at, ins);
            "spliced bytes"
        }
        3 => {
            let len = rng.below(300) as usize;
            b = rng.bytes(len);
            "garbage"
        }
        4 => {
            // An unknown length-delimited field (999) the decoder drops.
            let n = if rng.below(2) == 0 {
                LIMIT + 1 + rng.below(100_000) as usize
            } else {
                rng.below(LIMIT as u64 / 2) as usize
            };
            b.extend_from_slice(&[0xba, 0x3e]);
            prost::encoding::encode_varint(n as u64, &mut b);
            b.extend(std::iter::repeat_n(7u8, n));
            "padded"
        }
        5 => {
            let again = b.clone();
            b.extend_from_slice(&again);
            "doubled (fields merged)"
        }
        6 => {
            // A varint field set to an extreme value.
            let mut r = base_job(rng);
            if let Some(proto::submit_request::Job::BuiltIn(j)) = &mut r.job {
                match rng.below(5) {
                    0 => j.log_constraints = [0, 9, 31, 32, 255, u32::MAX][rng.below(6) as usize],
                    1 => j.partitions = [0, 5, 10_001, u32::MAX][rng.below(4) as usize],
                    2 => j.circuit = String::from_utf8_lossy(&rng.bytes(12)).into_owned(),
                    3 => j.synthesis = ["x", "witness\0", "full "][rng.below(3) as usize].into(),
                    _ => j.seed = Some(u64::MAX),
                }
            }
            match rng.below(5) {
                0 => r.devices = vec![0, 0],
                1 => r.devices = vec![u32::MAX],
                2 => {
                    r.params_dir = ["..", "/etc", "a\0b", "../../tmp"][rng.below(4) as usize].into()
                }
                3 => r.priority = u32::MAX,
                _ => r.deadline_ms = u64::MAX,
            }
            b = r.encode_to_vec();
            "extreme values"
        }
        _ => {
            // A job with no job field at all, or a name too long.
            let mut r = base_job(rng);
            if rng.below(2) == 0 {
                r.job = None;
            } else {
                r.name = "n".repeat(257 + rng.below(3000) as usize);
            }
            b = r.encode_to_vec();
            "no job / long name"
        }
    };
    // What the daemon must do: refuse anything above its limit by its
    // size, anything its decoder refuses, a request naming no job.
    let expect = match proto::SubmitRequest::decode(&b[..]) {
        _ if b.len() > LIMIT => Expect::Fail,
        Err(_) => Expect::Fail,
        Ok(r) if r.job.is_none() => Expect::Fail,
        Ok(_) => Expect::Either,
    };
    (format!("{what} ({} bytes)", b.len()), b, expect)
}

/// The requests class: mutated submits, oversized and garbage C2
/// requests, unknown and malformed ids; the number of accepted jobs.
async fn request_mutations(rng: &mut Rng, n: &mut Counts) -> usize {
    let d = start_with_params(1, temp_dir("mutation"), |c| {
        c.max_request_bytes = LIMIT;
        c.max_filecoin_request_bytes = C2_LIMIT;
        c.max_log_constraints = 8;
        c.max_partitions = 4;
        c.max_queue = 64;
    })
    .await;
    let cl = client(&d).await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", d.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let grpc = tonic::client::Grpc::new(channel);
    let submit_raw = |bytes: Vec<u8>| {
        let mut grpc = grpc.clone();
        async move {
            grpc.ready()
                .await
                .map_err(|e| Status::unavailable(e.to_string()))?;
            let path = tonic::codegen::http::uri::PathAndQuery::from_static(
                "/cuda_prover.v1.Prover/Submit",
            );
            grpc.unary(tonic::Request::new(bytes), path, Raw)
                .await
                .map(|r| r.into_inner())
        }
    };
    let mut accepted: Vec<(String, String)> = Vec::new();

    // Submits: mutations of a valid job's bytes.
    for _ in 0..400 {
        let (what, bytes, expect) = mutate(rng);
        match tokio::time::timeout(PER_REQUEST, submit_raw(bytes)).await {
            Err(_) => {
                n.requests += 1;
                n.hangs += 1;
                eprintln!("HANG: submit {what}");
            }
            Ok(r) => {
                if let Some(reply) = n.answer(&format!("submit {what}"), r, expect) {
                    match proto::SubmitReply::decode(&reply[..]) {
                        Ok(r) => accepted.push((r.job_id, what)),
                        Err(e) => {
                            n.wrong_successes += 1;
                            eprintln!("WRONG SUCCESS: {what}: a reply that does not decode ({e})");
                        }
                    }
                }
            }
        }
    }

    // Filecoin C2 requests: above their own limit, and garbage below it.
    for k in 0..6 {
        let len = if k % 2 == 0 {
            C2_LIMIT + 1 + rng.below(10_000) as usize
        } else {
            rng.below(2000) as usize
        };
        let req = proto::SubmitRequest {
            job: Some(proto::submit_request::Job::FilecoinC2(
                proto::FilecoinC2Job {
                    c1_output: rng.bytes(len),
                    prover_id: "01".into(),
                    sector_id: rng.below(100),
                    sector_size: [0, 2048, 3000][rng.below(3) as usize],
                    registered_proof: String::new(),
                },
            )),
            ..Default::default()
        };
        let r = tokio::time::timeout(PER_REQUEST, cl.submit(req)).await;
        match r {
            Err(_) => {
                n.requests += 1;
                n.hangs += 1;
            }
            Ok(r) => {
                n.answer(
                    &format!("C2 of {len} bytes"),
                    r.map_err(status_of),
                    Expect::Fail,
                );
            }
        }
    }

    // Ids: unknown, malformed, huge; awaited and cancelled.
    for _ in 0..150 {
        let id = match rng.below(4) {
            0 => format!("{:032x}", (rng.next() as u128) << 64 | rng.next() as u128),
            1 => format!("{:x}", rng.next()),
            2 => {
                let len = 1 + rng.below(40) as usize;
                String::from_utf8_lossy(&rng.bytes(len)).into_owned()
            }
            _ => "f".repeat(33 + rng.below(100_000) as usize),
        };
        let shown = format!("id of {} bytes", id.len());
        if rng.below(2) == 0 {
            let r = tokio::time::timeout(PER_REQUEST, cl.await_job(&id, |_, _, _| {})).await;
            match r {
                Err(_) => {
                    n.requests += 1;
                    n.hangs += 1;
                }
                Ok(r) => {
                    n.answer(
                        &format!("await {shown}"),
                        r.map_err(status_of),
                        Expect::Fail,
                    );
                }
            }
        } else {
            let r = tokio::time::timeout(PER_REQUEST, cl.cancel(&id)).await;
            match r {
                Err(_) => {
                    n.requests += 1;
                    n.hangs += 1;
                }
                Ok(r) => {
                    n.answer(
                        &format!("cancel {shown}"),
                        r.map_err(status_of),
                        Expect::Fail,
                    );
                }
            }
        }
    }

    // Every accepted job finishes: done and verified, or failed with a
    // reason (never lost, never a success without proofs).
    let deadline = Instant::now() + Duration::from_secs(60);
    for (id, what) in &accepted {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_secs(1));
        match tokio::time::timeout(left, cl.await_job(id, |_, _, _| {})).await {
            Err(_) => {
                n.lost_jobs += 1;
                eprintln!("LOST: job {id} ({what}) did not finish");
            }
            Ok(Err(e)) => {
                n.lost_jobs += 1;
                eprintln!("LOST: job {id} ({what}): {e}");
            }
            Ok(Ok(out)) => {
                let finished = (out.ok() && !out.proofs.is_empty())
                    || (out.state == "failed" && !out.error.is_empty());
                if !finished {
                    n.lost_jobs += 1;
                    eprintln!("LOST: job {id} ({what}): {} {}", out.state, out.error);
                }
            }
        }
    }
    // The daemon still answers, with nothing left behind.
    match tokio::time::timeout(PER_REQUEST, cl.status()).await {
        Ok(Ok(st)) => {
            assert!(st.queued.is_empty() && st.running.is_empty(), "{st:?}");
        }
        other => {
            n.crashes += 1;
            eprintln!("CRASH: status after the campaign: {other:?}");
        }
    }
    let again = Client::connect(&d.addr, None).await;
    assert!(again.is_ok(), "a new connection after the campaign");
    accepted.len()
}

/// What a params-link round does to its subdirectory of the params dir.
#[derive(Debug, Clone, Copy)]
enum LinkCase {
    /// The job's directory (`nested`: its parent) swapped, after
    /// submission, for a link to a directory outside that holds a valid
    /// key of the job's circuit.
    DirSwap { nested: bool },
    /// The key file is a link to a valid key outside (`target` 0), to
    /// `/dev/zero` (1) or to a name that does not exist (2), made before or
    /// after submission.
    KeyLink { target: u64, after: bool },
    /// `<key>.lock` is a link to a file outside that does not exist (the
    /// key is missing, so the daemon would make it under that lock).
    LockLink { after: bool },
}

impl LinkCase {
    fn draw(rng: &mut Rng, round: usize) -> Self {
        let after = rng.below(2) == 0;
        // Each case at least once, then any.
        match if round < 3 {
            round as u64
        } else {
            rng.below(3)
        } {
            0 => LinkCase::DirSwap {
                nested: rng.below(2) == 0,
            },
            1 => LinkCase::KeyLink {
                target: rng.below(3),
                after,
            },
            _ => LinkCase::LockLink { after },
        }
    }
}

/// Every file under `dir` with its length and modification time, sorted:
/// equal snapshots mean nothing was created, removed or written there.
fn tree(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if m.is_dir() {
                todo.push(p.clone());
            }
            out.push((p, m.len(), m.modified().unwrap_or(std::time::UNIX_EPOCH)));
        }
    }
    out.sort();
    out
}

/// One params-link round.
struct LinkRound {
    case: LinkCase,
    /// The job's params dir, relative to the daemon's.
    rel: String,
    /// The round's directory outside the params dir, and its files before.
    outside: PathBuf,
    before: Vec<(PathBuf, u64, std::time::SystemTime)>,
    /// What a followed link would create.
    created: Vec<PathBuf>,
    job: Option<String>,
}

/// The params-links class: each round's job must fail naming the link,
/// and its directory outside must stay as it was.
async fn link_swaps(rng: &mut Rng, n: &mut Counts) -> usize {
    let root = temp_dir("mutation-links");
    let outside = temp_dir("mutation-outside");
    // One runner: the rounds' jobs wait behind a slow one while their
    // directories are changed under them.
    let d = start_with_params(1, root.clone(), |c| {
        c.max_running = 1;
        c.max_log_constraints = 8;
        c.max_partitions = 4;
    })
    .await;
    let cl = client(&d).await;
    // One circuit for every round (each round's directory is its own, so
    // no key is resident for it): its valid key made once, in the params
    // dir, where the slow job in front uses it, and linked (hard links,
    // not symbolic) into the rounds' directories outside.
    let (kind, log) = (Kind::Chain, 7);
    let c = BuiltIn::new(kind, log, 0).unwrap();
    let name = cuda_prover_groth16::params::key_name(&c);
    cuda_prover_groth16::params::load_or_create(&root, &c, &|_| {}).unwrap();
    let valid = root.join(&name);
    let mut rounds: Vec<LinkRound> = Vec::new();
    let count = 9;
    for i in 0..count {
        let case = LinkCase::draw(rng, i);
        let out = outside.join(format!("r{i}"));
        let rel = match case {
            LinkCase::DirSwap { nested: true } => format!("r{i}/in"),
            _ => format!("r{i}"),
        };
        std::fs::create_dir_all(root.join(&rel)).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        let mut created = Vec::new();
        match case {
            LinkCase::DirSwap { nested } => {
                let at = if nested { out.join("in") } else { out.clone() };
                std::fs::create_dir_all(&at).unwrap();
                std::fs::hard_link(&valid, at.join(&name)).unwrap();
            }
            LinkCase::KeyLink { target: 0, .. } => {
                std::fs::hard_link(&valid, out.join(&name)).unwrap();
            }
            LinkCase::KeyLink { target: 2, .. } => created.push(out.join("absent.params")),
            LinkCase::LockLink { .. } => {
                created.push(out.join("made-by-the-daemon"));
                created.push(root.join(&rel).join(&name));
            }
            LinkCase::KeyLink { .. } => {}
        }
        rounds.push(LinkRound {
            case,
            rel,
            before: tree(&out),
            outside: out,
            created,
            job: None,
        });
    }
    // The links of a round, at the time `after` says.
    let place = |r: &LinkRound, now_after: bool| {
        let here = root.join(&r.rel);
        match r.case {
            LinkCase::DirSwap { .. } if now_after => {
                // The round's top directory (the job's, or its parent).
                let top = root.join(r.rel.split('/').next().unwrap());
                let mut was = top.as_os_str().to_owned();
                was.push("-was");
                std::fs::rename(&top, &was).unwrap();
                std::os::unix::fs::symlink(&r.outside, &top).unwrap();
            }
            LinkCase::KeyLink { target, after } if after == now_after => {
                let to = match target {
                    0 => r.outside.join(&name),
                    1 => PathBuf::from("/dev/zero"),
                    _ => r.outside.join("absent.params"),
                };
                std::os::unix::fs::symlink(to, here.join(&name)).unwrap();
            }
            LinkCase::LockLink { after } if after == now_after => {
                let mut lock = name.clone();
                lock.push(".lock");
                std::os::unix::fs::symlink(r.outside.join("made-by-the-daemon"), here.join(lock))
                    .unwrap();
            }
            _ => {}
        }
    };
    for r in &rounds {
        place(r, false);
    }
    slow_partitions(&d.ctx, 1, Duration::from_millis(1500));
    n.requests += 1;
    let blocker = match cl
        .submit(job(kind.name(), log, 1, rng.below(1000), 0))
        .await
    {
        Ok(id) => {
            n.successes += 1;
            id
        }
        Err(e) => panic!("the slow job in front was refused: {e}"),
    };
    for r in rounds.iter_mut() {
        let mut j = job(kind.name(), log, 1, rng.below(1000), 0);
        j.params_dir = r.rel.clone();
        let what = format!("submit in {} ({:?})", r.rel, r.case);
        let answer = tokio::time::timeout(PER_REQUEST, cl.submit(j)).await;
        match answer {
            Err(_) => {
                n.requests += 1;
                n.hangs += 1;
                eprintln!("HANG: {what}");
            }
            Ok(a) => r.job = n.answer(&what, a.map_err(status_of), Expect::Either),
        }
    }
    for r in &rounds {
        place(r, true);
    }
    // The changes count only for jobs still waiting when they were made.
    let (queued, _) = d.service.jobs().list();
    let waiting: Vec<String> = queued.iter().map(|e| e.wire_id.to_string()).collect();
    for r in &rounds {
        if let Some(id) = &r.job {
            assert!(
                waiting.contains(id),
                "the job of {} ran before its links were placed (the slow job in front \
                 ended too early)",
                r.rel
            );
        }
    }
    let out = cl.await_job(&blocker, |_, _, _| {}).await.unwrap();
    assert!(out.ok(), "the slow job in front: {}", out.error);
    slow_partitions(&d.ctx, 1, Duration::ZERO);
    for r in &rounds {
        let Some(id) = &r.job else { continue };
        let what = format!("job in {} ({:?})", r.rel, r.case);
        n.requests += 1;
        match tokio::time::timeout(PER_REQUEST, cl.await_job(id, |_, _, _| {})).await {
            Err(_) => {
                n.lost_jobs += 1;
                eprintln!("LOST: {what} did not finish");
            }
            Ok(Err(e)) => {
                n.lost_jobs += 1;
                eprintln!("LOST: {what}: {e}");
            }
            Ok(Ok(out)) if out.state == "done" => {
                n.wrong_successes += 1;
                eprintln!("WRONG SUCCESS: {what}: proved through a link");
            }
            Ok(Ok(out)) if out.state == "failed" && out.error.contains("symbolic link") => {
                n.clean_errors += 1;
            }
            Ok(Ok(out)) => {
                n.unclean_errors += 1;
                eprintln!(
                    "UNCLEAN: {what}: {} '{}' does not name the link",
                    out.state, out.error
                );
            }
        }
        if tree(&r.outside) != r.before || r.created.iter().any(|p| p.exists()) {
            n.wrong_successes += 1;
            eprintln!(
                "WRONG SUCCESS: {what}: a file was created or written outside: {:?}",
                tree(&r.outside)
            );
        }
    }
    // The daemon keeps serving from its params dir.
    n.requests += 1;
    let last = async {
        let id = cl
            .submit(job(kind.name(), log, 2, rng.below(1000), 0))
            .await?;
        cl.await_job(&id, |_, _, _| {}).await
    };
    match tokio::time::timeout(PER_REQUEST, last).await {
        Ok(Ok(out)) if out.ok() => n.successes += 1,
        other => {
            n.crashes += 1;
            eprintln!("CRASH: a job after the link rounds: {other:?}");
        }
    }
    drop(d);
    std::fs::remove_dir_all(&root).ok();
    std::fs::remove_dir_all(&outside).ok();
    rounds.len()
}

const BIN: &str = env!("CARGO_BIN_EXE_cuda-prover-service");

/// The open-file limit of the fd class's daemon: its connection bound is
/// this less the descriptors it keeps for itself.
const NOFILE: u64 = 96;
/// Its idle timeout, seconds.
const IDLE_S: u64 = 2;

/// The daemon process of the fd class; killed when dropped.
struct Proc {
    child: Child,
    addr: String,
    log: PathBuf,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    /// `serve` under `ulimit -n NOFILE`, its log in a file.
    fn start(dir: &Path) -> Proc {
        let log = dir.join("daemon.log");
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -n {NOFILE} && exec \"$0\" \"$@\""))
            .arg(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--backend", "host"])
            .args([
                "--host-devices",
                "1",
                "--idle-timeout-s",
                &IDLE_S.to_string(),
            ])
            .arg("--params-dir")
            .arg(dir.join("params"))
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let addr = match line.trim().strip_prefix("listening on ") {
            Some(a) => a.to_string(),
            None => panic!(
                "the daemon did not start under ulimit -n {NOFILE}: {line:?} {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            ),
        };
        Proc { child, addr, log }
    }

    /// None while it runs; its exit status once it ended.
    fn ended(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().unwrap()
    }

    /// Its soft limit of open files set to `soft` (the hard one kept);
    /// returns the soft limit before.
    fn set_soft_nofile(&self, soft: u64) -> u64 {
        let pid = self.child.id() as libc::pid_t;
        let mut old = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: prlimit reads the limit of a process this test started
        // into `old`, a live, writable rlimit; no new limit is passed.
        let rc = unsafe { libc::prlimit(pid, libc::RLIMIT_NOFILE, std::ptr::null(), &mut old) };
        assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
        let new = libc::rlimit {
            rlim_cur: soft,
            rlim_max: old.rlim_max,
        };
        // SAFETY: as above; `new` is a live rlimit the call only reads.
        let rc = unsafe { libc::prlimit(pid, libc::RLIMIT_NOFILE, &new, std::ptr::null_mut()) };
        assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
        old.rlim_cur
    }

    fn open_fds(&self) -> u64 {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .map(|d| d.count() as u64)
            .unwrap_or(0)
    }
}

/// What a connection first saw from the daemon.
enum First {
    /// The daemon's HTTP/2 greeting: the connection is served.
    Greeted(tokio::net::TcpStream),
    /// Closed (or reset) before any byte: refused.
    Closed,
    /// Nothing yet.
    Silent(tokio::net::TcpStream),
}

async fn first(mut s: tokio::net::TcpStream, within: Duration) -> First {
    let mut buf = [0u8; 256];
    match tokio::time::timeout(within, s.read(&mut buf)).await {
        Err(_) => First::Silent(s),
        Ok(Ok(0)) | Ok(Err(_)) => First::Closed,
        Ok(Ok(_)) => First::Greeted(s),
    }
}

/// Whether the daemon closes `s` within `within` (reading what it sends).
async fn closes(mut s: tokio::net::TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 4096];
    tokio::time::timeout(within, async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// A client of `addr` that gets through within `within` (connections are
/// refused while every slot is taken): its status, or None.
async fn status_within(addr: &str, within: Duration, n: &mut Counts) -> Option<Client> {
    let end = Instant::now() + within;
    while Instant::now() < end {
        n.requests += 1;
        let attempt = tokio::time::timeout(Duration::from_secs(5), async {
            let cl = Client::connect(addr, None).await?;
            cl.status().await?;
            Ok::<_, ClientError>(cl)
        })
        .await;
        match attempt {
            Ok(Ok(cl)) => {
                n.successes += 1;
                return Some(cl);
            }
            // Refused while the slots are taken: a clean refusal.
            Ok(Err(_)) | Err(_) => n.clean_errors += 1,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    n.hangs += 1;
    None
}

/// The fd-exhaustion class (see the file's comment); its notes for the
/// printed summary.
async fn fd_exhaustion(rng: &mut Rng, n: &mut Counts) -> String {
    let bound = (NOFILE - cuda_prover_service::listener::RESERVED_FDS) as usize;
    let idle = Duration::from_secs(IDLE_S);
    let dir = temp_dir("mutation-fds");
    let mut p = Proc::start(&dir);

    // A job accepted before the flood finishes through it.
    let cl = Client::connect(&p.addr, None).await.unwrap();
    n.requests += 1;
    let before = cl
        .submit(job("chain", 7, 2, rng.below(1000), 0))
        .await
        .unwrap();
    n.successes += 1;
    drop(cl);

    // A flood of idle connections: at most the bound are served, the rest
    // closed as they arrive.
    let flood = 2 * bound + rng.below(3 * bound as u64) as usize;
    let mut conns = Vec::new();
    for _ in 0..flood {
        n.requests += 1;
        match tokio::net::TcpStream::connect(&p.addr).await {
            Ok(s) => conns.push(s),
            Err(_) => n.clean_errors += 1,
        }
    }
    let firsts = all(conns
        .into_iter()
        .map(|s| first(s, idle / 2))
        .collect::<Vec<_>>())
    .await;
    let (mut held, mut silent, mut refused) = (Vec::new(), Vec::new(), 0usize);
    for f in firsts {
        match f {
            First::Greeted(s) => held.push(s),
            First::Silent(s) => silent.push(s),
            First::Closed => refused += 1,
        }
    }
    n.successes += held.len().min(bound) as u64;
    n.clean_errors += refused as u64;
    if held.len() > bound {
        n.wrong_successes += (held.len() - bound) as u64;
        eprintln!(
            "WRONG SUCCESS: {} connections served at once, above the bound of {bound}",
            held.len()
        );
    }
    if refused == 0 {
        n.wrong_successes += 1;
        eprintln!("WRONG SUCCESS: {flood} connections and none refused (bound {bound})");
    }
    let served_at_once = held.len();
    // The served ones get garbage, half a greeting or nothing: each is
    // closed by the daemon (a protocol error, or the idle timeout).
    for s in held.iter_mut() {
        match rng.below(3) {
            0 => {
                let len = 1 + rng.below(64) as usize;
                let _ = s.write_all(&rng.bytes(len)).await;
            }
            1 => {
                let _ = s.write_all(b"PRI * HTTP/2.0\r\n").await;
            }
            _ => {}
        }
    }
    // Those still waiting are served or refused once slots free up.
    let later = all(silent
        .into_iter()
        .map(|s| first(s, 3 * idle))
        .collect::<Vec<_>>());
    let closing = all(held
        .into_iter()
        .map(|s| closes(s, 3 * idle))
        .collect::<Vec<_>>());
    let (later, closing) = tokio::join!(later, closing);
    let waited = later.len();
    for f in later {
        match f {
            First::Greeted(s) => {
                n.successes += 1;
                if !closes(s, 3 * idle).await {
                    n.hangs += 1;
                    eprintln!("HANG: an idle connection was not closed");
                }
            }
            First::Closed => n.clean_errors += 1,
            First::Silent(_) => {
                n.hangs += 1;
                eprintln!("HANG: a connection neither served nor refused");
            }
        }
    }
    let not_closed = closing.iter().filter(|c| !**c).count();
    if not_closed > 0 {
        n.hangs += not_closed as u64;
        eprintln!("HANG: {not_closed} idle or garbage connections were not closed");
    }
    // Served again, and the job from before the flood finished.
    if let Some(cl) = status_within(&p.addr, 4 * idle, n).await {
        n.requests += 1;
        match tokio::time::timeout(PER_REQUEST, cl.await_job(&before, |_, _, _| {})).await {
            Ok(Ok(out)) if out.ok() => n.successes += 1,
            other => {
                n.lost_jobs += 1;
                eprintln!("LOST: the job from before the flood: {other:?}");
            }
        }
    }
    if let Some(st) = p.ended() {
        n.crashes += 1;
        eprintln!("CRASH: the daemon ended during the flood: {st}");
    }

    // Its soft limit cut to two descriptors above what it holds (the
    // client above gone first): accepts
    // fail with EMFILE while the bound is far away. It must wait and retry,
    // serve again once descriptors free up, and not end.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let spare = 2;
    let soft = p.open_fds() + spare;
    let was = p.set_soft_nofile(soft);
    let emfile_flood = bound / 2 + rng.below(bound as u64) as usize;
    let mut conns = Vec::new();
    for _ in 0..emfile_flood {
        if let Ok(s) = tokio::net::TcpStream::connect(&p.addr).await {
            conns.push(s);
        }
    }
    tokio::time::sleep(idle / 2).await;
    let emfile_seen = std::fs::read_to_string(&p.log)
        .unwrap_or_default()
        .contains("accepting a connection failed");
    assert!(
        emfile_seen,
        "{emfile_flood} connections with {spare} descriptors to spare and no accept failed: {}",
        std::fs::read_to_string(&p.log).unwrap_or_default()
    );
    if let Some(st) = p.ended() {
        n.crashes += 1;
        eprintln!("CRASH: the daemon ended with no descriptor left: {st}");
    }
    drop(conns);
    // Still under the cut limit: a client gets through once the flood's
    // connections are gone.
    let served_cut = status_within(&p.addr, 4 * idle, n).await.is_some();
    p.set_soft_nofile(was);
    // And with descriptors back, a job proves.
    n.requests += 1;
    let after = async {
        let cl = Client::connect(&p.addr, None).await?;
        let id = cl.submit(job("chain", 7, 1, rng.below(1000), 0)).await?;
        cl.await_job(&id, |_, _, _| {}).await
    };
    match tokio::time::timeout(PER_REQUEST, after).await {
        Ok(Ok(out)) if out.ok() => n.successes += 1,
        other => {
            n.lost_jobs += 1;
            eprintln!("LOST: a job after the cut limit: {other:?}");
        }
    }
    // It ends only when asked: with status 0 on SIGTERM.
    match p.ended() {
        Some(st) => {
            n.crashes += 1;
            eprintln!("CRASH: the daemon ended unasked: {st}");
        }
        None => {
            // SAFETY: kill sends SIGTERM to the daemon this test started.
            assert_eq!(unsafe { libc::kill(p.child.id() as i32, libc::SIGTERM) }, 0);
            let end = Instant::now() + Duration::from_secs(20);
            let st = loop {
                if let Some(st) = p.ended() {
                    break Some(st);
                }
                if Instant::now() > end {
                    break None;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            match st {
                Some(st) if st.success() => {}
                other => {
                    n.crashes += 1;
                    eprintln!(
                        "CRASH: SIGTERM ended the daemon with {other:?}: {}",
                        std::fs::read_to_string(&p.log).unwrap_or_default()
                    );
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    format!(
        "bound {bound} under ulimit -n {NOFILE}: {flood} connections, {served_at_once} served \
         at once, {refused} refused, {waited} waited for a slot; limit cut to {soft} \
         descriptors: {emfile_flood} connections, accepts failed (EMFILE) and were retried, \
         a client {} served under the cut limit",
        if served_cut { "was" } else { "was not" },
    )
}

/// Runs the futures concurrently (each a task); their outputs in order.
async fn all<F>(fs: Vec<F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let tasks: Vec<_> = fs.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(t.await.expect("a connection task"));
    }
    out
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
