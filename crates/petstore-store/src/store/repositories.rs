//! The domain's repository traits over [`Store`]: each method hands one operation of
//! `queries/` to the backend, with [`Store::read`] (or [`Store::read_replica`] where a standby
//! may answer it), anything else with [`Store::write`], a pet through SQLite's writer.

use petstore_domain::webhook::{
    Attempt, AttemptRecord, Backlog, Delivery, DeliveryClaim, DueDelivery, EndpointOwner,
    EndpointSpec, EndpointUpdate, EndpointWrite, SigningSecret, WebhookEndpoint,
};
use petstore_domain::{
    AdminToken, AdminTokenRepository, AdminTokenSecret, AdminTokenSpec, ApiKey, ApiKeyRepository,
    ApiKeySecret, Ban, ClaimOutcome, CreatePet, IdempotencyClaim, IdempotencyRepository,
    IdempotentRequest, Inventory, KeyHash, KeyListQuery, KeyMatch, KeySpec, KeyUpdate, Order,
    OrderAction, OrderError, OrderListQuery, OrderRepository, Page, PageRequest, Pet, PetListQuery,
    PetRepository, PlaceOrder, Plan, RateLimits, Scope, StorageError, StoredResponse,
    WebhookRepository, async_trait,
};

use super::{Db, Store};
use crate::StoreError;
use crate::queries::{admin_tokens, idempotency, keys, orders, pets, webhooks};

#[async_trait]
impl PetRepository for Store {
    async fn create_pet(&self, pet: &CreatePet) -> Result<Pet, StorageError> {
        let now = self.now();
        let pet = pet.clone();
        Ok(match &self.inner.db {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(db) => db.create_pet(pet, now).await?,
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => {
                db.call(move |conn| Box::pin(pets::create_in_one_statement(conn, pet, now)))
                    .await?
            }
            #[cfg(feature = "mysql")]
            Db::Mysql(db) => {
                db.call(move |conn| Box::pin(pets::create(conn, pet, now)))
                    .await?
            }
        })
    }

    async fn find_pet(&self, id: i64) -> Result<Option<Pet>, StorageError> {
        Ok(self
            .read_replica(move |conn| Box::pin(pets::find(conn, id)), Option::is_some)
            .await?)
    }

    async fn list_pets(&self, query: &PetListQuery) -> Result<Page<Pet>, StorageError> {
        let query = *query;
        Ok(self
            .read_replica(move |conn| Box::pin(pets::list(conn, query)), |_| true)
            .await?)
    }
}

#[async_trait]
impl OrderRepository for Store {
    async fn place_order(&self, order: &PlaceOrder) -> Result<Order, OrderError> {
        let now = self.now();
        let order = order.clone();
        self.write(move |conn| Box::pin(orders::place(conn, order, now)))
            .await
            .map_err(|error| OrderError::Storage(error.into()))?
    }

    async fn change_order(
        &self,
        id: i64,
        owner: Option<i64>,
        action: OrderAction,
    ) -> Result<Order, OrderError> {
        let now = self.now();
        self.write(move |conn| Box::pin(orders::change(conn, id, owner, action, now)))
            .await
            .map_err(|error| OrderError::Storage(error.into()))?
    }

    async fn find_order(&self, id: i64, owner: Option<i64>) -> Result<Option<Order>, StorageError> {
        Ok(self
            .read_replica(
                move |conn| Box::pin(orders::find(conn, id, owner)),
                Option::is_some,
            )
            .await?)
    }

    async fn list_orders(&self, query: &OrderListQuery) -> Result<Page<Order>, StorageError> {
        let query = *query;
        Ok(self
            .read_replica(move |conn| Box::pin(orders::list(conn, query)), |_| true)
            .await?)
    }

    async fn inventory(&self) -> Result<Inventory, StorageError> {
        Ok(self
            .read_replica(|conn| Box::pin(orders::inventory(conn)), |_| true)
            .await?)
    }
}

#[async_trait]
impl ApiKeyRepository for Store {
    async fn create_key(&self, spec: &KeySpec) -> Result<(ApiKey, ApiKeySecret), StorageError> {
        let now = self.now();
        let (spec, secret) = (spec.clone(), keys::random_secret()?);
        Ok(self
            .write(move |conn| Box::pin(keys::create(conn, spec, secret, now)))
            .await?)
    }

    async fn find_active_key(&self, hash: &KeyHash) -> Result<Option<KeyMatch>, StorageError> {
        let hash = hash.clone();
        Ok(self
            .read(move |conn| Box::pin(keys::find_active(conn, hash)))
            .await?)
    }

    async fn find_key(&self, id: i64) -> Result<Option<ApiKey>, StorageError> {
        Ok(self
            .read(move |conn| Box::pin(keys::find(conn, id)))
            .await?)
    }

    async fn list_keys_page(&self, query: &KeyListQuery) -> Result<Page<ApiKey>, StorageError> {
        let query = *query;
        Ok(self
            .read(move |conn| Box::pin(keys::list_page(conn, query)))
            .await?)
    }

