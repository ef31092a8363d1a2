//! The size of a request as it came over the wire. prost drops unknown
//! fields while decoding, so `encoded_len` of a decoded message can be far
//! below what the client sent (a small job padded with a large unknown
//! field); the limits are checked against the bytes received. A layer
//! counts each request's body bytes into a [`WireBytes`] extension; a unary
//! handler runs after its body is read, so the count is complete there.
//! Each kind of job has its own limit ([`check_limit`]).

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::body::BoxBody;
use tonic::codegen::http::Request;
use tonic::codegen::{Body, Bytes, Service};

/// Bytes of a request's body (its gRPC frames) received so far.
#[derive(Debug, Clone, Default)]
pub struct WireBytes(Arc<AtomicUsize>);

impl WireBytes {
    /// The message's bytes: the body less gRPC's 5-byte frame header.
    pub fn message_bytes(&self) -> usize {
        self.0.load(Ordering::Relaxed).saturating_sub(5)
    }
}

/// The wire bytes of `req`'s message, when the layer counted them.
pub fn of<T>(req: &tonic::Request<T>) -> Option<usize> {
    req.extensions()
        .get::<WireBytes>()
        .map(WireBytes::message_bytes)
}

/// Refuses a request of `kind` (as a client reads it: "a built-in job",
/// "a Filecoin C2 job") whose message is above `limit` bytes, naming both.
pub fn check_limit(
    kind: &str,
    size: usize,
    limit: usize,
) -> Result<(), crate::errors::ServiceError> {
    if size <= limit {
        return Ok(());
    }
    Err(crate::errors::ServiceError::TooLarge(format!(
        "the request is too large: {size} bytes, above this daemon's limit of {limit} bytes ({}) \
         for {kind}",
        shown_size(limit)
    )))
}

/// A byte count in the largest binary unit that divides it (64 KiB, 64 MiB).
fn shown_size(n: usize) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{} {unit}", n >> shift);
        }
    }
    format!("{n} bytes")
}

/// The layer: wraps every request body in a counter.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountWireBytes;

impl<S> tower_layer::Layer<S> for CountWireBytes {
    type Service = Counted<S>;
    fn layer(&self, inner: S) -> Counted<S> {
        Counted(inner)
    }
}

#[derive(Debug, Clone)]
pub struct Counted<S>(S);

impl<S: Service<Request<BoxBody>>> Service<Request<BoxBody>> for Counted<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: Request<BoxBody>) -> Self::Future {
        let count = WireBytes::default();
        let (mut parts, body) = req.into_parts();
        parts.extensions.insert(count.clone());
        let body = BoxBody::new(CountingBody { inner: body, count });
        self.0.call(Request::from_parts(parts, body))
    }
}

struct CountingBody {
    inner: BoxBody,
    count: WireBytes,
}

impl Body for CountingBody {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, tonic::Status>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref() {
                self.count.0.fetch_add(data.len(), Ordering::Relaxed);
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
