//! API keys and their bans, admin tokens, and idempotency claims in memory.

use super::*;

#[async_trait]
impl ApiKeyRepository for MemoryStorage {
    async fn create_key(&self, spec: &KeySpec) -> Result<(ApiKey, ApiKeySecret), StorageError> {
        let mut data = self.data();
        let id = next_id(&data.keys);
        let secret = ApiKeySecret::from_random_bytes(self.random_bytes(("key", id)));
        let key = ApiKey {
            id,
            display_prefix: secret.display_prefix().to_owned(),
            plan: spec.plan(),
            label: spec.label().to_owned(),
            custom_limits: spec.custom_limits(),
            created_at: now(),
            revoked_at: None,
            ban: None,
            scope: spec.scope(),
            expires_at: spec.expires_at(),
            last_used_at: None,
            previous_secret_until: None,
        };
        data.keys.insert(
            id,
            StoredKey {
                hash: secret.hash(),
                previous: None,
                key: key.clone(),
            },
        );
        Ok((key, secret))
    }

    async fn find_active_key(&self, hash: &KeyHash) -> Result<Option<KeyMatch>, StorageError> {
        self.key_lookups.fetch_add(1, Ordering::SeqCst);
        let data = self.data();
        let found = data.keys.values().find(|stored| {
            stored.key.revoked_at.is_none()
                && (stored.hash == *hash || stored.previous.as_ref() == Some(hash))
        });
        Ok(found.map(|stored| {
            if stored.hash == *hash {
                KeyMatch::current(stored.key.clone())
            } else {
                let until = stored.key.previous_secret_until.unwrap_or(0);
                KeyMatch::previous(stored.key.clone(), until)
            }
        }))
    }

    async fn find_key(&self, id: i64) -> Result<Option<ApiKey>, StorageError> {
        Ok(self.data().keys.get(&id).map(|stored| stored.key.clone()))
    }

    async fn list_keys_page(&self, query: &KeyListQuery) -> Result<Page<ApiKey>, StorageError> {
        let data = self.data();
        let keys = data
            .keys
            .range(query.page.after.unwrap_or(0).saturating_add(1)..)
            .map(|(_, stored)| &stored.key)
            .filter(|key| query.plan.is_none_or(|plan| key.plan == plan))
            .filter(|key| {
                query
                    .state
                    .is_none_or(|state| key.state(query.now) == state)
            })
            .take(query.page.limit.get() as usize + 1)
            .cloned()
            .collect();
        Ok(Page::from_overfetch(keys, query.page.limit, |key| key.id))
    }

    async fn update_key(
        &self,
        id: i64,
        update: &KeyUpdate,
    ) -> Result<Option<ApiKey>, StorageError> {
        let mut data = self.data();
        let Some(stored) = data.keys.get_mut(&id) else {
            return Ok(None);
        };
        let key = &mut stored.key;
        if let Some((plan, limits)) = update.plan {
            key.plan = plan;
            key.custom_limits = limits;
        }
        if let Some(scope) = update.scope {
            key.scope = scope;
        }
        if let Some(label) = &update.label {
            key.label = label.clone();
        }
        Ok(Some(key.clone()))
    }

    async fn revoke_key(&self, id: i64) -> Result<bool, StorageError> {
        Ok(self.with_key(id, |key| {
            key.revoked_at.get_or_insert_with(now);
        }))
    }

    async fn update_key_plan(
        &self,
        id: i64,
        plan: Plan,
        custom_limits: Option<RateLimits>,
    ) -> Result<bool, StorageError> {
        Ok(self.with_key(id, |key| {
            key.plan = plan;
            key.custom_limits = custom_limits;
        }))
    }

    async fn ban_key(&self, id: i64, ban: Ban, now: u64) -> Result<bool, StorageError> {
        let mut imposed = false;
        self.with_key(id, |key| {
            if key.ban_at(now).is_none() {
                key.ban = Some(ban);
                imposed = true;
            }
        });
        Ok(imposed)
    }

    async fn unban_key(&self, id: i64) -> Result<bool, StorageError> {
        Ok(self.with_key(id, |key| key.ban = None))
    }

    async fn rotate_key(
        &self,
        id: i64,
        grace_until: i64,
    ) -> Result<Option<(ApiKey, ApiKeySecret)>, StorageError> {
        let mut data = self.data();
        // A fresh secret per rotation: the counter makes each input unique.
        data.tokens += 1;
        let rotation = data.tokens;
        let mut bytes = [0u8; 32];
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            chunk.copy_from_slice(
                &self
                    .seed
                    .hash_one((id, i, "rotated", rotation))
                    .to_le_bytes(),
            );
        }
        let secret = ApiKeySecret::from_random_bytes(bytes);
        let Some(stored) = data
            .keys
            .get_mut(&id)
            .filter(|stored| stored.key.revoked_at.is_none())
        else {
            return Ok(None);
        };
        stored.previous = Some(std::mem::replace(&mut stored.hash, secret.hash()));
        stored.key.previous_secret_until = Some(grace_until);
        stored.key.display_prefix = secret.display_prefix().to_owned();
        Ok(Some((stored.key.clone(), secret)))
    }

    async fn update_key_scope(&self, id: i64, scope: Scope) -> Result<bool, StorageError> {
        Ok(self.with_key(id, |key| key.scope = scope))
    }

    async fn touch_key(&self, id: i64, now: i64) -> Result<(), StorageError> {
        self.with_key(id, |key| {
            key.last_used_at = Some(key.last_used_at.map_or(now, |last| last.max(now)));
        });
        Ok(())
    }
}

