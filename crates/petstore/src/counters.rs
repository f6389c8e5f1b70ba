//! The rate limiter the server counts with, built at start-up from `--rate-limit-*`: counters
//! in this process, or in Redis (one server or a cluster, over TLS with a CA of the
//! operator's), shared by every instance.

use std::error::Error;

use petstore_http::config::RateLimitConfig;
use petstore_http::error::Chain;
use petstore_http::ratelimit::{Limiter, RedisCounters};

/// The limiter `config` describes: counters in this process, or in Redis.
pub fn limiter(config: &RateLimitConfig) -> Result<Limiter, Box<dyn Error>> {
    let Some(url) = &config.redis_url else {
        return Ok(config.in_memory_limiter());
    };
    let counters = RedisCounters::with_ca(
        url,
        ca_pem(config)?,
        &config.prefix,
        config.timeout,
        config.bans.forgive_after_seconds,
    )
    .map_err(|error| {
        // Named, as an operator wrote it, without its password.
        let shown = petstore_domain::redacted_url(url);
        format!("--rate-limit-store {shown:?}: {}", Chain(&error))
    })?;
    Ok(Limiter::shared(
        Box::new(counters),
        config.on_failure,
        config.bans,
        config.anonymous_limits(),
        config.addresses,
    ))
}

/// The certificate authority `--rate-limit-ca-file` names, read once at start-up.
fn ca_pem(config: &RateLimitConfig) -> Result<Option<Vec<u8>>, Box<dyn Error>> {
    let Some(path) = &config.ca_file else {
        return Ok(None);
    };
    let pem = std::fs::read(path).map_err(|error| {
        format!(
            "cannot read --rate-limit-ca-file {}: {error}",
            path.display()
        )
    })?;
    if !pem.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----") {
        return Err(format!(
            "--rate-limit-ca-file {} holds no PEM certificate",
            path.display()
        )
        .into());
    }
    Ok(Some(pem))
}

/// Asks the shared counters for a `PING` at start-up: a certificate Redis presents and this
/// instance refuses (a wrong CA, a name the certificate lacks) is a configuration that can never
/// work, and stops the start with the reason; Redis merely unreachable is only a warning (the
/// failure policy applies until it is back).
pub async fn check_redis(limiter: &Limiter, url: &str) -> Result<(), Box<dyn Error>> {
    let shown = petstore_domain::redacted_url(url);
    match limiter.ping().await {
        Ok(()) => {
            log::info!("rate limits counted in Redis at {shown} (shared by every instance)");
            Ok(())
        }
        Err(error) => {
            let reason = Chain(&error).to_string();
            // Told by its words: `redis`'s cluster client keeps only the text of a node's
            // error, so rustls's typed error is not there to match for a cluster.
            let lower = reason.to_ascii_lowercase();
            if lower.contains("certificate") || lower.contains("tls") || lower.contains("handshake")
            {
                return Err(format!(
                    "Redis at {shown} refused: its TLS certificate is not trusted ({reason}); \
                     check --rate-limit-ca-file and the host name in --rate-limit-store"
                )
                .into());
            }
            log::warn!(
                "Redis at {shown} is not ready yet ({reason}); rate limits follow \
                 --rate-limit-on-failure while it fails"
            );
            Ok(())
        }
    }
}
