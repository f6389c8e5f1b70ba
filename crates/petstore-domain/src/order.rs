//! Store orders and the lifecycle they give pets: an order is placed for an available pet
//! (which becomes pending), approved, then delivered (the pet is sold), or cancelled while placed
//! (the pet is available again). [`lifecycle`] is that machine, pure: the store applies it
//! inside a transaction that holds both rows.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::pet::whole_number;
use crate::{Completion, Created, PetStatus, StorageError, ValidationError};

string_enum! {
    /// Where an order is in its life.
    pub enum OrderStatus in "status", default Placed {
        /// Placed by a customer.
        Placed = "placed",
        /// Accepted by the store.
        Approved = "approved",
        /// Handed over.
        Delivered = "delivered",
        /// Cancelled by the customer while placed.
        Cancelled = "cancelled",
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
    /// When it was placed: an RFC 3339 time in UTC.
    // Unix seconds here; written and read as RFC 3339 (the doc line above is the API's).
    #[serde(with = "crate::rfc3339")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: i64,
    /// The API key that placed it (`None`: placed outside the API). Not on the wire: an order
    /// is visible to its owner only.
    #[serde(skip)]
    pub owner: Option<i64>,
}

impl Created for Order {
    const COLLECTION: &'static str = "/store/orders";

    fn id(&self) -> i64 {
        self.id
    }
}

/// The body of `POST /store/orders`, exactly as a client sends it (strict, like `NewPet`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewOrder {
    /// The pet to order: it must exist and be `available`.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, examples(1)))]
    #[serde(deserialize_with = "whole_number")]
    pub pet_id: i64,
    /// How many: 1 (a pet is one animal); may be left out (1).
    // No OpenAPI `default`, as `NewPet::status` has none (pet.rs).
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1))]
    #[serde(default = "one", deserialize_with = "whole_i32")]
    pub quantity: i32,
}

fn one() -> i32 {
    1
}

/// [`whole_number`] for an `i32`.
fn whole_i32<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    let n = whole_number(d)?;
    i32::try_from(n)
        .map_err(|_| serde::de::Error::invalid_value(serde::de::Unexpected::Signed(n), &"an i32"))
}

impl NewOrder {
    /// Checks the rules beyond types: a pet id of at least 1, a quantity of 1.
    pub fn validate_into(
        self,
        owner: Option<i64>,
        completion: Option<Completion>,
    ) -> Result<PlaceOrder, ValidationError> {
        if self.pet_id < 1 {
            return Err(ValidationError::invalid(
                "petId",
                "must be an integer of at least 1",
            ));
        }
        if self.quantity != 1 {
            return Err(ValidationError::invalid(
                "quantity",
                "must be 1: an order is for one pet, which is one animal",
            ));
        }
        Ok(PlaceOrder {
            pet_id: self.pet_id,
            owner,
            completion,
        })
    }
}

/// A validated order to place, for the storage.
#[derive(Debug, Clone)]
pub struct PlaceOrder {
    /// The pet.
    pub pet_id: i64,
    /// The API key placing it (`None`: an operator).
    pub owner: Option<i64>,
    /// With an `Idempotency-Key`: its claim, completed with the order's response in the order's
    /// transaction.
    pub completion: Option<Completion>,
}

/// The counts of pets by status (`GET /store/inventory`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Inventory {
    /// Pets that can be ordered.
    pub available: u64,
    /// Pets with an open (placed or approved) order.
    pub pending: u64,
    /// Pets delivered.
    pub sold: u64,
}

/// What can happen to an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OrderAction {
    /// A customer orders an available pet.
    Place,
    /// The store accepts a placed order.
    Approve,
    /// The store hands the pet over.
    Deliver,
    /// The customer withdraws a placed order.
    Cancel,
}

impl OrderAction {
    /// Every action.
    pub const ALL: [OrderAction; 4] = [Self::Place, Self::Approve, Self::Deliver, Self::Cancel];
}

impl OrderAction {
    /// What the action does to an order, in the past tense: `approved` (how logs and messages
    /// name it).
    pub const fn past_tense(self) -> &'static str {
        match self {
            Self::Place => "placed",
            Self::Approve => "approved",
            Self::Deliver => "delivered",
            Self::Cancel => "cancelled",
        }
    }
}

impl fmt::Display for OrderAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.past_tense())
    }
}

