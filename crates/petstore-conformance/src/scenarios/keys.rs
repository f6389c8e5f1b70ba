//! API keys: found by their secret's hash until revoked, rotations with grace, bans, plans, use.

use std::collections::HashSet;

use futures_util::future::join;
use petstore_domain::{
    ApiKey, ApiKeySecret, Ban, KeyMatch, KeySpec, Plan, RateLimits, Storage, key_admin,
};

use super::support::{expiring_key, free_key};

/// The active key `secret` finds.
async fn active_key(storage: &dyn Storage, secret: &ApiKeySecret) -> ApiKey {
    storage
        .find_active_key(&secret.hash())
        .await
        .expect("find")
        .expect("an active key")
        .key
}

async fn authenticates(storage: &dyn Storage, secret: &ApiKeySecret) -> bool {
    let found = storage.find_active_key(&secret.hash()).await.expect("find");
    found.is_some_and(|found| found.is_valid_at(0))
}

async fn listed(storage: &dyn Storage) -> Vec<ApiKey> {
    key_admin::all(storage).await.expect("list the keys")
}

/// A key is found by its secret's hash, with what it was created with, until revoked; revoking
/// twice keeps the first time; an unknown key is not revoked.
pub async fn keys_are_found_by_secret_until_revoked(storage: &dyn Storage) {
    let spec = KeySpec::new(Plan::Pro, "ci", None).expect("spec");
    let (key, secret) = storage.create_key(&spec).await.expect("create");
    assert_eq!(key.plan, Plan::Pro);
    assert_eq!(key.label, "ci");
    assert_eq!(key.display_prefix, secret.display_prefix());
    assert_eq!(
        storage.find_active_key(&secret.hash()).await.expect("find"),
        Some(KeyMatch::current(key.clone()))
    );
    let unknown = ApiKeySecret::from_random_bytes([9; 32]);
    assert_eq!(
        storage
            .find_active_key(&unknown.hash())
            .await
            .expect("find"),
        None
    );
    assert!(storage.revoke_key(key.id).await.expect("revoke"));
    assert_eq!(
        storage.find_active_key(&secret.hash()).await.expect("find"),
        None
    );
    let revoked_at = listed(storage).await[0].revoked_at.expect("revoked");
    assert!(
        storage.revoke_key(key.id).await.expect("revoke again"),
        "revoking twice still finds the key"
    );
    assert_eq!(listed(storage).await[0].revoked_at, Some(revoked_at));
    assert!(
        !storage
            .revoke_key(key.id + 1000)
            .await
            .expect("revoke unknown")
    );
}

/// Two rotations at once, ten times over: each leaves the later secret current and the earlier
/// one in its grace period, and the secret before both authenticates no more; a rotation racing
/// a revocation gives no secret that authenticates; a revoked key is not rotated.
pub async fn rotations_at_once_keep_each_new_secret_and_none_follows_a_revocation(
    storage: &dyn Storage,
) {
    let spec = KeySpec::new(Plan::Pro, "racing", None).expect("spec");
    let (key, mut current) = storage.create_key(&spec).await.expect("create");
    let grace_until = i64::MAX;
    for round in 0..10 {
        let (a, b) = join(
            storage.rotate_key(key.id, grace_until),
            storage.rotate_key(key.id, grace_until),
        )
        .await;
        let (_, a) = a.expect("rotate").expect("a key");
        let (_, b) = b.expect("rotate").expect("a key");
        assert!(authenticates(storage, &a).await, "round {round}");
        assert!(authenticates(storage, &b).await, "round {round}");
        assert!(!authenticates(storage, &current).await, "round {round}");
        let newest = storage.find_active_key(&a.hash()).await.expect("find");
        current = if newest.is_some_and(|found| found.valid_until.is_none()) {
            a
        } else {
            b
        };
    }
    let (revoked, rotated) = join(
        storage.revoke_key(key.id),
        storage.rotate_key(key.id, grace_until),
    )
    .await;
    assert!(revoked.expect("revoke"));
    // A rotation answered is one that ran before the revocation, on a key not revoked then.
    if let Some((rotated, secret)) = rotated.expect("rotate") {
        assert_eq!(rotated.revoked_at, None);
        assert!(!authenticates(storage, &secret).await);
    }
    assert!(!authenticates(storage, &current).await);
    assert_eq!(
        storage
            .rotate_key(key.id, grace_until)
            .await
            .expect("rotate"),
        None
    );
}

