//! Group commit for SQLite: one thread owns the connection that creates pets, and commits every
//! insert waiting for it in one transaction. SQLite makes each commit durable with an fsync
//! (`synchronous=FULL`); committing a batch costs one fsync instead of one per pet, and writers
//! queue in order here instead of polling SQLite's lock. Every caller is answered only after
//! the commit that holds its pet, so a 201 still means "on disk".

use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::Instant;

use diesel::Connection;
use petstore_domain::{CreatePet, Pet, StorageErrorKind};

use crate::connection::ConnectionManager;
use crate::pets::insert_completing;
use crate::space::DiskSpace;
use crate::{AnyConnection, StoreError};

/// Most inserts committed together.
const MAX_BATCH: usize = 256;

/// Called on the writer thread with a pet's outcome, after the commit that holds it.
pub(crate) type Reply = Box<dyn FnOnce(Result<Pet, StoreError>) + Send>;

struct Job {
    pet: CreatePet,
    reply: Reply,
}

/// The handle to the writer thread; the thread ends when the last handle is dropped.
pub(crate) struct PetWriter {
    jobs: Sender<Job>,
}

impl PetWriter {
    pub(crate) fn start(
        manager: ConnectionManager,
        space: Arc<DiskSpace>,
    ) -> Result<Self, StoreError> {
        let (jobs, queue) = mpsc::channel();
        thread::Builder::new()
            .name("petstore-sqlite-writer".into())
            .spawn(move || run(&manager, &space, &queue))
            .map_err(StoreError::WriterStart)?;
        Ok(Self { jobs })
    }

    /// Stores `pet` and returns once its transaction has committed.
    pub(crate) fn create(&self, pet: &CreatePet) -> Result<Pet, StoreError> {
        let (reply, answer) = mpsc::sync_channel(1);
        self.submit(
            pet.clone(),
            Box::new(move |result| {
                let _ = reply.send(result);
            }),
        );
        answer.recv().map_err(|_| stopped())?
    }

    /// Queues `pet` and returns at once; `reply` gets the outcome after the commit (or at
    /// once if the writer has stopped).
    pub(crate) fn submit(&self, pet: CreatePet, reply: Reply) {
        let job = Job { pet, reply };
        if let Err(mpsc::SendError(job)) = self.jobs.send(job) {
            (job.reply)(Err(stopped()));
        }
    }
}

fn stopped() -> StoreError {
    StoreError::WriterStopped
}

fn run(manager: &ConnectionManager, space: &DiskSpace, queue: &Receiver<Job>) {
    let mut connection: Option<AnyConnection> = None;
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
                        (job.reply)(Err(StoreError::Batch(error.clone())));
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
                    (job.reply)(result.map_err(classify));
                }
            }
            Err(error) => {
                if error.kind() == StorageErrorKind::Unavailable {
                    connection = None;
                }
                let error = Arc::new(error);
                for job in batch {
                    (job.reply)(Err(StoreError::Batch(error.clone())));
                }
            }
        }
    }
}

/// One transaction for the batch, a savepoint per pet (with its idempotency record, if any): a
/// pet that cannot be inserted fails alone, and nothing is answered before the commit.
fn commit(
    conn: &mut AnyConnection,
    batch: &[Job],
) -> Result<Vec<Result<Pet, StoreError>>, StoreError> {
    conn.transaction(|conn| {
        Ok::<_, StoreError>(
            batch
                .iter()
                .map(|job| conn.transaction(|conn| insert_completing(conn, &job.pet)))
                .collect::<Vec<_>>(),
        )
    })
}
