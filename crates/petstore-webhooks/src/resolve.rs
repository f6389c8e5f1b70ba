//! The service's one resolver, and where a delivery may go. [`Resolver`] looks names up with
//! the system's resolver on threads of its own (a bounded number at once, within a time
//! limit), never on the async runtime's blocking threads, which the storage needs. It checks a
//! URL when it is registered ([`ReceiverCheck`], called by the HTTP layer) and, as
//! [`GuardedResolver`], where the sender connects: addresses of the service's own networks
//! ([`forbidden_address`]) are dropped unless allowed, so that the check holds for the address
//! actually connected to (a name that resolved to a public address when the endpoint was
//! registered may resolve elsewhere now). [`check_url`] covers what no resolver sees (a URL
//! naming an address).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use petstore_domain::webhook::{EndpointOwner, EndpointUrl, UrlPolicy, forbidden_address};
use petstore_domain::webhook::{ReceiverCheck, ReceiverRefused};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Looks names up on threads of its own: at most so many at once, each within a time limit.
#[derive(Debug, Clone)]
pub struct Resolver {
    lookups: Arc<Semaphore>,
    within: Duration,
    /// Each owner's share of the registration lookups ([`PER_OWNER`] at once, held until each
    /// lookup's thread ends); an owner with none under way or waiting has no entry (or not
    /// after the next lookup starts, when its caller gave up waiting).
    owners: Owners,
    /// How a name is looked up: the system's resolver ([`system_lookup`]; a test's stand-in).
    system: fn(&str, u16) -> Vec<SocketAddr>,
}

/// The registration lookups one owner may have under way at once. A lookup whose name's
/// servers never answer holds its thread, and its slot, for as long as the system's resolver
/// tries, long past its caller's time limit: without this bound one key registering such names
/// would hold every slot, and every other owner's registrations would wait and fail.
const PER_OWNER: usize = 2;

/// The system's resolver: the addresses of `host` (none when it has none, or the lookup
/// failed).
fn system_lookup(host: &str, port: u16) -> Vec<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .map(Iterator::collect)
        .unwrap_or_default()
}

/// Each owner's share of the lookups: a semaphore of [`PER_OWNER`] permits.
type Owners = Arc<Mutex<HashMap<EndpointOwner, Arc<Semaphore>>>>;

/// One of an owner's lookups under way, until dropped (by the lookup's thread, as it ends).
struct OwnerLookup {
    owners: Owners,
    owner: EndpointOwner,
    permit: Option<OwnedSemaphorePermit>,
}

impl Drop for OwnerLookup {
    fn drop(&mut self) {
        drop(self.permit.take());
        forget_if_idle(&self.owners, self.owner);
    }
}

/// Drops `owner`'s entry when only the map holds its share: no lookup of its own under way,
/// and none waiting for one (each holds the share while it waits).
fn forget_if_idle(owners: &Owners, owner: EndpointOwner) {
    let mut owners = owners.lock().unwrap_or_else(PoisonError::into_inner);
    if let Entry::Occupied(share) = owners.entry(owner)
        && Arc::strong_count(share.get()) == 1
    {
        share.remove();
    }
}

impl Resolver {
    /// A resolver running at most `at_once` lookups, each answered within `within` (a lookup
    /// the system's resolver takes longer over holds its thread until it ends, but its caller
    /// is answered).
    pub fn new(at_once: usize, within: Duration) -> Self {
        Self {
            lookups: Arc::new(Semaphore::new(at_once.max(1))),
            within,
            owners: Arc::default(),
            system: system_lookup,
        }
    }

    /// The resolver that checks endpoints' hosts when they are registered or changed: at most
    /// 8 lookups at once (registrations are rare, and a resolver that stops answering holds a
    /// lookup's thread for as long as the system's resolver tries), each answered within 5 s.
    pub fn for_registration() -> Self {
        Self::new(8, Duration::from_secs(5))
    }