/// Twenty keys of one spec: twenty different secrets, each with the spec's custom limits.
pub async fn every_key_is_distinct_and_enterprise_limits_persist(storage: &dyn Storage) {
    let limits = RateLimits::custom(5_000, 2_000_000).expect("limits");
    let spec = KeySpec::new(Plan::Enterprise, "big", Some(limits)).expect("spec");
    let mut secrets = HashSet::new();
    for _ in 0..20 {
        let (key, secret) = storage.create_key(&spec).await.expect("create");
        assert_eq!(key.custom_limits, Some(limits));
        assert_eq!(key.limits(), limits);
        assert!(secrets.insert(secret.expose().to_owned()));
    }
    assert_eq!(listed(storage).await.len(), 20);
}

/// One ban at a time: a second while one is in force is refused, one after it ends is
/// imposed; a banned key still authenticates (the limiter refuses it); a ban can be lifted.
pub async fn a_ban_is_imposed_once_and_can_be_lifted(storage: &dyn Storage) {
    let (key, secret) = free_key(storage, "abuser").await;
    assert_eq!(key.ban, None);
    let ban = Ban {
        until: 2_000,
        level: 1,
    };
    assert!(storage.ban_key(key.id, ban, 1_000).await.expect("ban"));
    let other = Ban {
        until: 3_000,
        level: 2,
    };
    assert!(
        !storage
            .ban_key(key.id, other, 1_500)
            .await
            .expect("ban again"),
        "a ban is in force"
    );
    assert_eq!(active_key(storage, &secret).await.ban, Some(ban));
    assert!(
        storage
            .ban_key(key.id, other, 2_000)
            .await
            .expect("escalate"),
        "the first ban has ended"
    );
    assert_eq!(listed(storage).await[0].ban, Some(other));
    assert!(storage.unban_key(key.id).await.expect("unban"));
    assert_eq!(listed(storage).await[0].ban, None);
    assert!(!storage.unban_key(key.id + 99).await.expect("unban unknown"));
}

/// A key's plan and custom limits change, and back; an unknown key's do not.
pub async fn a_keys_plan_and_limits_can_change(storage: &dyn Storage) {
    let (key, secret) = free_key(storage, "grows").await;
    let limits = RateLimits::custom(10_000, 5_000_000).expect("limits");
    assert!(
        storage
            .update_key_plan(key.id, Plan::Enterprise, Some(limits))
            .await
            .expect("update")
    );
    let found = active_key(storage, &secret).await;
    assert_eq!((found.plan, found.limits()), (Plan::Enterprise, limits));
    assert!(
        storage
            .update_key_plan(key.id, Plan::Pro, None)
            .await
            .expect("update")
    );
    let found = active_key(storage, &secret).await;
    assert_eq!((found.plan, found.custom_limits), (Plan::Pro, None));
    assert!(
        !storage
            .update_key_plan(key.id + 99, Plan::Pro, None)
            .await
            .expect("update unknown")
    );
}

/// A key's last use is recorded, and never moves back (instances record it out of order).
pub async fn a_keys_use_only_moves_forward(storage: &dyn Storage) {
    let (key, secret) = free_key(storage, "used").await;
    assert_eq!(active_key(storage, &secret).await.last_used_at, None);
    let used_at = async |at| {
        storage.touch_key(key.id, at).await.expect("touch");
        active_key(storage, &secret).await.last_used_at
    };
    assert_eq!(used_at(2_000_000_000).await, Some(2_000_000_000));
    assert_eq!(
        used_at(1_900_000_000).await,
        Some(2_000_000_000),
        "an older use does not move it back"
    );
    storage
        .touch_key(key.id + 99, 2_000_000_000)
        .await
        .expect("touching an unknown key is no error");
}

