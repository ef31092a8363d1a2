//! A load run: 1,000 small jobs from 16 concurrent clients against one
//! daemon on two simulated devices. Nothing may be lost: every job comes
//! back done with its proof verified. Prints the latency distribution.

use crate::common;

use std::time::Instant;

use common::{job, start};
use cuda_prover_service::Client;

const JOBS: usize = 1000;
const CLIENTS: usize = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_jobs_from_sixteen_clients_none_lost() {
    let d = start(2, |c| {
        c.max_queue = JOBS;
        c.max_running = 4;
    })
    .await;
    // The key exists before the clock starts.
    let warm = Client::connect(&d.addr, None).await.unwrap();
    let id = warm.submit(job("bits", 7, 1, 0, 0)).await.unwrap();
    assert!(warm.await_job(&id, |_, _, _| {}).await.unwrap().ok());

    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let addr = d.addr.clone();
        tasks.push(tokio::spawn(async move {
            let client = Client::connect(&addr, None).await.unwrap();
            let mut lat = Vec::new();
            for j in (c..JOBS).step_by(CLIENTS) {
                let t = Instant::now();
                let out = client
                    .prove(job("bits", 7, 1, 1 + j as u64, 0), |_, _, _| {})
                    .await
                    .unwrap();
                assert!(out.ok(), "job {j}: {} {}", out.state, out.error);
                assert_eq!(out.proofs.len(), 1);
                lat.push(t.elapsed().as_secs_f64() * 1e3);
            }
            lat
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.unwrap());
    }
    let wall = t0.elapsed().as_secs_f64();
    assert_eq!(lat.len(), JOBS, "every job came back");
    lat.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| lat[((lat.len() - 1) as f64 * p).round() as usize];
    println!(
        "load: {JOBS} jobs from {CLIENTS} clients in {wall:.2} s ({:.0} jobs/s); latency ms p50 {:.1} p90 {:.1} p99 {:.1} max {:.1}",
        JOBS as f64 / wall,
        q(0.5),
        q(0.9),
        q(0.99),
        lat[lat.len() - 1]
    );
    let st = warm.status().await.unwrap();
    let proved: u64 = st.devices.iter().map(|d| d.partitions).sum();
    assert_eq!(proved, JOBS as u64 + 1, "one partition per job, none lost");
    let m = warm.metrics().await.unwrap();
    assert!(
        m.contains(&format!("cuda_prover_service_jobs_done_total {}", JOBS + 1)),
        "{m}"
    );
}
