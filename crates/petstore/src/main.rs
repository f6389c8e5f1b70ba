//! `petstore`: see `petstore --help` and the README.

/// mimalloc rather than the system allocator: a request makes a few dozen small allocations
/// (headers, rows, the body), and glibc's malloc and free weighed heavily in a list request's
/// instructions (the measurement: docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    match petstore::run() {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", petstore_http::error::Chain(error.as_ref()));
            std::process::ExitCode::FAILURE
        }
    }
}
