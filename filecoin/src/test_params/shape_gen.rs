//! TEST parameters from the circuit's shape (the default generator): the
//! blank circuit's A, B and C are recorded once, the key is computed from
//! them by the pipeline's `setup` (QAP at tau, fixed-base multiplication on
//! every core, or on a device's kernels with a [`KeygenDevice`]) and written
//! into filecoin-proofs' cache layout: `.params` (through a temporary file
//! and a rename), `.vk`, `.meta`, the `.shape` file the prover's witness
//! path reads, and the `.test` marker.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use bellperson::groth16::VerifyingKey;
use blstrs::Bls12;
use cuda_prover_pipeline::setup::{make_test_key_on, write_test_key, TestKeyReport};
use cuda_prover_pipeline::{shape_file, vk_fingerprint, ProvingKey, ShapeData};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::{
    public_params, window_post_public_params, winning_post_public_params,
};
use filecoin_proofs::{MerkleTreeTrait, PoRepConfig, PoStConfig, TreeRHasher};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::parameter_cache::CacheEntryMetadata;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};

use super::files::ParameterFiles;
use super::marker::TestMarker;
use super::{KeygenDevice, TestCircuit};
use crate::config::{porep_config, post_config, PostKind, SealVersion};
use crate::error::{FilecoinError, Result};
use crate::update::update_public_params;
use crate::with_sector_shape;
use cuda_prover_groth16::key_store::shape_path;

fn proofs_err(e: anyhow::Error) -> FilecoinError {
    FilecoinError::TestParameters(format!("{e:#}"))
}

fn glue_err(what: &str) -> impl Fn(cuda_prover_pipeline::Error) -> FilecoinError + '_ {
    move |e| FilecoinError::TestParameters(format!("{what}: {e}"))
}

/// Records the shape of `circuit`'s blank circuit (no witness).
pub(super) fn record_shape(circuit: TestCircuit) -> Result<ShapeData> {
    match circuit {
        TestCircuit::Porep(size) => {
            let config = porep_config(size, SealVersion::V1_1)?;
            with_sector_shape!(size, porep_shape, &config)
        }
        TestCircuit::WinningPost(size) => {
            let config = post_config(size, PostKind::Winning)?;
            with_sector_shape!(size, post_shape, &config)
        }
        TestCircuit::WindowPost(size) => {
            let config = post_config(size, PostKind::Window)?;
            with_sector_shape!(size, post_shape, &config)
        }
        TestCircuit::SnapDeals(size) => {
            let pp = update_public_params(size.bytes())?;
            with_sector_shape!(size, update_shape, &pp)
        }
    }
}

fn record(c: impl bellpepper_core::Circuit<blstrs::Scalar>) -> Result<ShapeData> {
    ShapeData::record(c).map_err(glue_err("recording the circuit's shape"))
}

/// A PoRep partition's shape. From 512 MiB up its challenges are recorded
/// on every core: the partition circuit of a test C1 of the same size
/// (seconds to make; its values play no part in the shape), cut into its
/// prefix and one piece a challenge. Smaller sectors (seconds in one
/// thread, where making the test C1 costs about as much as it saves), and
/// a configuration a test C1 cannot be made for, record the blank circuit
/// in one thread.
fn porep_shape<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig) -> Result<ShapeData> {
    if u64::from(config.sector_size) < 512 << 20 {
        return porep_shape_blank::<Tree>(config);
    }
    match porep_shape_in_pieces::<Tree>(config) {
        Ok(shape) => Ok(shape),
        Err(e) => {
            log::info!("recording the PoRep shape in one thread ({e})");
            porep_shape_blank::<Tree>(config)
        }
    }
}

fn porep_shape_in_pieces<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
) -> Result<ShapeData> {
    let size = crate::SectorSize::new(u64::from(config.sector_size))?;
    let registered = crate::RegisteredSeal::new(size, SealVersion::V1_1);
    let c1 = crate::test_c1::generate_test_c1(registered, 1)?;
    let output = crate::c1::C1File::parse(&c1.c1_json)?.output::<Tree>()?;
    let prepared = crate::seal::prepare_c2(
        config,
        output,
        c1.identity.prover_id,
        c1.identity.sector_id.into(),
    )?;
    let partition = prepared
        .circuits
        .into_iter()
        .next()
        .ok_or_else(|| FilecoinError::TestParameters("the test C1 has no partition".into()))?;
    partition
        .record_shape()
        .map_err(glue_err("recording the circuit's shape"))
}

