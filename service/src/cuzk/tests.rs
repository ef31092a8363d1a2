//! Unit tests of the cuzk.v1 service's requests: their digest.

use super::submit::digest;
use crate::cuzk_proto as pb;

#[test]
fn digests_see_every_input() {
    // (The digest is FNV-1a: `requests`' tests check it.)
    let r = pb::SubmitProofRequest {
        request_id: "x".into(),
        proof_kind: 1,
        vanilla_proof: b"c1".to_vec(),
        miner_id: 1000,
        ..Default::default()
    };
    let other_id = pb::SubmitProofRequest {
        request_id: "y".into(),
        ..r.clone()
    };
    assert_eq!(digest(&r), digest(&other_id));
    let moved = pb::SubmitProofRequest {
        vanilla_proof: b"c".to_vec(),
        randomness: b"1".to_vec(),
        ..r.clone()
    };
    assert_ne!(digest(&r), digest(&moved));
    let miner = pb::SubmitProofRequest {
        miner_id: 1001,
        ..r.clone()
    };
    assert_ne!(digest(&r), digest(&miner));
    let listed = pb::SubmitProofRequest {
        vanilla_proofs: vec![b"v".to_vec()],
        ..r.clone()
    };
    let listed_other = pb::SubmitProofRequest {
        vanilla_proofs: vec![b"w".to_vec()],
        ..r.clone()
    };
    assert_ne!(digest(&r), digest(&listed));
    assert_ne!(digest(&listed), digest(&listed_other));
}
