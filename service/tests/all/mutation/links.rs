//! The params-links class (in process): a job's params subdirectory
//! swapped for a link to a directory outside after the job was accepted, a
//! key file that is a link (to a valid key outside, to `/dev/zero`, to
//! nothing), a `<key>.lock` that is a link, each before or after
//! submission: every such job must fail naming the link, and nothing
//! outside may be created or written.

// The client's error is tonic's `Status` inside, unboxed (as in the
// library): the closures that map it to a `Status` carry it whole.
#![allow(clippy::result_large_err)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{client, job, slow_partitions, start_with_params, temp_dir};
use cuda_prover_pipeline::circuits::{BuiltIn, Kind};

use super::counts::{status_of, Counts, Expect, PER_REQUEST};
use super::Rng;

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
pub(super) async fn link_swaps(rng: &mut Rng, n: &mut Counts) -> usize {
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
        r.job = n.answer_within(&what, answer.map(|a| a.map_err(status_of)), Expect::Either);
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
