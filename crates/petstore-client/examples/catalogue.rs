//! Adds a pet, then walks the available ones, against a running service:
//!
//! ```sh
//! PETSTORE_URL=http://127.0.0.1:8080/v1 PETSTORE_KEY=pst_... \
//!     cargo run -p petstore-client --example catalogue
//! ```

use futures_util::TryStreamExt;
use petstore_client::{Client, NewPet, PetQuery, PetStatus};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("PETSTORE_URL").unwrap_or_else(|_| "http://127.0.0.1:8080/v1".into());
    let key = std::env::var("PETSTORE_KEY").map_err(|_| "set PETSTORE_KEY to an API key")?;
    let client = Client::builder(url, key).build()?;

    // Safe to retry: the client sends one Idempotency-Key for all of this call's attempts.
    let pet = client
        .create_pet(&NewPet {
            name: "Rex".into(),
            category_id: 1,
            status: None,
        })
        .await?;
    println!("created pet {} ({})", pet.id, pet.name);

    // Every available pet, page after page; the client paces itself to the key's limits.
    let available = PetQuery::default().status(PetStatus::Available);
    let pets: Vec<_> = client.pets(&available).try_collect().await?;
    println!("{} pets are available", pets.len());
    if let Some(limits) = client.rate_limit() {
        println!("{} requests left in this window", limits.remaining);
    }
    Ok(())
}