/// Why an action does not apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LifecycleError {
    /// The pet cannot be ordered: it is pending (ordered by someone) or sold.
    #[error("the pet is {0}, not available")]
    PetNotAvailable(PetStatus),
    /// The order is not in a state the action applies to (cancelling an approved order, say).
    #[error("an order that is {from} cannot be {action}")]
    Transition {
        /// Where the order is.
        from: OrderStatus,
        /// What was asked.
        action: OrderAction,
    },
    /// Placing an order that exists.
    #[error("the order exists already")]
    Exists,
    /// An action on an order that does not exist yet.
    #[error("no order to be {0}")]
    NoOrder(OrderAction),
    /// The order is open but its pet is not pending: the data broke the invariant (changed
    /// outside the service, or an order from before the lifecycle existed). Nothing is changed,
    /// so that a pet another order holds is never freed or sold by this one.
    #[error("the order's pet is {0}, not pending: the order and its pet disagree")]
    PetNotPending(PetStatus),
}

/// The lifecycle: the new statuses of an order (`None` before it exists) and its pet after
/// `action`, or why it does not apply.
///
/// | action | order before | pet before | order after | pet after |
/// |---|---|---|---|---|
/// | place | none | available | placed | pending |
/// | approve | placed | pending | approved | pending |
/// | deliver | approved | pending | delivered | sold |
/// | cancel | placed | pending | cancelled | available |
///
/// Every other pair is refused. Together with the store applying it to both rows in one
/// transaction, it keeps the invariant: a pet is pending if and only if it has exactly one
/// placed or approved order (for pets that were ever ordered: `POST /pets` may create a pet as
/// pending).
pub fn lifecycle(
    order: Option<OrderStatus>,
    pet: PetStatus,
    action: OrderAction,
) -> Result<(OrderStatus, PetStatus), LifecycleError> {
    use OrderAction::{Approve, Cancel, Deliver, Place};
    use OrderStatus::{Approved, Cancelled, Delivered, Placed};
    match (order, action) {
        (None, Place) => match pet {
            PetStatus::Available => Ok((Placed, PetStatus::Pending)),
            other => Err(LifecycleError::PetNotAvailable(other)),
        },
        (Some(_), Place) => Err(LifecycleError::Exists),
        (None, action) => Err(LifecycleError::NoOrder(action)),
        (Some(from), action) => {
            let to = match (from, action) {
                (Placed, Approve) => (Approved, PetStatus::Pending),
                (Approved, Deliver) => (Delivered, PetStatus::Sold),
                (Placed, Cancel) => (Cancelled, PetStatus::Available),
                (from, action) => return Err(LifecycleError::Transition { from, action }),
            };
            if pet == PetStatus::Pending {
                Ok(to)
            } else {
                Err(LifecycleError::PetNotPending(pet))
            }
        }
    }
}

/// Why an order could not be placed or changed.
#[derive(Debug, thiserror::Error)]
pub enum OrderError {
    /// No pet has the id.
    #[error("no pet has id {0}")]
    PetNotFound(i64),
    /// No order has the id (or none the caller may see).
    #[error("no order has id {0}")]
    OrderNotFound(i64),
    /// The lifecycle refuses the action.
    #[error(transparent)]
    Refused(#[from] LifecycleError),
    /// The storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_new_order_is_placed() {
        assert_eq!(OrderStatus::default(), OrderStatus::Placed);
    }

    #[test]
    fn an_order_serialises_with_an_rfc3339_timestamp() {
        let order = Order {
            id: 1,
            pet_id: 2,
            quantity: 3,
            status: OrderStatus::Approved,
            created_at: 1_700_000_000,
            owner: Some(7),
        };
        let value = serde_json::to_value(&order).expect("serialises");
        assert_eq!(
            value,
            json!({"id": 1, "petId": 2, "quantity": 3, "status": "approved",
                   "createdAt": "2023-11-14T22:13:20Z"})
        );
        assert_eq!(
            serde_json::from_value::<Order>(value).expect("parses"),
            Order {
                owner: None,
                ..order
            },
            "the owner is not on the wire"
        );
    }