fn porep_shape_blank<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig) -> Result<ShapeData> {
    let pp = public_params::<Tree>(config).map_err(proofs_err)?;
    type C<'a, T> = StackedCompound<T, DefaultPieceHasher>;
    type S<'a, T> = StackedDrg<'a, T, DefaultPieceHasher>;
    record(<C<'_, Tree> as CompoundProof<S<'_, Tree>, _>>::blank_circuit(&pp))
}

fn post_shape<Tree: 'static + MerkleTreeTrait>(config: &PoStConfig) -> Result<ShapeData> {
    let pp = match config.typ {
        filecoin_proofs::PoStType::Winning => winning_post_public_params::<Tree>(config),
        filecoin_proofs::PoStType::Window => window_post_public_params::<Tree>(config),
    }
    .map_err(proofs_err)?;
    type P<'a, T> = FallbackPoSt<'a, T>;
    record(<FallbackPoStCompound<Tree> as CompoundProof<
        P<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::blank_circuit(&pp))
}

fn update_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pp: &storage_proofs_update::PublicParams,
) -> Result<ShapeData> {
    type U<T> = storage_proofs_update::EmptySectorUpdate<T>;
    type Circ<T> = storage_proofs_update::EmptySectorUpdateCircuit<T>;
    type Comp<T> = storage_proofs_update::EmptySectorUpdateCompound<T>;
    record(<Comp<Tree> as CompoundProof<U<Tree>, Circ<Tree>>>::blank_circuit(pp))
}

fn write_file(path: &Path, f: impl FnOnce(&mut BufWriter<File>) -> Result<()>) -> Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let run = || -> Result<()> {
        let file = File::create(&tmp)
            .map_err(|e| FilecoinError::io(format!("creating {}", tmp.display()), e))?;
        let mut w = BufWriter::with_capacity(8 << 20, file);
        f(&mut w)?;
        let file = w
            .into_inner()
            .map_err(|e| FilecoinError::io(format!("writing {}", tmp.display()), e.into_error()))?;
        file.sync_all()
            .map_err(|e| FilecoinError::io(format!("syncing {}", tmp.display()), e))?;
        fs::rename(&tmp, path)
            .map_err(|e| FilecoinError::io(format!("renaming {}", tmp.display()), e))
    };
    run().inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

/// The generator's name in the `.test` marker.
pub(super) const NAME: &str = "cuda-prover";

/// Records the shape of `circuit`, saying how long it took.
fn timed_shape(
    circuit: TestCircuit,
    progress: &mut dyn FnMut(&str),
) -> Result<(ShapeData, std::time::Duration)> {
    let t = Instant::now();
    let shape = record_shape(circuit)?;
    let shape_time = t.elapsed();
    progress(&format!(
        "{}: shape recorded in {:.1} s ({} constraints)",
        circuit.label(),
        shape_time.as_secs_f64(),
        shape.num_constraints()
    ));
    Ok((shape, shape_time))
}

/// Records the shape and writes the key to `out`: the verifying key, the
/// report (the shape's time first) and the shape.
pub(super) fn write_key(
    circuit: TestCircuit,
    seed: [u8; 32],
    out: &mut dyn Write,
    progress: &mut dyn FnMut(&str),
) -> Result<(VerifyingKey<Bls12>, TestKeyReport, ShapeData)> {
    let (shape, shape_time) = timed_shape(circuit, progress)?;
    let (vk, mut report) =
        write_test_key(&shape, seed, out, progress).map_err(glue_err("generating the key"))?;
    report.times.insert(0, ("shape", shape_time));
    Ok((vk, report, shape))
}

