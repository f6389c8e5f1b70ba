//! Wall-clock time behind a trait, so tests can move time (e.g. past the sunset of `getPet`).

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    /// Now.
    fn now(&self) -> SystemTime;

    /// Now, in whole Unix seconds.
    fn unix_seconds(&self) -> u64 {
        self.now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
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
