//! The frame decoder on arbitrary bytes: never panics, never claims more bytes than it was
//! given, agrees with the zero-copy `split_frame`, and whatever it accepts re-encodes to a frame
//! that decodes to the same command.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use ringmq::protocol::frame::{decode_frame, encode_frame, split_frame};

fuzz_target!(|data: &[u8]| {
    let decoded = decode_frame(data);
    let mut shared = BytesMut::from(data);
    match (&decoded, split_frame(&mut shared)) {
        (Ok(Some((a, n))), Ok(Some(b))) => assert!(a == &b && shared.len() == data.len() - n),
        (Ok(None), Ok(None)) | (Err(_), Err(_)) => {}
        (a, b) => panic!("decode_frame {a:?} but split_frame {b:?}"),
    }
    let Ok(Some((cmd, consumed))) = decoded else {
        return;
    };
    assert!(consumed <= data.len());
    let mut again = BytesMut::new();
    encode_frame(&cmd, &mut again);
    let (round_tripped, n) = decode_frame(&again)
        .expect("our own frame decodes")
        .expect("our own frame is complete");
    assert_eq!(n, again.len());
    assert_eq!(round_tripped, cmd);
});
