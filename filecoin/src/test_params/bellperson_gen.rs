//! TEST parameters from bellperson's own generator (`--generator
//! bellperson`): filecoin-proofs' `groth_params` with a seeded rng, which
//! synthesizes the circuit and writes the files itself. Minutes for a
//! 2 KiB PoRep on two cores; kept to compare with the shape generator.

use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::{
    public_params, window_post_public_params, winning_post_public_params,
};
use filecoin_proofs::{MerkleTreeTrait, PoRepConfig, PoStConfig, TreeRHasher};
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};

use super::TestCircuit;
use crate::config::{porep_config, post_config, PostKind, SealVersion};
use crate::error::{FilecoinError, Result};
use crate::update::update_public_params;
use crate::with_sector_shape;

pub(super) fn generate(circuit: TestCircuit, rng: &mut ChaCha20Rng) -> Result<()> {
    match circuit {
        TestCircuit::Porep(size) => {
            let config = porep_config(size, SealVersion::V1_1)?;
            with_sector_shape!(size, generate_porep, &config, rng)
        }
        TestCircuit::WinningPost(size) => {
            let config = post_config(size, PostKind::Winning)?;
            with_sector_shape!(size, generate_post, &config, rng)
        }
        TestCircuit::WindowPost(size) => {
            let config = post_config(size, PostKind::Window)?;
            with_sector_shape!(size, generate_post, &config, rng)
        }
        TestCircuit::SnapDeals(size) => {
            let pp = update_public_params(size.bytes())?;
            with_sector_shape!(size, generate_update, &pp, rng)
        }
    }
}

fn generate_update<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pp: &storage_proofs_update::PublicParams,
    rng: &mut ChaCha20Rng,
) -> Result<()> {
    let e = |e: anyhow::Error| FilecoinError::TestParameters(format!("{e:#}"));
    type U<T> = storage_proofs_update::EmptySectorUpdate<T>;
    type Circ<T> = storage_proofs_update::EmptySectorUpdateCircuit<T>;
    type Comp<T> = storage_proofs_update::EmptySectorUpdateCompound<T>;
    <Comp<Tree> as CompoundProof<U<Tree>, Circ<Tree>>>::groth_params(Some(&mut *rng), pp)
        .map_err(e)?;
    <Comp<Tree> as CompoundProof<U<Tree>, Circ<Tree>>>::verifying_key(Some(rng), pp).map_err(e)?;
    Ok(())
}

fn generate_porep<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
    rng: &mut ChaCha20Rng,
) -> Result<()> {
    let e = |e: anyhow::Error| FilecoinError::TestParameters(format!("{e:#}"));
    let pp = public_params::<Tree>(config).map_err(e)?;
    type C<'a, T> = StackedCompound<T, DefaultPieceHasher>;
    type S<'a, T> = StackedDrg<'a, T, DefaultPieceHasher>;
    <C<'_, Tree> as CompoundProof<S<'_, Tree>, _>>::groth_params(Some(&mut *rng), &pp)
        .map_err(e)?;
    <C<'_, Tree> as CompoundProof<S<'_, Tree>, _>>::verifying_key(Some(rng), &pp).map_err(e)?;
    Ok(())
}

fn generate_post<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    rng: &mut ChaCha20Rng,
) -> Result<()> {
    let e = |e: anyhow::Error| FilecoinError::TestParameters(format!("{e:#}"));
    let pp = match config.typ {
        filecoin_proofs::PoStType::Winning => winning_post_public_params::<Tree>(config),
        filecoin_proofs::PoStType::Window => window_post_public_params::<Tree>(config),
    }
    .map_err(e)?;
    type P<'a, T> = FallbackPoSt<'a, T>;
    <FallbackPoStCompound<Tree> as CompoundProof<P<'_, Tree>, FallbackPoStCircuit<Tree>>>::groth_params(
        Some(&mut *rng),
        &pp,
    )
    .map_err(e)?;
    <FallbackPoStCompound<Tree> as CompoundProof<P<'_, Tree>, FallbackPoStCircuit<Tree>>>::verifying_key(
        Some(rng),
        &pp,
    )
    .map_err(e)?;
    Ok(())
}
