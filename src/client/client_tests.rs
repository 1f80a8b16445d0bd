//! The client and the server loop together, in one executor over loopback: responses matched
//! out of order, requests from the server to the client, oneway, timeouts, closes.

use super::*;
use crate::protocol::codes::response;
use crate::server::{serve, Response};
use glommio::channels::local_channel::{self, LocalReceiver, LocalSender};
use glommio::net::TcpListener;
use std::cell::RefCell;

/// Test request codes understood by [`TestServer`].
const PARK: i32 = 9001;
const RELEASE: i32 = 9002;
const ASK_CLIENT_BACK: i32 = 9003;
const NEVER_ANSWER: i32 = 9004;
const CLOSE_ME: i32 = 9005;
/// Answers "valid" when the request's ACL signature checks out under [`SECRET_KEY`].
const CHECK_SIGNATURE: i32 = 9006;
const SECRET_KEY: &str = "12345678";
const CLIENT_QUESTION: i32 = 40;

const TIMEOUT: Duration = Duration::from_secs(10);

struct TestServer {
    release_tx: LocalSender<()>,
    release_rx: LocalReceiver<()>,
}

impl RequestHandler for TestServer {
    async fn handle(
        self: Rc<Self>,
        conn: Rc<Connection>,
        request: RemotingCommand,
    ) -> Result<Response, RequestError> {
        let answer = |remark: &str| {
            Ok(
                RemotingCommand::response_to(&request, response::SUCCESS, Some(remark.into()))
                    .into(),
            )
        };
        match request.code {
            PARK => {
                // Held like a long poll until a RELEASE arrives on any connection.
                self.release_rx.recv().await;
                answer("parked")
            }
            RELEASE => {
                let _ = self.release_tx.try_send(());
                answer("released")
            }
            ASK_CLIENT_BACK => {
                conn.oneway(RemotingCommand::request(CLIENT_QUESTION))
                    .map_err(|e| RequestError::Refused(e.to_string()))?;
                let reply = conn
                    .request(RemotingCommand::request(CLIENT_QUESTION), TIMEOUT)
                    .await
                    .map_err(|e| RequestError::Refused(e.to_string()))?;
                answer(&format!("client said {}", reply.remark.unwrap_or_default()))
            }
            NEVER_ANSWER => std::future::pending().await,
            CHECK_SIGNATURE => {
                let expected = acl::signature(SECRET_KEY, &request.ext_fields, &request.body);
                let valid = request.ext(acl::SIGNATURE) == Some(expected.as_str())
                    && request.ext(acl::ACCESS_KEY) == Some("rocketmq2");
                answer(if valid { "valid" } else { "invalid" })
            }
            CLOSE_ME => {
                conn.close();
                std::future::pending().await
            }
            _ => Ok(not_supported(&request).into()),
        }
    }
}

/// The client side's handler: answers CLIENT_QUESTION and counts oneway ones.
#[derive(Default)]
struct Answerer {
    oneways_seen: RefCell<usize>,
}

impl RequestHandler for Answerer {
    async fn handle(
        self: Rc<Self>,
        _: Rc<Connection>,
        request: RemotingCommand,
    ) -> Result<Response, RequestError> {
        if request.is_oneway() {
            *self.oneways_seen.borrow_mut() += 1;
        }
        Ok(RemotingCommand::response_to(&request, response::SUCCESS, Some("pong".into())).into())
    }
}

fn start_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (release_tx, release_rx) = local_channel::new_bounded(1);
    glommio::spawn_local(serve(
        listener,
        Rc::new(TestServer {
            release_tx,
            release_rx,
        }),
    ))
    .detach();
    addr
}

