//! Bad bytes on one connection close that connection only; the server keeps serving the
//! others. Many requests in flight on one connection are all answered, each to its opaque.

mod namesrv_support;

use bytes::BytesMut;
use namesrv_support::*;
use ringmq::client::block_on;
use ringmq::protocol::body::{self, TopicList};
use ringmq::protocol::codes::{request, response};
use ringmq::protocol::command::RemotingCommand;
use ringmq::protocol::frame::{decode_frame, encode_frame, FRAME_BYTES_MAX};
use ringmq::protocol::header::{KvConfigKeyRequestHeader, PutKvConfigRequestHeader};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::rc::Rc;

/// Sends `bytes` on a fresh connection and returns whether the server closed it (EOF) within
/// the test deadline, having sent nothing back.
fn server_closes_after(ns: &NameServerProcess, bytes: &[u8]) -> bool {
    let mut socket = TcpStream::connect(&ns.addr).unwrap();
    socket.set_read_timeout(Some(EVENT_DEADLINE)).unwrap();
    socket.write_all(bytes).unwrap();
    let mut reply = [0u8; 64];
    matches!(socket.read(&mut reply), Ok(0))
}

#[test]
fn garbage_and_oversized_frames_close_only_their_own_connection() {
    let ns = NameServerProcess::start(None);
    block_on(async {
        let good = connect(&ns).await;
        let broker = Broker::master("broker-a", "127.0.0.1:10911", &[("T", 4), ("U", 4)]);
        register(&good, &broker).await;

        // One byte past the limit once the 4-byte prefix is counted.
        let oversized = ((FRAME_BYTES_MAX - 3) as u32).to_be_bytes();
        let cases: [(&str, Vec<u8>); 5] = [
            (
                "unknown serialize type",
                [&[0, 0, 0, 12, 7, 0, 0, 4][..], b"junkjunk"].concat(),
            ),
            (
                "oversized length",
                [&oversized[..], &[0, 0, 0, 2, b'{', b'}']].concat(),
            ),
            ("negative length", vec![0xFF, 0xFF, 0xFF, 0xF0, 0, 0, 0, 0]),
            (
                "header longer than frame",
                vec![0, 0, 0, 8, 0, 0, 0, 200, b'{', b'}', 0, 0],
            ),
            (
                "malformed JSON header",
                [&[0, 0, 0, 12, 0, 0, 0, 8][..], b"{\"code\":"].concat(),
            ),
        ];
        for (what, bytes) in cases {
            assert!(
                server_closes_after(&ns, &bytes),
                "{what}: connection not closed"
            );
            ns.wait_for_log("undecodable frame, closing connection");
            // The registered broker's connection was not disturbed: still registered, still served.
            let resp = call(&good, route_request("T", 479)).await;
            assert_eq!(
                resp.code,
                response::SUCCESS,
                "{what}: other connection disturbed"
            );
        }
        // A client that sends half a frame and leaves changes nothing either.
        {
            let mut half = TcpStream::connect(&ns.addr).unwrap();
            half.write_all(&[0, 0, 0x10, 0, 0, 0, 0, 2, b'{']).unwrap();
        }
        assert_eq!(
            call(&good, route_request("U", 479)).await.code,
            response::SUCCESS
        );
    })
    .unwrap();
}

