//! A handle on a request's TCP connection, to stop reading from it.
//!
//! actix-web keeps reading an abandoned *chunked* request body until the client sends its last
//! chunk, with no time limit: a client that stalls one would hold its connection (and a file
//! descriptor) open after its answer, however the answer came. With this handle the service
//! shuts the connection's read side once it has answered such a request, unless the body was read
//! to its end and the answer is a success (the connection then stays open for the next request):
//! the HTTP layer sees the end of the stream, sends the answer and closes.

use std::any::Any;
use std::net::Shutdown;
use std::os::fd::AsFd;
use std::sync::Arc;

use actix_web::dev::{Extensions, ServiceRequest};
use actix_web::http::{StatusCode, header};

/// The request's connection, as a second descriptor of the same socket (created when the
/// connection is accepted, closed with it). Absent in tests that serve in process.
#[derive(Debug, Clone)]
pub struct Connection(Arc<std::net::TcpStream>);

impl Connection {
    /// For `HttpServer::on_connect`: records the connection's handle in its extensions.
    pub fn record(connection: &dyn Any, extensions: &mut Extensions) {
        let Some(tcp) = connection.downcast_ref::<actix_web::rt::net::TcpStream>() else {
            return;
        };
        match tcp.as_fd().try_clone_to_owned() {
            Ok(fd) => {
                extensions.insert(Self(Arc::new(std::net::TcpStream::from(fd))));
            }
            // Out of descriptors: the connection just goes without the handle.
            Err(error) => log::debug!("no handle on a new connection: {error}"),
        }
    }

    /// The connection of a request whose body is chunked (the only kind an answer can leave
    /// being drained for as long as the client stalls it), when recorded.
    pub fn of_chunked(req: &ServiceRequest) -> Option<Self> {
        let chunked = req
            .headers()
            .get(header::TRANSFER_ENCODING)
            .is_some_and(|value| {
                let value = value.as_bytes();
                let last = value.len().saturating_sub(b"chunked".len());
                value[last..].eq_ignore_ascii_case(b"chunked")
            });
        chunked.then(|| req.conn_data::<Self>().cloned()).flatten()
    }

    /// Once the request is answered with `status`: stops reading unless the answer is a
    /// success and the body was read to its end (`body_read`: [`BodyRead`] is in the request's
    /// extensions). A resource that takes no body never reads one.
    pub fn answered(&self, status: StatusCode, body_read: bool) {
        if !body_read || status.is_client_error() || status.is_server_error() {
            self.stop_reading();
        }
    }

    /// Stops reading from the connection: what the client sends from now on is not read, and the
    /// HTTP layer closes the connection once its answer is sent.
    pub fn stop_reading(&self) {
        let _ = self.0.shutdown(Shutdown::Read);
    }
}

/// In a request's extensions once its body was read to its end.
#[derive(Debug, Clone, Copy)]
pub struct BodyRead;
