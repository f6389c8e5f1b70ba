//! Flag values the HTTP layer's settings take, parsed here, where the command line is read: the
//! transport is handed them checked.

use petstore_http::config::{CorsOrigins, NamedServers};

/// `--cors-allowed-origins`: a comma-separated list of origins (`https://app.example.com`), or
/// `*` alone for any; empty turns CORS off.
pub fn cors_origins(list: &str) -> Result<CorsOrigins, String> {
    let origins: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .collect();
    if origins.is_empty() {
        return Ok(CorsOrigins::Off);
    }
    if origins == ["*"] {
        return Ok(CorsOrigins::Any);
    }
    for origin in &origins {
        let scheme = origin.split_once("://").map(|(scheme, _)| scheme);
        let valid = matches!(scheme, Some("http" | "https"))
            && !origin.ends_with('/')
            && !origin.contains('*')
            && origin.bytes().all(|b| b.is_ascii_graphic());
        if !valid {
            return Err(format!(
                "`{origin}` is not an origin (scheme://host[:port], no path), nor `*` alone"
            ));
        }
    }
    Ok(CorsOrigins::Only(
        origins.into_iter().map(str::to_owned).collect(),
    ))
}

/// `--openapi-servers`: `NAME=URL` pairs separated by commas (e.g.
/// `Production=https://api.example.com/v1,Staging=https://staging.example.com/v1`), each URL
/// `http://` or `https://` without credentials.
pub fn openapi_servers(list: &str) -> Result<NamedServers, String> {
    let mut servers = Vec::new();
    for item in list
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
    {
        let Some((name, url)) = item.split_once('=') else {
            return Err(format!(
                "`{item}` is not NAME=URL (e.g. Production=https://api.example.com/v1)"
            ));
        };
        let (name, url) = (name.trim(), url.trim().trim_end_matches('/'));
        if name.is_empty() {
            return Err(format!("`{item}` has no name before `=`"));
        }
        if !(url.starts_with("https://") || url.starts_with("http://")) || url.contains('@') {
            return Err(format!(
                "`{name}`'s address is not an http:// or https:// URL without credentials"
            ));
        }
        servers.push((name.to_owned(), url.to_owned()));
    }
    Ok(NamedServers(servers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_named_urls_without_credentials() {
        let servers = openapi_servers(
            "Production=https://api.example.com/v1, Staging=https://s.example.com/v1/",
        )
        .expect("two servers");
        assert_eq!(
            servers.0,
            [
                (
                    "Production".to_owned(),
                    "https://api.example.com/v1".to_owned()
                ),
                ("Staging".to_owned(), "https://s.example.com/v1".to_owned()),
            ]
        );
        assert_eq!(openapi_servers("").expect("none").0, []);
        for bad in [
            "https://api.example.com/v1",
            "Production=ftp://x/v1",
            "=https://x/v1",
            "P=https://user:pw@x/v1",
        ] {
            assert!(openapi_servers(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn origins_are_origins_or_a_star_alone() {
        assert_eq!(cors_origins(" ").expect("off"), CorsOrigins::Off);
        assert_eq!(cors_origins("*").expect("any"), CorsOrigins::Any);
        assert_eq!(
            cors_origins("https://a.example.com, http://b.example.com:8080").expect("two"),
            CorsOrigins::Only(vec![
                "https://a.example.com".to_owned(),
                "http://b.example.com:8080".to_owned(),
            ])
        );
        for bad in [
            "https://a.example.com/",
            "a.example.com",
            "https://*.example.com",
            "ftp://a",
            "*, https://a.example.com",
        ] {
            assert!(cors_origins(bad).is_err(), "{bad} accepted");
        }
    }
}
