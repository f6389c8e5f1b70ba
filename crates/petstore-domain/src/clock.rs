//! Wall-clock time behind a trait: the one clock every crate of the service reads, so that a
//! test can set it (past a sunset, past a grace period, to a delivery's next attempt) wherever
//! time decides something.

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of the current time.
pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    /// Now.
    fn now(&self) -> SystemTime;

    /// Now, in whole Unix seconds (0 before 1970).
    fn unix_seconds(&self) -> u64 {
        self.now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }

    /// Now, in whole Unix seconds, as the storage keeps times (`i64`, saturating).
    fn unix_now(&self) -> i64 {
        i64::try_from(self.unix_seconds()).unwrap_or(i64::MAX)
    }
}

/// The operating system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that only moves when told to. For tests.
#[derive(Debug)]
pub struct ManualClock(Mutex<SystemTime>);

impl ManualClock {
    /// A clock showing `unix_seconds`.
    pub fn at(unix_seconds: u64) -> Self {
        Self(Mutex::new(UNIX_EPOCH + Duration::from_secs(unix_seconds)))
    }

    /// Sets the time.
    pub fn set(&self, unix_seconds: u64) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) =
            UNIX_EPOCH + Duration::from_secs(unix_seconds);
    }

    /// Moves the time forward.
    pub fn advance(&self, by: Duration) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let clock = ManualClock::at(1_000);
        assert_eq!(clock.unix_now(), 1_000);
        clock.advance(Duration::from_secs(5));
        assert_eq!(clock.unix_seconds(), 1_005);
        clock.set(7);
        assert_eq!(clock.unix_now(), 7);
    }
}
