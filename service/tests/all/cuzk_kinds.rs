//! Every Filecoin proof kind of cuzk.v1 over a unix socket, host backend,
//! 2 KiB TEST parameters: WINNING_POST, WINDOW_POST_PARTITION and
//! SNAP_DEALS_UPDATE from vanilla proofs made by filecoin-proofs over a
//! sealed sector, each answer checked here by filecoin-proofs' verifiers
//! (`verify_winning_post`, `verify_window_post`,
//! `verify_empty_sector_update_proof`); the same kinds through the
//! cuda_prover.v1 API; malformed inputs of these kinds are
//! INVALID_ARGUMENT and queue nothing; PreloadSRS / EvictSRS of their keys
//! by cuzk's circuit ids (`winning-2k`, `wpost-2k`, `snap-2k`) load the
//! keys their jobs prove with.
#![cfg(feature = "filecoin")]

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use common::filecoin::{seal_for_miner, test_params, MINER, WINDOW_2KIB_V1_1};
use common::{cuzk_client, prove_request, start_unix, temp_dir};
use cuda_prover_filecoin::sealing::{SealedSector, UpdatedSector};
use cuda_prover_filecoin::test_params::{parameter_files, TestCircuit};
use cuda_prover_filecoin::vanilla::{post_vanilla_bytes_for, snap_vanilla_bytes_for};
use cuda_prover_filecoin::{post_config, PostKind, SectorSize};
use cuda_prover_service::cuzk::convert::{cid_of_commitment, vanilla_field, SEALED, UNSEALED};
use cuda_prover_service::cuzk_proto as pb;
use cuda_prover_service::cuzk_proto::await_proof_response::Status as AwaitStatus;
use cuda_prover_service::cuzk_proto::proving_engine_client::ProvingEngineClient;
use cuda_prover_service::cuzk_proto::ProofKind;
use cuda_prover_service::proto;
use filecoin_proofs::constants::SectorShape2KiB;
use filecoin_proofs::{
    verify_empty_sector_update_proof, verify_window_post, verify_winning_post, PublicReplicaInfo,
};
use storage_proofs_core::sector::SectorId;
use tonic::transport::Channel;

// StackedDrgWinning2KiBV1 and the 2 KiB update proof are 0 among the
// network's proof numbers (WINDOW_2KIB_V1_1 is common's).

fn randomness() -> [u8; 32] {
    let mut r = [0x3cu8; 32];
    r[31] &= 0x3f;
    r
}

struct Fixture {
    params: PathBuf,
    sector: SealedSector,
    winning: Vec<u8>,
    window: Vec<u8>,
    updated: UpdatedSector,
    snap: Vec<Vec<u8>>,
}

/// A 2 KiB sector sealed for the miner, its PoSt vanilla proofs and a
/// SnapDeals update of it with its vanilla proofs, as a storage
/// provider's workers would hand them to the prover.
fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let size = SectorSize::KIB_2;
        let params = test_params(&[
            TestCircuit::WinningPost(size),
            TestCircuit::WindowPost(size),
            TestCircuit::SnapDeals(size),
        ]);
        let sector = seal_for_miner(21);
        let winning = post_vanilla_bytes_for(&sector, PostKind::Winning, randomness()).unwrap();
        let window = post_vanilla_bytes_for(&sector, PostKind::Window, randomness()).unwrap();
        let (updated, snap) = snap_vanilla_bytes_for(&sector, &temp_dir("kinds-snap"), 5).unwrap();
        Fixture {
            params,
            sector,
            winning,
            window,
            updated,
            snap,
        }
    })
}

fn replica(f: &Fixture) -> (SectorId, PublicReplicaInfo) {
    (
        SectorId::from(f.sector.sector_id),
        PublicReplicaInfo::new(f.sector.comm_r).unwrap(),
    )
}

/// Whether filecoin-proofs' verifier accepts a proof of the fixture.
type Check = fn(&Fixture, &[u8]) -> bool;

