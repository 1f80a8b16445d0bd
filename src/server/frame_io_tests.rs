//! The read buffer and the vectored writer against real loopback sockets: bodies are slices of
//! what the socket wrote, a large frame gets (and gives back) its own allocation, and a batch
//! goes out whole and in order however the socket takes it.

use super::*;
use crate::client::block_on;
use crate::protocol::codes::response;
use crate::protocol::frame::encode_frame;
use bytes::Bytes;
use std::io::{Read, Write};
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

fn set_socket_buffer(fd: std::os::fd::RawFd, option: libc::c_int, bytes: libc::c_int) {
    // SAFETY: setsockopt reads an int from a valid pointer for the given length.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "{}", io::Error::last_os_error());
}

fn answer(opaque: i32, body: impl Into<Bytes>) -> RemotingCommand {
    let mut request = RemotingCommand::request(11);
    request.opaque = opaque;
    RemotingCommand::response_to(&request, response::SUCCESS, None).with_body(body)
}

/// What `encode_frame` writes for `frame` with its body joined: the bytes the writer must send.
fn encoded_joined(frame: &Response) -> Vec<u8> {
    let mut joined = frame.command.body.to_vec();
    for part in &frame.body_parts {
        joined.extend_from_slice(part);
    }
    let mut out = BytesMut::new();
    encode_frame(&frame.command.clone().with_body(joined), &mut out);
    out.to_vec()
}

#[test]
fn more_slices_than_one_sendmsg_takes_reach_a_slow_reader_whole_and_in_order() {
    block_on(async {
        let (mut ours, mut theirs) = socket_pair().await;
        // Fixed socket buffers far smaller than the batch (~1.2 MB), so they fill long before
        // it is out: the writer must wait for room, and the kernel takes partial writes. The
        // receiver's stays above loopback's 64 KiB segment size: a smaller window is only
        // reopened by TCP's persist timer, which takes seconds.
        set_socket_buffer(ours.as_raw_fd(), libc::SO_SNDBUF, 4096);
        set_socket_buffer(theirs.as_raw_fd(), libc::SO_RCVBUF, 256 << 10);
        let parts = 3 * IOVECS_PER_CALL_MAX + 7;
        let gathered = Response::gathered(
            answer(1, &b"own body, copied beside the header|"[..]),
            // Sizes 0..=700, so some parts are empty; every byte is its index, to catch a
            // slice sent twice or skipped.
            (0..parts)
                .map(|i| Bytes::from((0..i * 37 % 701).map(|b| b as u8).collect::<Vec<_>>()))
                .collect(),
        );
        let frames = vec![
            Response::from(answer(0, &b"small"[..])),
            gathered,
            Response::from(answer(2, vec![7u8; 100 << 10])), // referenced, not copied
            Response::gathered(answer(3, Bytes::new()), vec![]),
        ];
        let expected: Vec<u8> = frames.iter().flat_map(encoded_joined).collect();
        let total = expected.len();
        let reader = std::thread::spawn(move || {
            let mut received = Vec::with_capacity(total);
            let mut chunk = [0u8; 2048];
            while received.len() < total {
                let read = theirs.read(&mut chunk).expect("the writer keeps sending");
                assert!(read > 0, "closed after {} of {total} bytes", received.len());
                received.extend_from_slice(&chunk[..read]);
                // Slower than the writer, so its send buffer stays full.
                std::thread::sleep(Duration::from_micros(50));
            }
            received
        });
        let mut writer = FrameWriter::default();
        glommio::timer::timeout(TEST_DEADLINE, async {
            Ok(writer.write(&mut ours, &frames).await)
        })
        .await
        .expect("the batch is written within the deadline")
        .unwrap();
        let received = reader.join().unwrap();
        assert_eq!(received.len(), total);
        assert!(received == expected, "bytes differ from encode_frame's");
        let counts = writer.counts;
        assert!(
            counts.sendmsg_calls >= 4,
            "{counts:?}: > 3 x IOV_MAX slices"
        );
        assert!(
            counts.writable_waits > 0,
            "{counts:?}: the send buffer filled"
        );
        assert!(
            counts.partial_sends > 0,
            "{counts:?}: the kernel took part of a call"
        );
    })
    .unwrap();
}

#[test]
fn a_batch_of_small_answers_is_one_slice_and_one_sendmsg_and_a_large_body_its_own_slice() {
    block_on(async {
        let (mut ours, mut theirs) = socket_pair().await;
        let small: Vec<Response> = (0..200)
            .map(|i| answer(i, vec![i as u8; 100]).into())
            .collect();
        let mut writer = FrameWriter::default();
        writer.write(&mut ours, &small).await.unwrap();
        assert!(matches!(writer.pieces[..], [Piece::Copied(_)]));
        assert_eq!(writer.counts.sendmsg_calls, 1);

        let at_threshold = vec![1u8; BODY_COPIED_BYTES_MAX];
        let above = vec![2u8; BODY_COPIED_BYTES_MAX + 1];
        let mixed: Vec<Response> = vec![
            answer(0, at_threshold).into(),
            answer(1, above).into(),
            Response::gathered(
                answer(2, Bytes::new()),
                vec![Bytes::new(), vec![3u8; 10].into()],
            ),
            answer(3, Bytes::new()).into(),
        ];
        writer.write(&mut ours, &mixed).await.unwrap();
        assert!(
            matches!(
                writer.pieces[..],
                [
                    Piece::Copied(_),
                    Piece::Body(1),
                    Piece::Copied(_),
                    Piece::Part(2, 1),
                    Piece::Copied(_)
                ]
            ),
            "a body at the threshold is copied, one above it and every non-empty part referenced"
        );
        assert_eq!(writer.counts.sendmsg_calls, 2);

        let expected: Vec<u8> = small
            .iter()
            .chain(&mixed)
            .flat_map(encoded_joined)
            .collect();
        let mut received = vec![0u8; expected.len()];
        theirs.read_exact(&mut received).unwrap();
        assert!(received == expected);
    })
    .unwrap();
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

#[test]
fn advance_drops_whole_slices_then_part_of_the_next() {
    let data = *b"abcdefgh";
    let mut iovecs: Vec<libc::iovec> = [0..3, 3..3, 3..8]
        .into_iter()
        .map(|range| libc::iovec {
            iov_base: data[range.clone()].as_ptr() as *mut libc::c_void,
            iov_len: range.len(),
        })
        .collect();
    let mut pending: &mut [libc::iovec] = &mut iovecs;
    advance(&mut pending, 4);
    assert_eq!(pending.len(), 1);
    // SAFETY: the iovec points into `data`, which is alive.
    let rest =
        unsafe { std::slice::from_raw_parts(pending[0].iov_base as *const u8, pending[0].iov_len) };
    assert_eq!(rest, b"efgh");
    advance(&mut pending, 4);
    assert!(pending.is_empty());
}
