//! The client's own rules, without a server.

use reqwest::header::{self, HeaderMap, HeaderValue};

use super::*;
use crate::request::next_link;

#[test]
fn the_next_link_is_found_among_others() {
    let mut headers = HeaderMap::new();
    headers.append(
        header::LINK,
        HeaderValue::from_static("<https://x/v1/pets>; rel=\"successor-version\""),
    );
    headers.append(
        header::LINK,
        HeaderValue::from_static("<https://x/v1/pets?limit=2&after=7>; rel=\"next\""),
    );
    let next = next_link(&headers);
    assert_eq!(next.as_deref(), Some("https://x/v1/pets?limit=2&after=7"));
    let listing = Listing::<Pet> {
        items: Vec::new(),
        next,
    };
    assert_eq!(listing.next_after(), Some(7));
    assert_eq!(next_link(&HeaderMap::new()), None);
}

#[test]
fn a_client_needs_an_http_base_url_and_a_sendable_key() {
    assert!(
        Client::builder("https://api.example.com/v1/", "pst_x")
            .build()
            .is_ok()
    );
    for bad in ["ftp://example.com", "not a url", "mailto:x@example.com"] {
        assert!(matches!(
            Client::builder(bad, "pst_x").build(),
            Err(Error::Config(_))
        ));
    }
    assert!(matches!(
        Client::builder("https://x", "pst_\nx").build(),
        Err(Error::Config(_))
    ));
}

#[test]
fn queries_become_parameters_and_paths_fill_in() {
    let client = Client::builder("https://api.example.com/v1/", "pst_x")
        .build()
        .expect("client");
    let url = client
        .pets_url(&PetQuery {
            limit: Some(5),
            status: Some(PetStatus::Sold),
            after: Some(9),
        })
        .expect("url");
    assert_eq!(
        url.as_str(),
        "https://api.example.com/v1/pets?limit=5&status=sold&after=9"
    );
    let plain = client.pets_url(&PetQuery::default()).expect("url");
    assert_eq!(plain.as_str(), "https://api.example.com/v1/pets");
    let order = client
        .url(&operations::GET_ORDER, &[("{orderId}", 42)])
        .expect("url");
    assert_eq!(order.as_str(), "https://api.example.com/v1/store/orders/42");
    assert!(
        client
            .parse_next("https://evil.example.com/v1/pets")
            .is_err(),
        "the key stays home"
    );
    assert!(
        client
            .parse_next("https://api.example.com/v1/pets?after=3")
            .is_ok()
    );
}