    async fn update_key(
        &self,
        id: i64,
        update: &KeyUpdate,
    ) -> Result<Option<ApiKey>, StorageError> {
        let update = update.clone();
        Ok(self
            .write(move |conn| Box::pin(keys::update(conn, id, update)))
            .await?)
    }

    async fn revoke_key(&self, id: i64) -> Result<bool, StorageError> {
        let now = self.now();
        Ok(self
            .write(move |conn| Box::pin(keys::revoke(conn, id, now)))
            .await?)
    }

    async fn update_key_plan(
        &self,
        id: i64,
        plan: Plan,
        custom_limits: Option<RateLimits>,
    ) -> Result<bool, StorageError> {
        Ok(self
            .write(move |conn| Box::pin(keys::update_plan(conn, id, plan, custom_limits)))
            .await?)
    }

    async fn ban_key(&self, id: i64, ban: Ban, now: u64) -> Result<bool, StorageError> {
        Ok(self
            .write(move |conn| Box::pin(keys::ban(conn, id, ban, now)))
            .await?)
    }

    async fn unban_key(&self, id: i64) -> Result<bool, StorageError> {
        Ok(self
            .write(move |conn| Box::pin(keys::unban(conn, id)))
            .await?)
    }

    async fn rotate_key(
        &self,
        id: i64,
        grace_until: i64,
    ) -> Result<Option<(ApiKey, ApiKeySecret)>, StorageError> {
        let secret = keys::random_secret()?;
        Ok(self
            .write(move |conn| Box::pin(keys::rotate(conn, id, grace_until, secret)))
            .await?)
    }

    async fn update_key_scope(&self, id: i64, scope: Scope) -> Result<bool, StorageError> {
        Ok(self
            .write(move |conn| Box::pin(keys::update_scope(conn, id, scope)))
            .await?)
    }

    async fn touch_key(&self, id: i64, now: i64) -> Result<(), StorageError> {
        Ok(self
            .write(move |conn| Box::pin(keys::touch(conn, id, now)))
            .await?)
    }
}

#[async_trait]
impl AdminTokenRepository for Store {
    async fn create_admin_token(
        &self,
        spec: &AdminTokenSpec,
    ) -> Result<(AdminToken, AdminTokenSecret), StorageError> {
        let now = self.now();
        let (spec, secret) = (spec.clone(), admin_tokens::random_token()?);
        Ok(self
            .write(move |conn| Box::pin(admin_tokens::create(conn, spec, secret, now)))
            .await?)
    }

    async fn find_admin_token(&self, hash: &KeyHash) -> Result<Option<AdminToken>, StorageError> {
        let hash = hash.clone();
        Ok(self
            .read(move |conn| Box::pin(admin_tokens::find_active(conn, hash)))
            .await?)
    }

    async fn list_admin_tokens(&self) -> Result<Vec<AdminToken>, StorageError> {
        Ok(self.read(|conn| Box::pin(admin_tokens::list(conn))).await?)
    }

    async fn revoke_admin_token(&self, id: i64) -> Result<bool, StorageError> {
        let now = self.now();
        Ok(self
            .write(move |conn| Box::pin(admin_tokens::revoke(conn, id, now)))
            .await?)
    }
}

#[async_trait]
impl IdempotencyRepository for Store {
    async fn claim_idempotency_key(
        &self,
        request: &IdempotentRequest,
    ) -> Result<ClaimOutcome, StorageError> {
        let request = request.clone();
        Ok(self
            .write(move |conn| Box::pin(idempotency::claim(conn, request)))
            .await?)
    }

    async fn complete_idempotency_key(
        &self,
        claim: &IdempotencyClaim,
        response: &StoredResponse,
    ) -> Result<(), StorageError> {
        let (claim, response) = (claim.clone(), response.clone());
        self.write(move |conn| {
            Box::pin(async move {
                idempotency::complete(conn, &claim, &response)
                    .await
                    .map(drop)
            })
        })
        .await?;
        Ok(())
    }

    async fn release_idempotency_key(&self, claim: &IdempotencyClaim) -> Result<(), StorageError> {
        let claim = claim.clone();
        Ok(self
            .write(move |conn| Box::pin(idempotency::release(conn, claim)))
            .await?)
    }

    /// In rounds of [`idempotency::PRUNE_BATCH`], each a call of its own.
    async fn prune_idempotency_keys(&self, before: u64) -> Result<u64, StorageError> {
        Ok(self
            .in_rounds(idempotency::PRUNE_BATCH, move |conn| {
                Box::pin(idempotency::prune_batch(conn, before))
            })
            .await?)
    }
}

#[async_trait]
impl WebhookRepository for Store {
    async fn create_webhook_endpoint(
        &self,
        owner: EndpointOwner,
        spec: &EndpointSpec,
    ) -> Result<EndpointWrite<(WebhookEndpoint, SigningSecret)>, StorageError> {
        let now = self.now();
        let (spec, secret) = (spec.clone(), webhooks::random_secret()?);
        Ok(self
            .write(move |conn| Box::pin(webhooks::create(conn, owner, spec, secret, now)))
            .await?)
    }

