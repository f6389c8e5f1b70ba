//! List parameters (`limit`, `status`, the `after` cursor) and keyset pages.
//!
//! Lists are ordered by ascending id and paged with a keyset cursor: `after=ID` returns the
//! items whose id is greater than `ID`. A page knows whether more items follow, so the HTTP
//! layer can link to the next page without counting.

use crate::{KeyState, OrderStatus, PetStatus, Plan, ValidationError};

/// The number of items a list returns when no `limit` is given.
pub const DEFAULT_LIMIT: u32 = 20;
/// The smallest accepted `limit`.
pub const MIN_LIMIT: u32 = 1;
/// The largest accepted `limit`.
pub const MAX_LIMIT: u32 = 100;

/// A page size within `MIN_LIMIT..=MAX_LIMIT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limit(u32);

impl Limit {
    /// Accepts `MIN_LIMIT..=MAX_LIMIT`.
    pub fn new(value: u32) -> Result<Self, ValidationError> {
        if (MIN_LIMIT..=MAX_LIMIT).contains(&value) {
            Ok(Self(value))
        } else {
            Err(limit_error())
        }
    }

    /// The smallest page.
    pub const MIN: Self = Self(MIN_LIMIT);
    /// The largest page.
    pub const MAX: Self = Self(MAX_LIMIT);

    /// The size as a number.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl Default for Limit {
    fn default() -> Self {
        Self(DEFAULT_LIMIT)
    }
}

fn limit_error() -> ValidationError {
    ValidationError::parameter("limit", "must be an integer from 1 to 100")
}

/// Where a page starts and how long it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageRequest {
    /// How many items at most.
    pub limit: Limit,
    /// Return only items whose id is greater than this (the keyset cursor).
    pub after: Option<i64>,
}

impl PageRequest {
    /// Parses decoded query pairs of a list that takes only `limit` and `after`. Unknown,
    /// repeated and malformed parameters are errors.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, ValidationError> {
        parse_list(pairs, |_, _, _| Ok(false))
    }
}

/// One page of a list, in ascending id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The items of this page.
    pub items: Vec<T>,
    /// The cursor of the next page (the last id of this one) when more items follow.
    pub next_after: Option<i64>,
}

impl<T> Page<T> {
    /// Builds a page from up to `limit + 1` rows fetched in id order: the extra row, if any,
    /// only tells that another page exists and is dropped.
    pub fn from_overfetch(mut rows: Vec<T>, limit: Limit, id: impl Fn(&T) -> i64) -> Self {
        let limit = limit.get() as usize;
        let next_after = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(&id)
        } else {
            None
        };
        Self {
            items: rows,
            next_after,
        }
    }
}

/// The parameters of `GET /pets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PetListQuery {
    /// Size and cursor.
    pub page: PageRequest,
    /// Only pets with this status.
    pub status: Option<PetStatus>,
}

impl PetListQuery {
    /// Parses decoded query pairs. Unknown, repeated and malformed parameters are errors.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, ValidationError> {
        let mut status = None;
        let page = parse_list(pairs, |seen, name, value| {
            if name != "status" {
                return Ok(false);
            }
            seen.first("status")?;
            status = Some(value.parse().map_err(|_| {
                ValidationError::parameter("status", "must be one of available, pending, sold")
            })?);
            Ok(true)
        })?;
        Ok(Self { page, status })
    }
}

/// The parameters of `GET /store/orders`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OrderListQuery {
    /// Size and cursor.
    pub page: PageRequest,
    /// Only this API key's orders (what a client sees); `None`: every order (operators).
    pub owner: Option<i64>,
    /// Only orders with this status (operators).
    pub status: Option<OrderStatus>,
}