#[test]
fn a_oneway_request_gets_no_response() {
    let ns = NameServerProcess::start(None);
    let mut socket = TcpStream::connect(&ns.addr).unwrap();
    socket.set_read_timeout(Some(EVENT_DEADLINE)).unwrap();
    let mut out = BytesMut::new();
    let mut oneway = RemotingCommand::request(request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER).oneway();
    oneway.opaque = 1;
    let mut sync = RemotingCommand::request(request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
    sync.opaque = 2;
    encode_frame(&oneway, &mut out);
    encode_frame(&sync, &mut out);
    socket.write_all(&out).unwrap();
    let mut received = Vec::new();
    let response = loop {
        let mut chunk = [0u8; 4096];
        let read = socket.read(&mut chunk).unwrap();
        assert!(read > 0, "connection closed before the response");
        received.extend_from_slice(&chunk[..read]);
        if let Some((response, _)) = decode_frame(&received).unwrap() {
            break response;
        }
    };
    assert_eq!(
        response.opaque, 2,
        "the first frame back answers the synchronous request"
    );
    assert!(response.is_response());
    assert_eq!(
        body::decode::<TopicList>(&response.body)
            .unwrap()
            .topic_list,
        Vec::<String>::new()
    );
}

/// Requests sent at once on one connection; well past one read's worth of frames.
const CONCURRENT_REQUESTS: usize = 2000;
const KEYS: usize = 50;

#[test]
fn many_requests_in_flight_on_one_connection_are_each_answered() {
    let ns = NameServerProcess::start(None);
    block_on(async {
        let client = Rc::new(connect(&ns).await);
        for key in 0..KEYS {
            let header = PutKvConfigRequestHeader {
                namespace: "ns".into(),
                key: key.to_string(),
                value: format!("value-{key}"),
            };
            call(
                &client,
                RemotingCommand::request(request::PUT_KV_CONFIG).with_header(&header),
            )
            .await;
        }
        let tasks: Vec<_> = (0..CONCURRENT_REQUESTS)
            .map(|i| {
                let client = client.clone();
                glommio::spawn_local(async move {
                    let key = KvConfigKeyRequestHeader {
                        namespace: "ns".into(),
                        key: (i % KEYS).to_string(),
                    };
                    let resp = call(
                        &client,
                        RemotingCommand::request(request::GET_KV_CONFIG).with_header(&key),
                    )
                    .await;
                    (i, resp.ext("value").map(str::to_owned))
                })
            })
            .collect();
        for task in tasks {
            let (i, value) = task.await;
            assert_eq!(value, Some(format!("value-{}", i % KEYS)));
        }
    })
    .unwrap();
}

/// Descriptors the NameServer may hold in `out_of_descriptors_...`: its runtime needs a few
/// dozen, each connection two (reader and writer), so a burst of raw connections exhausts them.
const DESCRIPTOR_LIMIT: u64 = 64;
const CONNECTION_BURST: usize = 80;
/// Attempts to get a new connection served once the burst is gone.
const LATE_CONNECT_ATTEMPTS_MAX: usize = 30;

#[test]
fn running_out_of_descriptors_does_not_stop_the_server() {
    let ns = NameServerProcess::start_with_descriptor_limit(DESCRIPTOR_LIMIT);
    block_on(async {
        let first = connect(&ns).await;
        register(
            &first,
            &Broker::master("broker-a", "127.0.0.1:10911", &[("T", 4), ("U", 4)]),
        )
        .await;
        let burst: Vec<TcpStream> = (0..CONNECTION_BURST)
            .map(|_| TcpStream::connect(&ns.addr).unwrap())
            .collect();
        // Either accept(2) or the dup(2) of an accepted socket runs out first.
        ns.wait_for_any_log(&["accept failed", "could not start a connection"]);
        // Accepted connections are still served while accepting fails.
        assert_eq!(
            call(&first, route_request("T", 479)).await.code,
            response::SUCCESS
        );
        drop(burst);
        // The server frees the burst's descriptors as it reads each connection's end; until
        // then a new connection may still be refused. Each attempt is paced by the server's
        // accept back-off (at most a second), and the number of attempts is bounded.
        for attempt in 1..=LATE_CONNECT_ATTEMPTS_MAX {
            let late = connect(&ns).await;
            match late.request(route_request("U", 479), TIMEOUT).await {
                Ok(resp) => {
                    assert_eq!(resp.code, response::SUCCESS);
                    break;
                }
                Err(err) => assert!(
                    attempt < LATE_CONNECT_ATTEMPTS_MAX,
                    "never served again: {err}"
                ),
            }
        }
    })
    .unwrap();
}

#[test]
fn an_impossible_cpu_or_address_is_a_startup_error_not_a_panic() {
    // 192.0.2.1 (TEST-NET-1) is no address of this host, so binding it fails.
    let cases: [&[&str]; 2] = [&["127.0.0.1:0", "--cpu", "100000"], &["192.0.2.1:0"]];
    for args in cases {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_ringmq"))
            .args(["namesrv", "--listen"])
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("ringmq: namesrv:") && !stderr.contains("panicked"),
            "{stderr}"
        );
    }
}
