//! The storage scenarios every backend of the Animal Store Service must pass, for any
//! implementation of [`petstore_domain::Storage`]: the rules of pets and paging, orders and their
//! races, keys and their lifecycle (last use included), idempotency claims and their races,
//! admin tokens, and webhooks (endpoints per owner, the outbox of deliveries recorded with each
//! change, claims under a lease and their races, attempts, redelivery, secret rotation, the
//! backlog and pruning). The service's own backends (SQLite, PostgreSQL, MariaDB, and an
//! in-memory one in the HTTP crate's tests) run them; so can yours.
//!
//! Write a function that gives a fresh, empty, ready storage (migrated, nothing in it), or `None`
//! to skip where its server is missing, and hand it to [`conformance_tests!`], which writes one
//! ordinary `#[test]` per scenario:
//!
//! ```ignore
//! use std::sync::Arc;
//! use petstore_conformance::{Fresh, conformance_tests};
//!
//! async fn fresh() -> Option<Fresh> {
//!     let storage = my_backend::MyStorage::connect("...").await.ok()?;
//!     storage.reset().await.ok()?;
//!     Some(Fresh::new(Arc::new(storage)))
//! }
//!
//! conformance_tests!(fresh);
//! ```
//!
//! Each scenario gets a storage of its own, so tests may run in parallel. A scenario panics (the
//! test fails) with what the backend did against what the interface requires.
#![warn(missing_docs)]

use std::any::Any;
use std::future::Future;
use std::sync::Arc;

use petstore_domain::Storage;

pub mod scenarios;

/// A fresh storage for one scenario, and whatever must live as long as the scenario (a
/// temporary folder, a database dropped when its guard is).
pub struct Fresh {
    storage: Arc<dyn Storage>,
    _keep: Option<Box<dyn Any>>,
}

impl Fresh {
    /// A storage that needs nothing kept beside it.
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        Self {
            storage,
            _keep: None,
        }
    }

    /// Keeps `guard` alive (dropped after the scenario): the backend's database, say.
    #[must_use]
    pub fn keeping(mut self, guard: impl Any) -> Self {
        self._keep = Some(Box::new(guard));
        self
    }

    /// The storage under test.
    pub fn storage(&self) -> &dyn Storage {
        &*self.storage
    }
}

/// Runs `scenario` on a runtime of its own (tokio's current-thread runtime, with every driver
/// the build of tokio has: timers here): what each test [`conformance_tests!`] writes does.
pub fn run<F: Future<Output = ()>>(scenario: F) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime for the scenario")
        .block_on(scenario);
}

/// Writes one `#[test]` per scenario of [`scenarios`], named as the scenario, each on a fresh
/// storage from `$fresh` (an `async fn() -> Option<Fresh>`; `None` skips the scenario: print
/// why). Invoke it once per module (a second invocation in the same module would define the
/// same names again): one module per backend.
#[macro_export]
macro_rules! conformance_tests {
    ($fresh:path) => {
        $crate::conformance_tests!(@each $fresh;
            a_created_pet_reads_back_with_its_new_id,
            concurrent_creates_all_commit_with_distinct_ids,
            a_missing_pet_is_none,
            names_are_stored_exactly,
            paging_visits_every_pet_once_in_ascending_order,
            an_empty_catalogue_lists_nothing,
            orders_list_in_id_order_with_paging_and_by_owner,
            the_order_lifecycle_moves_the_pet_with_it,
            a_key_changes_only_its_own_orders,
            racing_orders_on_one_pet_have_one_winner,
            the_inventory_is_exact_after_concurrent_changes,
            an_order_completes_its_claim_in_its_own_transaction,
            keys_are_found_by_secret_until_revoked,
            rotations_at_once_keep_each_new_secret_and_none_follows_a_revocation,
            every_key_is_distinct_and_enterprise_limits_persist,
            a_ban_is_imposed_once_and_can_be_lifted,
            a_keys_plan_and_limits_can_change,
            a_keys_use_only_moves_forward,
            keys_have_scopes_expiries_and_list_by_state,
            a_key_changes_all_at_once_and_keeps_what_a_rotation_does_not_touch,
            racing_claims_of_one_key_have_one_winner,
            a_completed_claim_is_replayed_and_a_released_one_runs_again,
            a_create_completes_its_claim_in_its_own_transaction,
            old_idempotency_records_are_pruned,
            admin_tokens_are_found_until_revoked,
            webhook_endpoints_belong_to_their_owner,
            an_owner_has_at_most_max_endpoints,
            an_event_goes_to_the_subscribed_endpoints_of_its_key_and_the_operators,
            each_order_change_records_its_event,
            a_disabled_endpoint_gets_no_deliveries,
            a_claim_leases_due_deliveries_to_itself,
            attempts_decide_what_becomes_of_a_delivery_and_its_endpoint,
            a_delivery_is_sent_again_on_request,
            a_rotated_secret_keeps_signing_until_its_grace_ends,
            racing_claims_never_share_a_delivery,
            the_backlog_counts_what_waits_and_pruning_removes_what_ended,
            a_claim_skips_the_endpoints_it_is_told_to,
            a_deleted_endpoint_is_gone_at_once,
            claims_take_owners_in_turn_within_their_room,
            an_owner_has_one_endpoint_per_url,
            creates_at_once_keep_the_limit_and_one_endpoint_per_url,
            a_revoked_or_expired_keys_events_are_not_sent,
            attempts_under_way_when_their_endpoint_turns_off_are_recorded,
            attempts_recorded_together_are_each_recorded_as_alone,
        );
    };
    (@each $fresh:path; $($name:ident),* $(,)?) => {
        $(
            #[::core::prelude::v1::test]
            fn $name() {
                $crate::run(async {
                    if let ::core::option::Option::Some(fresh) = $fresh().await {
                        $crate::scenarios::$name(fresh.storage()).await;
                    }
                });
            }
        )*
    };
}
