//! `cuda-prover devices`: the devices the prover would use.

use cuda_prover_engine::{list_devices, BackendArgs, EngineError};

/// Lists the devices of the chosen backend on stdout.
pub fn run(dev: BackendArgs) -> Result<(), EngineError> {
    // Listing creates no CUDA context: free GPU memory is not shown.
    let (name, devices) = list_devices(dev.backend, dev.host_devices)?;
    println!("backend: {name}");
    for d in devices {
        println!(
            "device {}: {}{} cc {}.{}, {}{} MiB",
            d.ordinal,
            d.name,
            if d.simulated { " (simulated)" } else { "" },
            d.compute_capability.0,
            d.compute_capability.1,
            if d.simulated {
                format!("{} MiB free of ", d.free_bytes >> 20)
            } else {
                String::new()
            },
            d.total_bytes >> 20
        );
    }
    Ok(())
}
