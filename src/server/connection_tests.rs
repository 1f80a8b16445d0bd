//! The server side of a connection, driven by a raw socket so every byte on the wire is the
//! test's: a request whose handler answers at once gets no task, one that waits does and does
//! not hold back the requests behind it, and a request body reaches the handler as a slice of
//! the bytes the socket wrote.

use super::*;
use crate::client::block_on;
use crate::protocol::frame::{decode_frame, encode_frame};
use crate::server::{serve, Response};
use bytes::{Bytes, BytesMut};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::channels::local_channel::{self, LocalReceiver, LocalSender};
use glommio::net::TcpListener;

/// Test request codes understood by [`Recorder`].
const ANSWER_NOW: i32 = 9101;
/// Waits, like a long poll, until a RELEASE arrives.
const PARK: i32 = 9102;
const RELEASE: i32 = 9103;

const TEST_DEADLINE: Duration = Duration::from_secs(30);

/// Answers at once, parks, or releases; keeps every request body and the server's side of the
/// connection so the test can look at them.
struct Recorder {
    connection: RefCell<Option<Rc<Connection>>>,
    bodies: RefCell<Vec<Bytes>>,
    release_tx: LocalSender<()>,
    release_rx: LocalReceiver<()>,
}

impl RequestHandler for Recorder {
    async fn handle(
        self: Rc<Self>,
        connection: Rc<Connection>,
        request: RemotingCommand,
    ) -> Result<Response, RequestError> {
        self.connection.replace(Some(connection));
        let answer = RemotingCommand::response_to(&request, response::SUCCESS, None);
        self.bodies.borrow_mut().push(request.body);
        match request.code {
            PARK => {
                self.release_rx.recv().await;
            }
            RELEASE => {
                let _ = self.release_tx.try_send(());
            }
            _ => {}
        }
        Ok(answer.into())
    }
}

/// Serves a [`Recorder`] on loopback and connects a raw socket to it.
async fn start() -> (Rc<Recorder>, glommio::net::TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (release_tx, release_rx) = local_channel::new_bounded(1);
    let recorder = Rc::new(Recorder {
        connection: RefCell::new(None),
        bodies: RefCell::new(Vec::new()),
        release_tx,
        release_rx,
    });
    glommio::spawn_local(serve(listener, recorder.clone())).detach();
    let socket = glommio::net::TcpStream::connect(addr).await.unwrap();
    (recorder, socket)
}

fn request(code: i32, opaque: i32, body: &'static [u8]) -> RemotingCommand {
    let mut request = RemotingCommand::request(code).with_body(body);
    request.opaque = opaque;
    request
}

/// Reads frames off `socket` until `count` have come; returns their opaques in order.
async fn read_answers(socket: &mut glommio::net::TcpStream, count: usize) -> Vec<i32> {
    let mut received = Vec::new();
    let mut opaques = Vec::new();
    let mut chunk = [0u8; 4096];
    while opaques.len() < count {
        let read = socket.read(&mut chunk).await.unwrap();
        assert!(read > 0, "the server closed the connection");
        received.extend_from_slice(&chunk[..read]);
        while let Some((answer, consumed)) = decode_frame(&received).unwrap() {
            assert!(answer.is_response());
            opaques.push(answer.opaque);
            received.drain(..consumed);
        }
    }
    opaques
}

#[test]
fn answers_made_at_once_need_no_task_and_a_parked_request_lets_later_ones_pass() {
    block_on(async {
        let (recorder, mut socket) = start().await;
        glommio::timer::timeout(TEST_DEADLINE, async {
            let mut wire = BytesMut::new();
            for opaque in 1..=100 {
                encode_frame(&request(ANSWER_NOW, opaque, b""), &mut wire);
            }
            socket.write_all(&wire).await.unwrap();
            assert_eq!(
                read_answers(&mut socket, 100).await,
                (1..=100).collect::<Vec<_>>()
            );
            let connection = recorder.connection.borrow().clone().unwrap();
            assert_eq!(
                connection.requests_deferred(),
                0,
                "answered where they were read"
            );

            // The parked request comes first on the wire and is answered last.
            wire.clear();
            encode_frame(&request(PARK, 101, b""), &mut wire);
            for opaque in 102..=104 {
                encode_frame(&request(ANSWER_NOW, opaque, b""), &mut wire);
            }
            encode_frame(&request(RELEASE, 105, b""), &mut wire);
            socket.write_all(&wire).await.unwrap();
            assert_eq!(
                read_answers(&mut socket, 5).await,
                [102, 103, 104, 105, 101]
            );
            assert_eq!(
                connection.requests_deferred(),
                1,
                "only the parked one had a task"
            );
            Ok(())
        })
        .await
        .unwrap();
    })
    .unwrap();
}

#[test]
fn a_request_body_reaches_the_handler_as_a_slice_of_the_bytes_read() {
    block_on(async {
        let (recorder, mut socket) = start().await;
        let (first, second) = (&b"first body"[..], &b"second body, the longer"[..]);
        let mut wire = BytesMut::new();
        encode_frame(&request(ANSWER_NOW, 1, first), &mut wire);
        let second_frame_at = wire.len();
        encode_frame(&request(ANSWER_NOW, 2, second), &mut wire);
        let second_body_at = wire.len() - second.len();
        // One write, so the server reads both frames with one recv.
        socket.write_all(&wire).await.unwrap();
        assert_eq!(read_answers(&mut socket, 2).await, [1, 2]);
        let bodies = recorder.bodies.borrow();
        assert_eq!((&bodies[0][..], &bodies[1][..]), (first, second));
        // The bodies lie in one buffer exactly as far apart as on the wire: the handler got
        // views of the received bytes, not copies (two copies would be separate allocations).
        let (at_first, at_second) = (bodies[0].as_ptr() as usize, bodies[1].as_ptr() as usize);
        assert_eq!(
            at_second - at_first,
            second_body_at - (second_frame_at - first.len())
        );
    })
    .unwrap();
}
