// Generates the gRPC code from the versioned .proto with a vendored protoc:
// no protoc needs to be installed.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    std::env::set_var("PROTOC", protoc);
    println!("cargo:rerun-if-changed=proto/cuda_prover/v1/prover.proto");
    println!("cargo:rerun-if-changed=proto/cuzk/v1/cuzk.proto");
    tonic_build::configure().compile_protos(
        &[
            "proto/cuda_prover/v1/prover.proto",
            "proto/cuzk/v1/cuzk.proto",
        ],
        &["proto"],
    )?;
    Ok(())
}
