//! The names of the sender's metrics (described by [`describe`], recorded with the `metrics`
//! facade).

/// Attempts, by `result`: `delivered`, `retry`, `failed` (given up), `gone` (`410`).
pub const ATTEMPTS: &str = "petstore_webhook_attempts_total";
/// Time from sending an attempt to its answer (or failure), in seconds.
pub const ATTEMPT_SECONDS: &str = "petstore_webhook_attempt_duration_seconds";
/// Deliveries waiting to be sent (every instance's view of the shared outbox).
pub const PENDING: &str = "petstore_webhook_pending";
/// Age of the oldest delivery waiting, in seconds (0 when none is).
pub const OLDEST_PENDING: &str = "petstore_webhook_oldest_pending_age_seconds";
/// Time the sender waited before a claim to give way to the API's requests, in seconds.
pub const GIVING_WAY_SECONDS: &str = "petstore_webhook_giving_way_seconds";

/// Describes the metrics to the installed recorder.
pub fn describe() {
    metrics::describe_counter!(ATTEMPTS, "Webhook delivery attempts, by result.");
    metrics::describe_histogram!(
        ATTEMPT_SECONDS,
        metrics::Unit::Seconds,
        "Time to a webhook receiver's answer (or the attempt's failure)."
    );
    metrics::describe_gauge!(PENDING, "Webhook deliveries waiting to be sent.");
    metrics::describe_gauge!(
        OLDEST_PENDING,
        metrics::Unit::Seconds,
        "Age of the oldest webhook delivery waiting to be sent."
    );
    metrics::describe_histogram!(
        GIVING_WAY_SECONDS,
        metrics::Unit::Seconds,
        "Time the webhook sender waited before a claim, giving way to the API's requests."
    );
}
