//! The HTTP contract, in process: every endpoint, status, header and error path, run against
//! SQLite, PostgreSQL and a test-local backend alike.

mod helpers;
mod memory_storage;
mod openapi;

mod admin;
mod admin_orders;
mod auth;
mod conditional;
mod cors;
mod create_pet;
mod disk_full;
mod errors;
mod floor;
mod get_pet;
mod health;
mod idempotency;
mod keys;
mod list_pets;
mod orders;
mod outage;
mod rate_limits;
#[path = "../common/redis_support.rs"]
mod redis_support;
mod server_span;
mod shared_counters;