impl OrderListQuery {
    /// Parses decoded query pairs of a client's list (`limit`, `after`). Unknown, repeated and
    /// malformed parameters are errors.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, ValidationError> {
        let page = parse_list(pairs, |_, _, _| Ok(false))?;
        Ok(Self {
            page,
            owner: None,
            status: None,
        })
    }

    /// Parses decoded query pairs of an operator's list: paging, and `status` and `key` (the
    /// id of the API key that placed the orders). Unknown, repeated and malformed parameters
    /// are errors.
    pub fn from_admin_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, ValidationError> {
        let (mut owner, mut status) = (None, None);
        let page = parse_list(pairs, |seen, name, value| {
            match name {
                "status" => {
                    seen.first("status")?;
                    status = Some(value.parse().map_err(|_| {
                        ValidationError::parameter(
                            "status",
                            "must be one of placed, approved, delivered, cancelled",
                        )
                    })?);
                }
                "key" => {
                    seen.first("key")?;
                    owner = Some(
                        parse_decimal::<i64>(value)
                            .filter(|id| *id > 0)
                            .ok_or_else(|| {
                                ValidationError::parameter(
                                    "key",
                                    "must be a key id (a positive integer)",
                                )
                            })?,
                    );
                }
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(Self {
            page,
            owner,
            status,
        })
    }
}

/// A page of API keys, for operators: in id order, optionally only one plan's or only those in
/// one state at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyListQuery {
    /// Size and cursor.
    pub page: PageRequest,
    /// Only keys on this plan.
    pub plan: Option<Plan>,
    /// Only keys in this state at `now`.
    pub state: Option<KeyState>,
    /// The time the state filter is judged at (Unix seconds).
    pub now: i64,
}

impl KeyListQuery {
    /// The first page of `limit` keys, of any plan and state.
    pub fn every_key(limit: Limit) -> Self {
        Self {
            page: PageRequest { limit, after: None },
            plan: None,
            state: None,
            now: 0,
        }
    }

    /// Parses decoded query pairs (`limit`, `after`, `plan`, `state`), judging states at `now`.
    /// Unknown, repeated and malformed parameters are errors.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
        now: i64,
    ) -> Result<Self, ValidationError> {
        let (mut plan, mut state) = (None, None);
        let page = parse_list(pairs, |seen, name, value| {
            match name {
                "plan" => {
                    seen.first("plan")?;
                    plan = Some(
                        value
                            .parse()
                            .map_err(|_| ValidationError::parameter("plan", plan_names()))?,
                    );
                }
                "state" => {
                    seen.first("state")?;
                    state = Some(value.parse().map_err(|_| {
                        ValidationError::parameter(
                            "state",
                            "must be one of active, expired, revoked",
                        )
                    })?);
                }
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(Self {
            page,
            plan,
            state,
            now,
        })
    }
}

fn plan_names() -> String {
    let names = Plan::ALL.map(Plan::as_str).join(", ");
    format!("must be one of {names}")
}

/// The loop every list query shares: each pair is offered to `own` first (the list's own
/// parameters: it returns whether it took the pair), then read as a paging parameter
/// (`limit`, `after`); any other name is an unknown parameter.
fn parse_list<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    mut own: impl FnMut(&mut Seen, &str, &str) -> Result<bool, ValidationError>,
) -> Result<PageRequest, ValidationError> {
    let mut page = PageRequest::default();
    let mut seen = Seen::default();
    for (name, value) in pairs {
        if !own(&mut seen, name, value)? {
            parse_page_parameter(&mut page, &mut seen, name, value)?;
        }
    }
    Ok(page)
}

#[derive(Default)]
struct Seen(Vec<&'static str>);

impl Seen {
    fn first(&mut self, name: &'static str) -> Result<(), ValidationError> {
        if self.0.contains(&name) {
            return Err(ValidationError::parameter(
                name,
                "must be given at most once",
            ));
        }
        self.0.push(name);
        Ok(())
    }
}

fn parse_page_parameter(
    page: &mut PageRequest,
    seen: &mut Seen,
    name: &str,
    value: &str,
) -> Result<(), ValidationError> {
    match name {
        "limit" => {
            seen.first("limit")?;
            page.limit = parse_decimal::<u32>(value)
                .ok_or_else(limit_error)
                .and_then(Limit::new)?;
        }
        "after" => {
            seen.first("after")?;
            page.after = Some(
                parse_decimal::<i64>(value)
                    .filter(|id| *id >= 0)
                    .ok_or_else(|| {
                        ValidationError::parameter(
                            "after",
                            "must be an id (a non-negative integer), as a `next` link gives it",
                        )
                    })?,
            );
        }
        other => return Err(ValidationError::UnknownParameter(other.to_owned())),
    }
    Ok(())
}

/// Plain ASCII digits only: `+5`, ` 5`, `5.0` and `0x5` are not numbers a client meant.
fn parse_decimal<T: std::str::FromStr>(value: &str) -> Option<T> {
    if value.is_empty() || value.len() > 20 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pets(query: &[(&str, &str)]) -> Result<PetListQuery, ValidationError> {
        PetListQuery::from_pairs(query.iter().copied())
    }

    #[test]
    fn no_parameters_give_the_default_limit_and_no_filter() {
        let query = pets(&[]).expect("valid");
        assert_eq!(query.page.limit.get(), DEFAULT_LIMIT);
        assert_eq!(query.status, None);
        assert_eq!(query.page.after, None);
    }

    #[test]
    fn limits_at_both_bounds_are_accepted() {
        for value in ["1", "100", "020"] {
            assert!(pets(&[("limit", value)]).is_ok(), "limit={value}");
        }
    }

    #[test]
    fn every_status_filter_is_accepted() {
        for status in PetStatus::ALL {
            let query = pets(&[("status", status.as_str())]).expect("valid");
            assert_eq!(query.status, Some(status));
        }
    }

    #[test]
    fn a_cursor_is_accepted() {
        let query = pets(&[("after", "42"), ("limit", "5")]).expect("valid");
        assert_eq!(query.page.after, Some(42));
        assert_eq!(query.page.limit.get(), 5);
    }

    #[test]
    fn malformed_parameters_are_rejected_naming_the_parameter() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[("limit", "0")], "limit"),
            (&[("limit", "101")], "limit"),
            (&[("limit", "-1")], "limit"),
            (&[("limit", "")], "limit"),
            (&[("limit", "ten")], "limit"),
            (&[("limit", "1.5")], "limit"),
            (&[("limit", "+5")], "limit"),
            (&[("limit", "99999999999999999999999")], "limit"),
            (&[("limit", "5"), ("limit", "6")], "limit"),
            (&[("status", "lost")], "status"),
            (&[("status", "")], "status"),
            (&[("status", "SOLD")], "status"),
            (&[("status", "sold"), ("status", "sold")], "status"),
            (&[("after", "-1")], "after"),
            (&[("after", "abc")], "after"),
            (&[("after", "9223372036854775808")], "after"),
        ];
        for (query, expected) in cases {
            match pets(query) {
                Err(ValidationError::InvalidParameter { name, .. }) => {
                    assert_eq!(name, *expected, "{query:?} named the wrong parameter")
                }
                other => panic!("{query:?}: expected an invalid parameter, got {other:?}"),
            }
        }
    }

    #[test]
    fn unknown_parameters_are_rejected_by_name() {
        assert_eq!(
            pets(&[("offset", "10")]),
            Err(ValidationError::UnknownParameter("offset".into()))
        );
        assert_eq!(
            OrderListQuery::from_pairs([("status", "placed")]),
            Err(ValidationError::UnknownParameter("status".into()))
        );
    }

    #[test]
    fn an_operators_order_list_takes_a_status_and_a_key() {
        let query = OrderListQuery::from_admin_pairs([
            ("status", "approved"),
            ("key", "7"),
            ("limit", "5"),
            ("after", "9"),
        ])
        .expect("valid");
        assert_eq!(query.status, Some(OrderStatus::Approved));
        assert_eq!(query.owner, Some(7));
        assert_eq!((query.page.limit.get(), query.page.after), (5, Some(9)));
        for (pairs, name) in [
            (&[("status", "lost")][..], "status"),
            (&[("key", "0")][..], "key"),
            (&[("key", "x")][..], "key"),
            (&[("key", "+7")][..], "key"),
            (&[("key", "-7")][..], "key"),
            (&[("key", "1"), ("key", "2")][..], "key"),
        ] {
            let error =
                OrderListQuery::from_admin_pairs(pairs.iter().copied()).expect_err("refused");
            assert!(
                matches!(&error, ValidationError::InvalidParameter { name: n, .. } if *n == name),
                "{pairs:?}: {error:?}"
            );
        }
        assert_eq!(
            OrderListQuery::from_admin_pairs([("owner", "1")]),
            Err(ValidationError::UnknownParameter("owner".into()))
        );
    }

    #[test]
    fn an_overfetched_page_links_to_the_next_one() {
        let limit = Limit::new(2).expect("valid");
        let page = Page::from_overfetch(vec![1, 2, 3], limit, |id| *id);
        assert_eq!(page.items, vec![1, 2]);
        assert_eq!(page.next_after, Some(2));

        let last = Page::from_overfetch(vec![3, 4], limit, |id| *id);
        assert_eq!(last.items, vec![3, 4]);
        assert_eq!(last.next_after, None);
    }
}
