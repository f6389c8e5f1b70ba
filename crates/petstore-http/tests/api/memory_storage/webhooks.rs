//! Webhook endpoints, their outbox and delivery log in memory, with the domain's rules for
//! which endpoint gets an event and when one is turned off.

use super::*;

impl Data {
    /// Whether `endpoint` may be sent to at `now`: on, and the operators' or its key's while the
    /// key works (neither revoked nor expired).
    pub(super) fn sendable(&self, endpoint: &WebhookEndpoint, now: i64) -> bool {
        endpoint.enabled
            && endpoint.owner.key().is_none_or(|key| {
                self.keys.get(&key).is_some_and(|stored| {
                    stored.key.revoked_at.is_none()
                        && stored.key.expires_at.is_none_or(|at| at > now)
                })
            })
    }

    /// Another of `owner`'s endpoints (not `except`) at `url`.
    fn endpoint_at(&self, owner: EndpointOwner, url: &str, except: i64) -> Option<i64> {
        self.webhook_endpoints
            .values()
            .map(|stored| &stored.endpoint)
            .find(|endpoint| {
                endpoint.owner == owner
                    && endpoint.id != except
                    && same_receiver(&endpoint.url, url)
            })
            .map(|endpoint| endpoint.id)
    }

    /// Endpoint `id`, if `owner`'s.
    fn endpoint(&self, id: i64, owner: EndpointOwner) -> Option<&StoredEndpoint> {
        self.webhook_endpoints
            .get(&id)
            .filter(|stored| stored.endpoint.owner == owner)
    }

    fn endpoint_mut(&mut self, id: i64, owner: EndpointOwner) -> Option<&mut StoredEndpoint> {
        self.webhook_endpoints
            .get_mut(&id)
            .filter(|stored| stored.endpoint.owner == owner)
    }

    /// Delivery `delivery` of endpoint `endpoint`, if the endpoint is `owner`'s.
    fn delivery_mut(
        &mut self,
        endpoint: i64,
        delivery: i64,
        owner: EndpointOwner,
    ) -> Option<&mut StoredDelivery> {
        let owned = self.endpoint(endpoint, owner).is_some();
        self.deliveries
            .get_mut(&delivery)
            .filter(|stored| owned && stored.delivery.endpoint_id == endpoint)
    }

    /// Ends endpoint `id`'s pending deliveries as failed, with `why`.
    fn fail_pending(&mut self, id: i64, why: &str) {
        let now = now();
        for stored in self.deliveries.values_mut().filter(|stored| {
            stored.delivery.endpoint_id == id && stored.delivery.state == DeliveryState::Pending
        }) {
            stored.delivery.state = DeliveryState::Failed;
            stored.delivery.next_attempt_at = None;
            stored.delivery.last_error = Some(why.to_owned());
            stored.lease_until = 0;
            stored.ended_at = Some(now);
        }
    }

    /// Turns endpoint `id` off, with `why`, and fails its pending deliveries.
    fn disable(&mut self, id: i64, why: &str) {
        if let Some(stored) = self.webhook_endpoints.get_mut(&id) {
            stored.endpoint.enabled = false;
            stored.endpoint.disabled_reason = Some(why.to_owned());
        }
        self.fail_pending(id, &format!("the endpoint was turned off: {why}"));
    }
}

#[async_trait]
impl WebhookRepository for MemoryStorage {
    async fn create_webhook_endpoint(
        &self,
        owner: EndpointOwner,
        spec: &EndpointSpec,
    ) -> Result<EndpointWrite<(WebhookEndpoint, SigningSecret)>, StorageError> {
        let mut data = self.data();
        let existing = data
            .webhook_endpoints
            .values()
            .filter(|stored| stored.endpoint.owner == owner)
            .count();
        if existing >= MAX_ENDPOINTS {
            return Ok(EndpointWrite::LimitReached);
        }
        if let Some(taken) = data.endpoint_at(owner, spec.url.as_str(), 0) {
            return Ok(EndpointWrite::UrlTaken(taken));
        }
        let secret = SigningSecret::from_random_bytes(self.fresh_bytes(&mut data, "webhook"));
        data.endpoint_ids += 1;
        let id = data.endpoint_ids;
        let endpoint = WebhookEndpoint {
            id,
            url: spec.url.as_str().to_owned(),
            events: spec.events,
            description: spec.description.clone(),
            enabled: true,
            disabled_reason: None,
            previous_secret_expires_at: None,
            created_at: now(),
            owner,
        };
        let stored = StoredEndpoint {
            endpoint: endpoint.clone(),
            secret: secret.clone(),
            previous: None,
            last_success_at: None,
        };
        data.webhook_endpoints.insert(id, stored);
        Ok(EndpointWrite::Done((endpoint, secret)))
    }

