//! The remoting server loop shared by the NameServer and (later) the broker: accept, then run
//! each connection with [`connection::Connection`], handing requests to a [`RequestHandler`].

pub mod connection;

use crate::protocol::codes::response;
use crate::protocol::command::RemotingCommand;
use crate::protocol::fastjson::FastjsonError;
use crate::protocol::header::HeaderError;
use connection::Connection;
use glommio::net::TcpListener;
use glommio::sync::Semaphore;
use glommio::timer::Timer;
use std::future::Future;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

/// Connections served at once. Every RocketMQ client process keeps one connection per
/// NameServer and per broker, so this is roughly the number of client processes; past it the
/// server stops accepting until one closes (and the file-descriptor limit is not hit first).
pub const CONNECTIONS_MAX: usize = 16_384;

/// Identifies one connection for the life of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnectionId(pub u64);

/// Why a request could not be served; it is answered with SYSTEM_ERROR and this text as the
/// remark (as Java does when a processor throws), and the connection stays open.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error(transparent)]
    Header(#[from] HeaderError),
    #[error("malformed body: {0}")]
    Body(#[from] FastjsonError),
    #[error("{0}")]
    Refused(String),
}

/// What a server (or a client, for requests its peer sends it) does with a request.
pub trait RequestHandler: 'static {
    /// Produces the response to `request`, built with `RemotingCommand::response_to`. It may
    /// take as long as it likes (long polling); other requests are served meanwhile. For a
    /// oneway request the response is dropped.
    fn handle(
        &self,
        connection: &Rc<Connection>,
        request: &RemotingCommand,
    ) -> impl Future<Output = Result<RemotingCommand, RequestError>>;

    /// The connection is gone (closed by either side, or dropped after a bad frame).
    fn connection_closed(&self, _connection: ConnectionId) {}
}

/// After a failed accept (or a failed start of an accepted socket) the loop pauses, doubling
/// from the first to the longest pause while failures repeat (as Go's net/http does): a
/// persistent failure such as the descriptor limit then costs a log line per second, not a
/// spinning core.
const ACCEPT_RETRY_PAUSE_FIRST: Duration = Duration::from_millis(5);
const ACCEPT_RETRY_PAUSE_MAX: Duration = Duration::from_secs(1);

/// Accepts connections on `listener` and serves each with `handler`, forever. Runs on the
/// current glommio executor.
pub async fn serve<H: RequestHandler>(listener: TcpListener, handler: Rc<H>) {
    let slots = Rc::new(Semaphore::new(CONNECTIONS_MAX as u64));
    let mut pause = ACCEPT_RETRY_PAUSE_FIRST;
    loop {
        let Ok(slot) = slots.acquire_static_permit(1).await else {
            return;
        };
        let started = match listener.accept().await {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                Connection::start_holding(stream, handler.clone(), Some(slot))
                    .map_err(|err| format!("could not start a connection: {err}"))
            }
            Err(err) => Err(format!("accept failed: {err}")),
        };
        match started {
            Ok(connection) => {
                pause = ACCEPT_RETRY_PAUSE_FIRST;
                tracing::debug!(peer = %connection.peer_addr(), id = connection.id().0, "connection accepted");
            }
            Err(err) => {
                // Transient (a peer reset before accept, the descriptor limit): keep serving.
                tracing::warn!(?pause, "{err}");
                Timer::new(pause).await;
                pause = (pause * 2).min(ACCEPT_RETRY_PAUSE_MAX);
            }
        }
    }
}

/// Makes sure no other process listens on `addr`, and turns port 0 into a free port.
/// glommio sets SO_REUSEPORT on every listener (that is how a broker's shards share one port),
/// and the kernel would let a second process of the same user join that group and take part of
/// the connections; a plain listener, without the option, fails with EADDRINUSE instead.
pub fn claim_port(addr: SocketAddr) -> std::io::Result<SocketAddr> {
    std::net::TcpListener::bind(addr)?.local_addr()
}

/// The answer to a request code nobody serves, worded as Java words it (leading space included).
pub fn not_supported(request: &RemotingCommand) -> RemotingCommand {
    let remark = format!(" request type {} not supported", request.code);
    RemotingCommand::response_to(request, response::REQUEST_CODE_NOT_SUPPORTED, Some(remark))
}
