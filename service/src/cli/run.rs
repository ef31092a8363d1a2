//! `run`: the dispatch of a parsed command line; `serve` has its own file,
//! the client subcommands are here (each one request to the daemon).

use std::process::ExitCode;

use cuda_prover_service::{Client, ClientError};

use super::args::{Cli, Command, Remote};
use super::output::{finish, print_status, progress_bar, spinner};
use super::serve::serve;
use super::submit::submit_request;

async fn connect(r: &Remote) -> Result<Client, ClientError> {
    Client::connect(&r.server, r.token.as_deref()).await
}

pub(crate) async fn run(cli: Cli) -> Result<ExitCode, String> {
    let s = |e: ClientError| e.to_string();
    match cli.command {
        Command::Serve(args) => serve(args).await,
        Command::Submit { remote, job } => {
            let req = submit_request(job)?;
            let id = connect(&remote)
                .await
                .map_err(s)?
                .submit(req)
                .await
                .map_err(s)?;
            println!("{id}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Await {
            remote,
            job,
            proofs_out,
            proof_out,
            report,
        } => {
            let client = connect(&remote).await.map_err(s)?;
            let bar = progress_bar();
            let out = client
                .await_job(&job, |done, total, state| {
                    if let Some(b) = &bar {
                        b.set_length(total as u64);
                        b.set_position(done as u64);
                        b.set_message(state.to_string());
                    }
                })
                .await;
            if let Some(b) = &bar {
                b.finish_and_clear();
            }
            let out = out.map_err(s)?;
            if let Some(path) = proof_out {
                std::fs::write(&path, out.proofs.concat())
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
            finish(&out, proofs_out, report)
        }
        Command::Status { remote } => {
            let st = connect(&remote)
                .await
                .map_err(s)?
                .status()
                .await
                .map_err(s)?;
            print_status(&st);
            Ok(ExitCode::SUCCESS)
        }
        Command::Cancel { remote, job } => {
            let state = connect(&remote)
                .await
                .map_err(s)?
                .cancel(&job)
                .await
                .map_err(s)?;
            println!("job {job}: {state}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Metrics { remote } => {
            print!(
                "{}",
                connect(&remote)
                    .await
                    .map_err(s)?
                    .metrics()
                    .await
                    .map_err(s)?
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Preload { remote, key } => {
            let bar = spinner("loading the key (generating it when missing)");
            let r = connect(&remote)
                .await
                .map_err(s)?
                .preload(key.request())
                .await;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            let r = r.map_err(s)?;
            println!("resident: {} ({} MiB, pinned)", r.key, r.bytes >> 20);
            for e in r.evicted {
                println!("evicted: {e}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Evict { remote, key } => {
            let r = connect(&remote)
                .await
                .map_err(s)?
                .evict(key.request())
                .await
                .map_err(s)?;
            println!("evicted: {}", r.key);
            Ok(ExitCode::SUCCESS)
        }
        Command::Drain { remote } => {
            connect(&remote)
                .await
                .map_err(s)?
                .drain()
                .await
                .map_err(s)?;
            println!("drained");
            Ok(ExitCode::SUCCESS)
        }
        Command::Health {
            server,
            service,
            wait_s,
        } => {
            let wait = wait_s.map(std::time::Duration::from_secs);
            match cuda_prover_service::health::check(&server, &service, wait).await {
                Ok(status) => {
                    println!("{status}");
                    Ok(if status == "SERVING" {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::FAILURE
                    })
                }
                Err(e) => Err(e),
            }
        }
        Command::Shutdown { remote, now } => {
            connect(&remote)
                .await
                .map_err(s)?
                .shutdown(now)
                .await
                .map_err(s)?;
            println!("stopped");
            Ok(ExitCode::SUCCESS)
        }
    }
}
