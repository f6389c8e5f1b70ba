//! Pets and orders in memory: ids from 1, pages in id order, an order's pet held while it is
//! placed or approved.

use super::keys::complete;
use super::*;

#[async_trait]
impl PetRepository for MemoryStorage {
    async fn create_pet(&self, create: &CreatePet) -> Result<Pet, StorageError> {
        if self.failing_creates.load(Ordering::SeqCst) {
            return Err(StorageError::new(
                StorageErrorKind::Unavailable,
                "creates are failing (test switch)",
            ));
        }
        let mut data = self.data();
        let id = next_id(&data.pets);
        let draft = &create.draft;
        let pet = Pet {
            id,
            name: draft.name().to_owned(),
            category_id: draft.category_id(),
            status: draft.status(),
        };
        // Both or neither, under the one lock.
        if let Some(completion) = &create.completion
            && !complete(
                &mut data,
                &completion.claim,
                StoredResponse::created(&pet, &completion.base),
            )
        {
            return Err(StorageError::new(
                StorageErrorKind::Unavailable,
                "the idempotency claim was taken over",
            ));
        }
        data.pets.insert(id, pet.clone());
        let event = NewEvent::pet_created(SystemTime::now(), &pet, create.creator);
        self.record_event(&mut data, &event);
        Ok(pet)
    }

    async fn find_pet(&self, id: i64) -> Result<Option<Pet>, StorageError> {
        Ok(self.data().pets.get(&id).cloned())
    }

    async fn list_pets(&self, query: &PetListQuery) -> Result<Page<Pet>, StorageError> {
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

#[async_trait]
impl OrderRepository for MemoryStorage {
    async fn place_order(&self, order: &PlaceOrder) -> Result<Order, OrderError> {
        // One lock for the pet, the order and the idempotency record: the transaction.
        let mut data = self.data();
        let pet = data
            .pets
            .get(&order.pet_id)
            .map(|pet| pet.status)
            .ok_or(OrderError::PetNotFound(order.pet_id))?;
        let (status, pet_after) = lifecycle(None, pet, OrderAction::Place)?;
        let id = next_id(&data.orders);
        let placed = Order {
            id,
            pet_id: order.pet_id,
            quantity: 1,
            status,
            created_at: now(),
            owner: order.owner,
        };
        if let Some(completion) = &order.completion
            && !complete(
                &mut data,
                &completion.claim,
                StoredResponse::created(&placed, &completion.base),
            )
        {
            return Err(OrderError::Storage(StorageError::new(
                StorageErrorKind::Unavailable,
                "the idempotency claim was taken over",
            )));
        }
        if let Some(pet) = data.pets.get_mut(&order.pet_id) {
            pet.status = pet_after;
        }
        data.orders.insert(id, placed.clone());
        let event = NewEvent::order_changed(SystemTime::now(), OrderAction::Place, &placed);
        self.record_event(&mut data, &event);
        Ok(placed)
    }

    async fn change_order(
        &self,
        id: i64,
        owner: Option<i64>,
        action: OrderAction,
    ) -> Result<Order, OrderError> {
        let mut data = self.data();
        let order = data
            .orders
            .get(&id)
            .filter(|order| owner.is_none() || order.owner == owner)
            .cloned()
            .ok_or(OrderError::OrderNotFound(id))?;
        let pet = data
            .pets
            .get(&order.pet_id)
            .map(|pet| pet.status)
            .ok_or_else(|| {
                OrderError::Storage(StorageError::new(StorageErrorKind::Failed, "no such pet"))
            })?;
        let (status, pet_after) = lifecycle(Some(order.status), pet, action)?;
        if let Some(pet) = data.pets.get_mut(&order.pet_id) {
            pet.status = pet_after;
        }
        let changed = Order { status, ..order };
        data.orders.insert(id, changed.clone());
        self.record_event(
            &mut data,
            &NewEvent::order_changed(SystemTime::now(), action, &changed),
        );
        Ok(changed)
    }

    async fn find_order(&self, id: i64, owner: Option<i64>) -> Result<Option<Order>, StorageError> {
        Ok(self
            .data()
            .orders
            .get(&id)
            .filter(|order| owner.is_none() || order.owner == owner)
            .cloned())
    }

    async fn list_orders(&self, query: &OrderListQuery) -> Result<Page<Order>, StorageError> {
        let data = self.data();
        let after = query.page.after.unwrap_or(i64::MIN);
        let rows: Vec<Order> = data
            .orders
            .range(after.saturating_add(1)..)
            .map(|(_, order)| order)
            .filter(|order| query.owner.is_none() || order.owner == query.owner)
            .filter(|order| query.status.is_none_or(|status| order.status == status))
            .take(query.page.limit.get() as usize + 1)
            .cloned()
            .collect();
        Ok(Page::from_overfetch(rows, query.page.limit, |order| {
            order.id
        }))
    }

    async fn inventory(&self) -> Result<Inventory, StorageError> {
        let mut inventory = Inventory::default();
        for pet in self.data().pets.values() {
            match pet.status {
                PetStatus::Available => inventory.available += 1,
                PetStatus::Pending => inventory.pending += 1,
                PetStatus::Sold => inventory.sold += 1,
            }
        }
        Ok(inventory)
    }
}