/// A key's scope changes; a key with an expiry authenticates until it, and the listing by
/// state at a time tells active, expired and revoked keys apart, page by page.
pub async fn keys_have_scopes_expiries_and_list_by_state(storage: &dyn Storage) {
    use petstore_domain::{KeyListQuery, KeyState, Limit, PageRequest, Scope};
    let now = 1_800_000_000;
    let (reader, _) = storage
        .create_key(
            &KeySpec::new(Plan::Free, "reader", None)
                .expect("spec")
                .with_scope(Scope::ReadOnly),
        )
        .await
        .expect("create");
    assert_eq!(reader.scope, Scope::ReadOnly);
    assert!(
        storage
            .update_key_scope(reader.id, Scope::ReadWrite)
            .await
            .expect("scope")
    );
    assert_eq!(
        storage
            .find_key(reader.id)
            .await
            .expect("find")
            .expect("the key")
            .scope,
        Scope::ReadWrite
    );
    assert!(
        !storage
            .update_key_scope(reader.id + 99, Scope::ReadOnly)
            .await
            .expect("unknown")
    );
    let (expiring, secret) = expiring_key(storage, "temporary", now + 60, now).await;
    let found = storage
        .find_active_key(&secret.hash())
        .await
        .expect("find")
        .expect("found until it expires");
    assert_eq!(found.key.expires_at, Some(now + 60));
    assert!(found.is_valid_at(now + 59));
    assert!(!found.is_valid_at(now + 60), "not at its expiry");
    let (revoked, _) = free_key(storage, "gone").await;
    assert!(storage.revoke_key(revoked.id).await.expect("revoke"));
    let at = |state, time| KeyListQuery {
        page: PageRequest {
            limit: Limit::new(1).expect("limit"),
            after: None,
        },
        plan: None,
        state: Some(state),
        now: time,
    };
    let walk = async |mut query: KeyListQuery| {
        let mut ids = Vec::new();
        loop {
            let page = storage.list_keys_page(&query).await.expect("list");
            ids.extend(page.items.iter().map(|k| k.id));
            match page.next_after {
                Some(after) => query.page.after = Some(after),
                None => return ids,
            }
        }
    };
    let mut active = vec![reader.id, expiring.id];
    active.sort_unstable();
    assert_eq!(walk(at(KeyState::Active, now)).await, active);
    assert_eq!(walk(at(KeyState::Active, now + 60)).await, vec![reader.id]);
    assert_eq!(
        walk(at(KeyState::Expired, now + 60)).await,
        vec![expiring.id]
    );
    assert_eq!(walk(at(KeyState::Revoked, now)).await, vec![revoked.id]);
}

/// A key's plan, scope and label change in one step; an unknown key's do not; a key is found by
/// id. A rotation keeps the key's id, plan, scope, label and ban, and with no grace (now or
/// earlier) the old secret stops at once.
pub async fn a_key_changes_all_at_once_and_keeps_what_a_rotation_does_not_touch(
    storage: &dyn Storage,
) {
    use petstore_domain::{KeyUpdate, Scope};
    let (key, secret) = free_key(storage, "before").await;
    assert_eq!(
        storage.find_key(key.id).await.expect("find"),
        Some(key.clone())
    );
    assert_eq!(storage.find_key(key.id + 99).await.expect("find"), None);
    let limits = RateLimits::custom(7_000, 3_000_000).expect("limits");
    let update = KeyUpdate {
        plan: Some((Plan::Enterprise, Some(limits))),
        scope: Some(Scope::ReadOnly),
        label: Some("after".to_owned()),
    };
    let updated = storage
        .update_key(key.id, &update)
        .await
        .expect("update")
        .expect("the key");
    assert_eq!(
        (
            updated.plan,
            updated.limits(),
            updated.scope,
            updated.label.as_str()
        ),
        (Plan::Enterprise, limits, Scope::ReadOnly, "after")
    );
    assert_eq!(active_key(storage, &secret).await, updated);
    assert_eq!(
        storage
            .update_key(key.id + 99, &update)
            .await
            .expect("update"),
        None
    );
    let ban = Ban {
        until: 4_000_000_000,
        level: 1,
    };
    assert!(storage.ban_key(key.id, ban, 1_000).await.expect("ban"));
    let (rotated, fresh) = storage
        .rotate_key(key.id, 0)
        .await
        .expect("rotate")
        .expect("a key");
    assert_eq!(rotated.id, key.id);
    assert_eq!(
        (
            rotated.plan,
            rotated.scope,
            rotated.label.as_str(),
            rotated.ban
        ),
        (Plan::Enterprise, Scope::ReadOnly, "after", Some(ban))
    );
    assert!(authenticates(storage, &fresh).await);
    let old = storage.find_active_key(&secret.hash()).await.expect("find");
    assert!(
        old.as_ref().is_none_or(|found| !found.is_valid_at(1)),
        "with no grace the old secret stops at once: {old:?}"
    );
}
