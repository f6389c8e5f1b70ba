//! The [`Client`]'s operations, one method each: pets, orders, the inventory, the rate-limit
//! status and webhook endpoints, as [`crate::operations`] lists them. Each builds its address
//! and hands the request to the machinery in `request`.

use std::time::Duration;

use futures_util::stream::{self, Stream, TryStreamExt};
use reqwest::Method;

use crate::operations;
use crate::request::{Call, tidy_query};
use crate::{
    Client, Delivery, DeliveryRecord, EndpointChanges, Error, Inventory, IssuedEndpoint, Listing,
    NewEndpoint, NewOrder, NewPet, Order, OrderQuery, Pet, PetQuery, RateLimitStatus,
    WebhookEndpoint,
};

impl Client {
    /// `listPets`: one page of pets.
    pub async fn list_pets(&self, query: &PetQuery) -> Result<Listing<Pet>, Error> {
        let url = self.pets_url(query)?;
        self.listing(url).await
    }

    /// Every pet the query matches, page after page (following `Link: rel="next"`) to the end.
    pub fn pets(&self, query: &PetQuery) -> impl Stream<Item = Result<Pet, Error>> + use<> {
        let client = self.clone();
        let first = self.pets_url(query);
        stream::try_unfold(Some(first), move |next| {
            let client = client.clone();
            async move {
                let Some(url) = next else {
                    return Ok(None);
                };
                let page: Listing<Pet> = client.listing(url?).await?;
                let next = page.next.as_deref().map(|next| client.parse_next(next));
                Ok(Some((stream::iter(page.items.into_iter().map(Ok)), next)))
            }
        })
        .try_flatten()
    }

    /// `createPet`, with an `Idempotency-Key` made for this call: however many times it is
    /// retried, one pet is created.
    pub async fn create_pet(&self, pet: &NewPet) -> Result<Pet, Error> {
        let url = self.url(&operations::CREATE_PET, &[])?;
        self.write(url, pet).await
    }

