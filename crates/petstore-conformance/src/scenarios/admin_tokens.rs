//! Admin tokens: found by their secret's hash until revoked.

use petstore_domain::{AdminTokenSpec, Storage};

/// A token is found by its secret's hash until revoked; revoking twice keeps the first time;
/// every token is listed, revoked ones too, in id order; an unknown token is not revoked.
pub async fn admin_tokens_are_found_until_revoked(storage: &dyn Storage) {
    let (first, secret) = storage
        .create_admin_token(&AdminTokenSpec::new("billing-sync").expect("spec"))
        .await
        .expect("create");
    let (second, other) = storage
        .create_admin_token(&AdminTokenSpec::new("oncall").expect("spec"))
        .await
        .expect("create");
    assert_ne!(
        secret.hash(),
        other.hash(),
        "every token has a secret of its own"
    );
    assert_eq!(first.label, "billing-sync");
    assert_eq!(first.revoked_at, None);
    assert_eq!(
        storage
            .find_admin_token(&secret.hash())
            .await
            .expect("find"),
        Some(first.clone())
    );
    assert!(storage.revoke_admin_token(first.id).await.expect("revoke"));
    assert_eq!(
        storage
            .find_admin_token(&secret.hash())
            .await
            .expect("find"),
        None
    );
    assert!(
        storage
            .find_admin_token(&other.hash())
            .await
            .expect("find")
            .is_some(),
        "the other still works"
    );
    let listed = storage.list_admin_tokens().await.expect("list");
    let mut in_order = vec![first.id, second.id];
    in_order.sort_unstable();
    assert_eq!(listed.iter().map(|t| t.id).collect::<Vec<_>>(), in_order);
    let revoked_at = |tokens: &[petstore_domain::AdminToken]| {
        tokens
            .iter()
            .find(|t| t.id == first.id)
            .and_then(|t| t.revoked_at)
    };
    let at = revoked_at(&listed).expect("revoked");
    assert!(storage.revoke_admin_token(first.id).await.expect("again"));
    assert_eq!(
        revoked_at(&storage.list_admin_tokens().await.expect("list")),
        Some(at)
    );
    assert!(
        !storage
            .revoke_admin_token(second.id + 99)
            .await
            .expect("unknown")
    );
}
