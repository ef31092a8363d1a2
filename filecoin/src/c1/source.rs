//! Where a C1 output's JSON is: the file, read up to a size limit; the
//! file's bytes themselves or the wrapper's base64, decoded as it is read;
//! and what a failure to read it as JSON says.

use std::borrow::Cow;
use std::io::BufReader;

use base64::engine::general_purpose::STANDARD;
use base64::read::DecoderReader;
use serde::de::DeserializeOwned;

use crate::error::{FilecoinError, Result};

/// The largest C1 file read: a 32 GiB or 64 GiB sector's is about 50 MB,
/// and gRPC messages stop at 256 MiB (Curio's limit) as well.
pub const MAX_C1_BYTES: u64 = 256 << 20;

/// Reads a C1 file of at most [`MAX_C1_BYTES`]: a larger regular file is
/// refused before it is read, and a stream without a length (`/dev/zero`,
/// a pipe) is read only up to the limit, then refused.
pub fn read_c1_file(path: &std::path::Path) -> Result<Vec<u8>> {
    crate::input_file::InputFile {
        what: "C1 file",
        content: "C1",
        max_bytes: MAX_C1_BYTES,
        typical: "(a 32 GiB sector's is about 50 MB)",
    }
    .read(path)
}

/// Where the output's JSON is.
#[derive(Debug, Clone)]
pub(super) enum Source<'a> {
    /// The file's bytes are the output (plain or filecoin-proofs-api form).
    Json(&'a [u8]),
    /// The wrapper's Phase1Out: base64 of the output, decoded as read.
    Base64(Cow<'a, str>),
}

impl Source<'_> {
    /// `T` from the output's JSON, with nothing after it.
    pub(super) fn read<T: DeserializeOwned>(&self) -> std::result::Result<T, serde_json::Error> {
        match self {
            Source::Json(bytes) => {
                let mut de = serde_json::Deserializer::from_slice(bytes);
                let t = T::deserialize(&mut de)?;
                de.end()?;
                Ok(t)
            }
            Source::Base64(text) => {
                let decoded = DecoderReader::new(text.trim().as_bytes(), &STANDARD);
                let reader = BufReader::with_capacity(64 << 10, decoded);
                let mut de = serde_json::Deserializer::from_reader(reader);
                let t = T::deserialize(&mut de)?;
                de.end()?;
                Ok(t)
            }
        }
    }
}

pub(super) fn json_error(e: serde_json::Error, what: &str, len: Option<usize>) -> FilecoinError {
    if e.is_io() {
        // Only the base64 decoder reads through I/O.
        FilecoinError::Input(format!("{what} is not base64: {e}"))
    } else if e.is_eof() {
        FilecoinError::Input(format!(
            "{what} ends early (truncated?): {e}{}",
            len.map(|n| format!(" ({n} bytes read)"))
                .unwrap_or_default()
        ))
    } else if e.is_data() {
        FilecoinError::Input(format!("{what} is not a commit-phase-1 output: {e}"))
    } else {
        FilecoinError::Input(format!("{what} is not valid JSON: {e}"))
    }
}