fn winning_ok(f: &Fixture, proof: &[u8]) -> bool {
    let config = post_config(SectorSize::KIB_2, PostKind::Winning).unwrap();
    verify_winning_post::<SectorShape2KiB>(
        &config,
        &randomness(),
        &[replica(f)],
        f.sector.prover_id,
        proof,
    )
    .unwrap_or(false)
}

fn window_ok(f: &Fixture, proof: &[u8]) -> bool {
    let config = post_config(SectorSize::KIB_2, PostKind::Window).unwrap();
    let replicas: BTreeMap<_, _> = [replica(f)].into_iter().collect();
    verify_window_post::<SectorShape2KiB>(
        &config,
        &randomness(),
        &replicas,
        f.sector.prover_id,
        proof,
    )
    .unwrap_or(false)
}

fn snap_ok(f: &Fixture, proof: &[u8]) -> bool {
    let config = f.sector.registered.porep_config().unwrap();
    verify_empty_sector_update_proof::<SectorShape2KiB>(
        &config,
        proof,
        f.sector.comm_r,
        f.updated.comm_r_new,
        f.updated.comm_d_new,
    )
    .unwrap_or(false)
}

fn winning_request(id: &str) -> pb::SubmitProofRequest {
    let f = fixture();
    pb::SubmitProofRequest {
        request_id: id.into(),
        proof_kind: ProofKind::WinningPost as i32,
        registered_proof: 0,
        sector_size: 2048,
        vanilla_proofs: vec![f.winning.clone()],
        miner_id: MINER,
        randomness: randomness().to_vec(),
        ..Default::default()
    }
}

fn window_request(id: &str) -> pb::SubmitProofRequest {
    let f = fixture();
    pb::SubmitProofRequest {
        request_id: id.into(),
        proof_kind: ProofKind::WindowPostPartition as i32,
        registered_proof: WINDOW_2KIB_V1_1,
        vanilla_proofs: vec![f.window.clone()],
        miner_id: MINER,
        randomness: randomness().to_vec(),
        partition_index: 0,
        ..Default::default()
    }
}

fn snap_request(id: &str) -> pb::SubmitProofRequest {
    let f = fixture();
    pb::SubmitProofRequest {
        request_id: id.into(),
        proof_kind: ProofKind::SnapDealsUpdate as i32,
        registered_proof: 0,
        sector_size: 2048,
        vanilla_proofs: f.snap.clone(),
        comm_r_old: f.sector.comm_r.to_vec(),
        comm_r_new: f.updated.comm_r_new.to_vec(),
        comm_d_new: f.updated.comm_d_new.to_vec(),
        ..Default::default()
    }
}

/// A SnapDeals request in the other forms the daemon reads: the vanilla
/// proofs as a JSON array in `vanilla_proof`, the commitments as CIDs.
fn snap_request_as_json_and_cids(id: &str) -> pb::SubmitProofRequest {
    let f = fixture();
    pb::SubmitProofRequest {
        vanilla_proofs: Vec::new(),
        vanilla_proof: vanilla_field(&f.snap),
        comm_r_old: cid_of_commitment(&f.sector.comm_r, SEALED),
        comm_r_new: cid_of_commitment(&f.updated.comm_r_new, SEALED),
        comm_d_new: cid_of_commitment(&f.updated.comm_d_new, UNSEALED),
        ..snap_request(id)
    }
}

async fn open_jobs(cl: &mut ProvingEngineClient<Channel>) -> u32 {
    let st = cl
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    st.queues.iter().map(|q| q.pending + q.in_progress).sum()
}

/// The keys GetStatus lists as loaded.
async fn loaded(cl: &mut ProvingEngineClient<Channel>) -> Vec<pb::SrsStatus> {
    cl.get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner()
        .loaded_srs
}

