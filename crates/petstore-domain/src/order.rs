//! Store orders: the read-only `GET /store/orders` listing.

use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ValidationError;

string_enum! {
    /// Where an order is in its life.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "lowercase")]
    pub enum OrderStatus in "status" {
        /// Placed by a customer.
        #[default]
        Placed = "placed",
        /// Accepted by the store.
        Approved = "approved",
        /// Handed over.
        Delivered = "delivered",
    }
}

/// An order for a pet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Order {
    /// Assigned by the service.
    pub id: i64,
    /// The pet ordered.
    pub pet_id: i64,
    /// How many.
    pub quantity: i32,
    /// Where the order is.
    pub status: OrderStatus,
    /// When it was placed, Unix seconds; RFC 3339 (UTC) on the wire.
    #[serde(serialize_with = "rfc3339", deserialize_with = "from_rfc3339")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: i64,
}

fn rfc3339<S: Serializer>(secs: &i64, s: S) -> Result<S::Ok, S::Error> {
    let instant = UNIX_EPOCH + Duration::from_secs(u64::try_from(*secs).unwrap_or(0));
    s.collect_str(&humantime::format_rfc3339_seconds(instant))
}

fn from_rfc3339<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let text = String::deserialize(d)?;
    let instant = humantime::parse_rfc3339(&text).map_err(serde::de::Error::custom)?;
    let secs = instant
        .duration_since(UNIX_EPOCH)
        .map_err(serde::de::Error::custom)?
        .as_secs();
    i64::try_from(secs).map_err(serde::de::Error::custom)
}

/// An order to be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOrder {
    pet_id: i64,
    quantity: i32,
    status: OrderStatus,
}

impl NewOrder {
    /// A quantity of at least 1 of an existing pet id (at least 1).
    pub fn new(pet_id: i64, quantity: i32, status: OrderStatus) -> Result<Self, ValidationError> {
        if pet_id < 1 {
            return Err(ValidationError::invalid("petId", "must be at least 1"));
        }
        if quantity < 1 {
            return Err(ValidationError::invalid("quantity", "must be at least 1"));
        }
        Ok(Self {
            pet_id,
            quantity,
            status,
        })
    }

    /// The pet.
    pub fn pet_id(&self) -> i64 {
        self.pet_id
    }

    /// How many.
    pub fn quantity(&self) -> i32 {
        self.quantity
    }

    /// The initial status.
    pub fn status(&self) -> OrderStatus {
        self.status
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_order_serialises_with_an_rfc3339_timestamp() {
        let order = Order {
            id: 1,
            pet_id: 2,
            quantity: 3,
            status: OrderStatus::Approved,
            created_at: 1_700_000_000,
        };
        let value = serde_json::to_value(&order).expect("serialises");
        assert_eq!(
            value,
            json!({"id": 1, "petId": 2, "quantity": 3, "status": "approved",
                   "createdAt": "2023-11-14T22:13:20Z"})
        );
        assert_eq!(
            serde_json::from_value::<Order>(value).expect("parses"),
            order
        );
    }

    #[test]
    fn new_orders_need_a_pet_and_a_positive_quantity() {
        assert!(NewOrder::new(1, 1, OrderStatus::Placed).is_ok());
        assert!(NewOrder::new(0, 1, OrderStatus::Placed).is_err());
        assert!(NewOrder::new(1, 0, OrderStatus::Placed).is_err());
        for status in OrderStatus::ALL {
            assert_eq!(status.as_str().parse::<OrderStatus>(), Ok(status));
        }
    }
}
