//! Usage errors, said in one line each before anything is opened or created: a setting clap
//! refuses ([`usage_error`]: the flag and its variable named, both forms), and what clap cannot
//! check of `serve`'s settings ([`check_serve`]: addresses, URLs), each message naming the
//! setting and its value (a URL's without its password).

use std::net::ToSocketAddrs;
use std::process::ExitCode;

use clap::CommandFactory;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use petstore_domain::redacted_url;
use petstore_http::ratelimit::RedisTarget;
use petstore_store::Backend;

use crate::cli::{Cli, ServeArgs, ServeFromEnvironment};

/// The exit status of a usage error, as clap's own.
const USAGE: u8 = 2;

/// Says what clap refused and returns the exit status: help and version as clap prints them; a
/// value refused as one line naming the flag and its environment variable
/// (`error: --workers (PETSTORE_WORKERS): invalid value '0': 0 is not in 1..=512`), whichever
/// of the two the value came from; anything else as clap says it.
pub fn usage_error(error: &clap::Error) -> ExitCode {
    match error.kind() {
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => match one_line(error) {
            Some(line) => {
                eprintln!("error: {line}");
                ExitCode::from(USAGE)
            }
            None => print(error),
        },
        _ => print(error),
    }
}

/// clap's own rendering, and its exit status.
fn print(error: &clap::Error) -> ExitCode {
    let _ = error.print();
    ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(USAGE))
}

/// `--flag (VARIABLE): invalid value 'v': why`, from the error's context.
fn one_line(error: &clap::Error) -> Option<String> {
    let ContextValue::String(arg) = error.get(ContextKind::InvalidArg)? else {
        return None;
    };
    // `--workers <WORKERS>` -> `--workers`.
    let flag = arg.split_whitespace().next()?;
    let named = match variable_of(flag.trim_start_matches('-')) {
        Some(variable) => format!("{flag} ({variable})"),
        None => flag.to_owned(),
    };
    let value = match error.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(value)) => value.clone(),
        _ => String::new(),
    };
    // The value of a URL-like setting may hold a password.
    let value = redacted_url(&value);
    let why = match (
        std::error::Error::source(error),
        error.get(ContextKind::ValidValue),
    ) {
        (Some(cause), _) => cause.to_string(),
        (None, Some(ContextValue::Strings(valid))) => {
            format!("expected one of {}", valid.join(", "))
        }
        (None, _) => "not a value it takes".to_owned(),
    };
    Some(format!("{named}: invalid value '{value}': {why}"))
}

/// The environment variable of the flag `--long` of any command.
fn variable_of(long: &str) -> Option<String> {
    fn search(command: &clap::Command, long: &str) -> Option<String> {
        command
            .get_arguments()
            .find(|arg| arg.get_long() == Some(long))
            .and_then(|arg| arg.get_env())
            .map(|env| env.to_string_lossy().into_owned())
            .or_else(|| command.get_subcommands().find_map(|sub| search(sub, long)))
    }
    search(&Cli::command(), long).or_else(|| search(&ServeFromEnvironment::command(), long))
}

/// What clap cannot check of `serve`'s settings, checked before anything is opened: the
/// listeners' addresses, the public base URL, the read URLs and the rate-limit store. Each
/// message names the flag, its variable and the value (a URL's without its password).
pub fn check_serve(args: &ServeArgs) -> Result<(), String> {
    let addresses = [
        ("--bind", "PETSTORE_BIND", Some(&args.bind)),
        (
            "--admin-bind",
            "PETSTORE_ADMIN_BIND",
            args.admin_bind.as_ref(),
        ),
        (
            "--metrics-bind",
            "PETSTORE_METRICS_BIND",
            args.metrics_bind.as_ref(),
        ),
    ];
    for (flag, variable, value) in addresses {
        if let Some(value) = value
            && let Err(why) = address(value)
        {
            return Err(format!("{flag} ({variable}) {value:?}: {why}"));
        }
    }
    if let Some(url) = &args.addresses.public_base_url
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        return Err(format!(
            "--public-base-url (PETSTORE_PUBLIC_BASE_URL) {:?}: not an http:// or https:// URL \
             (e.g. https://api.example.com/v1)",
            redacted_url(url)
        ));
    }
    for url in args.database_read_url.iter().filter(|url| !url.is_empty()) {
        match Backend::from_url(url) {
            Ok(Backend::Postgres(_)) => {}
            Ok(_) => {
                return Err(format!(
                    "--database-read-url (PETSTORE_DATABASE_READ_URL) {}: a read URL must be a \
                     postgres:// URL (a PostgreSQL standby)",
                    redacted_url(url)
                ));
            }
            Err(error) => {
                return Err(format!(
                    "--database-read-url (PETSTORE_DATABASE_READ_URL): {error}"
                ));
            }
        }
    }
    if args.rate_limit_store != "memory"
        && let Err(error) = RedisTarget::parse(&args.rate_limit_store)
    {
        return Err(format!(
            "--rate-limit-store (PETSTORE_RATE_LIMIT_STORE) {}: {error}",
            redacted_url(&args.rate_limit_store)
        ));
    }
    Ok(())
}

/// Whether `value` is an address to listen on: `host:port` (a name that resolves, or an
/// address; IPv6 in brackets), the port 0 to 65535.
fn address(value: &str) -> Result<(), String> {
    let Some((host, port)) = value.rsplit_once(':') else {
        return Err("not an address and port (HOST:PORT, e.g. 127.0.0.1:8080)".to_owned());
    };
    if host.is_empty() {
        return Err("no host before the port (e.g. 0.0.0.0:8080 for every interface)".to_owned());
    }
    if port.parse::<u16>().is_err() {
        return Err(format!("the port {port:?} is not a number from 0 to 65535"));
    }
    match value.to_socket_addrs().map(|mut found| found.next()) {
        Ok(Some(_)) => Ok(()),
        Ok(None) | Err(_) => Err(format!("the host {host:?} does not resolve")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn listen_addresses_are_host_and_port() {
        for good in [
            "127.0.0.1:8080",
            "0.0.0.0:0",
            "[::1]:9090",
            "localhost:8080",
        ] {
            assert_eq!(address(good), Ok(()), "{good}");
        }
        for (bad, why) in [
            ("notaport", "HOST:PORT"),
            (":8080", "no host"),
            ("127.0.0.1:http", "not a number"),
            ("127.0.0.1:70000", "not a number"),
        ] {
            let error = address(bad).expect_err(bad);
            assert!(error.contains(why), "{bad}: {error}");
        }
    }

    #[test]
    fn a_refused_value_names_its_flag_and_variable_on_one_line() {
        let error =
            Cli::try_parse_from(["petstore", "serve", "--workers", "0"]).expect_err("0 workers");
        let line = one_line(&error).expect("one line");
        assert_eq!(
            line,
            "--workers (PETSTORE_WORKERS): invalid value '0': 0 is not in 1..=512"
        );
        let error = ServeFromEnvironment::try_parse_from(["petstore", "--ban-duration", "soon"])
            .expect_err("not a duration");
        let line = one_line(&error).expect("one line");
        assert!(
            line.starts_with("--ban-duration (PETSTORE_BAN_DURATION): invalid value 'soon': "),
            "{line}"
        );
        assert!(!line.contains('\n'), "{line}");
    }
}
