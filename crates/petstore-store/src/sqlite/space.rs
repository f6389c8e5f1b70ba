//! A full disk under SQLite. SQLite answers a write it has no room for with `SQLITE_FULL`, which
//! Diesel reports as an error of no particular kind; what tells it apart is the filesystem: a
//! write that failed while the database's filesystem has next to no space left failed for lack
//! of space. The store then answers such writes as [`StoreError::Full`], reports not ready
//! while space stays short, says so once in the log (not once per request), and recovers by
//! itself once space is freed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use diesel::result::{DatabaseErrorKind, Error as DieselError};

use crate::StoreError;

/// Below this much free space, a failed write is taken for a full disk, and readiness fails
/// after one did: room for a batch of pets in the WAL, with margin.
pub const LOW_SPACE: u64 = 1024 * 1024;

/// The filesystem of one SQLite database, and whether writes are failing for lack of space.
#[derive(Debug)]
pub(crate) struct DiskSpace {
    dir: PathBuf,
    full: AtomicBool,
}

impl DiskSpace {
    /// The filesystem holding the database file at `path`.
    pub(crate) fn of(path: &str) -> Self {
        let dir = Path::new(path)
            .parent()
            .filter(|dir| !dir.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_owned();
        Self {
            dir,
            full: AtomicBool::new(false),
        }
    }

    /// Bytes free for an unprivileged writer; `None` if the filesystem cannot say.
    fn available(&self) -> Option<u64> {
        let stat = rustix::fs::statvfs(&self.dir).ok()?;
        Some(stat.f_bavail.saturating_mul(stat.f_frsize))
    }

    /// `error` of a failed call, read as [`StoreError::Full`] when it is an error of no
    /// particular kind (constraint violations and the like have theirs) and space is short.
    pub(crate) fn classify(&self, error: StoreError) -> StoreError {
        let StoreError::Database(source) = error else {
            return error;
        };
        let kindless = matches!(
            source.downcast_ref::<DieselError>(),
            Some(DieselError::DatabaseError(DatabaseErrorKind::Unknown, _))
        );
        if !kindless {
            return StoreError::Database(source);
        }
        match self.available() {
            Some(available) if available < LOW_SPACE => {
                if !self.full.swap(true, Ordering::Relaxed) {
                    log::error!(
                        "the disk holding the database is full ({available} bytes free in {}): \
                         writes answer 503 storage_full until space is freed",
                        self.dir.display()
                    );
                }
                StoreError::Full(available, source)
            }
            _ => StoreError::Database(source),
        }
    }

    /// A write went through: whatever was full is not any more.
    pub(crate) fn wrote(&self) {
        if self.full.swap(false, Ordering::Relaxed) {
            log::info!("the database's disk has room again: writes succeed");
        }
    }

    /// Not ready while writes have been failing for lack of space and space is still short;
    /// ready again (without a write, which a load balancer would not send) once it is freed.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        if !self.full.load(Ordering::Relaxed) {
            return Ok(());
        }
        match self.available() {
            Some(available) if available < LOW_SPACE => Err(StoreError::Full(
                available,
                "writes are failing for lack of space".into(),
            )),
            _ => {
                self.wrote();
                Ok(())
            }
        }
    }
}
