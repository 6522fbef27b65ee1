//! Lines on stdout: how keys and values are printed, and a writer that treats a closed stdout
//! as the reader's way of saying "enough".

use std::io;

use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};

use crate::error::CliError;

/// What a null key or value prints as (Kafka's console consumer prints `null` too).
pub(crate) const NULL: &[u8] = b"null";

/// Appends `field` to `out`: its bytes when they are UTF-8, else lossily decoded (each invalid
/// sequence becomes U+FFFD); [`NULL`] for `None`.
pub(crate) fn push_field(out: &mut Vec<u8>, field: Option<&[u8]>) {
    match field {
        None => out.extend_from_slice(NULL),
        Some(bytes) => match std::str::from_utf8(bytes) {
            Ok(_) => out.extend_from_slice(bytes),
            Err(_) => out.extend_from_slice(String::from_utf8_lossy(bytes).as_bytes()),
        },
    }
}

/// Why writing stopped.
#[derive(Debug)]
pub(crate) enum WriteStop {
    /// The reader closed stdout (EPIPE): stop quietly.
    Closed,
    /// Any other write error.
    Failed(io::Error),
}

impl From<io::Error> for WriteStop {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            WriteStop::Closed
        } else {
            WriteStop::Failed(e)
        }
    }
}

/// A closed stdout ends the command quietly (exit 0: the reader had enough); another write
/// error is a failure.
pub(crate) fn quiet_if_closed(stop: WriteStop) -> Result<(), CliError> {
    match stop {
        WriteStop::Closed => Ok(()),
        WriteStop::Failed(e) => Err(CliError::new("could not write to stdout", e)),
    }
}

/// Buffered stdout, written asynchronously: a write waiting for a full pipe can be abandoned
/// (Ctrl-C), and the pipe's reader sets the pace.
#[derive(Debug)]
pub(crate) struct Out<W: AsyncWrite + Unpin> {
    inner: BufWriter<W>,
}

impl Out<tokio::io::Stdout> {
    /// Buffered stdout.
    pub(crate) fn stdout() -> Self {
        Out::new(tokio::io::stdout())
    }
}

impl<W: AsyncWrite + Unpin> Out<W> {
    /// Buffered `w`.
    pub(crate) fn new(w: W) -> Self {
        Out { inner: BufWriter::with_capacity(64 * 1024, w) }
    }

    /// Writes one line (`line` plus `\n`).
    ///
    /// Cancel safety: a line may be written in part.
    pub(crate) async fn line(&mut self, line: &[u8]) -> Result<(), WriteStop> {
        self.inner.write_all(line).await?;
        self.inner.write_all(b"\n").await?;
        Ok(())
    }

    /// Pushes what is buffered to the reader.
    pub(crate) async fn flush(&mut self) -> Result<(), WriteStop> {
        self.inner.flush().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_print_utf8_as_is_null_as_null_and_the_rest_lossily() {
        let mut out = Vec::new();
        push_field(&mut out, Some("héllo\tworld".as_bytes()));
        out.push(b'|');
        push_field(&mut out, None);
        out.push(b'|');
        push_field(&mut out, Some(b""));
        out.push(b'|');
        push_field(&mut out, Some(b"a\xffb"));
        assert_eq!(String::from_utf8(out).unwrap(), "héllo\tworld|null||a\u{fffd}b");
    }

    #[tokio::test]
    async fn a_closed_pipe_is_a_quiet_stop() {
        let (writer, reader) = tokio::io::duplex(16);
        let mut out = Out::new(writer);
        out.line(b"buffered").await.unwrap();
        drop(reader);
        assert!(matches!(out.flush().await, Err(WriteStop::Closed)));
        assert!(quiet_if_closed(WriteStop::Closed).is_ok());
        assert_eq!(quiet_if_closed(WriteStop::Failed(io::ErrorKind::Other.into())).unwrap_err().code(), 1);
    }
}
