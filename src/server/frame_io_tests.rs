//! The read buffer against real loopback sockets: bodies are slices of what the socket wrote,
//! and a large frame gets (and gives back) its own allocation.

use super::*;
use crate::client::block_on;
use crate::protocol::codes::response;
use crate::protocol::frame::encode_frame;
use bytes::Bytes;
use std::io::Write;
use std::time::Duration;

/// Every test here ends within this, even if the code under test stops making progress.
const TEST_DEADLINE: Duration = Duration::from_secs(30);

/// A connected loopback pair: the glommio end for the code under test, the std end for the
/// test's peer (used from another thread when it must block).
async fn socket_pair() -> (TcpStream, std::net::TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ours = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (theirs, _) = listener.accept().unwrap();
    theirs.set_read_timeout(Some(TEST_DEADLINE)).unwrap();
    (ours, theirs)
}

fn answer(opaque: i32, body: impl Into<Bytes>) -> RemotingCommand {
    let mut request = RemotingCommand::request(11);
    request.opaque = opaque;
    RemotingCommand::response_to(&request, response::SUCCESS, None).with_body(body)
}

#[test]
fn frames_read_are_split_off_the_read_buffer_and_their_bodies_point_into_it() {
    block_on(async {
        let (ours, mut theirs) = socket_pair().await;
        let mut wire = BytesMut::new();
        encode_frame(&answer(1, &b"first body"[..]), &mut wire);
        encode_frame(&answer(2, &b"second body"[..]), &mut wire);
        theirs.write_all(&wire).unwrap();
        let mut buf = ReadBuffer::default();
        let mut read = 0;
        while read < wire.len() {
            read += buf.read_from(&ours).await.unwrap();
        }
        let received = buf.bytes().as_ptr_range();
        assert_eq!(&buf.bytes()[..], &wire[..]);
        for (opaque, body) in [(1, &b"first body"[..]), (2, &b"second body"[..])] {
            let frame = buf.next_frame().unwrap().expect("a whole frame");
            assert_eq!((frame.opaque, &frame.body[..]), (opaque, body));
            let at = frame.body.as_ptr_range();
            assert!(
                received.start <= at.start && at.end <= received.end,
                "the body {at:?} is a slice of the bytes read, {received:?}"
            );
        }
        assert!(buf.next_frame().unwrap().is_none());
    })
    .unwrap();
}

#[test]
fn a_frame_larger_than_a_chunk_gets_an_allocation_of_its_size_that_is_not_kept() {
    block_on(async {
        let (ours, mut theirs) = socket_pair().await;
        let mut large = BytesMut::new();
        encode_frame(&answer(1, vec![9u8; 1 << 20]), &mut large);
        let mut small = BytesMut::new();
        encode_frame(&answer(2, &b"after"[..]), &mut small);
        let frame_len = large.len();
        let sender = std::thread::spawn(move || theirs.write_all(&large).map(|()| theirs));

        let mut buf = ReadBuffer::default();
        while buf.bytes().len() < frame_len {
            assert!(buf.read_from(&ours).await.unwrap() > 0);
        }
        // Read straight into room of exactly the frame's size: no growth by doubling, nothing
        // of another frame in the same allocation.
        assert_eq!(buf.bytes().capacity(), frame_len);
        let frame = buf.next_frame().unwrap().unwrap();
        assert_eq!(frame.body.len(), 1 << 20);
        drop(frame);

        let mut theirs = sender.join().unwrap().unwrap();
        theirs.write_all(&small).unwrap();
        while buf.bytes().len() < small.len() {
            assert!(buf.read_from(&ours).await.unwrap() > 0);
        }
        assert!(
            buf.bytes().capacity() <= READ_BUFFER_BYTES_KEPT_MAX,
            "the large frame's allocation ({} bytes of room) is not read into again",
            buf.bytes().capacity()
        );
        assert_eq!(buf.next_frame().unwrap().unwrap().body, &b"after"[..]);
    })
    .unwrap();
}
