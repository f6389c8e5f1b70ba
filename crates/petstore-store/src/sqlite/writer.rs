//! Group commit for SQLite: one thread owns the connection that creates pets, and commits every
//! insert waiting for it in one transaction. SQLite makes each commit durable with an fsync
//! (`synchronous=FULL`); committing a batch costs one fsync instead of one per pet, and writers
//! queue in order here instead of polling SQLite's lock. Every caller is answered only after
//! the commit that holds its pet, so a 201 still means "on disk".

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Instant;

use diesel::connection::SimpleConnection;
use diesel::{Connection, SqliteConnection};
use petstore_domain::{CreatePet, Pet, StorageErrorKind};
use tokio::sync::oneshot;

use super::Manager;
use super::space::DiskSpace;
use crate::StoreError;
use crate::conn::{Conn, complete_now};
use crate::queries::Now;
use crate::queries::pets::insert_completing;

/// Most inserts committed together.
pub(crate) const MAX_BATCH: usize = 256;

struct Job {
    pet: CreatePet,
    /// When it was asked for: its creation time.
    now: Now,
    /// Gets the pet's outcome, after the commit that holds it.
    reply: oneshot::Sender<Result<Pet, StoreError>>,
}

/// The handle to the writer thread.
pub(crate) struct PetWriter {
    /// `None` once stopped.
    jobs: Mutex<Option<Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl PetWriter {
    pub(crate) fn start(manager: Manager, space: Arc<DiskSpace>) -> Result<Self, StoreError> {
        let (jobs, queue) = mpsc::channel();
        let thread = thread::Builder::new()
            .name("petstore-sqlite-writer".into())
            .spawn(move || run(&manager, &space, &queue))
            .map_err(StoreError::WriterStart)?;
        Ok(Self {
            jobs: Mutex::new(Some(jobs)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Stores `pet` and answers once its transaction has committed.
    pub(crate) async fn create(&self, pet: CreatePet, now: Now) -> Result<Pet, StoreError> {
        let (reply, answer) = oneshot::channel();
        let sent = match &*self.jobs.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(jobs) => jobs.send(Job { pet, now, reply }).is_ok(),
            None => false,
        };
        if !sent {
            return Err(StoreError::WriterStopped);
        }
        answer.await.map_err(|_| StoreError::WriterStopped)?
    }

    /// Lets the writer commit what it was given, then stops it and waits for its thread.
    pub(crate) fn stop(&self) {
        drop(
            self.jobs
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread
            && thread.join().is_err()
        {
            log::error!("the SQLite writer thread panicked");
        }
    }
}

impl Drop for PetWriter {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(manager: &Manager, space: &DiskSpace, queue: &Receiver<Job>) {
    let mut connection: Option<SqliteConnection> = None;
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        crate::metrics::batch_written(batch.len());
        let conn = match connection.as_mut() {
            Some(conn) => conn,
            None => match manager.open() {
                Ok(conn) => connection.insert(conn),
                Err(error) => {
                    let error = Arc::new(StoreError::Connect(error.into()));
                    for job in batch {
                        let _ = job.reply.send(Err(StoreError::Batch(error.clone())));
                    }
                    continue;
                }
            },
        };
        let started = Instant::now();
        // A failure that took the whole lock wait is that timeout; one while the disk is all
        // but full is the full disk.
        let classify = |error: StoreError| {
            space.classify(error.after(started.elapsed(), manager.busy_timeout))
        };
        match commit(conn, &batch).map_err(classify) {
            Ok(results) => {
                // A pet's own insert may have failed (the lock wait ran out, or the disk filled).
                if results.iter().any(Result::is_ok) {
                    space.wrote();
                }
                for (job, result) in batch.into_iter().zip(results) {
                    // The request may have gone (its client, or its deadline): nobody to tell.
                    let _ = job.reply.send(result.map_err(classify));
                }
            }
            Err(error) => {
                if error.kind() == StorageErrorKind::Unavailable {
                    connection = None;
                }
                let error = Arc::new(error);
                for job in batch {
                    let _ = job.reply.send(Err(StoreError::Batch(error.clone())));
                }
            }
        }
    }
}

/// One transaction for the batch, a savepoint per pet (with its idempotency record, if any): a
/// pet that cannot be inserted fails alone, and nothing is answered before the commit. An error
/// after which SQLite has rolled back the whole transaction (a trigger's `RAISE(ROLLBACK)`, or,
/// at times, a full disk or an I/O error in the middle of a statement) fails the whole batch:
/// the pets before it went with the transaction, and those after it must not run, as each would
/// then commit on its own.
fn commit(
    conn: &mut SqliteConnection,
    batch: &[Job],
) -> Result<Vec<Result<Pet, StoreError>>, StoreError> {
    let mut cause = None;
    let committed = conn.transaction(|conn| {
        let mut results = Vec::with_capacity(batch.len());
        for job in batch {
            conn.batch_execute("SAVEPOINT pet")?;
            let result = complete_now(Box::pin(insert_completing(
                Conn::Sqlite(conn),
                &job.pet,
                job.now,
            )));
            let end = match result {
                Ok(_) => "RELEASE pet",
                Err(_) => "ROLLBACK TO pet; RELEASE pet",
            };
            if let Err(ended) = conn.batch_execute(end) {
                // No savepoint left: the transaction is gone.
                cause = result.err();
                return Err(ended.into());
            }
            results.push(result);
        }
        Ok(results)
    });
    match (committed, cause) {
        (Err(_), Some(cause)) => Err(cause),
        (committed, _) => committed,
    }
}
