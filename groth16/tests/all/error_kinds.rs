//! `EngineError::code()`: the core's codes, kept as the errors' sources,
//! classified into the family-neutral `ErrorKind`.

use std::path::PathBuf;

use cuda_prover_engine::{EngineError, ErrorKind};
use cuda_prover_groth16::cause;
use cuda_prover_groth16::params::{key_path, load_key_and_shape};
use cuda_prover_pipeline::circuits::{BuiltIn, Kind};
use cuda_prover_pipeline::{Context, ErrorCode, ProvingKey};

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cp-engine-kinds-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn the_core_codes_map_to_kinds() {
    use ErrorCode::*;
    let cases = [
        (InvalidArgument, ErrorKind::InvalidInput),
        (DeviceIndex, ErrorKind::InvalidInput),
        (ShapeMismatch, ErrorKind::InvalidInput),
        (Unsatisfied, ErrorKind::UnsatisfiedWitness),
        (ParamsFormat, ErrorKind::KeyInvalid),
        (ParamsIo, ErrorKind::KeyUnavailable),
        (OutOfMemory, ErrorKind::OutOfDeviceMemory),
        (Device, ErrorKind::DeviceFault),
        (InjectedFault, ErrorKind::DeviceFault),
        (Unsupported, ErrorKind::Unavailable),
        (NoDeviceBound, ErrorKind::Internal),
        (Internal, ErrorKind::Internal),
        (Unknown(999), ErrorKind::Internal),
    ];
    for (code, kind) in cases {
        assert_eq!(ErrorKind::of_core(code), kind, "{code:?}");
    }
    assert_eq!(EngineError::Cancelled.code(), ErrorKind::Cancelled);
    assert_eq!(
        EngineError::Verification {
            partition: 0,
            device: 0
        }
        .code(),
        ErrorKind::VerificationFailed
    );
}

#[test]
fn a_corrupt_key_is_key_invalid_with_its_core_code() {
    // Bytes that are not a params file: the core's ParamsFormat, kept.
    let e = ProvingKey::from_bytes(&[0x5a; 4096])
        .err()
        .expect("garbage accepted");
    let e = EngineError::Prepare(cause(e));
    assert_eq!(e.core_code(), Some(ErrorCode::ParamsFormat), "{e}");
    assert_eq!(e.code(), ErrorKind::KeyInvalid, "{e}");
    assert!(std::error::Error::source(&e).is_some(), "{e}");
    // The same through the params cache: the file named, the code kept.
    let dir = temp_dir("corrupt");
    let c = BuiltIn::new(Kind::Chain, 7, 0).unwrap();
    std::fs::write(key_path(&dir, &c), [0x5a; 4096]).unwrap();
    let e = load_key_and_shape(&dir, &c, &|_| {})
        .err()
        .expect("corrupt key accepted");
    assert_eq!(e.core_code(), Some(ErrorCode::ParamsFormat), "{e}");
    assert_eq!(e.code(), ErrorKind::KeyInvalid, "{e}");
    assert!(e.to_string().contains("delete the file"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn out_of_device_memory_keeps_its_code() {
    let dir = temp_dir("oom");
    let c = BuiltIn::new(Kind::Chain, 7, 0).unwrap();
    let (key, _) = load_key_and_shape(&dir, &c, &|_| {}).unwrap();
    let ctx = Context::host(1).unwrap();
    ctx.set_memory_limit(0, Some(1024)).unwrap();
    let e = key.prepare(&ctx, 0).expect_err("a key placed in 1 KiB");
    let e = EngineError::Device {
        device: 0,
        source: cause(e),
    };
    assert_eq!(e.core_code(), Some(ErrorCode::OutOfMemory), "{e}");
    assert_eq!(e.code(), ErrorKind::OutOfDeviceMemory, "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
