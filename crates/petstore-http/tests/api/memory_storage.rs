//! A storage backend written here, outside `petstore-store`, against the domain's interface
//! alone: the proof that the HTTP layer is written against that interface. Every scenario of
//! `api_tests!` runs on it too (`memory`), through the same `AppState::new` and `app()` as
//! production, so a handler or middleware that reached for the Diesel store would fail here.
//!
//! It keeps everything in a `Mutex`, with the semantics the traits document (ids from 1, pages
//! in id order, one ban at a time); nothing in it is durable.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use petstore_domain::{
    ApiKey, ApiKeyRepository, ApiKeySecret, Ban, Capacity, KeyHash, KeySpec, NewOrder, Order,
    OrderListQuery, OrderRepository, Page, Pet, PetDraft, PetListQuery, PetRepository, Plan,
    RateLimits, Storage, StorageError, StorageErrorKind,
};

#[derive(Default)]
pub struct MemoryStorage {
    data: Mutex<Data>,
    seed: RandomState,
}

#[derive(Default)]
struct Data {
    pets: BTreeMap<i64, Pet>,
    orders: BTreeMap<i64, Order>,
    keys: BTreeMap<i64, (KeyHash, ApiKey)>,
}

impl MemoryStorage {
    fn data(&self) -> MutexGuard<'_, Data> {
        self.data.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn next_id<T>(map: &BTreeMap<i64, T>) -> i64 {
    map.keys().next_back().map_or(1, |last| last + 1)
}

impl PetRepository for MemoryStorage {
    fn create_pet(&self, pet: &PetDraft) -> Result<Pet, StorageError> {
        let mut data = self.data();
        let id = next_id(&data.pets);
        let pet = Pet {
            id,
            name: pet.name().to_owned(),
            category_id: pet.category_id(),
            status: pet.status(),
        };
        data.pets.insert(id, pet.clone());
        Ok(pet)
    }

    fn find_pet(&self, id: i64) -> Result<Option<Pet>, StorageError> {
        Ok(self.data().pets.get(&id).cloned())
    }

    fn list_pets(&self, query: &PetListQuery) -> Result<Page<Pet>, StorageError> {
        let data = self.data();
        let after = query.page.after.unwrap_or(i64::MIN);
        let rows: Vec<Pet> = data
            .pets
            .range(after.saturating_add(1)..)
            .map(|(_, pet)| pet)
            .filter(|pet| query.status.is_none_or(|status| pet.status == status))
            .take(query.page.limit.get() as usize + 1)
            .cloned()
            .collect();
        Ok(Page::from_overfetch(rows, query.page.limit, |pet| pet.id))
    }
}

impl OrderRepository for MemoryStorage {
    fn create_order(&self, order: &NewOrder) -> Result<Order, StorageError> {
        let mut data = self.data();
        if !data.pets.contains_key(&order.pet_id()) {
            return Err(StorageError::new(
                StorageErrorKind::Failed,
                format!("no pet {} to order", order.pet_id()),
            ));
        }
        let id = next_id(&data.orders);
        let order = Order {
            id,
            pet_id: order.pet_id(),
            quantity: order.quantity(),
            status: order.status(),
            created_at: now(),
        };
        data.orders.insert(id, order.clone());
        Ok(order)
    }

    fn list_orders(&self, query: &OrderListQuery) -> Result<Page<Order>, StorageError> {
        let data = self.data();
        let after = query.page.after.unwrap_or(i64::MIN);
        let rows: Vec<Order> = data
            .orders
            .range(after.saturating_add(1)..)
            .map(|(_, order)| order.clone())
            .take(query.page.limit.get() as usize + 1)
            .collect();
        Ok(Page::from_overfetch(rows, query.page.limit, |order| {
            order.id
        }))
    }
}

impl ApiKeyRepository for MemoryStorage {
    fn create_key(&self, spec: &KeySpec) -> Result<(ApiKey, ApiKeySecret), StorageError> {
        let mut data = self.data();
        let id = next_id(&data.keys);
        // 32 bytes from a hasher keyed at random per storage: unique per key, unguessable
        // enough for a test backend.
        let mut bytes = [0u8; 32];
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            chunk.copy_from_slice(&self.seed.hash_one((id, i)).to_le_bytes());
        }
        let secret = ApiKeySecret::from_random_bytes(bytes);
        let key = ApiKey {
            id,
            display_prefix: secret.display_prefix().to_owned(),
            plan: spec.plan(),
            label: spec.label().to_owned(),
            custom_limits: spec.custom_limits(),
            created_at: now(),
            revoked_at: None,
            ban: None,
        };
        data.keys.insert(id, (secret.hash(), key.clone()));
        Ok((key, secret))
    }

    fn find_active_key(&self, hash: &KeyHash) -> Result<Option<ApiKey>, StorageError> {
        Ok(self
            .data()
            .keys
            .values()
            .find(|(stored, key)| stored == hash && key.is_active())
            .map(|(_, key)| key.clone()))
    }

    fn list_keys(&self) -> Result<Vec<ApiKey>, StorageError> {
        Ok(self
            .data()
            .keys
            .values()
            .map(|(_, key)| key.clone())
            .collect())
    }

    fn revoke_key(&self, id: i64) -> Result<bool, StorageError> {
        Ok(self.with_key(id, |key| {
            key.revoked_at.get_or_insert_with(now);
        }))
    }

    fn update_key_plan(
        &self,
        id: i64,
        plan: Plan,
        custom_limits: Option<RateLimits>,
    ) -> Result<bool, StorageError> {
        Ok(self.with_key(id, |key| {
            key.plan = plan;
            key.custom_limits = custom_limits;
        }))
    }

    fn ban_key(&self, id: i64, ban: Ban, now: u64) -> Result<bool, StorageError> {
        let mut imposed = false;
        self.with_key(id, |key| {
            if key.ban_at(now).is_none() {
                key.ban = Some(ban);
                imposed = true;
            }
        });
        Ok(imposed)
    }

    fn unban_key(&self, id: i64) -> Result<bool, StorageError> {
        Ok(self.with_key(id, |key| key.ban = None))
    }
}

impl MemoryStorage {
    /// Applies `change` to key `id`; `false` when there is none.
    fn with_key(&self, id: i64, change: impl FnOnce(&mut ApiKey)) -> bool {
        match self.data().keys.get_mut(&id) {
            Some((_, key)) => {
                change(key);
                true
            }
            None => false,
        }
    }
}

impl Storage for MemoryStorage {
    fn check_ready(&self) -> Result<(), StorageError> {
        Ok(())
    }

    fn capacity(&self) -> Capacity {
        Capacity {
            max_calls: 8,
            wait: Duration::from_secs(5),
            deadline: Duration::from_secs(5),
        }
    }
}
