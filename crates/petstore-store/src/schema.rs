// Mirrors migrations/{sqlite,postgres,mysql}: keep the four in lockstep. Ids and times are
// BigInt (int64) and enums Text, so that one query is written for every backend.

diesel::table! {
    pets (id) {
        id -> BigInt,
        name -> Text,
        category_id -> BigInt,
        status -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    orders (id) {
        id -> BigInt,
        pet_id -> BigInt,
        quantity -> Integer,
        status -> Text,
        created_at -> BigInt,
        owner_key_id -> Nullable<BigInt>,
    }
}

diesel::table! {
    api_keys (id) {
        id -> BigInt,
        key_hash -> Text,
        display_prefix -> Text,
        plan -> Text,
        label -> Text,
        per_minute -> Nullable<BigInt>,
        per_day -> Nullable<BigInt>,
        created_at -> BigInt,
        revoked_at -> Nullable<BigInt>,
        banned_until -> Nullable<BigInt>,
        ban_level -> Integer,
        expires_at -> Nullable<BigInt>,
        scope -> Text,
        last_used_at -> Nullable<BigInt>,
        previous_key_hash -> Nullable<Text>,
        previous_secret_until -> Nullable<BigInt>,
    }
}

diesel::table! {
    admin_tokens (id) {
        id -> BigInt,
        token_hash -> Text,
        display_prefix -> Text,
        label -> Text,
        created_at -> BigInt,
        revoked_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    idempotency_keys (owner_key_id, idempotency_key) {
        owner_key_id -> BigInt,
        idempotency_key -> Text,
        fingerprint -> Text,
        token -> BigInt,
        state -> Text,
        claimed_at -> BigInt,
        created_at -> BigInt,
        response_status -> Nullable<Integer>,
        response_location -> Nullable<Text>,
        response_body -> Nullable<Text>,
    }
}

diesel::table! {
    /// How many pets have each status, spread over slots (summed on read). Written only by the
    /// database's triggers on `pets`.
    pet_status_counts (status, slot) {
        status -> Text,
        slot -> Integer,
        pets -> BigInt,
    }
}

diesel::table! {
    /// `owner_key_id`: an API key's id, or 0 for the operators' endpoints.
    webhook_endpoints (id) {
        id -> BigInt,
        owner_key_id -> BigInt,
        url -> Text,
        events -> Text,
        description -> Text,
        secret -> Text,
        previous_secret -> Nullable<Text>,
        previous_secret_until -> Nullable<BigInt>,
        enabled -> Bool,
        disabled_reason -> Nullable<Text>,
        deleted_at -> Nullable<BigInt>,
        created_at -> BigInt,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        id -> BigInt,
        endpoint_id -> BigInt,
        event_id -> Text,
        event_type -> Text,
        body -> Text,
        state -> Text,
        attempts -> Integer,
        tries -> Integer,
        next_attempt_at -> BigInt,
        lease_token -> BigInt,
        lease_until -> BigInt,
        last_status -> Nullable<Integer>,
        last_latency_ms -> Nullable<Integer>,
        last_error -> Nullable<Text>,
        created_at -> BigInt,
        ended_at -> Nullable<BigInt>,
        trace_context -> Nullable<Text>,
    }
}

diesel::table! {
    webhook_attempts (id) {
        id -> BigInt,
        delivery_id -> BigInt,
        attempted_at -> BigInt,
        status -> Nullable<Integer>,
        latency_ms -> Integer,
        error -> Nullable<Text>,
    }
}

diesel::table! {
    webhook_operator_lock (id) {
        id -> BigInt,
    }
}

diesel::joinable!(orders -> pets (pet_id));
diesel::joinable!(webhook_deliveries -> webhook_endpoints (endpoint_id));
diesel::joinable!(webhook_attempts -> webhook_deliveries (delivery_id));
diesel::allow_tables_to_appear_in_same_query!(
    pets,
    orders,
    api_keys,
    admin_tokens,
    idempotency_keys,
    pet_status_counts,
    webhook_endpoints,
    webhook_deliveries,
    webhook_attempts,
    webhook_operator_lock
);
