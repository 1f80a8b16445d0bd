//! The remoting client: one connection to a NameServer or broker, with requests matched to
//! responses by opaque, oneway sends, timeouts, and requests from the peer handed to a
//! [`RequestHandler`]. Used by `ringmq admin`, the bench, the broker's NameServer registration
//! and the tests. Runs on glommio; [`block_on`] runs one future on a fresh executor for callers
//! outside one.

use crate::protocol::acl::{self, Credentials};
use crate::protocol::command::{RemotingCommand, SerializeType};
use crate::server::connection::{Connection, RemotingError};
use crate::server::{not_supported, RequestError, RequestHandler, Response};
use glommio::net::TcpStream;
use std::future::Future;
use std::net::{SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::time::Duration;

/// Java's default for synchronous calls (`DefaultMQProducer.sendMsgTimeout`,
/// `ClientConfig.mqClientApiTimeout`).
pub const REQUEST_TIMEOUT_DEFAULT: Duration = Duration::from_secs(3);

/// Java's `connectTimeoutMillis` default.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Answers every request from the peer with REQUEST_CODE_NOT_SUPPORTED, as a Java client does
/// for codes it has no processor for.
pub struct RefuseRequests;

impl RequestHandler for RefuseRequests {
    async fn handle(
        self: Rc<Self>,
        _: Rc<Connection>,
        request: RemotingCommand,
    ) -> Result<Response, RequestError> {
        Ok(not_supported(&request).into())
    }
}

/// A client connection. Dropping it closes the connection.
pub struct RemotingClient {
    connection: Rc<Connection>,
    /// When set, every request is ACL-signed before it is sent (Java's `AclClientRPCHook`).
    credentials: Option<Credentials>,
    /// When set, every request's header is written in this form (Java's
    /// `rocketmq.serialize.type`); otherwise as the request says.
    serialize_type: Option<SerializeType>,
}

impl RemotingClient {
    /// Connects to `addr` (`host:port`); requests from the peer are refused.
    pub async fn connect(addr: &str) -> Result<Self, RemotingError> {
        Self::connect_with(addr, Rc::new(RefuseRequests)).await
    }

    /// Connects to `addr`, handing requests from the peer to `handler`.
    pub async fn connect_with<H: RequestHandler>(
        addr: &str,
        handler: Rc<H>,
    ) -> Result<Self, RemotingError> {
        let failed = |source| RemotingError::Connect {
            addr: addr.to_owned(),
            source,
        };
        let socket_addr = resolve(addr).map_err(failed)?;
        let stream = TcpStream::connect_timeout(socket_addr, CONNECT_TIMEOUT)
            .await
            .map_err(|err| failed(std::io::Error::other(err.to_string())))?;
        let _ = stream.set_nodelay(true);
        let connection = Connection::start(stream, handler).map_err(failed)?;
        Ok(Self {
            connection,
            credentials: None,
            serialize_type: None,
        })
    }

    /// Signs every request from now on with `credentials`, for servers with ACL enabled.
    pub fn with_credentials(mut self, credentials: Credentials) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// Writes every request's header as `serialize_type` from now on.
    pub fn with_serialize_type(mut self, serialize_type: SerializeType) -> Self {
        self.serialize_type = Some(serialize_type);
        self
    }

    /// Sends `request` and waits up to `timeout` for its response.
    pub async fn request(
        &self,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, RemotingError> {
        self.connection
            .request(self.prepared(request), timeout)
            .await
    }

    /// Sends `request` without waiting for (or getting) a response.
    pub fn oneway(&self, request: RemotingCommand) -> Result<(), RemotingError> {
        self.connection.oneway(self.prepared(request))
    }

    /// `request` in the client's header form, signed.
    fn prepared(&self, mut request: RemotingCommand) -> RemotingCommand {
        if let Some(serialize_type) = self.serialize_type {
            request.serialize_type = serialize_type;
        }
        if let Some(credentials) = &self.credentials {
            acl::sign(&mut request, credentials);
        }
        request
    }

    pub fn connection(&self) -> &Rc<Connection> {
        &self.connection
    }
}

impl Drop for RemotingClient {
    fn drop(&mut self) {
        self.connection.close();
    }
}

fn resolve(addr: &str) -> std::io::Result<SocketAddr> {
    addr.to_socket_addrs()?.next().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::NotFound, "address resolves to nothing")
    })
}

/// Runs `future` to completion on a new single-threaded glommio executor (for callers such as
/// the admin CLI and tests that are not on one).
pub fn block_on<T>(future: impl Future<Output = T>) -> std::io::Result<T> {
    let executor = glommio::LocalExecutorBuilder::default()
        .make()
        .map_err(|err| std::io::Error::other(err.to_string()))?;
    Ok(executor.run(future))
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