    #[test]
    fn a_new_order_is_one_pet_and_nothing_else() {
        let parse = |body: serde_json::Value| serde_json::from_value::<NewOrder>(body);
        let order = parse(json!({"petId": 3})).expect("quantity defaults to 1");
        assert_eq!(
            order,
            NewOrder {
                pet_id: 3,
                quantity: 1
            }
        );
        let placed = order.validate_into(Some(9), None).expect("valid");
        assert_eq!((placed.pet_id, placed.owner), (3, Some(9)));
        assert!(parse(json!({"petId": 3, "quantity": 1, "status": "placed"})).is_err());
        assert!(parse(json!({"petId": null})).is_err());
        assert!(parse(json!({"quantity": 1})).is_err());
        // A whole number with a fraction is that integer, as for `petId`; a fraction is not.
        assert_eq!(
            parse(json!({"petId": 3, "quantity": 1.0}))
                .map(|o| o.quantity)
                .ok(),
            Some(1)
        );
        assert!(parse(json!({"petId": 3, "quantity": 1.5})).is_err());
        assert!(parse(json!({"petId": 3, "quantity": 4_294_967_296_i64})).is_err());
        for (body, field) in [
            (json!({"petId": 0}), "`petId`"),
            (json!({"petId": 1, "quantity": 2}), "`quantity`"),
            (json!({"petId": 1, "quantity": 0}), "`quantity`"),
        ] {
            let error = parse(body)
                .expect("parses")
                .validate_into(None, None)
                .expect_err("refused");
            assert!(error.to_string().starts_with(field), "{error}");
        }
        for status in OrderStatus::ALL {
            assert_eq!(status.as_str().parse::<OrderStatus>(), Ok(status));
        }
    }

    /// Every (order status, pet status, action), against the table in [`lifecycle`]'s doc.
    #[test]
    fn the_lifecycle_is_exactly_its_table() {
        use LifecycleError::{Exists, NoOrder, PetNotAvailable, PetNotPending, Transition};
        use OrderAction::{Approve, Cancel, Deliver, Place};
        use OrderStatus::{Approved, Cancelled, Delivered, Placed};
        let orders = [
            None,
            Some(Placed),
            Some(Approved),
            Some(Delivered),
            Some(Cancelled),
        ];
        let mut checked = 0;
        for order in orders {
            for pet in PetStatus::ALL {
                for action in OrderAction::ALL {
                    let expected = match (order, action) {
                        (None, Place) if pet == PetStatus::Available => {
                            Ok((Placed, PetStatus::Pending))
                        }
                        (None, Place) => Err(PetNotAvailable(pet)),
                        (None, action) => Err(NoOrder(action)),
                        (Some(_), Place) => Err(Exists),
                        (Some(Placed), Approve | Cancel) | (Some(Approved), Deliver)
                            if pet != PetStatus::Pending =>
                        {
                            Err(PetNotPending(pet))
                        }
                        (Some(Placed), Approve) => Ok((Approved, PetStatus::Pending)),
                        (Some(Approved), Deliver) => Ok((Delivered, PetStatus::Sold)),
                        (Some(Placed), Cancel) => Ok((Cancelled, PetStatus::Available)),
                        (Some(from), action) => Err(Transition { from, action }),
                    };
                    assert_eq!(
                        lifecycle(order, pet, action),
                        expected,
                        "{order:?} {pet:?} {action:?}"
                    );
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 5 * 3 * 4);
        // The rules that matter most, spelled out.
        assert!(
            lifecycle(Some(Approved), PetStatus::Pending, Cancel).is_err(),
            "approved: too late"
        );
        assert!(lifecycle(Some(Delivered), PetStatus::Sold, Cancel).is_err());
        assert!(
            lifecycle(Some(Cancelled), PetStatus::Available, Cancel).is_err(),
            "once"
        );
        assert!(
            lifecycle(Some(Placed), PetStatus::Pending, Deliver).is_err(),
            "approve first"
        );
        assert_eq!(
            lifecycle(None, PetStatus::Pending, Place),
            Err(PetNotAvailable(PetStatus::Pending))
        );
    }

    #[test]
    fn the_invariant_holds_along_every_path() {
        // From an available pet, every sequence of actions that the machine accepts leaves the
        // pet pending exactly while its order is open (placed or approved).
        fn walk(order: Option<OrderStatus>, pet: PetStatus, depth: usize) {
            let open = matches!(order, Some(OrderStatus::Placed | OrderStatus::Approved));
            // One order per pet here: a cancelled or delivered order ends the walk's order.
            assert_eq!(pet == PetStatus::Pending, open, "{order:?} {pet:?}");
            if depth == 0 {
                return;
            }
            for action in OrderAction::ALL {
                if let Ok((order, pet)) = lifecycle(order, pet, action) {
                    walk(Some(order), pet, depth - 1);
                }
            }
            // A cancelled order's pet can be ordered again: a new order.
            if order == Some(OrderStatus::Cancelled)
                && let Ok((order, pet)) = lifecycle(None, pet, OrderAction::Place)
            {
                walk(Some(order), pet, depth - 1);
            }
        }
        walk(None, PetStatus::Available, 6);
    }
}