    async fn list_webhook_endpoints(
        &self,
        owner: EndpointOwner,
    ) -> Result<Vec<WebhookEndpoint>, StorageError> {
        Ok(self
            .data()
            .webhook_endpoints
            .values()
            .filter(|stored| stored.endpoint.owner == owner)
            .map(StoredEndpoint::view)
            .collect())
    }

    async fn find_webhook_endpoint(
        &self,
        id: i64,
        owner: EndpointOwner,
    ) -> Result<Option<WebhookEndpoint>, StorageError> {
        Ok(self.data().endpoint(id, owner).map(StoredEndpoint::view))
    }

    async fn update_webhook_endpoint(
        &self,
        id: i64,
        owner: EndpointOwner,
        update: &EndpointUpdate,
    ) -> Result<EndpointWrite<WebhookEndpoint>, StorageError> {
        let mut data = self.data();
        if data.endpoint(id, owner).is_none() {
            return Ok(EndpointWrite::NotFound);
        }
        if let Some(url) = &update.url
            && let Some(taken) = data.endpoint_at(owner, url.as_str(), id)
        {
            return Ok(EndpointWrite::UrlTaken(taken));
        }
        let Some(stored) = data.endpoint_mut(id, owner) else {
            return Ok(EndpointWrite::NotFound);
        };
        let endpoint = &mut stored.endpoint;
        if let Some(url) = &update.url {
            endpoint.url = url.as_str().to_owned();
        }
        if let Some(events) = update.events {
            endpoint.events = events;
        }
        if let Some(description) = &update.description {
            endpoint.description.clone_from(description);
        }
        let turned_off = match update.enabled {
            Some(true) if !endpoint.enabled => {
                endpoint.enabled = true;
                endpoint.disabled_reason = None;
                false
            }
            Some(false) if endpoint.enabled => {
                endpoint.enabled = false;
                endpoint.disabled_reason = Some("turned off by its owner".to_owned());
                true
            }
            _ => false,
        };
        let updated = stored.view();
        if turned_off {
            data.fail_pending(id, "the endpoint was turned off");
        }
        Ok(EndpointWrite::Done(updated))
    }

    async fn delete_webhook_endpoint(
        &self,
        id: i64,
        owner: EndpointOwner,
    ) -> Result<bool, StorageError> {
        let mut data = self.data();
        if data.endpoint(id, owner).is_none() {
            return Ok(false);
        }
        data.webhook_endpoints.remove(&id);
        data.deliveries
            .retain(|_, stored| stored.delivery.endpoint_id != id);
        Ok(true)
    }

    async fn rotate_webhook_secret(
        &self,
        id: i64,
        owner: EndpointOwner,
        grace_until: i64,
    ) -> Result<Option<(WebhookEndpoint, SigningSecret)>, StorageError> {
        let mut data = self.data();
        let secret = SigningSecret::from_random_bytes(self.fresh_bytes(&mut data, "webhook"));
        let Some(stored) = data.endpoint_mut(id, owner) else {
            return Ok(None);
        };
        let previous = std::mem::replace(&mut stored.secret, secret.clone());
        stored.previous = Some((previous, grace_until));
        Ok(Some((stored.view(), secret)))
    }

    async fn list_webhook_deliveries(
        &self,
        endpoint: i64,
        owner: EndpointOwner,
        page: PageRequest,
    ) -> Result<Option<Page<Delivery>>, StorageError> {
        let data = self.data();
        if data.endpoint(endpoint, owner).is_none() {
            return Ok(None);
        }
        // Newest first: `after` is the oldest id of the page before.
        let rows: Vec<Delivery> = data
            .deliveries
            .range(..page.after.unwrap_or(i64::MAX))
            .rev()
            .map(|(_, stored)| &stored.delivery)
            .filter(|delivery| delivery.endpoint_id == endpoint)
            .take(page.limit.get() as usize + 1)
            .cloned()
            .collect();
        Ok(Some(Page::from_overfetch(rows, page.limit, |delivery| {
            delivery.id
        })))
    }

