//! bellperson's own CPU prover on the same circuits and params file, for
//! comparison.

use std::time::Instant;

use bellperson::groth16::{create_random_proof_batch, MappedParameters, Parameters};
use blstrs::Bls12;
use cuda_prover_filecoin::c1::C1File;
use cuda_prover_filecoin::sealing::{verify_commit, SealedSector};
use cuda_prover_filecoin::{prepare_c2, FilecoinError};
use filecoin_proofs::MerkleTreeTrait;
use serde_json::{json, Value};
use storage_proofs_core::sector::SectorId;

/// bellperson 0.27's own CPU prover on the same circuits and params file.
pub fn bellperson_run<Tree: 'static + MerkleTreeTrait>(
    sector: &SealedSector,
) -> Result<Value, FilecoinError> {
    let config = sector.registered.porep_config()?;
    let t_total = Instant::now();
    let c1 = C1File::parse(&sector.c1_json)?.output::<Tree>()?;
    let t = Instant::now();
    let prepared = prepare_c2::<Tree>(
        &config,
        c1,
        sector.prover_id,
        SectorId::from(sector.sector_id),
    )?;
    let prepare_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let params: MappedParameters<Bls12> =
        Parameters::build_mapped_parameters(prepared.params.clone(), false).map_err(|e| {
            FilecoinError::Parameters {
                path: prepared.params.clone(),
                message: e.to_string(),
            }
        })?;
    let key_load_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let proofs = create_random_proof_batch(prepared.circuits, &params, &mut rand::rngs::OsRng)
        .map_err(|e| FilecoinError::Proofs(format!("bellperson: {e}")))?;
    let prove_s = t.elapsed().as_secs_f64();
    let mut bytes = Vec::new();
    for p in &proofs {
        p.write(&mut bytes)
            .map_err(|e| FilecoinError::Proofs(e.to_string()))?;
    }
    let t = Instant::now();
    let ok = verify_commit(sector, &bytes)?;
    if !ok {
        return Err(FilecoinError::Rejected("bellperson seal commit"));
    }
    Ok(json!({
        "checks_and_circuits_s": prepare_s,
        "key_load_s": key_load_s,
        "synthesis_and_prove_s": prove_s,
        "verify_s": t.elapsed().as_secs_f64(),
        "total_s": t_total.elapsed().as_secs_f64(),
    }))
}
