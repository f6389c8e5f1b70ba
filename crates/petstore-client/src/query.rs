//! What a listing asks for ([`PetQuery`], [`OrderQuery`]) and what it answers ([`Listing`]).

use reqwest::Url;

use crate::PetStatus;

/// A page of a listing: its items, and where the next page is when more follow. (Non-exhaustive:
/// a field may be added in a minor version.)
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Listing<T> {
    /// The items, in ascending id order.
    pub items: Vec<T>,
    /// The next page's address (from `Link: <...>; rel="next"`), when more items follow.
    pub next: Option<String>,
}

impl<T> Listing<T> {
    /// The next page's cursor (its `after` parameter), when more items follow.
    pub fn next_after(&self) -> Option<i64> {
        let next = Url::parse(self.next.as_deref()?).ok()?;
        next.query_pairs()
            .find(|(name, _)| name == "after")
            .and_then(|(_, value)| value.parse().ok())
    }
}

/// What `GET /pets` is asked for; every field optional. Built from the default, as filters will
/// be added in minor versions (the struct is non-exhaustive):
///
/// ```
/// use petstore_client::{PetQuery, PetStatus};
///
/// let query = PetQuery::default().status(PetStatus::Available).limit(50);
/// assert_eq!(query.limit, Some(50));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PetQuery {
    /// How many pets at most per page: 1 to 100 (the service's default is 20).
    pub limit: Option<u32>,
    /// Only pets with this status.
    pub status: Option<PetStatus>,
    /// Only pets whose id is greater (a cursor).
    pub after: Option<i64>,
}

impl PetQuery {
    /// At most `limit` pets per page (1 to 100).
    #[must_use]
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Only pets with `status`.
    #[must_use]
    pub fn status(mut self, status: PetStatus) -> Self {
        self.status = Some(status);
        self
    }

    /// Only pets whose id is greater than `id`.
    #[must_use]
    pub fn after(mut self, id: i64) -> Self {
        self.after = Some(id);
        self
    }
}

/// What `GET /store/orders` is asked for; built from the default like [`PetQuery`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OrderQuery {
    /// How many orders at most per page: 1 to 100 (default 20).
    pub limit: Option<u32>,
    /// Only orders whose id is greater (a cursor).
    pub after: Option<i64>,
}

impl OrderQuery {
    /// At most `limit` orders per page (1 to 100).
    #[must_use]
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Only orders whose id is greater than `id`.
    #[must_use]
    pub fn after(mut self, id: i64) -> Self {
        self.after = Some(id);
        self
    }
}
