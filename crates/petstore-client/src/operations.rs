//! The operations of the interface this client calls, as the OpenAPI document names them. The
//! client builds its requests from these, and a test holds them to `docs/openapi.json`, so
//! neither the client nor the document can drift from the other.

/// One operation: its `operationId`, method, path under the base address, and the query and
/// header parameters the client may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation {
    /// The document's `operationId`.
    pub id: &'static str,
    /// The HTTP method, lowercase as in the document.
    pub method: &'static str,
    /// The path template (`/pets/{petId}`).
    pub path: &'static str,
    /// Query parameters the client sends.
    pub query: &'static [&'static str],
    /// Header parameters the client sends (besides `Authorization`; `If-None-Match` when it
    /// holds a tagged answer to the same address).
    pub headers: &'static [&'static str],
}

/// `GET /pets`.
pub const LIST_PETS: Operation = Operation {
    id: "listPets",
    method: "get",
    path: "/pets",
    query: &["limit", "status", "after"],
    headers: &["If-None-Match"],
};
/// `POST /pets`.
pub const CREATE_PET: Operation = Operation {
    id: "createPet",
    method: "post",
    path: "/pets",
    query: &[],
    headers: &["Idempotency-Key"],
};
/// `GET /pets/{petId}` (deprecated).
pub const GET_PET: Operation = Operation {
    id: "getPet",
    method: "get",
    path: "/pets/{petId}",
    query: &[],
    headers: &["If-None-Match"],
};
/// `GET /store/orders`.
pub const LIST_ORDERS: Operation = Operation {
    id: "listOrders",
    method: "get",
    path: "/store/orders",
    query: &["limit", "after"],
    headers: &["If-None-Match"],
};
/// `POST /store/orders`.
pub const PLACE_ORDER: Operation = Operation {
    id: "placeOrder",
    method: "post",
    path: "/store/orders",
    query: &[],
    headers: &["Idempotency-Key"],
};
/// `GET /store/orders/{orderId}`.
pub const GET_ORDER: Operation = Operation {
    id: "getOrder",
    method: "get",
    path: "/store/orders/{orderId}",
    query: &[],
    headers: &["If-None-Match"],
};
/// `POST /store/orders/{orderId}/cancel`.
pub const CANCEL_ORDER: Operation = Operation {
    id: "cancelOrder",
    method: "post",
    path: "/store/orders/{orderId}/cancel",
    query: &[],
    headers: &[],
};
/// `GET /store/inventory`.
pub const GET_INVENTORY: Operation = Operation {
    id: "getInventory",
    method: "get",
    path: "/store/inventory",
    query: &[],
    headers: &["If-None-Match"],
};
/// `GET /rate_limit`.
pub const GET_RATE_LIMIT: Operation = Operation {
    id: "getRateLimit",
    method: "get",
    path: "/rate_limit",
    query: &[],
    headers: &[],
};

/// `GET /webhook_endpoints`.
pub const LIST_WEBHOOK_ENDPOINTS: Operation = Operation {
    id: "listWebhookEndpoints",
    method: "get",
    path: "/webhook_endpoints",
    query: &[],
    headers: &["If-None-Match"],
};
/// `POST /webhook_endpoints`.
pub const CREATE_WEBHOOK_ENDPOINT: Operation = Operation {
    id: "createWebhookEndpoint",
    method: "post",
    path: "/webhook_endpoints",
    query: &[],
    headers: &[],
};
/// `GET /webhook_endpoints/{endpointId}`.
pub const GET_WEBHOOK_ENDPOINT: Operation = Operation {
    id: "getWebhookEndpoint",
    method: "get",
    path: "/webhook_endpoints/{endpointId}",
    query: &[],
    headers: &["If-None-Match"],
};
/// `PATCH /webhook_endpoints/{endpointId}`.
pub const UPDATE_WEBHOOK_ENDPOINT: Operation = Operation {
    id: "updateWebhookEndpoint",
    method: "patch",
    path: "/webhook_endpoints/{endpointId}",
    query: &[],
    headers: &[],
};
/// `DELETE /webhook_endpoints/{endpointId}`.
pub const DELETE_WEBHOOK_ENDPOINT: Operation = Operation {
    id: "deleteWebhookEndpoint",
    method: "delete",
    path: "/webhook_endpoints/{endpointId}",
    query: &[],
    headers: &[],
};
/// `POST /webhook_endpoints/{endpointId}/rotate_secret`.
pub const ROTATE_WEBHOOK_SECRET: Operation = Operation {
    id: "rotateWebhookSecret",
    method: "post",
    path: "/webhook_endpoints/{endpointId}/rotate_secret",
    query: &[],
    headers: &[],
};
/// `GET /webhook_endpoints/{endpointId}/deliveries`.
pub const LIST_WEBHOOK_DELIVERIES: Operation = Operation {
    id: "listWebhookDeliveries",
    method: "get",
    path: "/webhook_endpoints/{endpointId}/deliveries",
    query: &["limit", "after"],
    headers: &["If-None-Match"],
};
/// `GET /webhook_endpoints/{endpointId}/deliveries/{deliveryId}`.
pub const GET_WEBHOOK_DELIVERY: Operation = Operation {
    id: "getWebhookDelivery",
    method: "get",
    path: "/webhook_endpoints/{endpointId}/deliveries/{deliveryId}",
    query: &[],
    headers: &["If-None-Match"],
};
/// `POST /webhook_endpoints/{endpointId}/deliveries/{deliveryId}/redeliver`.
pub const REDELIVER_WEBHOOK: Operation = Operation {
    id: "redeliverWebhook",
    method: "post",
    path: "/webhook_endpoints/{endpointId}/deliveries/{deliveryId}/redeliver",
    query: &[],
    headers: &[],
};

/// Every operation the client calls.
pub const ALL: [Operation; 18] = [
    LIST_PETS,
    CREATE_PET,
    GET_PET,
    LIST_ORDERS,
    PLACE_ORDER,
    GET_ORDER,
    CANCEL_ORDER,
    GET_INVENTORY,
    GET_RATE_LIMIT,
    LIST_WEBHOOK_ENDPOINTS,
    CREATE_WEBHOOK_ENDPOINT,
    GET_WEBHOOK_ENDPOINT,
    UPDATE_WEBHOOK_ENDPOINT,
    DELETE_WEBHOOK_ENDPOINT,
    ROTATE_WEBHOOK_SECRET,
    LIST_WEBHOOK_DELIVERIES,
    GET_WEBHOOK_DELIVERY,
    REDELIVER_WEBHOOK,
];