/// Completes `claim` with `response`; `false` when the claim is no longer held.
pub(super) fn complete(
    data: &mut Data,
    claim: &IdempotencyClaim,
    response: StoredResponse,
) -> bool {
    match data
        .idempotency
        .get_mut(&(claim.owner, claim.key.as_str().to_owned()))
    {
        Some(record)
            if record.token == claim.token
                && matches!(record.held.state, RecordState::InFlight { .. }) =>
        {
            record.held.state = RecordState::Completed(response);
            true
        }
        _ => false,
    }
}

#[async_trait]
impl AdminTokenRepository for MemoryStorage {
    async fn create_admin_token(
        &self,
        spec: &AdminTokenSpec,
    ) -> Result<(AdminToken, AdminTokenSecret), StorageError> {
        let mut data = self.data();
        let id = next_id(&data.admin_tokens);
        let secret = AdminTokenSecret::from_random_bytes(self.random_bytes(("token", id)));
        let token = AdminToken {
            id,
            label: spec.label().to_owned(),
            display_prefix: secret.display_prefix().to_owned(),
            created_at: now(),
            revoked_at: None,
        };
        data.admin_tokens.insert(id, (secret.hash(), token.clone()));
        Ok((token, secret))
    }

    async fn find_admin_token(&self, hash: &KeyHash) -> Result<Option<AdminToken>, StorageError> {
        Ok(self
            .data()
            .admin_tokens
            .values()
            .find(|(stored, token)| stored == hash && token.revoked_at.is_none())
            .map(|(_, token)| token.clone()))
    }

    async fn list_admin_tokens(&self) -> Result<Vec<AdminToken>, StorageError> {
        Ok(self
            .data()
            .admin_tokens
            .values()
            .map(|(_, token)| token.clone())
            .collect())
    }

    async fn revoke_admin_token(&self, id: i64) -> Result<bool, StorageError> {
        let mut data = self.data();
        let Some((_, token)) = data.admin_tokens.get_mut(&id) else {
            return Ok(false);
        };
        token.revoked_at.get_or_insert_with(now);
        Ok(true)
    }
}

#[async_trait]
impl IdempotencyRepository for MemoryStorage {
    async fn claim_idempotency_key(
        &self,
        request: &IdempotentRequest,
    ) -> Result<ClaimOutcome, StorageError> {
        let mut data = self.data();
        let slot = (request.owner, request.key.as_str().to_owned());
        // The domain's rule, under the one lock: the claim and the write are one step.
        let held = data.idempotency.get(&slot).map(|record| &record.held);
        Ok(match decide_claim(held, request) {
            ClaimDecision::Claim { created_at } => {
                data.tokens += 1;
                let token = data.tokens;
                let held = IdempotencyRecord {
                    fingerprint: request.fingerprint.clone(),
                    created_at,
                    state: RecordState::InFlight {
                        claimed_at: request.now as i64,
                    },
                };
                data.idempotency.insert(slot, Record { held, token });
                ClaimOutcome::Claimed(IdempotencyClaim {
                    owner: request.owner,
                    key: request.key.clone(),
                    token,
                })
            }
            ClaimDecision::Replay(response) => ClaimOutcome::Completed(response),
            ClaimDecision::InFlight => ClaimOutcome::InFlight,
            ClaimDecision::Mismatch => ClaimOutcome::Mismatch,
        })
    }

    async fn complete_idempotency_key(
        &self,
        claim: &IdempotencyClaim,
        response: &StoredResponse,
    ) -> Result<(), StorageError> {
        complete(&mut self.data(), claim, response.clone());
        Ok(())
    }

    async fn release_idempotency_key(&self, claim: &IdempotencyClaim) -> Result<(), StorageError> {
        let mut data = self.data();
        let slot = (claim.owner, claim.key.as_str().to_owned());
        if data.idempotency.get(&slot).is_some_and(|record| {
            record.token == claim.token && matches!(record.held.state, RecordState::InFlight { .. })
        }) {
            data.idempotency.remove(&slot);
        }
        Ok(())
    }

    async fn prune_idempotency_keys(&self, before: u64) -> Result<u64, StorageError> {
        let mut data = self.data();
        let count = data.idempotency.len();
        data.idempotency
            .retain(|_, record| record.held.created_at >= before as i64);
        Ok((count - data.idempotency.len()) as u64)
    }
}

impl MemoryStorage {
    /// Applies `change` to key `id`; `false` when there is none.
    fn with_key(&self, id: i64, change: impl FnOnce(&mut ApiKey)) -> bool {
        match self.data().keys.get_mut(&id) {
            Some(stored) => {
                change(&mut stored.key);
                true
            }
            None => false,
        }
    }
}
