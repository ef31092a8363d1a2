//! Prometheus text over plain HTTP: `GET /metrics` on its own address
//! (loopback by default, like the gRPC port).

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::server::Service;

/// Answers `GET /metrics` with the daemon's metrics; anything else 404.
pub async fn serve_metrics(service: Arc<Service>, listener: TcpListener) {
    loop {
        let Ok((mut sock, _)) = listener.accept().await else {
            continue;
        };
        let service = service.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            let n = match sock.read(&mut buf).await {
                Ok(n) => n,
                Err(_) => return,
            };
            let head = String::from_utf8_lossy(&buf[..n]);
            let path = head.split_whitespace().nth(1).unwrap_or("");
            let (status, body) = if head.starts_with("GET ") && path == "/metrics" {
                ("200 OK", service.prometheus())
            } else {
                (
                    "404 Not Found",
                    "only GET /metrics is served here\n".to_string(),
                )
            };
            let reply = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(reply.as_bytes()).await;
        });
    }
}
