//! [`Chain`]: an error with its causes, as log lines show it.

use std::error::Error;
use std::fmt;

/// Displays an error and every error in its `source` chain, `outer: inner: innermost`. The
/// service's logs use it, so that a line says what failed all the way down.
#[derive(Debug, Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(error) = source {
            write!(f, ": {error}")?;
            source = error.source();
        }
        Ok(())
    }
}