    /// The addresses of `host` (empty when it has none): [`ReceiverRefused::Busy`] when no
    /// lookup could start in time, or one that waited for a slot did not end in time;
    /// [`ReceiverRefused::TooSlow`] when one that started at once did not end in time.
    pub async fn lookup(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, ReceiverRefused> {
        let deadline = Instant::now() + self.within;
        self.lookup_holding(host, port, (), deadline, false).await
    }

    /// [`Self::lookup`] by `deadline`, `held` kept until the lookup's thread ends (not merely
    /// until its caller is answered). A lookup that waited for its turn (`waited`, or for a
    /// slot here) and then did not end in time is [`ReceiverRefused::Busy`], not the name's
    /// [`ReceiverRefused::TooSlow`]: it did not have its whole time.
    async fn lookup_holding(
        &self,
        host: &str,
        port: u16,
        held: impl Send + 'static,
        deadline: Instant,
        waited: bool,
    ) -> Result<Vec<SocketAddr>, ReceiverRefused> {
        let busy = || ReceiverRefused::Busy(self.within);
        let (permit, waited) = match Arc::clone(&self.lookups).try_acquire_owned() {
            Ok(permit) => (permit, waited),
            Err(_) => {
                let waiting = Arc::clone(&self.lookups).acquire_owned();
                let permit = tokio::time::timeout_at(deadline, waiting)
                    .await
                    .map_err(|_| busy())?
                    .map_err(|_| busy())?;
                (permit, true)
            }
        };
        let (answer, answered) = tokio::sync::oneshot::channel();
        let owned = host.to_owned();
        let system = self.system;
        std::thread::Builder::new()
            .name("petstore-lookup".into())
            .spawn(move || {
                let found = system(&owned, port);
                let _ = answer.send(found);
                drop(permit);
                drop(held);
            })
            .map_err(|error| ReceiverRefused::Failed(error.to_string()))?;
        match tokio::time::timeout_at(deadline, answered).await {
            Ok(Ok(found)) => Ok(found),
            Ok(Err(_)) => Err(ReceiverRefused::Failed(
                "its thread ended without an answer".to_owned(),
            )),
            Err(_) if waited => Err(busy()),
            Err(_) => Err(ReceiverRefused::TooSlow(self.within)),
        }
    }

    /// One of `owner`'s [`PER_OWNER`] lookups, waited for until `deadline` (and whether it
    /// had to wait): [`ReceiverRefused::Busy`] when its own lookups under way did not leave one
    /// by then.
    async fn owner_lookup(
        &self,
        owner: EndpointOwner,
        deadline: Instant,
    ) -> Result<(OwnerLookup, bool), ReceiverRefused> {
        let share = {
            let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
            // Whatever a wait given up on midway (its caller gone) left behind goes here.
            owners.retain(|_, share| Arc::strong_count(share) > 1);
            let share = owners
                .entry(owner)
                .or_insert_with(|| Arc::new(Semaphore::new(PER_OWNER)));
            Arc::clone(share)
        };
        let held = |permit| OwnerLookup {
            owners: Arc::clone(&self.owners),
            owner,
            permit: Some(permit),
        };
        if let Ok(permit) = Arc::clone(&share).try_acquire_owned() {
            return Ok((held(permit), false));
        }
        match tokio::time::timeout_at(deadline, share.acquire_owned()).await {
            Ok(Ok(permit)) => Ok((held(permit), true)),
            // (The wait, and its hold on the share, ended with the timeout.)
            Ok(Err(_)) | Err(_) => {
                forget_if_idle(&self.owners, owner);
                Err(ReceiverRefused::Busy(self.within))
            }
        }
    }
}

#[petstore_domain::async_trait]
impl ReceiverCheck for Resolver {
    async fn check(
        &self,
        url: &EndpointUrl,
        policy: UrlPolicy,
        owner: EndpointOwner,
    ) -> Result<(), ReceiverRefused> {
        if policy.allow_private || url.ip().is_some() {
            return Ok(());
        }
        let deadline = Instant::now() + self.within;
        let (held, waited) = self.owner_lookup(owner, deadline).await?;
        let found = self
            .lookup_holding(url.host(), url.port(), held, deadline, waited)
            .await?;
        // One answer whether the name does not resolve or resolves to a forbidden address
        // (a name of the service's own networks is refused whatever else it resolves to).
        if found.is_empty() || found.iter().any(|addr| forbidden_address(addr.ip())) {
            return Err(ReceiverRefused::NotPublic);
        }
        Ok(())
    }
}

/// The sender's resolver: [`Resolver`]'s answers, keeping only the addresses `policy` allows;
/// a name with none left fails to resolve, with the reason.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    resolver: Resolver,
    policy: UrlPolicy,
}

impl GuardedResolver {
    /// `resolver`'s answers under `policy`.
    pub fn new(resolver: Resolver, policy: UrlPolicy) -> Self {
        Self { resolver, policy }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let Self { resolver, policy } = self.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            // One error whether the name does not resolve or resolves only to forbidden
            // addresses: a delivery's log must not tell a receiver's owner which names are the
            // service's own network's.
            let refused = || {
                io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("{host} does not resolve to an address deliveries may go to"),
                )
            };
            let found = match resolver.lookup(&host, 0).await {
                Ok(found) => found,
                Err(ReceiverRefused::NotPublic) => return Err(refused().into()),
                Err(other) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("{host}: {other}"),
                    )
                    .into());
                }
            };
            let allowed = allowed_addresses(&found, policy);
            if allowed.is_empty() {
                return Err(refused().into());
            }
            let addrs: Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