    /// `getPet`.
    ///
    /// Answers [`Error::EndpointRemoved`] once the endpoint is past its sunset.
    #[deprecated(
        since = "0.1.0",
        note = "GET /pets/{petId} is deprecated and removed on 2030-12-05 (its Sunset): use \
                list_pets with a status filter"
    )]
    pub async fn get_pet(&self, id: i64) -> Result<Pet, Error> {
        let url = self.url(&operations::GET_PET, &[("{petId}", id)])?;
        self.json(Method::GET, url).await
    }

    /// `listOrders`: one page of this key's orders.
    pub async fn list_orders(&self, query: &OrderQuery) -> Result<Listing<Order>, Error> {
        let mut url = self.url(&operations::LIST_ORDERS, &[])?;
        {
            let mut pairs = url.query_pairs_mut();
            if let Some(limit) = query.limit {
                pairs.append_pair("limit", &limit.to_string());
            }
            if let Some(after) = query.after {
                pairs.append_pair("after", &after.to_string());
            }
        }
        tidy_query(&mut url);
        self.listing(url).await
    }

    /// `placeOrder` (experimental), with an `Idempotency-Key` made for this call.
    pub async fn place_order(&self, pet_id: i64) -> Result<Order, Error> {
        let url = self.url(&operations::PLACE_ORDER, &[])?;
        self.write(
            url,
            &NewOrder {
                pet_id,
                quantity: 1,
            },
        )
        .await
    }

    /// `getOrder` (experimental): one of this key's orders.
    pub async fn get_order(&self, id: i64) -> Result<Order, Error> {
        let url = self.url(&operations::GET_ORDER, &[("{orderId}", id)])?;
        self.json(Method::GET, url).await
    }

    /// `cancelOrder` (experimental): cancels a placed order.
    pub async fn cancel_order(&self, id: i64) -> Result<Order, Error> {
        let url = self.url(&operations::CANCEL_ORDER, &[("{orderId}", id)])?;
        self.json(Method::POST, url).await
    }

    /// `getInventory` (experimental): how many pets have each status.
    pub async fn inventory(&self) -> Result<Inventory, Error> {
        let url = self.url(&operations::GET_INVENTORY, &[])?;
        self.json(Method::GET, url).await
    }

    /// `getRateLimit`: the key's plan and both windows, without spending a request.
    pub async fn rate_limit_status(&self) -> Result<RateLimitStatus, Error> {
        let url = self.url(&operations::GET_RATE_LIMIT, &[])?;
        self.json(Method::GET, url).await
    }

    /// `listWebhookEndpoints` (experimental): this key's webhook endpoints.
    pub async fn list_webhook_endpoints(&self) -> Result<Vec<WebhookEndpoint>, Error> {
        let url = self.url(&operations::LIST_WEBHOOK_ENDPOINTS, &[])?;
        self.json(Method::GET, url).await
    }

    /// `createWebhookEndpoint` (experimental): registers `endpoint`; the answer holds its
    /// signing secret, shown only this once ([`webhooks::WebhookSecret::parse`] reads it).
    /// Not idempotent: a create retried after a `503` may have registered the endpoint already
    /// (list them before creating again).
    ///
    /// [`webhooks::WebhookSecret::parse`]: crate::webhooks::WebhookSecret::parse
    pub async fn create_webhook_endpoint(
        &self,
        endpoint: &NewEndpoint,
    ) -> Result<IssuedEndpoint, Error> {
        let url = self.url(&operations::CREATE_WEBHOOK_ENDPOINT, &[])?;
        self.json_with(Method::POST, url, endpoint).await
    }

    /// `getWebhookEndpoint` (experimental).
    pub async fn get_webhook_endpoint(&self, id: i64) -> Result<WebhookEndpoint, Error> {
        let url = self.url(&operations::GET_WEBHOOK_ENDPOINT, &[("{endpointId}", id)])?;
        self.json(Method::GET, url).await
    }

    /// `updateWebhookEndpoint` (experimental): changes the fields `changes` gives.
    pub async fn update_webhook_endpoint(
        &self,
        id: i64,
        changes: &EndpointChanges,
    ) -> Result<WebhookEndpoint, Error> {
        let url = self.url(
            &operations::UPDATE_WEBHOOK_ENDPOINT,
            &[("{endpointId}", id)],
        )?;
        self.json_with(Method::PATCH, url, changes).await
    }

    /// `deleteWebhookEndpoint` (experimental), with its delivery log.
    pub async fn delete_webhook_endpoint(&self, id: i64) -> Result<(), Error> {
        let url = self.url(
            &operations::DELETE_WEBHOOK_ENDPOINT,
            &[("{endpointId}", id)],
        )?;
        let call = Call {
            method: Method::DELETE,
            url,
            body: None,
            idempotency_key: None,
            if_none_match: None,
        };
        self.send(&call).await.map(drop)
    }

    /// `rotateWebhookSecret` (experimental): a new secret, shown only in the answer; the old
    /// one keeps signing (a second signature) for `grace` (the service's default, a day, when
    /// `None`).
    pub async fn rotate_webhook_secret(
        &self,
        id: i64,
        grace: Option<Duration>,
    ) -> Result<IssuedEndpoint, Error> {
        let url = self.url(&operations::ROTATE_WEBHOOK_SECRET, &[("{endpointId}", id)])?;
        let body = match grace {
            Some(grace) => serde_json::json!({ "graceSeconds": grace.as_secs() }),
            None => serde_json::json!({}),
        };
        self.json_with(Method::POST, url, &body).await
    }

    /// `listWebhookDeliveries` (experimental): a page of an endpoint's delivery log, newest
    /// first (`after`: only deliveries older than that id; the next page's is in `next`).
    pub async fn list_webhook_deliveries(
        &self,
        endpoint: i64,
        limit: Option<u32>,
        after: Option<i64>,
    ) -> Result<Listing<Delivery>, Error> {
        let mut url = self.url(
            &operations::LIST_WEBHOOK_DELIVERIES,
            &[("{endpointId}", endpoint)],
        )?;
        {
            let mut pairs = url.query_pairs_mut();
            if let Some(limit) = limit {
                pairs.append_pair("limit", &limit.to_string());
            }
            if let Some(after) = after {
                pairs.append_pair("after", &after.to_string());
            }
        }
        tidy_query(&mut url);
        self.listing(url).await
    }

    /// `getWebhookDelivery` (experimental): one delivery with its attempts.
    pub async fn get_webhook_delivery(
        &self,
        endpoint: i64,
        delivery: i64,
    ) -> Result<DeliveryRecord, Error> {
        let url = self.url(
            &operations::GET_WEBHOOK_DELIVERY,
            &[("{endpointId}", endpoint), ("{deliveryId}", delivery)],
        )?;
        self.json(Method::GET, url).await
    }

    /// `redeliverWebhook` (experimental): sends a delivery again (the same `webhook-id`).
    pub async fn redeliver_webhook(&self, endpoint: i64, delivery: i64) -> Result<Delivery, Error> {
        let url = self.url(
            &operations::REDELIVER_WEBHOOK,
            &[("{endpointId}", endpoint), ("{deliveryId}", delivery)],
        )?;
        self.json(Method::POST, url).await
    }
}
