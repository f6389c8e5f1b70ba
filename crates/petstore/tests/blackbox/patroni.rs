//! Black-box: the deployment `deploy/patroni/` ships, failing as production fails. Patroni manages
//! three PostgreSQL nodes (etcd, three members, holding its leader lease) with both standbys
//! synchronous, HAProxy routes by Patroni's checks (`patroni_cluster`), and two instances run
//! under a steady load (`writes`: creates, half with an `Idempotency-Key`, an order for each pet,
//! each pet read back on the other instance from a synchronous standby): one through HAProxy's
//! read-write port, one on a URL naming the nodes, both reading through HAProxy's read-only port.
//!
//! In turn: the leader's postmaster killed, the leader's whole node killed (Patroni and
//! PostgreSQL; brought back after, when it rejoins as a standby by `pg_rewind`), a planned
//! switchover, and an etcd member lost. Throughout, every answer is a success or `503` with
//! `Retry-After`, within the deadline; after each event both instances take writes again within
//! 15 s (the time is printed); at the end every pet and order answered `201` is on the leader,
//! no idempotency key made two pets, and every pet read back on the other instance was seen.

use std::fmt;
use std::time::{Duration, Instant};

use crate::common::{TestServer, unlimited_key};
use crate::patroni_cluster::Cluster;
use crate::writes::{Load, eventually};

const CLIENTS: usize = 4;
/// How soon both instances must take writes again after each event: Patroni's `ttl` (9 s,
/// `deploy/patroni/patroni.yml`) bounds a dead leader's lease, then a standby is promoted, its
/// commits wait until the other follows it (`synchronous_mode_strict`), and HAProxy's next
/// check (every second) finds it.
const BACK_WITHIN: Duration = Duration::from_secs(15);
/// A planned switchover, and an etcd member lost, cost at most brief `503`s.
const BRIEF: Duration = Duration::from_secs(6);

#[derive(Clone, Copy)]
enum Event {
    KillPostmaster,
    KillNode,
    Switchover,
    LoseEtcdMember,
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::KillPostmaster => "the leader's postmaster killed",
            Self::KillNode => "the leader's node killed",
            Self::Switchover => "a switchover",
            Self::LoseEtcdMember => "an etcd member lost",
        })
    }
}

#[test]
fn a_patroni_cluster_fails_over_without_losing_an_acknowledged_write() {
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    // Migrations and keys through HAProxy, as the operator's commands go.
    let key = unlimited_key(&cluster.rw_url());
    let read = format!("--database-read-url={}", cluster.ro_url());
    let first = TestServer::start(&cluster.rw_url(), &["--bootstrap-key=false", &read]);
    let second = TestServer::start(&cluster.multi_host_url(), &["--bootstrap-key=false", &read]);
    let bases = [first.base.clone(), second.base.clone()];
    let load = Load::start("patroni", CLIENTS, &bases, &key);
    let started = Instant::now();

    for event in [
        Event::KillPostmaster,
        Event::KillNode,
        Event::Switchover,
        Event::LoseEtcdMember,
    ] {
        // A moment of load on the whole cluster first.
        let before = load.pets();
        assert!(
            eventually(Duration::from_secs(10), || load.pets() > before + 20),
            "before {event}: no writes on the whole cluster\n{}",
            cluster.logs()
        );
        let leader = cluster.leader().expect("a leader");
        eprintln!(
            "patroni, at {:.1?}: {event}, the leader {} of {:?}",
            started.elapsed(),
            cluster.nodes[leader].name,
            cluster.members()
        );
        let unavailable = load.answers.lock().expect("answers").unavailable;
        // From the moment the leader is gone (a write sent before may still be confirmed
        // after), or the switchover is asked for.
        let at = match event {
            Event::KillPostmaster => {
                cluster.kill_postmaster(leader);
                Instant::now()
            }
            Event::KillNode => {
                cluster.kill_node(leader);
                Instant::now()
            }
            Event::Switchover => {
                let at = Instant::now();
                cluster.switchover(leader, (leader + 1) % 3);
                at
            }
            Event::LoseEtcdMember => {
                cluster.kill_etcd(0);
                Instant::now()
            }
        };
        let within = match event {
            Event::KillPostmaster | Event::KillNode => BACK_WITHIN,
            Event::Switchover | Event::LoseEtcdMember => BRIEF,
        };
        let back = eventually(within, || load.both_wrote_after(at));
        let took = at.elapsed();
        assert!(
            back,
            "{event}: both instances did not take writes again within {within:?}\n{}",
            cluster.logs()
        );
        let unavailable = load.answers.lock().expect("answers").unavailable - unavailable;
        eprintln!(
            "patroni, {event}: writes back on both instances after {took:.1?}, {unavailable} \
             answers 503 since"
        );
        if let Event::KillNode = event {
            // Back only once another node leads: a node back within its lease keeps it.
            assert!(
                eventually(BACK_WITHIN, || cluster
                    .leader()
                    .is_some_and(|new| new != leader)),
                "no other node took the lead\n{}",
                cluster.logs()
            );
            cluster.start_node(leader);
        }
        cluster.wait_until_whole(Duration::from_secs(60));
    }

    let answers_so_far = load.pets();
    assert!(
        eventually(Duration::from_secs(10), || load.pets() > answers_so_far),
        "no writes after the last event"
    );
    let mut answers = load.stop();
    let leader = cluster.leader().expect("a leader");
    answers.check("patroni", &bases[0], &key, &cluster.node_url(leader));
    eprintln!(
        "patroni: {} pets and {} orders acknowledged, all on the leader; {} read back on the \
         other instance, all seen; {} answers 503",
        answers.pets.len(),
        answers.orders.len(),
        answers.read_back,
        answers.unavailable
    );
    first.stop();
    second.stop();
}
