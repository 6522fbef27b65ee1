//! The command's error: what failed, why (the source chain), and the exit code.

use std::error::Error;
use std::fmt;
use std::io::Write;
use std::process::ExitCode;

/// Exit code of a failed command.
pub(crate) const EXIT_FAILURE: u8 = 1;
/// Exit code of a usage error (clap's own choice for bad flags).
pub(crate) const EXIT_USAGE: u8 = 2;

/// A failed command: a message, the error that caused it, and the exit code.
#[derive(Debug)]
pub(crate) struct CliError {
    message: String,
    source: Option<Box<dyn Error + Send + Sync + 'static>>,
    code: u8,
}

impl CliError {
    /// A failure (exit 1) caused by `source`.
    pub(crate) fn new(message: impl Into<String>, source: impl Error + Send + Sync + 'static) -> CliError {
        CliError { message: message.into(), source: Some(Box::new(source)), code: EXIT_FAILURE }
    }

    /// A failure (exit 1) with nothing more to say.
    pub(crate) fn msg(message: impl Into<String>) -> CliError {
        CliError { message: message.into(), source: None, code: EXIT_FAILURE }
    }

    /// A usage error (exit 2), e.g. an invalid `--property`, caused by `source`.
    pub(crate) fn usage(message: impl Into<String>, source: impl Error + Send + Sync + 'static) -> CliError {
        CliError { message: message.into(), source: Some(Box::new(source)), code: EXIT_USAGE }
    }

    /// The exit code.
    pub(crate) fn code(&self) -> u8 {
        self.code
    }

    /// Prints the error and its causes to stderr and returns the exit code.
    pub(crate) fn report(&self) -> ExitCode {
        let mut text = format!("error: {self}\n");
        let mut next = self.source();
        while let Some(cause) = next {
            text.push_str(&format!("  caused by: {cause}\n"));
            next = cause.source();
        }
        if self.code == EXIT_USAGE {
            text.push_str("\nFor more information, try '--help'.\n");
        }
        // stderr may be gone too: nothing left to tell anyone then
        let _ = std::io::stderr().write_all(text.as_bytes());
        ExitCode::from(self.code())
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for CliError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

/// `error` and its causes on one line, joined by `": "` (for summaries that list many).
pub(crate) fn chain(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(cause) = next {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        next = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Leaf;

    impl fmt::Display for Leaf {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("connection refused")
        }
    }

    impl Error for Leaf {}

    #[test]
    fn the_chain_is_every_cause_in_order() {
        let e = CliError::new("could not fetch t/0", CliError::new("broker 1 unreachable", Leaf));
        assert_eq!(chain(&e), "could not fetch t/0: broker 1 unreachable: connection refused");
        assert_eq!(e.code(), EXIT_FAILURE);
        assert_eq!(CliError::usage("bad", Leaf).code(), EXIT_USAGE);
        assert_eq!(chain(&CliError::msg("alone")), "alone");
    }
}
