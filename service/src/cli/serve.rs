//! `serve`: the daemon, from its options to the engine, the service and
//! its listeners, until a stop signal.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use cuda_prover_engine::{open_context, DeviceSelection, Engine, EngineConfig};
use cuda_prover_service::listener::{ListenAddr, Listener};
use cuda_prover_service::{Service, ServiceConfig};

use super::serve_args::ServeArgs;

pub(super) async fn serve(args: ServeArgs) -> Result<ExitCode, String> {
    let ServeArgs {
        listen,
        socket_mode,
        metrics_listen,
        token,
        params_dir,
        max_queue,
        max_running,
        max_request_bytes,
        key_memory_mib,
        dev,
        gpu_devices,
        policy,
        workers_per_device,
        prepare_ahead,
        no_filecoin,
        filecoin_test_params,
        max_filecoin_request_mib,
        max_connections,
        idle_timeout_s,
        state_dir,
        preload,
        retention,
    } = args;
    let addr: ListenAddr = listen.parse().map_err(|e| format!("--listen {e}"))?;
    if let ListenAddr::Tcp(a) = &addr {
        cuda_prover_service::server::check_listen(a, token.as_deref())?;
    }
    let devices = match gpu_devices {
        Some(list) => DeviceSelection::parse_list(&list)?,
        None => DeviceSelection::All,
    };
    let ctx =
        Arc::new(open_context(dev.backend, dev.host_devices, &devices).map_err(|e| e.to_string())?);
    let engine = Engine::new(
        ctx,
        EngineConfig {
            devices,
            policy,
            workers_per_device: workers_per_device as usize,
            prepare_ahead: prepare_ahead as usize,
            ..Default::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let config = ServiceConfig {
        params_dirs: params_dir,
        max_queue: max_queue as usize,
        max_running: max_running as usize,
        max_request_bytes: max_request_bytes as usize,
        // At most u64::MAX >> 20 MiB (the option's bound): no wrap.
        key_budget_bytes: key_memory_mib.map(|m| m << 20),
        token,
        filecoin: !no_filecoin,
        filecoin_test_params: test_params_dir(filecoin_test_params)?,
        // At most 256 MiB (the option's bound): no wrap.
        max_filecoin_request_bytes: (max_filecoin_request_mib as usize) << 20,
        max_connections: max_connections as usize,
        idle_timeout: std::time::Duration::from_secs(idle_timeout_s.into()),
        state_dir,
        preload,
        retention,
        ..Default::default()
    };
    let service = Service::new(Arc::new(engine), config)?;
    let listener = Listener::bind(&addr, socket_mode).await?;
    let bound = listener.describe();
    if let Some(m) = metrics_listen {
        let ml = tokio::net::TcpListener::bind(&m)
            .await
            .map_err(|e| format!("cannot listen on {m}: {e}"))?;
        let ma = ml.local_addr().map_err(|e| e.to_string())?;
        if !ma.ip().is_loopback() {
            return Err(format!("metrics on {ma}: only a loopback address is allowed (the metrics port has no token)"));
        }
        eprintln!("metrics on http://{ma}/metrics");
        tokio::spawn(cuda_prover_service::metrics_http::serve_metrics(
            service.clone(),
            ml,
        ));
    }
    // The address alone on a line: scripts and tests read it.
    println!("listening on {bound}");
    use std::io::Write;
    let _ = std::io::stdout().flush();
    cuda_prover_service::serve(service, listener, stop_signal()).await?;
    eprintln!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM (systemd's stop).
async fn stop_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

/// `--filecoin-test-params [DIR]`: the given directory, or the default
/// test parameter directory when none is given.
fn test_params_dir(arg: Option<PathBuf>) -> Result<Option<PathBuf>, String> {
    match arg {
        None => Ok(None),
        Some(d) if !d.as_os_str().is_empty() => Ok(Some(d)),
        Some(_) => {
            #[cfg(feature = "filecoin")]
            {
                cuda_prover_filecoin::test_params::default_test_parameter_dir()
                    .map(Some)
                    .map_err(|e| e.to_string())
            }
            #[cfg(not(feature = "filecoin"))]
            Err("--filecoin-test-params: this build has no Filecoin jobs".into())
        }
    }
}
