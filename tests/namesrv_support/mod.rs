//! Helpers shared by the `namesrv_*` and `admin_*` tests: a real `ringmq namesrv` process on an
//! ephemeral port (killed on drop, even when the test fails), and requests built the way a
//! Java 5.x broker and client build them.
#![allow(dead_code)] // each test binary uses its own subset of these helpers

#[path = "../process_support/mod.rs"]
mod process_support;
use process_support::ServerProcess;
#[allow(unused_imports)] // each test binary uses its own subset of these helpers
pub use process_support::{maven_classpath, EVENT_DEADLINE};

use ringmq::client::RemotingClient;
use ringmq::namesrv::processor::body_crc32;
use ringmq::protocol::body::{
    self, DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper,
};
use ringmq::protocol::codes::request;
use ringmq::protocol::command::{RemotingCommand, SerializeType};
use ringmq::protocol::header::{GetRouteInfoRequestHeader, RegisterBrokerRequestHeader};
use std::process::Command;
use std::time::Duration;

/// Per-request timeout in tests; generous because the machine is shared.
pub const TIMEOUT: Duration = Duration::from_secs(10);

pub const CLUSTER: &str = "DefaultCluster";

/// A running `ringmq namesrv`; the process is killed when this drops.
pub struct NameServerProcess {
    process: ServerProcess,
    pub addr: String,
}

impl NameServerProcess {
    pub fn start(expire_secs: Option<u64>) -> Self {
        let mut command = namesrv_command(&fresh_kv_config_path());
        if let Some(secs) = expire_secs {
            command.args(["--expire-secs", &secs.to_string()]);
        }
        Self::spawn(command)
    }

    /// A NameServer keeping its KV config in `kv_config` (to check it survives a restart).
    pub fn start_with_kv_config(kv_config: &std::path::Path) -> Self {
        Self::spawn(namesrv_command(kv_config))
    }