/// The addresses of `found` that `policy` allows.
pub fn allowed_addresses(found: &[SocketAddr], policy: UrlPolicy) -> Vec<SocketAddr> {
    found
        .iter()
        .copied()
        .filter(|addr| policy.allow_private || !forbidden_address(addr.ip()))
        .collect()
}

/// Checks a stored URL again before it is sent to (the policy may have changed since it was
/// registered, and an address in the URL is never resolved).
pub fn check_url(url: &str, policy: UrlPolicy) -> Result<EndpointUrl, String> {
    EndpointUrl::parse(url, policy).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_allowed_addresses_are_kept() {
        let found: Vec<SocketAddr> = ["127.0.0.1:0", "93.184.216.34:0", "[fd00::1]:0"]
            .iter()
            .map(|text| text.parse().expect("address"))
            .collect();
        let strict = UrlPolicy::default();
        assert_eq!(allowed_addresses(&found, strict), vec![found[1]]);
        let lax = UrlPolicy {
            allow_private: true,
            ..strict
        };
        assert_eq!(allowed_addresses(&found, lax), found);
    }

    /// A name that does not resolve and one that resolves only to forbidden addresses fail
    /// with the same words (with the name itself in them), so that a delivery's log tells a
    /// receiver's owner nothing of which names exist inside the service's network.
    #[test]
    fn no_answer_and_a_forbidden_answer_read_alike() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let resolver = GuardedResolver::new(
            Resolver::new(2, Duration::from_secs(5)),
            UrlPolicy::default(),
        );
        let error = |text: &'static str| {
            let name: Name = text.parse().expect("a name");
            let resolving = resolver.resolve(name);
            match runtime.block_on(resolving) {
                Ok(_) => panic!("{text} resolved to an allowed address"),
                Err(error) => error.to_string(),
            }
        };
        let private = error("localhost");
        let nowhere = error("no-such-host.invalid");
        assert_eq!(
            private.replace("localhost", "NAME"),
            nowhere.replace("no-such-host.invalid", "NAME")
        );
        assert!(private.contains("does not resolve to an address deliveries may go to"));
    }

    /// At registration: a name resolving to this machine is refused unless private networks
    /// are allowed, and a name that does not resolve reads the same (no name's existence is
    /// told).
    #[tokio::test]
    async fn a_name_resolving_to_this_machine_is_refused_unless_allowed() {
        let lax = UrlPolicy {
            allow_http: true,
            allow_private: true,
        };
        let strict = UrlPolicy {
            allow_private: false,
            ..lax
        };
        let resolver = Resolver::new(2, Duration::from_secs(5));
        // Parsed leniently (the name itself is refused by `EndpointUrl::parse`), resolved
        // strictly: its loopback addresses are what refuse it here.
        let url = EndpointUrl::parse("http://localhost:9/hook", lax).expect("allowed");
        let refused = resolver
            .check(&url, strict, EndpointOwner::Key(1))
            .await
            .expect_err("loopback refused");
        assert!(matches!(refused, ReceiverRefused::NotPublic), "{refused}");
        assert!(
            resolver
                .check(&url, lax, EndpointOwner::Key(1))
                .await
                .is_ok()
        );
        let nowhere =
            EndpointUrl::parse("https://no-such-host.invalid/hook", strict).expect("a URL");
        let refused = resolver
            .check(&nowhere, strict, EndpointOwner::Key(1))
            .await
            .expect_err("unresolvable");
        assert!(matches!(refused, ReceiverRefused::NotPublic), "{refused}");
    }

    /// Holds the stand-in lookups that pass it until it is opened: names whose servers never
    /// answer, until the test says otherwise. One per test (tests run at once).
    struct Gate {
        open: Mutex<bool>,
        opened: std::sync::Condvar,
    }

    impl Gate {
        const fn new() -> Self {
            Self {
                open: Mutex::new(false),
                opened: std::sync::Condvar::new(),
            }
        }

        fn pass(&self) {
            let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
            while !*open {
                open = self
                    .opened
                    .wait(open)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }

        fn open(&self) {
            *self.open.lock().unwrap_or_else(PoisonError::into_inner) = true;
            self.opened.notify_all();
        }
    }

    /// A public address, what every stand-in lookup finds once it ends.
    fn public(port: u16) -> Vec<SocketAddr> {
        vec![SocketAddr::from(([93, 184, 216, 34], port))]
    }

    /// A resolver whose lookups `system` makes in place of the system's resolver.
    fn stand_in(
        system: fn(&str, u16) -> Vec<SocketAddr>,
        at_once: usize,
        within: Duration,
    ) -> Resolver {
        Resolver {
            system,
            ..Resolver::new(at_once, within)
        }
    }

    static GATE: Gate = Gate::new();

    fn held_at_the_gate(_: &str, port: u16) -> Vec<SocketAddr> {
        GATE.pass();
        public(port)
    }

    fn idle(resolver: &Resolver) -> bool {
        resolver.owners.lock().expect("not poisoned").is_empty()
    }

    /// A lookup that outlives its caller's time limit keeps its owner's share until its thread
    /// ends: an owner whose names never resolve holds at most [`PER_OWNER`] lookups, and
    /// another owner's lookups still start.
    #[tokio::test]
    async fn one_owner_cannot_hold_every_lookup() {
        let resolver = stand_in(held_at_the_gate, 8, Duration::from_secs(1));
        let strict = UrlPolicy::default();
        let url = EndpointUrl::parse("https://slow.example.com/hook", strict).expect("a URL");
        let (owner, other) = (EndpointOwner::Key(1), EndpointOwner::Operator);
        for _ in 0..PER_OWNER {
            let refused = resolver.check(&url, strict, owner).await;
            assert!(
                matches!(refused, Err(ReceiverRefused::TooSlow(_))),
                "{refused:?}"
            );
        }
        // Its lookups still run: it waits for its share in vain, where another owner's lookup
        // starts.
        let refused = resolver.check(&url, strict, owner).await;
        assert!(
            matches!(refused, Err(ReceiverRefused::Busy(_))),
            "{refused:?}"
        );
        let refused = resolver.check(&url, strict, other).await;
        assert!(
            matches!(refused, Err(ReceiverRefused::TooSlow(_))),
            "{refused:?}"
        );
        // As they end, its share comes back, and nothing is left behind.
        GATE.open();
        for _ in 0..200 {
            if idle(&resolver) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(idle(&resolver), "every owner's entry gone");
        assert!(resolver.check(&url, strict, owner).await.is_ok());
    }

    static SECOND_GATE: Gate = Gate::new();

    /// `held.example.com` waits at [`SECOND_GATE`]; another name takes 300 ms.
    fn held_or_quick(host: &str, port: u16) -> Vec<SocketAddr> {
        if host == "held.example.com" {
            SECOND_GATE.pass();
        } else {
            std::thread::sleep(Duration::from_millis(300));
        }
        public(port)
    }

    /// A lookup that waited for a slot and then ran out of time did not have its whole time:
    /// `Busy` (try again), not the name's `TooSlow`.
    #[tokio::test]
    async fn a_lookup_that_waited_its_turn_and_ran_out_of_time_is_busy() {
        let resolver = stand_in(held_or_quick, 1, Duration::from_secs(1));
        let strict = UrlPolicy::default();
        let quick = EndpointUrl::parse("https://quick.example.com/hook", strict).expect("a URL");
        let held = EndpointUrl::parse("https://held.example.com/hook", strict).expect("a URL");
        // The one slot goes to the quick name first (its first poll takes it and starts its
        // lookup); the held one waits for it, then runs out of time.
        let mut first = Box::pin(resolver.check(&quick, strict, EndpointOwner::Key(1)));
        let started =
            std::future::poll_fn(|cx| std::task::Poll::Ready(first.as_mut().poll(cx).is_pending()));
        assert!(started.await, "the quick lookup is under way");
        let second = resolver.check(&held, strict, EndpointOwner::Key(2)).await;
        assert!(
            matches!(second, Err(ReceiverRefused::Busy(_))),
            "{second:?}"
        );
        let first = first.await;
        assert!(first.is_ok(), "{first:?}");
        SECOND_GATE.open();
    }

    /// An owner's lookups beyond its share wait for it rather than fail.
    #[tokio::test]
    async fn an_owners_lookups_beyond_its_share_wait_their_turn() {
        fn quick(_: &str, port: u16) -> Vec<SocketAddr> {
            std::thread::sleep(Duration::from_millis(20));
            public(port)
        }
        let resolver = stand_in(quick, 8, Duration::from_secs(30));
        let strict = UrlPolicy::default();
        let url = EndpointUrl::parse("https://quick.example.com/hook", strict).expect("a URL");
        let owner = EndpointOwner::Key(7);
        let checks: Vec<_> = (0..3 * PER_OWNER)
            .map(|_| resolver.check(&url, strict, owner))
            .collect();
        for checked in futures_util::future::join_all(checks).await {
            assert!(checked.is_ok(), "{checked:?}");
        }
    }
}