#[test]
fn a_parked_request_does_not_block_later_ones_and_is_answered_after_them() {
    block_on(async {
        let client = Rc::new(RemotingClient::connect(&start_server()).await.unwrap());
        let order = Rc::new(RefCell::new(Vec::new()));
        let parked = {
            let (client, order) = (client.clone(), order.clone());
            glommio::spawn_local(async move {
                let resp = client
                    .request(RemotingCommand::request(PARK), TIMEOUT)
                    .await
                    .unwrap();
                order.borrow_mut().push(resp.remark.unwrap());
            })
        };
        let resp = client
            .request(RemotingCommand::request(RELEASE), TIMEOUT)
            .await
            .unwrap();
        order.borrow_mut().push(resp.remark.unwrap());
        parked.await;
        assert_eq!(*order.borrow(), vec!["released", "parked"]);
        let unknown = client
            .request(RemotingCommand::request(1234), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(unknown.code, response::REQUEST_CODE_NOT_SUPPORTED);
    })
    .unwrap();
}

#[test]
fn a_client_with_credentials_signs_what_goes_on_the_wire() {
    block_on(async {
        let addr = start_server();
        let check = || {
            let mut req = RemotingCommand::request(CHECK_SIGNATURE).with_body(&b"body"[..]);
            req.ext_fields.insert("topic", "TopicTest");
            req
        };
        let plain = RemotingClient::connect(&addr).await.unwrap();
        let resp = plain.request(check(), TIMEOUT).await.unwrap();
        assert_eq!(resp.remark.as_deref(), Some("invalid"));
        let signed = RemotingClient::connect(&addr)
            .await
            .unwrap()
            .with_credentials(Credentials {
                access_key: "rocketmq2".into(),
                secret_key: SECRET_KEY.into(),
                security_token: None,
            });
        let resp = signed.request(check(), TIMEOUT).await.unwrap();
        assert_eq!(resp.remark.as_deref(), Some("valid"));
    })
    .unwrap();
}

#[test]
fn the_server_can_send_requests_and_oneways_to_the_client_on_its_connection() {
    block_on(async {
        let answerer = Rc::new(Answerer::default());
        let client = RemotingClient::connect_with(&start_server(), answerer.clone())
            .await
            .unwrap();
        let resp = client
            .request(RemotingCommand::request(ASK_CLIENT_BACK), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(resp.remark.as_deref(), Some("client said pong"));
        // Frames are handled in order, so the oneway sent first has been seen.
        assert_eq!(*answerer.oneways_seen.borrow(), 1);
    })
    .unwrap();
}

#[test]
fn a_client_without_a_handler_refuses_server_requests() {
    block_on(async {
        let client = RemotingClient::connect(&start_server()).await.unwrap();
        let resp = client
            .request(RemotingCommand::request(ASK_CLIENT_BACK), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(
            resp.remark.as_deref(),
            Some("client said  request type 40 not supported")
        );
    })
    .unwrap();
}

#[test]
fn an_unanswered_request_times_out_and_the_connection_stays_usable() {
    block_on(async {
        let client = RemotingClient::connect(&start_server()).await.unwrap();
        let err = client
            .request(
                RemotingCommand::request(NEVER_ANSWER),
                Duration::from_millis(100),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, RemotingError::Timeout { .. }), "{err}");
        let resp = client
            .request(RemotingCommand::request(RELEASE), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(resp.code, response::SUCCESS);
    })
    .unwrap();
}

#[test]
fn a_close_by_the_server_fails_pending_and_later_requests() {
    block_on(async {
        let client = RemotingClient::connect(&start_server()).await.unwrap();
        let err = client
            .request(RemotingCommand::request(CLOSE_ME), TIMEOUT)
            .await
            .unwrap_err();
        assert!(matches!(err, RemotingError::Closed(_)), "{err}");
        assert!(client.connection().is_closed());
        let err = client
            .request(RemotingCommand::request(RELEASE), TIMEOUT)
            .await
            .unwrap_err();
        assert!(matches!(err, RemotingError::Closed(_)), "{err}");
    })
    .unwrap();
}

#[test]
fn connecting_to_a_closed_port_is_a_typed_error() {
    block_on(async {
        // Bind then drop to find a port nobody listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = RemotingClient::connect(&format!("127.0.0.1:{port}"))
            .await
            .err()
            .unwrap();
        assert!(matches!(err, RemotingError::Connect { .. }), "{err}");
        let err = RemotingClient::connect("not an address")
            .await
            .err()
            .unwrap();
        assert!(matches!(err, RemotingError::Connect { .. }), "{err}");
    })
    .unwrap();
}

#[test]
fn a_client_dropped_after_its_executor_leaves_reused_descriptors_alone() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let client = block_on(RemotingClient::connect(&addr.to_string()))
        .unwrap()
        .unwrap();
    let _client_peer = listener.accept().unwrap();
    // The executor is gone. glommio 0.9 leaks its detached tasks, so the client's descriptors
    // stay open; were they closed, new sockets could get their numbers, and closing the client
    // must then not shut those down.
    let pairs: Vec<_> = (0..8)
        .map(|_| {
            let socket = std::net::TcpStream::connect(addr).unwrap();
            (socket, listener.accept().unwrap().0)
        })
        .collect();
    drop(client);
    for (mut socket, mut accepted) in pairs {
        socket
            .write_all(b"x")
            .expect("socket still open for writing");
        let mut byte = [0u8; 1];
        accepted.read_exact(&mut byte).expect("peer still receives");
        assert_eq!(&byte, b"x");
    }
}