/// `circuit`'s TEST key made on `device` and kept in memory, with its
/// shape; only the small files (`.vk`, `.meta`) are written into `files`,
/// for filecoin-proofs' verifier.
pub(super) fn make_in_memory(
    circuit: TestCircuit,
    files: &ParameterFiles,
    seed: [u8; 32],
    device: KeygenDevice<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<(ProvingKey, ShapeData, TestKeyReport)> {
    let (shape, shape_time) = timed_shape(circuit, progress)?;
    let (key, mut report) =
        make_test_key_on(&shape, seed, device.ctx, device.ordinal, None, progress)
            .map_err(glue_err("generating the key on the device"))?;
    report.times.insert(0, ("shape", shape_time));
    write_small_files(circuit, files, key.vk())?;
    Ok((key, shape, report))
}

/// The `.vk` and `.meta` files of a key.
fn write_small_files(
    circuit: TestCircuit,
    files: &ParameterFiles,
    vk: &VerifyingKey<Bls12>,
) -> Result<()> {
    write_file(&files.vk, |w| {
        vk.write(&mut *w)
            .map_err(|e| FilecoinError::io(format!("writing {}", files.vk.display()), e))
    })?;
    let meta = CacheEntryMetadata {
        sector_size: circuit.size().bytes(),
    };
    write_file(&files.meta, |w| {
        serde_json::to_writer(&mut *w, &meta)
            .map_err(|e| FilecoinError::TestParameters(format!("writing the metadata: {e}")))?;
        w.flush()
            .map_err(|e| FilecoinError::io(format!("writing {}", files.meta.display()), e))
    })
}

/// Generates `circuit`'s TEST parameters from `seed` into `files`, the
/// points on `device` when one is given (the key then passes through host
/// memory whole), else on this host's cores (streamed to the file).
pub(super) fn generate(
    circuit: TestCircuit,
    files: &ParameterFiles,
    seed: [u8; 32],
    device: Option<KeygenDevice<'_>>,
    progress: &mut dyn FnMut(&str),
) -> Result<TestKeyReport> {
    let (vk, report, shape) = match device {
        Some(d) => {
            let (shape, shape_time) = timed_shape(circuit, progress)?;
            let (key, mut report) = make_test_key_on(
                &shape,
                seed,
                d.ctx,
                d.ordinal,
                Some(&files.params),
                progress,
            )
            .map_err(glue_err("generating the key on the device"))?;
            report.times.insert(0, ("shape", shape_time));
            (key.vk().clone(), report, shape)
        }
        None => {
            let mut made = None;
            write_file(&files.params, |w| {
                made = Some(write_key(circuit, seed, w, progress)?);
                Ok(())
            })?;
            made.ok_or_else(|| FilecoinError::TestParameters("the key was not written".into()))?
        }
    };
    write_small_files(circuit, files, &vk)?;
    // The prover's witness path reads the shape from here instead of
    // recording it again at its first job.
    shape_file::save_for(&shape, &vk_fingerprint(&vk), &shape_path(&files.params))
        .map_err(glue_err("writing the shape file"))?;
    TestMarker::new(circuit, NAME, seed).write(&files.params)?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SectorSize;

    fn both<Tree: 'static + MerkleTreeTrait>(
        config: &PoRepConfig,
    ) -> Result<(ShapeData, ShapeData)> {
        let t = Instant::now();
        let pieces = porep_shape_in_pieces::<Tree>(config)?;
        let pieces_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let blank = porep_shape_blank::<Tree>(config)?;
        eprintln!(
            "{} constraints: in pieces {pieces_s:.2} s (test C1 included), blank {:.2} s",
            blank.num_constraints(),
            t.elapsed().as_secs_f64()
        );
        Ok((pieces, blank))
    }

    /// The shape recorded a challenge per core from a test C1's partition
    /// is the blank circuit's, recorded in one thread: the same rows,
    /// columns and coefficient codes.
    #[test]
    fn porep_shape_in_pieces_is_the_blank_circuits() {
        for bytes in [2u64 << 10, 8 << 20] {
            let size = SectorSize::new(bytes).unwrap();
            let config = porep_config(size, SealVersion::V1_1).unwrap();
            let (pieces, blank) = with_sector_shape!(size, both, &config).unwrap();
            assert_eq!(pieces.num_constraints(), blank.num_constraints(), "{bytes}");
            assert!(pieces == blank, "{bytes}: the shapes differ");
        }
    }
}
