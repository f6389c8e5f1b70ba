//! The webhook sender's thread: a runtime of its own, at a lower CPU priority than the workers
//! serving the API, so that sending events takes the CPU the API leaves and a burst of writes
//! is not slowed by the sending of its own events (they wait, and are sent once the burst
//! eases). Its storage calls run on the program's runtime, at the API's priority
//! (`Sender::with_storage_runtime`). Its deliveries' leases, schedule and bounds are the
//! sender's, unchanged.

use std::future::Future;
use std::io;
use std::time::Duration;

use petstore_webhooks::Sender;
use tokio::sync::oneshot;

/// How long the thread, once the sender has returned, waits for what its runtime still runs
/// (an attempt's record being written has been waited for by the sender itself).
const SHUT_DOWN_WITHIN: Duration = Duration::from_secs(1);

/// The running sender: resolves once it has stopped (it has recorded what it had under way).
pub(crate) struct Sending {
    stopped: oneshot::Receiver<()>,
}

impl Sending {
    /// Runs `sender` on a thread of its own (`webhook-sender`) at `nice` (added to the
    /// process's niceness: 0 keeps the workers' priority, 19 is the lowest) until `stop`
    /// resolves. Returns once the thread runs at its priority.
    pub(crate) fn start(
        sender: Sender,
        nice: u8,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            // Its blocking threads (a receiver's name resolved, say) are told apart from the
            // sender's own (in the 15 characters Linux keeps); they inherit its priority.
            .thread_name("sender-blocking")
            .build()?;
        let (done, stopped) = oneshot::channel();
        let (lowered, ready) = std::sync::mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("webhook-sender".into())
            .spawn(move || {
                lower_priority(nice);
                let _ = lowered.send(());
                runtime.block_on(sender.run(stop));
                let _ = done.send(());
                runtime.shutdown_timeout(SHUT_DOWN_WITHIN);
            })?;
        // A blocking wait, of a few microseconds, once at start-up. (A thread that ended
        // before saying so is found stopped by `stopped`.)
        let _ = ready.recv();
        Ok(Self { stopped })
    }

    /// Waits until the sender has stopped (or its thread has ended otherwise).
    pub(crate) async fn stopped(self) {
        let _ = self.stopped.await;
    }
}

/// Lowers this thread's CPU priority by `nice`, 19 at the lowest (Linux: the niceness is a
/// thread's own, and the threads it starts inherit it). Elsewhere, and where it is refused,
/// the thread keeps the process's priority, and says so.
fn lower_priority(nice: u8) {
    if nice == 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{getpriority_process, setpriority_process};
        let thread = Some(rustix::thread::gettid());
        let lowered = getpriority_process(thread)
            .and_then(|now| setpriority_process(thread, now.saturating_add(i32::from(nice))));
        if let Err(error) = lowered {
            log::warn!(
                "the webhook sender runs at the API's CPU priority: lowering its own failed \
                 ({error})"
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    log::info!(
        "the webhook sender runs at the API's CPU priority: a thread's own priority is set on \
         Linux only"
    );
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_thread_is_lowered_by_its_niceness_and_the_others_are_not() {
        use rustix::process::getpriority_process;
        let before = getpriority_process(None).expect("this thread's priority");
        let lowered = std::thread::spawn(|| {
            lower_priority(5);
            getpriority_process(Some(rustix::thread::gettid())).expect("its priority")
        })
        .join()
        .expect("the thread");
        assert_eq!(lowered, (before + 5).min(19));
        assert_eq!(
            getpriority_process(None).expect("this thread's priority"),
            before,
            "only the sender's thread"
        );
    }
}