    async fn list_webhook_endpoints(
        &self,
        owner: EndpointOwner,
    ) -> Result<Vec<WebhookEndpoint>, StorageError> {
        let now = self.now();
        Ok(self
            .read(move |conn| Box::pin(webhooks::list(conn, owner, now)))
            .await?)
    }

    async fn find_webhook_endpoint(
        &self,
        id: i64,
        owner: EndpointOwner,
    ) -> Result<Option<WebhookEndpoint>, StorageError> {
        let now = self.now();
        Ok(self
            .read(move |conn| Box::pin(webhooks::find(conn, id, owner, now)))
            .await?)
    }

    async fn update_webhook_endpoint(
        &self,
        id: i64,
        owner: EndpointOwner,
        update: &EndpointUpdate,
    ) -> Result<EndpointWrite<WebhookEndpoint>, StorageError> {
        let now = self.now();
        let update = update.clone();
        Ok(self
            .write(move |conn| Box::pin(webhooks::update(conn, id, owner, update, now)))
            .await?)
    }

    async fn delete_webhook_endpoint(
        &self,
        id: i64,
        owner: EndpointOwner,
    ) -> Result<bool, StorageError> {
        let now = self.now();
        Ok(self
            .write(move |conn| Box::pin(webhooks::delete(conn, id, owner, now)))
            .await?)
    }

    async fn rotate_webhook_secret(
        &self,
        id: i64,
        owner: EndpointOwner,
        grace_until: i64,
    ) -> Result<Option<(WebhookEndpoint, SigningSecret)>, StorageError> {
        let now = self.now();
        let secret = webhooks::random_secret()?;
        Ok(self
            .write(move |conn| {
                Box::pin(webhooks::rotate(conn, id, owner, grace_until, secret, now))
            })
            .await?)
    }

    async fn list_webhook_deliveries(
        &self,
        endpoint: i64,
        owner: EndpointOwner,
        page: PageRequest,
    ) -> Result<Option<Page<Delivery>>, StorageError> {
        Ok(self
            .read(move |conn| Box::pin(webhooks::list_deliveries(conn, endpoint, owner, page)))
            .await?)
    }

    async fn find_webhook_delivery(
        &self,
        endpoint: i64,
        delivery: i64,
        owner: EndpointOwner,
    ) -> Result<Option<(Delivery, Vec<Attempt>)>, StorageError> {
        Ok(self
            .read(move |conn| Box::pin(webhooks::find_delivery(conn, endpoint, delivery, owner)))
            .await?)
    }

    async fn redeliver_webhook(
        &self,
        endpoint: i64,
        delivery: i64,
        owner: EndpointOwner,
        now: i64,
    ) -> Result<Option<Delivery>, StorageError> {
        Ok(self
            .write(move |conn| Box::pin(webhooks::redeliver(conn, endpoint, delivery, owner, now)))
            .await?)
    }

    async fn claim_webhook_deliveries(
        &self,
        claim: &DeliveryClaim,
    ) -> Result<Vec<DueDelivery>, StorageError> {
        let claim = claim.clone();
        Ok(self
            .write(move |conn| Box::pin(webhooks::claim(conn, claim)))
            .await?)
    }

    /// In one transaction; each alone where the database ended that one as a conflict
    /// (`webhooks::record_attempts`). Then each endpoint to turn off, a call each.
    async fn record_webhook_attempts(
        &self,
        records: &[AttemptRecord],
    ) -> Result<Vec<bool>, StorageError> {
        let together = records.to_vec();
        let recorded = match self
            .write(move |conn| Box::pin(webhooks::record_attempts(conn, together)))
            .await
        {
            Err(StoreError::Conflict(_)) if records.len() > 1 => {
                let mut recorded = Vec::with_capacity(records.len());
                for record in records {
                    let alone = vec![record.clone()];
                    recorded.extend(
                        self.write(move |conn| Box::pin(webhooks::record_attempts(conn, alone)))
                            .await?,
                    );
                }
                recorded
            }
            together => together?,
        };
        let held = recorded.iter().map(|recorded| recorded.held).collect();
        for off in recorded
            .into_iter()
            .filter_map(|recorded| recorded.turn_off)
        {
            self.write(move |conn| Box::pin(webhooks::turn_off(conn, off)))
                .await?;
        }
        Ok(held)
    }

    async fn webhook_backlog(&self) -> Result<Backlog, StorageError> {
        let now = self.now();
        Ok(self
            .read(move |conn| Box::pin(webhooks::backlog(conn, now)))
            .await?)
    }

    /// In rounds of [`webhooks::PRUNE_BATCH`], each a call of its own.
    async fn prune_webhook_deliveries(&self, before: i64) -> Result<u64, StorageError> {
        let now = self.now();
        Ok(self
            .in_rounds(webhooks::PRUNE_BATCH, move |conn| {
                Box::pin(webhooks::prune_batch(conn, before, now))
            })
            .await?)
    }
}
