//! Apache's Go client (rocketmq-client-go v2.1.2) against the real `ringmq namesrv`. The Go
//! client sends version 317, so it gets the legacy route body (unquoted broker ids) and parses
//! it with its own code; this checks it builds the publish queues from it.
//!
//! Needs Go and the client's modules in the module cache (the build runs with GOPROXY=off),
//! so it is ignored by default: `cargo test -p ringmq --test namesrv_go_client -- --ignored`.
//! To fill the cache once: `cd tests/namesrv_go && go mod download`.

mod namesrv_support;

use namesrv_support::*;
use ringmq::client::block_on;
use std::path::PathBuf;
use std::process::Command;

#[test]
#[ignore = "needs go and rocketmq-client-go v2.1.2 in the module cache; run with --ignored"]
fn the_official_go_client_reads_legacy_routes() {
    let go_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/namesrv_go");
    let binary =
        std::env::temp_dir().join(format!("ringmq-namesrv-go-compat-{}", std::process::id()));
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(&go_dir)
        .env("GOPROXY", "off")
        .env("GOFLAGS", "-mod=mod")
        .status()
        .expect("run go build");
    assert!(
        built.success(),
        "go build failed (module cache empty? see the module doc)"
    );

    let ns = NameServerProcess::start(None);
    block_on(async {
        // The brokers' connection stays open while the Go client runs.
        let brokers = connect(&ns).await;
        register(
            &brokers,
            &Broker::master("broker-a", "127.0.0.1:10911", &[("T", 2), ("A", 1)]),
        )
        .await;
        let b = Broker::master("broker-b", "127.0.0.1:20911", &[("T", 1), ("B", 1)]);
        register(&brokers, &b).await;
        let slave = Broker {
            id: 1,
            addr: "127.0.0.1:20921",
            ..b
        };
        register(&brokers, &slave).await;

        let output = Command::new(&binary)
            .arg(&ns.addr)
            .args(["T", "B"])
            .output()
            .expect("run go client");
        let _ = std::fs::remove_file(&binary);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(
            stdout,
            "T broker-a 0\nT broker-a 1\nT broker-b 0\nB broker-b 0\n"
        );
    })
    .unwrap();
}
