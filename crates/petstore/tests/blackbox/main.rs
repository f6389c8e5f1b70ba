//! The black-box tests: the built `petstore` binary, started by `common::TestServer` on free
//! ports, driven over TCP as its users drive it (HTTP clients, the command line, a browser,
//! schemathesis, a container engine). One test binary, one module per concern, so that the
//! crate is linked once for all of them.

#[path = "../common/mod.rs"]
mod common;

mod admin_listener;
mod binary;
mod cli_keys;
mod client;
mod clients;
mod container;
mod contract;
mod docs_page;
mod durability;
mod failover;
mod hardening;
mod idempotency;
mod links;
mod multi_instance;
mod otlp_collector;
mod patroni;
mod patroni_cluster;
mod replicas;
mod settings;
mod shared_limits;
mod shutdown;
mod standards;
mod store_area;
mod telemetry;
mod traces;
mod webhook_owners;
#[cfg(target_os = "linux")]
mod webhook_priority;
mod webhook_support;
mod webhooks;
mod writes;
