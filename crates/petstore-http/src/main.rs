//! `petstore`: see `petstore --help` and the README.

/// mimalloc rather than the system allocator: a request makes a few dozen small allocations
/// (headers, rows, the body), and glibc's malloc and free were 18% of a list request's
/// instructions (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        // env_logger's layout, with every line redacted of anything shaped like an API key.
        .format(|out, record| {
            use std::io::Write;
            let line = record.args().to_string();
            writeln!(
                out,
                "[{} {:<5} {}] {}",
                out.timestamp(),
                record.level(),
                record.target(),
                petstore_http::report::redact_keys(&line)
            )
        })
        .init();
    match petstore_http::commands::run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", petstore_http::error::Chain(error.as_ref()));
            std::process::ExitCode::FAILURE
        }
    }
}