    async fn find_webhook_delivery(
        &self,
        endpoint: i64,
        delivery: i64,
        owner: EndpointOwner,
    ) -> Result<Option<(Delivery, Vec<Attempt>)>, StorageError> {
        let data = self.data();
        if data.endpoint(endpoint, owner).is_none() {
            return Ok(None);
        }
        Ok(data
            .deliveries
            .get(&delivery)
            .filter(|stored| stored.delivery.endpoint_id == endpoint)
            .map(|stored| {
                let shown = stored.attempts.len().saturating_sub(MAX_ATTEMPTS_SHOWN);
                (stored.delivery.clone(), stored.attempts[shown..].to_vec())
            }))
    }

    async fn redeliver_webhook(
        &self,
        endpoint: i64,
        delivery: i64,
        owner: EndpointOwner,
        now: i64,
    ) -> Result<Option<Delivery>, StorageError> {
        let mut data = self.data();
        let Some(stored) = data.delivery_mut(endpoint, delivery, owner) else {
            return Ok(None);
        };
        stored.delivery.state = DeliveryState::Pending;
        stored.delivery.next_attempt_at = Some(now);
        stored.tries = 0;
        stored.lease = 0;
        stored.lease_until = 0;
        stored.ended_at = None;
        Ok(Some(stored.delivery.clone()))
    }

    async fn claim_webhook_deliveries(
        &self,
        claim: &DeliveryClaim,
    ) -> Result<Vec<DueDelivery>, StorageError> {
        let mut data = self.data();
        let sendable: HashMap<i64, EndpointOwner> = data
            .webhook_endpoints
            .values()
            .map(|stored| &stored.endpoint)
            .filter(|endpoint| data.sendable(endpoint, claim.now))
            .filter(|endpoint| claim.room(endpoint.owner) > 0)
            .map(|endpoint| (endpoint.id, endpoint.owner))
            .collect();
        // Due, oldest first (ties in id order), then owners in turn as the rule says.
        let mut candidates: Vec<(Option<i64>, i64, EndpointOwner)> = data
            .deliveries
            .values()
            .filter(|stored| {
                stored.delivery.state == DeliveryState::Pending
                    && stored
                        .delivery
                        .next_attempt_at
                        .is_some_and(|at| at <= claim.now)
                    && stored.lease_until <= claim.now
                    && !claim.skip_endpoints.contains(&stored.delivery.endpoint_id)
            })
            .filter_map(|stored| {
                let owner = sendable.get(&stored.delivery.endpoint_id)?;
                Some((stored.delivery.next_attempt_at, stored.delivery.id, *owner))
            })
            .collect();
        candidates.sort_by_key(|(at, id, _)| (*at, *id));
        let candidates: Vec<(i64, EndpointOwner)> = candidates
            .into_iter()
            .map(|(_, id, owner)| (id, owner))
            .collect();
        let mut taken = take_in_turn(&candidates, claim);
        taken.sort_by_key(|id| {
            let at = data
                .deliveries
                .get(id)
                .and_then(|stored| stored.delivery.next_attempt_at);
            (at, *id)
        });
        let Data {
            webhook_endpoints,
            deliveries,
            ..
        } = &mut *data;
        Ok(taken
            .into_iter()
            .filter_map(|id| {
                let stored = deliveries.get_mut(&id)?;
                let endpoint = webhook_endpoints.get(&stored.delivery.endpoint_id)?;
                stored.lease = claim.token;
                stored.lease_until = claim.lease_until;
                let delivery = &stored.delivery;
                Some(DueDelivery {
                    id: delivery.id,
                    event_id: delivery.event_id.clone(),
                    event_type: delivery.event_type,
                    body: delivery.body.clone(),
                    endpoint_id: delivery.endpoint_id,
                    owner: endpoint.endpoint.owner,
                    url: endpoint.endpoint.url.clone(),
                    secrets: endpoint.secrets(claim.now),
                    tries: stored.tries,
                    lease: claim.token,
                    // This storage keeps no trace context (the store's outbox does).
                    trace: None,
                })
            })
            .collect())
    }

    async fn record_webhook_attempts(
        &self,
        records: &[AttemptRecord],
    ) -> Result<Vec<bool>, StorageError> {
        Ok(records
            .iter()
            .map(|record| self.record_attempt(record))
            .collect())
    }

    async fn webhook_backlog(&self) -> Result<Backlog, StorageError> {
        let data = self.data();
        let now = now();
        let pending: Vec<i64> = data
            .deliveries
            .values()
            .map(|stored| &stored.delivery)
            .filter(|delivery| delivery.state == DeliveryState::Pending)
            .filter(|delivery| {
                data.webhook_endpoints
                    .get(&delivery.endpoint_id)
                    .is_some_and(|stored| data.sendable(&stored.endpoint, now))
            })
            .map(|delivery| delivery.created_at)
            .collect();
        Ok(Backlog {
            pending: pending.len() as u64,
            oldest_created_at: pending.iter().min().copied(),
        })
    }