/// The checks of a finished cuzk.v1 job of the fixture: COMPLETED, its
/// proof accepted by filecoin-proofs' verifier and rejected with a byte
/// flipped, its total time at least its device time.
fn check_proved(f: &Fixture, what: &str, r: &pb::AwaitProofResponse, ok: Check) {
    assert_eq!(
        r.status,
        AwaitStatus::Completed as i32,
        "{what}: {}",
        r.error_message
    );
    assert!(
        ok(f, &r.proof),
        "{what}: filecoin-proofs rejected the proof"
    );
    let mut bad = r.proof.clone();
    bad[30] ^= 1;
    assert!(!ok(f, &bad), "{what}: a flipped byte was accepted");
    assert!(r.total_ms >= r.gpu_compute_ms, "{what}: {r:?}");
    eprintln!(
        "{what}: {} bytes, total {} ms (synthesis {} ms, device {} ms)",
        r.proof.len(),
        r.total_ms,
        r.synthesis_ms,
        r.gpu_compute_ms
    );
}

/// Every PoSt and SnapDeals kind is proved and accepted by filecoin-proofs,
/// each with its key preloaded first (one daemon, two devices).
///
/// PreloadSRS / EvictSRS of the WinningPoSt, WindowPoSt and SnapDeals keys
/// by cuzk's circuit ids: the first PreloadSRS loads the key (a load time
/// of at least 1 ms), the second answers already_loaded; GetStatus lists
/// the key by that id (so that the id it lists is one PreloadSRS and
/// EvictSRS take), pinned (HOT), with its params file's size, and
/// cuda_prover.v1's Status lists it by that id with its params file; a
/// job of the kind then proves without loading a key (srs_load_ms 0, the
/// same keys listed after it: the job's key is the one preloaded, not a
/// second copy), and filecoin-proofs accepts its proof (and rejects it
/// with a byte flipped); EvictSRS drops the key and frees the params
/// file's bytes, a second EvictSRS frees nothing. Ids of sizes the daemon
/// has no key of are INVALID_ARGUMENT or FAILED_PRECONDITION (no params
/// file).
///
/// Then a SnapDeals request in the other forms the daemon reads (a JSON
/// list, CIDs) proves; a request id is one job (the same proof again, no
/// new job); the same kinds prove through the cuda_prover.v1 API; vanilla
/// proofs of another randomness fail the job with filecoin-proofs' reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_post_and_snapdeals_kind_is_preloaded_proved_and_accepted_by_filecoin_proofs() {
    let f = fixture();
    let d = start_unix(2, |c| c.filecoin_test_params = Some(f.params.clone())).await;
    let mut cl = cuzk_client(&d.addr).await;
    let v1 = common::client(&d).await;
    let size = SectorSize::KIB_2;
    let kinds: [(&str, TestCircuit, pb::SubmitProofRequest, &str, Check); 3] = [
        (
            "winning-2k",
            TestCircuit::WinningPost(size),
            winning_request("w1"),
            "WinningPoSt",
            winning_ok,
        ),
        (
            "wpost-2k",
            TestCircuit::WindowPost(size),
            window_request("p1"),
            "WindowPoSt partition",
            window_ok,
        ),
        (
            "snap-2k",
            TestCircuit::SnapDeals(size),
            snap_request("s1"),
            "SnapDeals",
            snap_ok,
        ),
    ];
    let preload = |id: &str| pb::PreloadSrsRequest {
        circuit_id: id.into(),
    };
    let evict = |id: &str| pb::EvictSrsRequest {
        circuit_id: id.into(),
    };
    for (id, circuit, req, what, ok) in kinds {
        let params = parameter_files(circuit).unwrap().params;
        let listed = id.to_string();
        let bytes = std::fs::metadata(&params).unwrap().len();
        assert!(
            !loaded(&mut cl).await.iter().any(|k| k.circuit_id == listed),
            "{id}: loaded before PreloadSRS"
        );

        let p = cl.preload_srs(preload(id)).await.unwrap().into_inner();
        assert!(!p.already_loaded && p.load_time_ms > 0, "{id}: {p:?}");
        let again = cl.preload_srs(preload(id)).await.unwrap().into_inner();
        assert!(
            again.already_loaded && again.load_time_ms == 0,
            "{id}: {again:?}"
        );
        let keys = loaded(&mut cl).await;
        let k = keys
            .iter()
            .find(|k| k.circuit_id == listed)
            .unwrap_or_else(|| panic!("{id}: {listed} not in {keys:?}"));
        assert_eq!(k.tier, pb::srs_status::Tier::Hot as i32, "{id}: {k:?}");
        assert_eq!(k.size_bytes, bytes, "{id}: {k:?}");
        let ours = v1.status().await.unwrap().filecoin_keys;
        assert_eq!(ours.len(), 1, "{id}: {ours:?}");
        assert_eq!(ours[0].circuit_id, id);
        assert_eq!(ours[0].params_file, params.display().to_string());
        assert_eq!(ours[0].bytes, bytes);
        eprintln!("{id}: {} loaded in {} ms", params.display(), p.load_time_ms);

        let r = cl
            .prove(prove_request(req))
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap();
        check_proved(f, what, &r, ok);
        assert_eq!(r.srs_load_ms, 0, "{id}: the job loaded its key: {r:?}");
        assert_eq!(
            loaded(&mut cl).await,
            keys,
            "{id}: the job loaded another key"
        );

        // The listed id round-trips.
        let e = cl
            .evict_srs(evict(&k.circuit_id))
            .await
            .unwrap()
            .into_inner();
        assert!(e.was_loaded && e.freed_bytes == bytes, "{id}: {e:?}");
        assert!(
            !loaded(&mut cl).await.iter().any(|k| k.circuit_id == listed),
            "{id}: listed after EvictSRS"
        );
        let e = cl.evict_srs(evict(id)).await.unwrap().into_inner();
        assert!(!e.was_loaded && e.freed_bytes == 0, "{id}: {e:?}");
    }

    for id in ["winning-3k", "wpost-32t", "snap-", "window-2k"] {
        let e = cl.preload_srs(preload(id)).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{id}: {e:?}");
        let e = cl.evict_srs(evict(id)).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{id}: {e:?}");
    }
    // Keys of sizes without TEST parameters: nothing to load (the message
    // names the missing file), nothing to evict.
    for id in ["snap-64g", "wpost-64g", "winning-64g"] {
        let e = cl.preload_srs(preload(id)).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::FailedPrecondition, "{id}: {e:?}");
        assert!(e.message().contains(".params"), "{id}: {}", e.message());
        let e = cl.evict_srs(evict(id)).await.unwrap().into_inner();
        assert!(!e.was_loaded && e.freed_bytes == 0, "{id}: {e:?}");
    }
    assert!(loaded(&mut cl).await.is_empty());

    // SnapDeals in the request's other forms.
    let r = cl
        .prove(prove_request(snap_request_as_json_and_cids("s2")))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    check_proved(f, "SnapDeals (JSON list, CIDs)", &r, snap_ok);
    // A request id is one job: the same proof again, no new job.
    let again = cl
        .prove(prove_request(winning_request("w1")))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert!(winning_ok(f, &again.proof));
    let st = cl
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(st.total_proofs_completed, 4, "{st:?}");
    assert_eq!(st.total_proofs_failed, 0);

    // The same kinds through the cuda_prover.v1 API: a whole window PoSt
    // and a SnapDeals job.
    let window = proto::SubmitRequest {
        job: Some(proto::submit_request::Job::FilecoinPost(
            proto::FilecoinPostJob {
                kind: "window".into(),
                sector_size: 2048,
                randomness: randomness().to_vec(),
                prover_id: "e807".into(),
                vanilla_proofs: vec![f.window.clone()],
                partition_index: 0,
            },
        )),
        ..Default::default()
    };
    let out = v1.prove(window, |_, _, _| {}).await.unwrap();
    assert!(out.ok(), "{out:?}");
    assert!(window_ok(f, &out.proofs[0]));
    let snap = proto::SubmitRequest {
        job: Some(proto::submit_request::Job::FilecoinSnap(
            proto::FilecoinSnapJob {
                sector_size: 2048,
                vanilla_proofs: f.snap.clone(),
                comm_r_old: f.sector.comm_r.to_vec(),
                comm_r_new: f.updated.comm_r_new.to_vec(),
                comm_d_new: f.updated.comm_d_new.to_vec(),
            },
        )),
        ..Default::default()
    };
    let out = v1.prove(snap, |_, _, _| {}).await.unwrap();
    assert!(out.ok(), "{out:?}");
    assert!(snap_ok(f, &out.proofs[0]));
    // Vanilla proofs of another randomness: the job fails with
    // filecoin-proofs' reason, and no proof is returned.
    let mut other = winning_request("w-other");
    other.randomness[0] ^= 1;
    let r = cl
        .prove(prove_request(other))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(r.status, AwaitStatus::Failed as i32, "{r:?}");
    assert!(r.proof.is_empty());
    assert!(r.error_message.contains("vanilla"), "{}", r.error_message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn malformed_post_and_snapdeals_requests_are_refused_and_queue_nothing() {
    let f = fixture();
    let d = start_unix(1, |c| c.filecoin_test_params = Some(f.params.clone())).await;
    let mut cl = cuzk_client(&d.addr).await;
    type Edit = fn(&mut pb::SubmitProofRequest);
    let cases: Vec<(pb::SubmitProofRequest, Edit, &str)> = vec![
        (
            winning_request("a"),
            |r| r.vanilla_proofs.clear(),
            "vanilla_proofs is empty",
        ),
        (
            winning_request("b"),
            |r| {
                r.vanilla_proofs.clear();
                r.vanilla_proof = b"{\"a\":1}".to_vec()
            },
            "JSON array",
        ),
        (
            winning_request("c"),
            |r| {
                r.vanilla_proofs.clear();
                r.vanilla_proof = b"[\"%%\"]".to_vec()
            },
            "base64",
        ),
        (
            winning_request("d"),
            |r| r.vanilla_proofs = vec![vec![1, 2, 3]],
            "vanilla proof 0",
        ),
        (
            winning_request("d2"),
            |r| {
                r.vanilla_proofs.clear();
                r.vanilla_proof = vanilla_field(&[vec![1, 2, 3]])
            },
            "vanilla proof 0",
        ),
        (
            winning_request("e"),
            |r| {
                r.vanilla_proofs.clear();
                r.vanilla_proof = b"[]".to_vec()
            },
            "empty",
        ),
        (
            winning_request("f"),
            |r| r.randomness.truncate(31),
            "randomness must be 32 bytes",
        ),
        (
            winning_request("g"),
            |r| r.randomness[31] = 0xff,
            "field element",
        ),
        (
            winning_request("h"),
            |r| r.registered_proof = 7,
            "registered_proof 7",
        ),
        (
            winning_request("i"),
            |r| r.partition_index = 1,
            "partition_index",
        ),
        (window_request("j"), |r| r.registered_proof = 6, "V1 window"),
        (window_request("k"), |r| r.sector_size = 4096, "disagrees"),
        (
            window_request("l"),
            |r| r.vanilla_proofs = vec![fixture().winning.clone()],
            "challenges",
        ),
        (
            snap_request("m"),
            |r| r.comm_r_old.truncate(20),
            "comm_r_old",
        ),
        (
            snap_request_as_json_and_cids("m2"),
            |r| r.comm_r_old.truncate(20),
            "comm_r_old: a digest of 12 bytes",
        ),
        (
            snap_request("n"),
            |r| r.comm_d_new = cid_of_commitment(&[1; 32], SEALED),
            "comm_d_new: a CID of codec 0xf102",
        ),
        (
            snap_request("o"),
            |r| r.comm_r_new.clear(),
            "comm_r_new is empty",
        ),
        (
            snap_request("p"),
            |r| r.vanilla_proofs = vec![vec![0u8; 64]],
            "SnapDeals vanilla proof 0",
        ),
        (
            snap_request("q"),
            |r| r.registered_proof = 9,
            "registered_proof 9",
        ),
    ];
    for (mut req, edit, says) in cases {
        edit(&mut req);
        let e = cl.submit_proof(req.clone()).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{says}: {e:?}");
        assert!(e.message().contains(says), "{says}: {}", e.message());
        let e = cl.prove(prove_request(req)).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{says}: {e:?}");
    }
    assert_eq!(open_jobs(&mut cl).await, 0);
    assert_eq!(
        d.service
            .jobs()
            .metrics
            .submitted
            .load(std::sync::atomic::Ordering::Relaxed),
        0,
        "nothing was queued"
    );
}

/// A Filecoin key lives in the daemon's one key store: its host bytes show
/// among the resident keys of Status (beside its circuit id in
/// `filecoin_keys`), count against the key budget, and a built-in job's
/// key evicts it once it is no longer pinned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filecoin_key_counts_in_the_daemons_key_budget() {
    let circuit = TestCircuit::WinningPost(SectorSize::KIB_2);
    let dir = test_params(&[circuit]);
    let params = parameter_files(circuit).unwrap().params;
    let name = params.display().to_string();
    let start = |budget: Option<u64>| {
        let dir = dir.clone();
        common::start_with_params(1, temp_dir("fc-budget"), move |c| {
            c.filecoin_test_params = Some(dir);
            c.key_budget_bytes = budget;
        })
    };
    // The keys' sizes, from a daemon without a limit.
    let (fc_bytes, chain_bytes) = {
        let d = start(None).await;
        let filecoin = d.service.jobs().filecoin_handle().unwrap();
        filecoin.preload(&params).unwrap();
        let cl = common::client(&d).await;
        let st = cl.status().await.unwrap();
        let k = st.keys.iter().find(|k| k.key == name).expect("listed");
        assert!(k.pinned && k.bytes > 0, "{k:?}");
        assert_eq!(st.filecoin_keys.len(), 1, "{:?}", st.filecoin_keys);
        let chain = cl.preload(common::built_in_key("chain", 7)).await.unwrap();
        (k.bytes, chain.bytes)
    };
    // Room for either key, not both.
    let d = start(Some(fc_bytes.max(chain_bytes))).await;
    let filecoin = d.service.jobs().filecoin_handle().unwrap();
    filecoin.preload(&params).unwrap();
    let cl = common::client(&d).await;
    let st = cl.status().await.unwrap();
    assert_eq!(
        st.keys
            .iter()
            .map(|k| (k.key.clone(), k.bytes))
            .collect::<Vec<_>>(),
        vec![(name.clone(), fc_bytes)]
    );
    let store = d.service.jobs().keys().store().clone();
    assert_eq!(store.usage().used, fc_bytes, "counted once");
    // Pinned: the built-in key does not fit beside it.
    let id = cl.submit(common::job("chain", 7, 1, 1, 0)).await.unwrap();
    let out = cl.await_job(&id, |_, _, _| {}).await.unwrap();
    assert!(out.error.contains("key budget"), "{}", out.error);
    // Unpinned, it is evicted to make room.
    assert!(store.unpin(&name));
    let id = cl.submit(common::job("chain", 7, 1, 2, 0)).await.unwrap();
    assert!(cl.await_job(&id, |_, _, _| {}).await.unwrap().ok());
    let st = cl.status().await.unwrap();
    assert!(st.keys.iter().all(|k| k.key != name), "{:?}", st.keys);
    assert!(st.filecoin_keys.is_empty(), "{:?}", st.filecoin_keys);
    assert!(filecoin.loaded_keys().is_empty());
    assert_eq!(store.usage().evictions, 1);
    assert_eq!(store.usage().used, chain_bytes);
}