    /// A NameServer that may open at most `descriptors` file descriptors (RLIMIT_NOFILE).
    pub fn start_with_descriptor_limit(descriptors: u64) -> Self {
        use std::os::unix::process::CommandExt;
        let mut command = namesrv_command(&fresh_kv_config_path());
        let limit = libc::rlimit {
            rlim_cur: descriptors,
            rlim_max: descriptors,
        };
        // SAFETY: setrlimit is async-signal-safe and touches only the child being started.
        unsafe {
            command.pre_exec(move || {
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Self::spawn(command)
    }

    fn spawn(command: Command) -> Self {
        let process = ServerProcess::spawn(command, "namesrv");
        let addr = process.wait_for_stdout("ringmq namesrv listening on ");
        Self { process, addr }
    }

    /// Waits (up to [`EVENT_DEADLINE`]) for a log line containing `needle`.
    pub fn wait_for_log(&self, needle: &str) -> String {
        self.process.wait_for_any_log(&[needle])
    }

    /// Waits (up to [`EVENT_DEADLINE`]) for a log line containing any of `needles`.
    pub fn wait_for_any_log(&self, needles: &[&str]) -> String {
        self.process.wait_for_any_log(needles)
    }

    /// Runs `ringmq admin <args> -n <this server>` and returns (exit success, stdout, stderr).
    pub fn admin(&self, args: &[&str]) -> (bool, String, String) {
        run_admin(&self.addr, args)
    }
}

/// `ringmq namesrv` on an ephemeral loopback port, its KV config in `kv_config`.
fn namesrv_command(kv_config: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ringmq"));
    command
        .args(["namesrv", "--listen", "127.0.0.1:0", "--kv-config"])
        .arg(kv_config);
    command
}

/// A KV config path no other NameServer of this run uses, so parallel tests do not share one
/// (and none writes to the user's ~/namesrv).
pub fn fresh_kv_config_path() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir()
        .join(format!(
            "ringmq-test-namesrv-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ))
        .join("kvConfig.json")
}

/// Runs `ringmq admin <args> -n <namesrv>` and returns (exit success, stdout, stderr).
pub fn run_admin(namesrv: &str, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_ringmq"))
        .arg("admin")
        .args(args)
        .args(["-n", namesrv])
        .output()
        .expect("run ringmq admin");
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).expect("utf-8 output");
    (
        output.status.success(),
        text(output.stdout),
        text(output.stderr),
    )
}

/// One broker as a test registers it.
#[derive(Clone)]
pub struct Broker {
    pub name: &'static str,
    pub id: i64,
    pub addr: &'static str,
    pub cluster: &'static str,
    pub data_version: DataVersion,
    pub topics: Vec<(&'static str, i32)>,
    pub serialize_type: SerializeType,
}

impl Broker {
    pub fn master(name: &'static str, addr: &'static str, topics: &[(&'static str, i32)]) -> Self {
        Broker {
            name,
            id: 0,
            addr,
            cluster: CLUSTER,
            data_version: DataVersion {
                counter: 1,
                state_version: 0,
                timestamp: 1_700_000_000_000,
            },
            topics: topics.to_vec(),
            serialize_type: SerializeType::Json,
        }
    }

    /// The body a Java broker sends: `RegisterBrokerBody` JSON with its topic configs.
    pub fn body(&self) -> Vec<u8> {
        body::encode(&self.register_body()).unwrap()
    }

    fn register_body(&self) -> RegisterBrokerBody {
        let table = self
            .topics
            .iter()
            .map(|(topic, queues)| (topic.to_string(), TopicConfig::new(*topic, *queues)))
            .collect();
        RegisterBrokerBody {
            filter_server_list: vec![],
            topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
                data_version: self.data_version,
                topic_config_table: table,
                ..Default::default()
            },
        }
    }

    /// REGISTER_BROKER exactly as `BrokerOuterAPI.registerBroker` builds it (5.x, JSON body).
    pub fn register_request(&self) -> RemotingCommand {
        self.register_request_with(self.body(), false)
    }

    /// REGISTER_BROKER with the DEFLATE body form and `compressed=true`.
    pub fn register_request_compressed(&self) -> RemotingCommand {
        self.register_request_with(
            body::encode_compressed(&self.register_body()).unwrap(),
            true,
        )
    }

    fn register_request_with(&self, body: Vec<u8>, compressed: bool) -> RemotingCommand {
        let header = RegisterBrokerRequestHeader {
            broker_name: self.name.into(),
            broker_addr: self.addr.into(),
            cluster_name: self.cluster.into(),
            ha_server_addr: format!("{}-ha", self.addr),
            broker_id: self.id,
            heartbeat_timeout_millis: None,
            enable_acting_master: Some(false),
            compressed,
            body_crc32: body_crc32(&body),
        };
        let mut req = RemotingCommand::request(request::REGISTER_BROKER)
            .with_header(&header)
            .with_body(body);
        req.serialize_type = self.serialize_type;
        req
    }
}

/// GET_ROUTEINFO_BY_TOPIC as a client of the given `MQVersion` ordinal sends it.
pub fn route_request(topic: &str, version: i32) -> RemotingCommand {
    let header = GetRouteInfoRequestHeader {
        topic: topic.into(),
        accept_standard_json_only: None,
    };
    let mut req = RemotingCommand::request(request::GET_ROUTEINFO_BY_TOPIC).with_header(&header);
    req.version = version;
    req
}

/// Sends `req` and returns the response, failing the test on a transport error.
pub async fn call(client: &RemotingClient, req: RemotingCommand) -> RemotingCommand {
    client.request(req, TIMEOUT).await.expect("response")
}

pub async fn connect(ns: &NameServerProcess) -> RemotingClient {
    RemotingClient::connect(&ns.addr)
        .await
        .expect("connect to namesrv")
}

/// Registers `broker` on `conn`, failing the test unless the NameServer accepts it.
pub async fn register(conn: &RemotingClient, broker: &Broker) -> RemotingCommand {
    let resp = call(conn, broker.register_request()).await;
    assert_eq!(
        resp.code,
        ringmq::protocol::codes::response::SUCCESS,
        "{:?}",
        resp.remark
    );
    resp
}