    async fn prune_webhook_deliveries(&self, before: i64) -> Result<u64, StorageError> {
        let mut data = self.data();
        // A revoked or expired key's pending deliveries end, failed: they are never sent.
        let now = now();
        let stranded: Vec<i64> = data
            .webhook_endpoints
            .values()
            .map(|stored| &stored.endpoint)
            .filter(|endpoint| endpoint.owner.key().is_some())
            .filter(|endpoint| {
                let enabled = WebhookEndpoint {
                    enabled: true,
                    ..(*endpoint).clone()
                };
                !data.sendable(&enabled, now)
            })
            .map(|endpoint| endpoint.id)
            .collect();
        let mut ended = 0;
        for stored in data.deliveries.values_mut().filter(|stored| {
            stranded.contains(&stored.delivery.endpoint_id)
                && stored.delivery.state == DeliveryState::Pending
        }) {
            stored.delivery.state = DeliveryState::Failed;
            stored.delivery.next_attempt_at = None;
            stored.delivery.last_error = Some(
                "not sent: the API key that owns the endpoint was revoked or has expired"
                    .to_owned(),
            );
            stored.lease_until = 0;
            stored.ended_at = Some(now);
            ended += 1;
        }
        let count = data.deliveries.len();
        data.deliveries
            .retain(|_, stored| stored.ended_at.is_none_or(|at| at >= before));
        Ok(ended + (count - data.deliveries.len()) as u64)
    }
}

impl MemoryStorage {
    /// One attempt recorded, as the store records each of a batch.
    fn record_attempt(&self, record: &AttemptRecord) -> bool {
        let mut data = self.data();
        let Some(stored) = data
            .deliveries
            .get_mut(&record.delivery)
            .filter(|stored| stored.lease != 0 && stored.lease == record.lease)
        else {
            return false;
        };
        let attempt = Attempt {
            attempted_at: record.attempted_at,
            status: record.status,
            latency_ms: record.latency_ms,
            error: record.error.clone(),
        };
        if stored.delivery.state != DeliveryState::Pending {
            // Ended while the attempt was under way (its endpoint turned off): the attempt is
            // recorded, the delivery stays as it ended.
            stored.delivery.attempts += 1;
            stored.delivery.last_status = record.status;
            stored.delivery.last_latency_ms = Some(record.latency_ms);
            stored.lease = 0;
            stored.attempts.push(attempt);
            return true;
        }
        let (state, next_attempt_at, ended_at) = match record.result {
            AttemptResult::Delivered => (DeliveryState::Delivered, None, Some(record.attempted_at)),
            AttemptResult::RetryAt(at) => (DeliveryState::Pending, Some(at), None),
            AttemptResult::GaveUp | AttemptResult::Gone => {
                (DeliveryState::Failed, None, Some(record.attempted_at))
            }
        };
        let delivery = &mut stored.delivery;
        delivery.state = state;
        delivery.attempts += 1;
        delivery.next_attempt_at = next_attempt_at;
        delivery.last_status = record.status;
        delivery.last_latency_ms = Some(record.latency_ms);
        delivery.last_error.clone_from(&record.error);
        let (endpoint, created_at) = (delivery.endpoint_id, delivery.created_at);
        stored.tries += 1;
        stored.lease = 0;
        stored.lease_until = 0;
        stored.ended_at = ended_at;
        stored.attempts.push(attempt);
        match record.result {
            AttemptResult::Delivered => {
                if let Some(stored) = data.webhook_endpoints.get_mut(&endpoint) {
                    stored.last_success_at = Some(record.attempted_at);
                }
            }
            AttemptResult::Gone => data.disable(endpoint, "it answered 410 Gone"),
            AttemptResult::GaveUp => {
                // Failing throughout: nothing delivered to it since this delivery's event.
                let failing = data
                    .webhook_endpoints
                    .get(&endpoint)
                    .is_some_and(|stored| stored.last_success_at.is_none_or(|at| at < created_at));
                if failing {
                    let last = match (&record.error, record.status) {
                        (Some(error), _) => error.clone(),
                        (None, Some(status)) => format!("HTTP {status}"),
                        (None, None) => "no answer".to_owned(),
                    };
                    let why = format!(
                        "every delivery failed for the whole retry schedule (the last: {last})"
                    );
                    data.disable(endpoint, &why);
                }
            }
            AttemptResult::RetryAt(_) => {}
        }
        true
    }
}
